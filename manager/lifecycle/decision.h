#pragma once

// Choosing the next operation (docs/behaviour/lifecycle.md), with the approval overlay of
// docs/behaviour/approval.md (destructive-plan guard, applyPolicy Manual), the refresh, membership,
// health-check and drift schedules (drift-and-health.md), retry backoff (lifecycle.md) and the
// re-check cadences (docs/behaviour/lifecycle.md). One pure function over a plain snapshot: the
// controller gathers the snapshot, calls decideNextOperation, then takes
// leases (leases.h) and builds the Job (job_builder.h) or requeues.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "manager/api/workspace.h"
#include "manager/lifecycle/defaults.h"
#include "manager/lifecycle/history.h"
#include "manager/lifecycle/schedule.h"
#include "manager/workspace/kind_traits.h"

namespace captf::lifecycle {

// What reading the object's state found (docs/behaviour/state.md), before the decision
// applies the provisioned rules.
enum class StateReading {
  // No state Secret.
  kNotFound,
  // Read; `DecisionInput::state_inputs_hash` holds its captf.io/inputs-hash.
  kRead,
  // Corrupt, inconsistent, encrypted or locked by a foreign holder
  // (StateReadable=False for those reasons).
  kUnreadable,
};

// Everything the decision reads. Field comments name the source.
struct DecisionInput {
  // --- the object ------------------------------------------------------------
  // What the object's kind does differently (WorkloadKind::traits()): immutable inputs,
  // plan approval, pool membership, the post-apply refresh.
  workspace::KindTraits traits{};
  // metadata.deletionTimestamp is set.
  bool deleting = false;
  // cluster.x-k8s.io/paused on the object or the owning Cluster's
  // spec.paused. The paused branch starts nothing (docs/behaviour/lifecycle.md#pass-structure).
  bool paused = false;
  // status.initialization.provisioned (the latch).
  bool provisioned = false;
  // status.observedStateSerial is set: a state was read once. With
  // `provisioned` and a successful apply in `jobs`, what makes a deleting
  // object without state one that had state
  // (docs/behaviour/state.md#a-deleting-object-without-state).
  bool state_observed = false;
  // captf.io/orphan-on-delete is "true".
  bool orphan_accepted = false;

  // --- state and inputs --------------------------------------------------------
  StateReading state = StateReading::kNotFound;
  // The base state Secret's captf.io/inputs-hash ("" when absent). Read
  // only when state == kRead.
  std::string state_inputs_hash{};
  // The inputs hash of this reconcile's render of the current inputs ("" when
  // none was built: an immutable kind once provisioned, or while deleting).
  std::string current_inputs_hash{};
  // The current render exceeds 1,000,000 bytes (docs/behaviour/inputs.md): no Job renders it.
  bool inputs_too_large = false;
  // Deleting only: the inputs hash of what destroy renders (the durable
  // inputs Secret's; "" when unknown: the decision then uses
  // current_inputs_hash, else state_inputs_hash). Only names the Job.
  std::string destroy_inputs_hash{};
  // Deleting only: the inputs destroy renders from exist — the durable
  // inputs Secret, or for a cluster/pool a fresh build when it is missing
  // (docs/behaviour/lifecycle.md#deletion). A machine without its durable Secret cannot destroy.
  bool destroy_inputs_available = true;

  // --- annotations -------------------------------------------------------------
  // captf.io/restore-state, verbatim; nullopt when absent.
  std::optional<std::string> restore_request{};
  // captf.io/approve-destructive-plan ("" when absent). Read with plan_approval only.
  std::string approve_destructive_plan{};
  // captf.io/approve-plan ("" when absent). Read with plan_approval only.
  std::string approve_plan{};

  // --- status ------------------------------------------------------------------
  // Serials of the complete backups that exist (status.stateBackups or the
  // backup Secrets), any order.
  std::vector<std::int64_t> backup_serials{};
  // status.plan of a kind with plan_approval (TerraformCluster): the plan awaiting approval.
  std::optional<api::PlanPreview> plan{};
  // The newest successful drift check found drift and no apply has
  // succeeded since (DriftDetected True with DriftPending/DriftRemediating).
  bool drift_pending = false;
  // status.lastRefresh and status.lastDriftCheck. A machine apply whose
  // outputs were valid with a health other than pending/unknown sets
  // lastRefresh to the apply's finish time, which is what skips its
  // post-apply refresh (docs/behaviour/lifecycle.md). (The decision also takes
  // the newest successful refresh/drift Job's finish time from `jobs`, so
  // status lost to `clusterctl move` only costs one extra refresh).
  std::optional<api::Time> last_refresh{};
  std::optional<api::Time> last_drift_check{};
  // status.pendingRefreshes: consecutive `pending` health readings (0 when
  // unset). ≥ 1 schedules the pending backoff. Before provisioning the
  // controller may count an OutputsPending reading the same way, so an
  // unprovisioned object keeps being refreshed until its outputs appear.
  std::int32_t pending_refreshes = 0;
  // With pool_membership: len(spec.providerIDList) and status.replicas
  // (nullopt when unset); they differ while membership converges.
  std::int32_t provider_id_count = 0;
  std::optional<std::int32_t> observed_replicas{};

