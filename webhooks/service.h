#pragma once

// The validating webhooks wired to the API server, as both the manager (in
// process) and the standalone webhook-server binary run them, so the two
// cannot drift: a REST client of their own whose requests give up after
// kLookupTimeout, the static mapper of the admission kinds (no discovery),
// the lookups, the SubjectAccessReview reviewer, the AdmissionHandler and the
// HTTPS server. A kube::Runnable: in the manager it serves on every replica,
// leader or not, and stops with the runnables that need no leadership
// (docs/decisions/shutdown.md).

#include <chrono>
#include <memory>
#include <stop_token>

#include <spdlog/logger.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/kube/authorization.h"
#include "manager/kube/config.h"
#include "manager/kube/discovery.h"
#include "manager/kube/https_server.h"
#include "manager/kube/manager.h"
#include "manager/kube/rest_client.h"
#include "webhooks/kube_lookups.h"
#include "webhooks/server.h"

namespace captf::webhooks {

// Lookups and access reviews must answer well inside the API server's
// webhook timeout (timeoutSeconds 10).
inline constexpr std::chrono::seconds kLookupTimeout{5};

class AdmissionService final : public kube::Runnable {
public:
  // `config` is the API server to look up from (its timeout is replaced by
  // kLookupTimeout); `metrics` may be null.
  static absl::StatusOr<std::unique_ptr<AdmissionService>>
  create(kube::RestConfig config, kube::ServerOptions options,
         std::shared_ptr<spdlog::logger> logger, kube::MetricsRegistry* metrics = nullptr);
  AdmissionService(const AdmissionService&) = delete;
  AdmissionService& operator=(const AdmissionService&) = delete;
  ~AdmissionService() override;

  // Loads the certificate, binds and serves (kube::HttpsServer::start).
  absl::Status listen() { return server_.start(); }
  // Stops accepting and joins the server's threads; idempotent.
  void stop() { server_.stop(); }
  [[nodiscard]] uint16_t port() const { return server_.port(); }
  [[nodiscard]] absl::Status ready() const { return server_.ready(); }

  // Serves until `stop`, then stops the server (in-flight requests finish).
  absl::Status start(std::stop_token stop) override;

private:
  AdmissionService(std::unique_ptr<kube::RestClient> rest, kube::ServerOptions options,
                   std::shared_ptr<spdlog::logger> logger);

  std::unique_ptr<kube::RestClient> rest_;
  kube::StaticRestMapper mapper_;
  kube::ApiClient client_;
  KubeAdmissionLookups lookups_;
  kube::KubeAccessReviewer reviewer_;
  const AdmissionHandler handler_;
  WebhookServer server_;
};

} // namespace captf::webhooks
