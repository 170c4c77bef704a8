#pragma once

// The pure tables the reconcile pass applies around decideNextOperation
// (docs/behaviour/lifecycle.md#pass-structure, steps 10 and 13): what the
// state's classification reads as in the decision, which condition a hold
// sets, which root a Job renders, which condition waits for the run Lease
// and what the wait says, a Git failure's reason, and the Job build request from what the pass
// gathered. No I/O; the controller (manager/controllers/workload_reconciler.cc) reads, calls these
// and writes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "manager/api/workspace.h"
#include "manager/lifecycle/bookkeeping.h"
#include "manager/lifecycle/decision.h"
#include "manager/lifecycle/defaults.h"
#include "manager/lifecycle/job_builder.h"
#include "manager/lifecycle/leases.h"
#include "manager/lifecycle/names.h"
#include "manager/workspace/backups.h"
#include "manager/workspace/kind_traits.h"
#include "manager/workspace/secrets.h"
#include "manager/workspace/state.h"

namespace captf::lifecycle {

// DecisionInput::state for a classified state (workspace::classifyState;
// `read` is the read's own status). A lost state reads as what was found,
// since the decision applies the lost rule itself from the provisioned latch
// and the state; every error verdict (inconsistent, encrypted, corrupt,
// locked) is unreadable.
StateReading stateReadingOf(workspace::StateVerdict verdict, workspace::StateStatus read);

// The condition a hold of the decision sets (docs/reference/conditions.md),
// or nullopt when the hold sets none:
//   kRestoreBackupNotFound: RestoreJobSucceeded=False/RestoreBackupNotFound;
//   kPlanAwaitingApproval:  ApplyJobSucceeded=Unknown/PlanAwaitingApproval,
//   kPlanChanged:           ApplyJobSucceeded=Unknown/PlanChanged, both with
//                           the approve command, and only while `plan`
//                           (status.plan) is set;
//   kDestroyInputsMissing:  ApplyJobSucceeded=False/DestroyFailed with the
//                           the CAPTFDestroyStuck runbook link.
// `resource` is the kubectl resource of the object ("terraformcluster").
std::optional<ConditionUpdate> holdCondition(Hold hold, std::string_view resource,
                                             const ObjectIdentity& object,
                                             const std::optional<api::PlanPreview>& plan);

// Which inputs a Job renders (docs/behaviour/inputs.md#durable-and-per-run-inputs-secrets).
enum class JobRoot {
  // No root: a restore (it renders none), or none of the roots the
  // operation may use exists (no Job starts).
  kNone,
  // The durable inputs Secret's.
  kDurable,
  // This pass's render of the current inputs.
  kCurrent,
};

// destroy: the durable root, else (mutable inputs only) the current one;
// drift and refresh: (mutable inputs only) the current root, else the
// durable one; apply and plan: the current root; restore: none.
// `durable`: the durable inputs Secret exists; `current`: the pass rendered
// the current inputs.
JobRoot rootForOperation(api::Operation operation, const workspace::KindTraits& traits,
                         bool durable, bool current);

// The condition that reports a wait for the run Lease or the cluster
// operation gate (docs/behaviour/lifecycle.md#run-leases-and-the-cluster-operation-gate):
// DriftJobSucceeded for drift and refresh, RestoreJobSucceeded for restore,
// ApplyJobSucceeded for apply, destroy and plan.
std::string_view waitConditionFor(api::Operation operation);

// What a Job start that waits for the run Lease or the cluster operation
// gate reports: waitConditionFor(operation)=Unknown with `reason` and
// `message`, and on that condition's transition one Normal Event
// (`event_reason`, `event_note`) and one count of captf_lease_waits_total
// labelled `metric`.
struct LeaseWait {
  std::string reason;
  std::string message;
  std::string event_reason;
  std::string event_note;
  std::string metric;
};

// The run Lease is held by Job `holder`.
LeaseWait runLeaseWait(const std::string& holder);

// A gate verdict's wait (nullopt: kProceed) for Cluster `cluster`, with
// `dependent_operations` machine and pool operations running.
std::optional<LeaseWait> gateWait(GateVerdict verdict, std::int32_t dependent_operations,
                                  const std::string& cluster);

// DependenciesReady's reason for a Git source whose ref cannot be resolved,
// from its status class (contract/git.h): GitAuthenticationFailed,
// GitRefNotFound, GitUnreachable, GitServerNotTrusted,
// GitCredentialsInvalid, else GitSourceFailed.
std::string_view gitSourceReason(absl::StatusCode code);

// The image the `source` container of a run Job runs: spec.source.image, or
// a Git source's runtime image.
const std::string& sourceImage(const api::Source& source);

// What the pass gathered for the Job it starts, beside the decision.
struct JobStart {
  ObjectIdentity object{};
  std::string object_uid{};
  std::string cluster_name{};
  // jobName(object, {decision.inputs_hash, operation, attempt, tick}).
  std::string job_name{};
  workspace::KindTraits traits{};
  // spec.source.
  api::Source source{};
  // The durable inputs Secret's annotations, when it exists.
  std::optional<workspace::DurableAnnotations> durable{};
  // The Git source to fetch (its commit chosen by the root the Job renders).
  std::optional<GitFetch> git{};
  std::string runner_image{};
  EffectiveJobPolicy policy{};
  std::string credentials_secret{};
  std::vector<std::string> credential_env_keys{};
  // The stale lock's ID to force-unlock; "" when none.
  std::string force_unlock_id{};
  bool runner_events = true;
  // The run reports' address and token hash; "" without reports.
  std::string report_address{};
  std::string report_token_hash{};
  // A restore's backup.
  std::optional<workspace::RestoreInputs> restore{};
};

// The build request of the Job `decision` runs (precondition: it runs one).
// The image is the source's; a kind with immutable inputs runs every
// operation but apply from the digest its first apply ran, when the durable
// inputs record one (docs/decisions/manager-reconcile-pass.md, "Kinds"),
// while --image keeps the reference as written. A restore's Job carries
// the backup's chunks and resources and is annotated with the backup's
// inputs hash (what bookkeeping adopts once the push succeeded).
JobBuildRequest jobBuildRequest(const Decision& decision, const JobStart& start);

} // namespace captf::lifecycle
