#pragma once

// The finished Job's result (docs/behaviour/lifecycle.md, jobs.md): the runner's termination
// message (the RunResult document of contract/result.h) turned into what
// bookkeeping writes — status.lastRun, the outcome that picks conditions,
// events and metrics, the plan (status.plan) and the runtime version
// (status.source). The message is untrusted: it is decoded by
// contract::decodeResult (size cap, types, contract rules), and every
// string copied into status is bounded again here.

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "captf/runner/v1alpha1/result.pb.h"
#include "manager/api/workspace.h"

namespace captf::workspace {

enum class RunOutcome {
  kSucceeded,
  kFailed,      // error kind step or image-layout
  kInterrupted, // stopped from outside; retried without backoff
  kBlocked,     // destructive plan not approved; nothing changed
  kPlanChanged, // approved apply found another plan; nothing changed
};

struct RunReport {
  RunOutcome outcome = RunOutcome::kFailed;
  // status.lastRun: job, operation, steps (≤16), error {kind, step,
  // summary ≤512}, drift (when the run found drift).
  api::LastRun last_run{};
  // Error kind when not succeeded (image-layout or step for kFailed).
  std::optional<api::RunErrorKind> error_kind{};
  // For status.source.runtimeVersion ("" when the runner had none).
  std::string runtime_version{};
  // The image the runner ran (--image), "" when absent.
  std::string image{};
  // The plan summary of a plan run, a guarded apply, a blocked or changed
  // plan: status.plan without inputsHash/createdAt (the caller knows them).
  std::optional<api::PlanPreview> plan{};
  // Resource changes of an apply/destroy (captf_resources_changed_total).
  std::optional<captf::runner::v1alpha1::ResourceChanges> changes{};
  // Whether the run found drift (drift op with a non-empty summary).
  bool drift_found = false;
};

// Decodes `message` (the main container's terminated.message) of Job
// `job_name`, created for `operation` (from the Job's op label).
// Errors (InvalidArgument, "termination message of Job <name>: ..."):
// absent or empty message, over 4096 bytes, invalid JSON, contract
// violations (contract::decodeResult), an operation different from the
// Job's. The caller then records a run without result (lastRunWithoutResult)
// and, for a plan Job, annotates captf.io/plan-unreadable.
absl::StatusOr<RunReport> parseRunResult(std::string_view job_name, api::Operation operation,
                                         std::optional<std::string_view> message);

// status.lastRun for a finished Job whose result could not be read (no
// message, garbage, a pod that never started): job and operation only.
api::LastRun lastRunWithoutResult(std::string_view job_name, api::Operation operation);

// captf_jobs_total{result}: "succeeded", "failed", "interrupted", "blocked",
// "plan_changed" ("deadline" is decided by the caller from the Job's
// DeadlineExceeded condition).
std::string_view jobsTotalResult(RunOutcome outcome);

// Whether a failure counts toward retry backoff (docs/behaviour/lifecycle.md): kFailed only.
bool countsForBackoff(RunOutcome outcome);

api::Operation toApiOperation(captf::runner::v1alpha1::Operation operation);

} // namespace captf::workspace
