#pragma once

// The pure part of bookkeeping a finished run Job
// (docs/decisions/manager-reconcile-pass.md): what the run's outcome was,
// read from the runner's result document and what the Job and its pod say,
// and which mark the Job gets so that later passes and the decision read the
// outcome back from the Job alone. The controller does the writes.

#include <optional>
#include <string>
#include <string_view>

#include "manager/api/workspace.h"
#include "manager/lifecycle/history.h"
#include "manager/workspace/result.h"

namespace captf::lifecycle {

// What the API server says of a finished run Job.
struct FinishedJobFacts {
  std::string job; // the Job's name
  api::Operation operation = api::Operation::kApply;
  bool job_succeeded = false;     // the Job's Complete condition
  bool pod_exists = false;        // its runner pod can still be read
  bool deadline_exceeded = false; // activeDeadlineSeconds ran out
  // The source container's termination message (the result document).
  std::optional<std::string> termination_message;
};

struct FinishedRun {
  workspace::RunOutcome outcome = workspace::RunOutcome::kFailed;
  JobOutcome job_outcome = JobOutcome::kFailed; // the same, for the Job's record
  api::LastRun last_run;                        // status.lastRun
  std::optional<workspace::RunReport> report;   // the result document, when readable
  // The annotation set to "true" on the Job (interrupted, blocked, plan
  // changed); none for succeeded and failed runs, which the Job says itself.
  std::optional<std::string_view> mark;
  // A plan Job whose result cannot be read: captf.io/plan-unreadable.
  bool plan_unreadable = false;
};

// The Job's verdict wins over the result document's: a Job that failed after
// a good result failed, and a Job that succeeded succeeded. A Job without a
// readable result whose pod is gone, with no deadline and no message, was
// stopped from outside (deleted or evicted): interrupted, retried without
// backoff. A pod that exists without a result crashed: failed.
FinishedRun classifyFinishedRun(const FinishedJobFacts& facts);

} // namespace captf::lifecycle
