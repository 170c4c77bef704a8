#pragma once

// The retained run Jobs of one workload object as the lifecycle sees them
// (docs/behaviour/lifecycle.md): what each Job was, how it ended, attempt
// numbering and history pruning. The decision (decision.h) and the backoff
// (schedule.h) read only this summary, never Job objects.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "manager/api/time.h"
#include "manager/api/workspace.h"

namespace captf::lifecycle {

// How a Job ended, as the bookkeeping classified it.
enum class JobOutcome {
  // Not finished (no Complete/Failed condition yet).
  kActive,
  kSucceeded,
  // Failed in a way that counts toward retry backoff (docs/behaviour/lifecycle.md): a step
  // failure, image-layout, an image pull failure, a deadline the runner did
  // not report as `interrupted`, an unreadable result.
  kFailed,
  // Stopped from outside (captf.io/interrupted). Retried without backoff.
  kInterrupted,
  // A TerraformCluster apply stopped before a destructive plan
  // (captf.io/destructive-plan-blocked). Not a backoff failure.
  kBlocked,
  // An approved apply found a different plan (captf.io/plan-changed). Not a
  // backoff failure.
  kPlanChanged,
};

// Whether the outcome is a finished, non-succeeded Job (what
// failedJobsHistoryLimit bounds).
bool isFailure(JobOutcome outcome);
// Whether it counts toward retry backoff and the remediation cap (kFailed).
bool countsForBackoff(JobOutcome outcome);

// One retained Job of the object.
struct JobRecord {
  std::string name{};
  api::Operation operation = api::Operation::kApply;
  // The `a<N>` of the name (label captf.infrastructure.cluster.x-k8s.io/attempt). ≥ 1.
  std::int32_t attempt = 1;
  JobOutcome outcome = JobOutcome::kActive;
  // metadata.creationTimestamp.
  std::optional<api::Time> created{};
  // When it finished (status.completionTime, or the Failed condition's
  // lastTransitionTime). Unset while active.
  std::optional<api::Time> finished{};
  // captf.io/inputs-hash of the Job ("" when it has none, e.g. restore).
  std::string inputs_hash{};
  // captf.io/drift-remediation is set.
  bool drift_remediation = false;
  // captf.io/approved-plan ("" when not an approved-plan apply).
  std::string approved_plan{};
  // captf.io/restore-serial (restore Jobs).
  std::optional<std::int64_t> restore_serial{};
  // Its Failed condition has reason DeadlineExceeded: the Job's own
  // activeDeadlineSeconds ran out, whatever the runner then reported.
  bool deadline_exceeded = false;

  friend bool operator==(const JobRecord&, const JobRecord&) = default;
};

// Reads a batch/v1 Job built by buildJob (job_builder.h): operation and
// attempt from the labels, the captf.io/* annotations above, and the
// outcome from status.conditions (Complete/Failed True) refined by the
// bookkeeping marks captf.io/interrupted, captf.io/destructive-plan-blocked
// and captf.io/plan-changed; a Job marked captf.io/plan-unreadable reads as
// kFailed even when it completed (nothing to approve; retried with
// backoff, not at once). A failed Job the bookkeeping has not marked yet
// reads as kFailed: the controller classifies a fresh result itself and
// passes the refined record. Errors (InvalidArgument) when the op or
// attempt label is missing or invalid: such a Job is not a CAPTF run Job.
absl::StatusOr<JobRecord> jobRecordFromJob(const nlohmann::json& job);

// Newest first: active Jobs first, then by `finished`, `created`, attempt
// and name, each descending. Stable.
void sortNewestFirst(std::vector<JobRecord>& jobs);

// 1 + the highest attempt retained for `operation` (1 when none).
std::int32_t nextAttempt(std::span<const JobRecord> jobs, api::Operation operation);

// The newest Job of `operation` with `outcome` (by attempt), or nullptr.
const JobRecord* newestWith(std::span<const JobRecord> jobs, api::Operation operation,
                            JobOutcome outcome);
// The newest finished Job of `operation` (by attempt), or nullptr.
const JobRecord* newestFinished(std::span<const JobRecord> jobs, api::Operation operation);
// Any active Job, or nullptr.
const JobRecord* activeJob(std::span<const JobRecord> jobs);

// docs/behaviour/lifecycle.md history pruning, per operation, oldest first: keeps the
// `successful_limit` newest succeeded and the `failed_limit` newest failed
// (any non-succeeded outcome) Jobs of each operation, and always keeps the
// operation's newest success and — while no newer success of it exists —
// its newest failure (retry backoff and the remediation cap read them).
// Active Jobs are never pruned. Returns the names to delete, oldest first.
// Limits below 0 are treated as 0.
std::vector<std::string> jobsToPrune(std::span<const JobRecord> jobs, std::int32_t successful_limit,
                                     std::int32_t failed_limit);

} // namespace captf::lifecycle
