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
// and, since a Job's token is readable by the module's own code, every
// caller is held to the bounds of ReportServerLimits; a call that breaks one
// ends with RESOURCE_EXHAUSTED (the deadlines: CANCELLED) and is counted as
//   too_many_events      more events in one call than a runner sends
//   too_many_bytes       more bytes in one call than a runner sends
//   too_many_calls       more calls of one Job open at once
//   rate_limited         the Job's token bucket is empty
//   deadline             ended by the server: idle too long, or too long
// A message over max_message_bytes is refused by gRPC itself (not counted).

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "contract/report.h"
#include "manager/kube/clock.h"
#include "manager/kube/manager.h"
#include "manager/kube/metrics.h"
#include "manager/reports/run_reports.h"

namespace grpc {
class Server;
}

namespace captf::reports {

// What one caller may take of the server: the one place of its bounds
// (docs/decisions/run-reports.md gives the reasons for each figure). Tests
// shrink them; the manager uses the defaults.
struct ReportServerLimits {
  // Per call, as the runner sends them (contract/report.h).
  std::size_t max_events_per_call = contract::kMaxReportEventsPerCall;
  std::size_t max_message_bytes = contract::kMaxReportMessageBytes;
  std::size_t max_call_bytes = contract::kMaxReportCallBytes;
  // A call that sends nothing for `idle_timeout`, or is still open after
  // `max_call_duration`, is ended by the server. A runner writes its whole
  // batch at once and gives a call 5 s.
  kube::Duration idle_timeout = std::chrono::seconds(2);
  kube::Duration max_call_duration = std::chrono::seconds(10);
  // Calls of one Job open at once (its runner makes one at a time).
  int max_calls_per_job = 2;
  // A token bucket per Job: calls it may make at once, and per second after.
  double job_call_burst = 10;
  double job_calls_per_second = 5;
  // The server's threads (a synchronous server holds one per open call) and
  // the memory of gRPC's own buffers (grpc::ResourceQuota).
  int max_threads = 64;
  std::size_t max_transport_bytes = std::size_t{256} * 1024 * 1024;
};

struct ReportServerOptions {
  // host:port or :port ("0" as the port: any free one).
  std::string bind_address = ":9444";
  std::string cert_file;
  std::string key_file;
  // How often the certificate files are checked for a rotation.
  int cert_refresh_seconds = 10;
  ReportServerLimits limits;
};

// A Job by namespace and name (the manager's cache). NotFound when absent.
using JobLookup =
    std::function<absl::StatusOr<nlohmann::json>(const std::string& ns, const std::string& name)>;

class ReportServer final : public kube::Runnable {
public:
  // `clock` times the call deadlines and the token buckets.
  ReportServer(ReportServerOptions options, JobLookup jobs, RunReports& reports,
               kube::MetricsRegistry& metrics, std::shared_ptr<spdlog::logger> logger,
               kube::Clock& clock = kube::realClock());
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
