#pragma once

// The RunReporter service over gRPC with TLS (docs/decisions/run-reports.md).
// The serving certificate is read from files and re-read when they change
// (cert-manager rotation). A call is taken only when its token hashes to the
// captf.io/report-token-hash annotation of the Job it names, and only while
// that Job runs; every refusal is counted in
// captf_run_report_rejections_total{reason}:
//   missing_credentials  no bearer token or no Job header
//   unknown_job          no such Job (or not one of ours)
//   bad_token            the token is not this Job's (forged, or another's)
//   run_ended            the Job finished or is being deleted (a replay)

#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/manager.h"
#include "manager/kube/metrics.h"
#include "manager/reports/run_reports.h"

namespace grpc {
class Server;
}

namespace captf::reports {

struct ReportServerOptions {
  // host:port or :port ("0" as the port: any free one).
  std::string bind_address = ":9444";
  std::string cert_file;
  std::string key_file;
  // How often the certificate files are checked for a rotation.
  int cert_refresh_seconds = 10;
};

// A Job by namespace and name (the manager's cache). NotFound when absent.
using JobLookup =
    std::function<absl::StatusOr<nlohmann::json>(const std::string& ns, const std::string& name)>;

class ReportServer final : public kube::Runnable {
public:
  ReportServer(ReportServerOptions options, JobLookup jobs, RunReports& reports,
               kube::MetricsRegistry& metrics, std::shared_ptr<spdlog::logger> logger);
  ~ReportServer() override;

  // Binds and starts serving. Errors: unreadable certificate files, a port
  // that cannot be bound.
  absl::Status listen();
  int port() const { return port_; }
  // Serves until `stop` (kube::Runnable); listens first if not yet.
  absl::Status start(std::stop_token stop) override;

private:
  class Service;
  ReportServerOptions options_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::shared_ptr<spdlog::logger> logger_;
};

} // namespace captf::reports
