#pragma once

// What the manager does with a run's reports (docs/decisions/run-reports.md):
// the runner Events of a run (RunStarted, StepStarted, StepSucceeded,
// StepFailed, PlanSummary, ResourcesChanged, RunFinished) on the object the
// Job is for, and a bounded tail of the run's (already redacted) log lines
// that bookkeeping writes into the object's run history when the Job
// finishes. Each event is taken once: a repeated sequence number (a batch
// the runner sent again after a failed call) is dropped.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "captf/runner/v1alpha1/report.pb.h"
#include "manager/kube/events.h"

namespace captf::reports {

struct RunReportsOptions {
  // Lines kept per run, and bytes per line (longer lines are cut).
  std::size_t tail_lines = 40;
  std::size_t line_bytes = 512;
  // Runs tracked at once; the oldest is forgotten beyond this.
  std::size_t max_runs = 1000;
};

// What the reports said of one run, for its history record.
struct ReportedTail {
  std::vector<std::string> lines;
  // Lines the runner or the manager dropped (queue full, tail bound).
  std::uint64_t dropped = 0;
  bool reported = false; // any report arrived
};

// Thread-safe.
class RunReports {
public:
  // `events` posts as the runner's reporting controller (captf.io/runner).
  RunReports(kube::EventRecorder& events, RunReportsOptions options = {});

  // Takes the events of one call for `job` (a Job the caller authenticated
  // the call for; its controller owner is the object the Events are on), in
  // sequence order. Returns the highest sequence number taken so far.
  std::uint64_t ingest(const nlohmann::json& job,
                       const std::vector<captf::runner::v1alpha1::ReportRequest>& events);

  // The run's tail so far (bookkeeping, when the Job finished).
  ReportedTail tail(const std::string& job_uid) const;
  // Forgets the run (once its history record is written).
  void forget(const std::string& job_uid);

  std::size_t trackedRuns() const;

private:
  struct Run {
    std::uint64_t sequence = 0;
    std::string operation = "run";
    std::string image;
    std::deque<std::string> lines;
    std::uint64_t dropped = 0;
  };

  Run& runOf(const std::string& uid);
  void post(const nlohmann::json& job, const Run& run,
            const captf::runner::v1alpha1::ReportRequest& event);

  kube::EventRecorder& events_;
  RunReportsOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Run> runs_;
  std::list<std::string> order_; // uids, oldest first
};

} // namespace captf::reports
