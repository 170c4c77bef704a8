#include "webhooks/service.h"

#include <condition_variable>
#include <mutex>

#include "manager/kube/clock.h"
#include "webhooks/registrations.h"

namespace captf::webhooks {

absl::StatusOr<std::unique_ptr<AdmissionService>>
AdmissionService::create(kube::RestConfig config, kube::ServerOptions options,
                         std::shared_ptr<spdlog::logger> logger, kube::MetricsRegistry* metrics) {
  config.timeout = kLookupTimeout;
  auto rest = kube::RestClient::create(config, kube::realClock(), metrics, logger);
  if (!rest.ok()) {
    return rest.status();
  }
  return std::unique_ptr<AdmissionService>(
      new AdmissionService(*std::move(rest), std::move(options), std::move(logger)));
}

AdmissionService::AdmissionService(std::unique_ptr<kube::RestClient> rest,
                                   kube::ServerOptions options,
                                   std::shared_ptr<spdlog::logger> logger)
    : rest_(std::move(rest)), client_(*rest_, mapper_), lookups_(client_), reviewer_(*rest_),
      handler_(lookups_, reviewer_), server_(std::move(options), handler_, std::move(logger)) {
  addAdmissionResources(mapper_);
}

AdmissionService::~AdmissionService() {
  server_.stop();
}

absl::Status AdmissionService::start(std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait(lock, stop, [] { return false; });
  server_.stop();
  return absl::OkStatus();
}

} // namespace captf::webhooks
