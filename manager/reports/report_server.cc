#include "manager/reports/report_server.h"

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "captf/runner/v1alpha1/report.grpc.pb.h"
#include "contract/report.h"
#include "manager/api/keys.h"
#include "manager/kube/errors.h"
#include "manager/kube/object.h"

namespace captf::reports {
namespace {

namespace pb = captf::runner::v1alpha1;
using nlohmann::json;

// Events taken from one call at most; a runner sends far fewer.
constexpr std::size_t kMaxEventsPerCall = 2048;

std::string metadataValue(const grpc::ServerContext& context, std::string_view key) {
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(grpc::string_ref(key.data(), key.size()));
  if (found == metadata.end()) {
    return "";
  }
  return {found->second.data(), found->second.size()};
}

// A finished Job (or one being deleted) takes no more reports.
bool runEnded(const json& job) {
  if (kube::meta::isDeleting(job)) {
    return true;
  }
  const json* conditions = kube::fieldAt(job, "status.conditions");
  if (conditions == nullptr || !conditions->is_array()) {
    return false;
  }
  for (const json& c : *conditions) {
    const std::string type = c.value("type", "");
    if ((type == "Complete" || type == "Failed" || type == "FailureTarget" ||
         type == "SuccessCriteriaMet") &&
        c.value("status", "") == "True") {
      return true;
    }
  }
  return false;
}

bool readable(const std::string& path) {
  return std::ifstream(path).good();
}

} // namespace

class ReportServer::Service final : public pb::RunReporter::Service {
public:
  Service(JobLookup jobs, RunReports& reports, kube::MetricsRegistry& metrics,
          std::shared_ptr<spdlog::logger> logger)
      : jobs_(std::move(jobs)), reports_(reports),
        rejections_(metrics.counter("captf_run_report_rejections_total",
                                    "[ALPHA] Run report calls refused, by reason.", {"reason"})),
        events_(metrics.counter("captf_run_report_events_total",
                                "[ALPHA] Run report events taken from runners.", {})),
        logger_(std::move(logger)) {
    for (const char* reason : {"missing_credentials", "unknown_job", "bad_token", "run_ended"}) {
      rejections_.withLabels({reason});
    }
  }

  grpc::Status Report(grpc::ServerContext* context, grpc::ServerReader<pb::ReportRequest>* reader,
                      pb::ReportResponse* response) override {
    auto job = authenticate(*context);
    if (!job.ok()) {
      return {job.status().code() == absl::StatusCode::kUnauthenticated
                  ? grpc::StatusCode::UNAUTHENTICATED
                  : grpc::StatusCode::PERMISSION_DENIED,
              std::string(job.status().message())};
    }
    std::vector<pb::ReportRequest> batch;
    pb::ReportRequest event;
    while (reader->Read(&event)) {
      if (batch.size() < kMaxEventsPerCall) {
        batch.push_back(std::move(event));
      }
      event.Clear();
    }
    events_.withLabels({}).inc(static_cast<double>(batch.size()));
    response->set_accepted_through(reports_.ingest(*job, batch));
    return grpc::Status::OK;
  }

private:
  absl::Status refuse(const char* reason, absl::Status status, const std::string& job) {
    rejections_.withLabels({reason}).inc();
    // The token itself is never logged.
    logger_->info("run report refused reason={} job=\"{}\"", reason, job);
    return status;
  }

  absl::StatusOr<json> authenticate(const grpc::ServerContext& context) {
    const std::string authorization = metadataValue(context, "authorization");
    const std::string job_name = metadataValue(context, contract::kReportJobHeader);
    constexpr std::string_view kBearer = "Bearer ";
    const auto slash = job_name.find('/');
    if (!authorization.starts_with(kBearer) || authorization.size() == kBearer.size() ||
        slash == std::string::npos || slash == 0 || slash + 1 == job_name.size()) {
      return refuse("missing_credentials",
                    absl::UnauthenticatedError("a bearer token and the Job's name are required"),
                    job_name);
    }
    const std::string token = authorization.substr(kBearer.size());
    auto job = jobs_(job_name.substr(0, slash), job_name.substr(slash + 1));
    if (!job.ok()) {
      return refuse("unknown_job", absl::PermissionDeniedError("no such run"), job_name);
    }
    const json& annotations = kube::meta::annotations(*job);
    const auto hash = annotations.find(std::string(api::kAnnotationReportTokenHash));
    if (hash == annotations.end() || !hash->is_string() ||
        !contract::reportTokenMatches(token, hash->get_ref<const std::string&>())) {
      return refuse("bad_token", absl::PermissionDeniedError("the credential is not this run's"),
                    job_name);
    }
    if (runEnded(*job)) {
      return refuse("run_ended", absl::PermissionDeniedError("the run has ended"), job_name);
    }
    return job;
  }

  JobLookup jobs_;
  RunReports& reports_;
  kube::CounterFamily& rejections_;
  kube::CounterFamily& events_;
  std::shared_ptr<spdlog::logger> logger_;
};

ReportServer::ReportServer(ReportServerOptions options, JobLookup jobs, RunReports& reports,
                           kube::MetricsRegistry& metrics, std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)),
      service_(std::make_unique<Service>(std::move(jobs), reports, metrics, logger)),
      logger_(std::move(logger)) {}

ReportServer::~ReportServer() {
  if (server_) {
    server_->Shutdown();
  }
}

absl::Status ReportServer::listen() {
  if (server_) {
    return absl::OkStatus();
  }
  if (!readable(options_.cert_file) || !readable(options_.key_file)) {
    return absl::FailedPreconditionError("run reports: cannot read the serving certificate " +
                                         options_.cert_file + " or its key " + options_.key_file);
  }
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      options_.key_file, options_.cert_file,
      static_cast<unsigned int>(std::max(1, options_.cert_refresh_seconds)));
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  std::string address = options_.bind_address;
  if (address.starts_with(':')) {
    address = "0.0.0.0" + address;
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::experimental::TlsServerCredentials(tls), &port_);
  builder.RegisterService(service_.get());
  // Small calls from many runners: bound what one may send.
  builder.SetMaxReceiveMessageSize(1 << 20);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    server_.reset();
    return absl::UnavailableError("run reports: cannot listen on " + options_.bind_address);
  }
  logger_->info("run report server listening port={}", port_);
  return absl::OkStatus();
}

absl::Status ReportServer::start(std::stop_token stop) {
  if (absl::Status s = listen(); !s.ok()) {
    return s;
  }
  std::mutex mu;
  std::condition_variable_any done;
  std::unique_lock lock(mu);
  done.wait(lock, stop, [] { return false; });
  // Calls in flight get a moment to finish; runners retry or fall silent.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_.reset();
  return absl::OkStatus();
}

} // namespace captf::reports