  // --- effective settings (defaults.h) --------------------------------------
  api::ApplyPolicy apply_policy = api::ApplyPolicy::kAutomatic;
  EffectiveSchedule schedule{};
  // jobs.failedJobsHistoryLimit (bounds backoff and the remediation cap).
  std::int32_t failed_jobs_history_limit = kDefaultFailedJobsHistoryLimit;

  // --- history and time -----------------------------------------------------
  // Every retained run Job of the object, any order, outcomes as
  // bookkept.
  std::vector<JobRecord> jobs{};
  TimePoint now{};
  Jitter jitter{};
};

// What the decision concluded.
enum class Action {
  // Nothing to start; see `hold` and `requeue_after`.
  kNone,
  // Start a Job of `operation`.
  kRunJob,
  // Deleting and the destroy succeeded or there is no state: run the final
  // cleanup (docs/behaviour/lifecycle.md#deletion) and remove the finalizer.
  kCleanup,
};

// Why an operation is wanted (first match of the docs/behaviour/lifecycle.md tables). Also the
// `reason` label of captf_reconcile_op_decisions_total (see reasonName).
enum class Trigger {
  kNone,
  kRestore,              // row 1
  kDestroy,              // row 2
  kFirstApply,           // row 3
  kNoInputsHash,         // row 4
  kInputsChanged,        // row 5 (event InputsChanged, captf_inputs_hash_changes_total)
  kRetryFailedApply,     // row 6
  kDriftRemediation,     // row 7 (event DriftRemediationStarted)
  kPostApplyRefresh,     // schedule row 1
  kMembershipConverging, // schedule row 2
  kHealthPending,        // schedule row 3
  kMembershipInterval,   // schedule row 4
  kHealthCheckInterval,  // schedule row 5
  kDriftInterval,        // schedule row 6
};

// What holds the wanted operation back (kNone when it runs).
enum class Hold {
  kNone,
  // A Job is active: the decision's precondition does not hold.
  kActiveJob,
  kPaused,
  // restore-state names no complete backup or is not a serial
  // (RestoreJobSucceeded=False/RestoreBackupNotFound).
  kRestoreBackupNotFound,
  // The newest restore Job of this serial failed; not retried until the
  // annotation changes or that Job is deleted (RestoreFailed).
  kRestoreFailed,
  // The newest restore Job of this serial succeeded but the annotation is
  // still there: the controller removes it (see remove_restore_annotation).
  kRestoreDone,
  // StateLost (docs/behaviour/state.md): provisioned and state missing, or provisioned
  // immutable kind without an inputs hash. No Job until restored.
  kStateLost,
  // StateReadable False (corrupt/inconsistent/encrypted/locked): no Job.
  kStateUnreadable,
  // The current render is too large (ApplyJobSucceeded=False/InputsTooLarge).
  kInputsTooLarge,
  // Deleting, but destroy cannot be rendered (DestroyFailed, docs/behaviour/lifecycle.md#deletion).
  kDestroyInputsMissing,
  // The newest apply of the current inputs hash was blocked and no
  // approval names it (ApplyJobSucceeded=False/DestructivePlanBlocked).
  kDestructivePlanBlocked,
  // Manual: status.plan for the current inputs awaits captf.io/approve-plan
  // (ApplyJobSucceeded=Unknown/PlanAwaitingApproval).
  kPlanAwaitingApproval,
  // Manual: as kPlanAwaitingApproval, but status.plan is the new plan of an
  // approved apply that found its plan changed (status.plan.job names that
  // apply Job; docs/behaviour/approval.md step 5): ApplyJobSucceeded=Unknown/PlanChanged.
  kPlanChanged,
  // An apply is wanted but no current inputs were built
  // (current_inputs_hash empty): the controller must not call the decision
  // without them; nothing runs.
  kInputsUnavailable,
  // Retry backoff after failures of the operation (docs/behaviour/lifecycle.md#retry-backoff).
  kRetryBackoff,
  // Nothing is due yet; requeue at the earliest due time (schedule row 7).
  kNotDue,
};

// Runner flags and Job annotations that depend on the decision.
struct JobOptions {
  // Annotate captf.io/drift-remediation.
  bool drift_remediation = false;
  // An apply of a kind with plan_approval, without a plan approval: --guard-deletes
  // --inputs-hash <current>.
  bool guard_deletes = false;
  // --allow-deletes-hash: captf.io/approve-destructive-plan when set (with
  // guard_deletes).
  std::string allow_deletes_hash{};
  // Manual approved apply: --expect-plan and captf.io/approved-plan.
  std::string expect_plan{};
  // Restore: the backup serial (captf.io/restore-serial).
  std::optional<std::int64_t> restore_serial{};

