#pragma once

// The runner's side of the live run reports (docs/decisions/run-reports.md):
// what happens during a run goes to the manager's RunReporter service over
// gRPC, best effort. send() never blocks and never fails: events wait in a
// bounded queue that a sender thread drains in short calls (each with its
// own deadline, carrying the messages the manager has not acknowledged
// yet). After a few failed calls in a row, or a refusal, the reporter falls
// silent for the rest of the run. The termination message stays the
// authority on how the run ended.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "captf/runner/v1alpha1/report.pb.h"
#include "contract/report.h"
#include "runner/clock.h"

namespace captf::runner {

// Where events go. Implementations are thread-safe and never block.
class Reporter {
public:
  virtual ~Reporter() = default;
  // Stamps sequence, time and elapsed, and queues the event. A log line is
  // clipped to contract::kMaxReportLineBytes, a failure's tail to the
  // result document's bound; anything still over
  // contract::kMaxReportMessageBytes is dropped, never sent to be refused.
  virtual void send(captf::runner::v1alpha1::ReportRequest event) = 0;
};

struct ReportOptions {
  // host:port of the manager's report Service (--report-address).
  std::string address;
  // The run's credential (the per-run Secret's report-token) and the CA
  // bundle that signs the manager's serving certificate (report-ca.crt).
  std::string token;
  std::string ca_pem;
  // <namespace>/<name> of this run's Job.
  std::string job;
  // Upper bound of one call, connection included.
  absl::Duration call_deadline = absl::Seconds(5);
  // How long events gather before a call (fewer, larger calls).
  absl::Duration batch_delay = absl::Milliseconds(300);
  // Failed calls in a row before the reporter gives up.
  int max_failures = 3;
  // Queued events at most; log lines are dropped first (counted in the
  // next line's dropped_before).
  std::size_t max_queued = 512;
  // Events per call at most (the manager refuses more).
  std::size_t max_batch = contract::kMaxReportEventsPerCall;
};

// How a reporter fared (logged when the run ends).
struct ReportStats {
  std::uint64_t queued = 0;
  std::uint64_t accepted = 0; // acknowledged by the manager
  std::uint64_t dropped = 0;  // never sent: queue full, or given up
  std::uint64_t calls = 0;
  std::uint64_t failed_calls = 0;
  bool gave_up = false;
  std::string last_error; // of the last failed call; never holds the token
};

class GrpcReporter final : public Reporter {
public:
  // Starts the sender thread. Errors only for unusable options (no
  // address, token or CA); a manager that cannot be reached is found out
  // by the first call.
  static absl::StatusOr<std::unique_ptr<GrpcReporter>> start(ReportOptions options,
                                                             const Clock& clock);
  ~GrpcReporter() override;

  void send(captf::runner::v1alpha1::ReportRequest event) override;

  // Sends what is queued for at most `budget`, then stops the sender. The
  // run is over by then: this only bounds how long the pod lingers.
  ReportStats close(absl::Duration budget);

private:
  GrpcReporter(ReportOptions options, const Clock& clock);
  void loop(std::stop_token stop);
  // One call with everything unacknowledged (up to max_batch).
  bool call(std::deque<captf::runner::v1alpha1::ReportRequest>& pending);

  struct Channel;
  ReportOptions options_;
  const Clock& clock_;
  std::chrono::steady_clock::time_point started_;
  std::unique_ptr<Channel> channel_;

  std::mutex mu_;
  std::condition_variable_any wake_;
  std::deque<captf::runner::v1alpha1::ReportRequest> queue_;
  std::uint64_t sequence_ = 0;
  std::uint32_t dropped_lines_ = 0;
  bool closing_ = false;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  ReportStats stats_;
  std::jthread sender_;
};

} // namespace captf::runner