  friend bool operator==(const JobOptions&, const JobOptions&) = default;
};

struct Decision {
  Action action = Action::kNone;
  // Set iff action == kRunJob.
  std::optional<api::Operation> operation{};
  Trigger trigger = Trigger::kNone;
  Hold hold = Hold::kNone;
  // When to reconcile again without an event; nullopt: only on events.
  // Set for every hold that a timer resolves (backoff, schedule, approval
  // and state re-checks).
  std::optional<Seconds> requeue_after{};
  // For kRunJob.
  JobOptions job{};
  // For kRunJob: the attempt and tick of the Job name (names.h jobName).
  std::int32_t attempt = 0;
  std::string tick{};
  // The inputs hash the Job renders: the current one, or for destroy the
  // state's (the durable inputs' hash) when there is no current one; ""
  // for restore.
  std::string inputs_hash{};
  // Remove captf.io/restore-state (a restore of that serial already
  // succeeded).
  bool remove_restore_annotation = false;
  // kCleanup without a destroy of an object that had state: its
  // infrastructure is left behind, as `orphan_accepted` allowed (Warning
  // Event ResourcesOrphaned).
  bool orphaned = false;
  // Drift remediation is wanted but failed failed_jobs_history_limit times
  // since the last successful drift check: it stays pending until the next
  // check (DriftDetected=True/DriftPending says so).
  bool remediation_cap_reached = false;
  // A kind with plan_approval under applyPolicy Automatic with a status.plan left
  // from Manual: clear it (docs/reference/api.md: switching to Automatic applies whatever
  // was waiting and clears status.plan).
  bool clear_plan = false;

  friend bool operator==(const Decision&, const Decision&) = default;
};

// The decision. Preconditions: none checked beyond the snapshot itself; an
// active Job in `jobs` yields Hold::kActiveJob.
//
// Order (first match wins), docs/behaviour/lifecycle.md#choosing-the-next-operation:
//   active Job → paused → restore (not deleting) → deletion (which restores
//   first when the state is lost or unreadable and a restore is asked for)
//   → state lost / unreadable → apply rows 3–7 with the approval overlay →
//   schedules.
// See docs/decisions/lifecycle-decision.md for the points the spec leaves
// open.
Decision decideNextOperation(const DecisionInput& input);

// The reading operations that recur for the object on its schedule
// (docs/behaviour/drift-and-health.md#scheduling), as far as its spec and
// status say, whether or not one can start now: drift with a drift
// interval; refresh with a recurring refresh row (a pool's membership
// refresh, a provisioned machine's health checks, the backoff while health
// reads `pending`). Neither while paused or deleting. The one-off post-apply
// refresh and a pool's convergence refreshes do not make refresh recurring.
// The drift and refresh series of captf_last_success_timestamp_seconds
// exist exactly while these are true (docs/runbooks/CAPTFNoRecentSuccess.md).
struct RecurringReadings {
  bool drift = false;
  bool refresh = false;

  friend bool operator==(const RecurringReadings&, const RecurringReadings&) = default;
};
// Reads traits, deleting, paused, provisioned, pending_refreshes and schedule.
RecurringReadings recurringReadings(const DecisionInput& input);

// For metrics and logs: "restore", "destroy", "first_apply",
// "no_inputs_hash", "inputs_changed", "retry_failed_apply",
// "drift_remediation", "post_apply_refresh", "membership_converging",
// "health_pending", "membership_interval", "health_check_interval",
// "drift_interval", "none".
std::string_view triggerName(Trigger trigger);
// "none", "active_job", "paused", "restore_backup_not_found",
// "restore_failed", "restore_done", "state_lost", "state_unreadable",
// "inputs_too_large", "destroy_inputs_missing", "destructive_plan_blocked",
// "plan_awaiting_approval", "plan_changed", "inputs_unavailable",
// "retry_backoff", "not_due".
std::string_view holdName(Hold hold);
// The `reason` label of captf_reconcile_op_decisions_total: the hold when
// something holds the operation back, else the trigger ("cleanup" for
// Action::kCleanup).
std::string_view reasonName(const Decision& decision);
// The `op` label: the operation, or "none".
std::string_view opLabel(const Decision& decision);

} // namespace captf::lifecycle
