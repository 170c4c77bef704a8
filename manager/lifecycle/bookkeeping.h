#pragma once

// The pure part of bookkeeping a finished run Job
// (docs/decisions/manager-reconcile-pass.md, "Bookkeeping split"): what the
// run's outcome was, read from the runner's result document and what the Job
// and its pod say (classifyFinishedRun), and everything that follows from it
// (consequencesOf): the Job's marks, the status fields, the operation's
// condition and reason, drift after the run, the Events and the metric
// changes. The controller gathers the facts, does the writes and applies the
// result; nothing here reads a clock or talks to the API server.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "manager/api/conditions.h"
#include "manager/api/workspace.h"
#include "manager/lifecycle/history.h"
#include "manager/lifecycle/names.h"
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

// The values of the `step` label of captf_job_step_duration_seconds and
// captf_job_errors_total (docs/reference/metrics.md): the runner's steps the
// metrics name, and `none` for an error without a step. Any other step (a
// newer runner's, or `fetch`) is counted as `other`, so the label's values
// stay this list whatever a runner reports.
inline constexpr std::array<std::string_view, 12> kMetricStepLabels = {
    "prepare", "init",    "force-unlock",       "validate",   "plan",       "show-json",
    "apply",   "destroy", "apply-refresh-only", "state-push", "state-list", "none"};
std::string metricStepLabel(std::string_view step);

// ---- Approval hints ---------------------------------------------------------------

// `kubectl -n <ns> annotate <resource> <name> <key>=<value> --overwrite`:
// the command a message tells the user to run. `resource` is the kubectl
// resource of the object's kind ("terraformcluster").
std::string approveCommand(std::string_view resource, const ObjectIdentity& id,
                           std::string_view key, std::string_view value);
// "plan <hash> awaits approval: <command>" (ApplyJobSucceeded=Unknown/PlanAwaitingApproval).
std::string planAwaitingApprovalMessage(std::string_view resource, const ObjectIdentity& id,
                                        std::string_view plan_hash);
// The message of ApplyJobSucceeded=Unknown/PlanChanged: the new plan and how
// to approve it.
std::string planChangedMessage(std::string_view resource, const ObjectIdentity& id,
                               std::string_view plan_hash);

// ---- What follows from a finished run ----------------------------------------------

// What the pass knows, beside the run's classification, when it bookkeeps one
// finished Job. Jobs are bookkept newest first within a pass, so the status
// facts are the status as the pass has built it so far (a newer Job of the
// same pass may already have changed it), not as read.
struct RunFacts {
  // The object.
  std::string kind;     // "TerraformCluster": the kind label of every metric
  std::string resource; // "terraformcluster": the kubectl resource in hints
  ObjectIdentity id;
  api::Time now; // the pass's time: status times and the last-success gauge

  // The Job: its record, with the outcome as classified.
  JobRecord job;
  bool deadline_exceeded = false; // the Job's DeadlineExceeded failure
  // The source container's imageID ("" when the pod is gone).
  std::string image_id;
  // captf.io/git-commit of the Job (Git sources).
  std::optional<std::string> git_commit;
  // Seconds from the Job's creation to its completion (or to now when it
  // has no completion time); nullopt when the times do not parse.
  std::optional<double> duration_seconds;
  // Seconds from the Job's creation to its source container's start; only
  // with duration_seconds, and when the pod says when it started.
  std::optional<double> queue_seconds;
  // Every retained Job of the object, this one classified (attempts).
  std::vector<JobRecord> records;

  // The object's spec and status.
  std::string source_image;                // the image the source container runs per spec
  std::optional<api::SourceStatus> source; // status.source so far
  std::optional<std::string> approve_destructive_plan;       // the annotation's value
  std::optional<std::string> approve_plan;                   // the annotation's value
  api::DriftAction drift_action = api::DriftAction::kReport; // effective schedule
  // DriftDetected in the status built so far (nullopt: not set).
  std::optional<api::ConditionStatus> drift_detected;
  // DriftDetected's reason in the status as read ("" when none).
  std::string original_drift_reason;
  std::optional<api::Time> last_drift_check; // status.lastDriftCheck so far
  // A newer Job bookkept in this pass already gave the health sample.
  bool health_sampled = false;
};

// The Event type (kube::EventType, without the dependency).
enum class EventType { kNormal, kWarning };

// When an Event of the consequences is recorded.
enum class EventGate {
  kAlways,
  // Only when the set of `condition` (in Consequences::conditions) was a
  // transition (new, or status or reason changed).
  kOnTransition,
  // Only when the digest pin landed (the durable inputs Secret exists).
  kOnDigestPinned,
};

struct RunEvent {
  EventType type = EventType::kNormal;
  std::string_view reason; // a literal
  std::string message;
  EventGate gate = EventGate::kAlways;
  std::string_view condition; // kOnTransition: the condition's type

  friend bool operator==(const RunEvent&, const RunEvent&) = default;
};

// A condition of the object's status to set (lifecycle::setCondition).
struct ConditionUpdate {
  std::string_view type; // api::conditions::k*
  api::ConditionStatus status = api::ConditionStatus::kUnknown;
  std::string_view reason; // api::conditions::kReason*
  std::string message;

  friend bool operator==(const ConditionUpdate&, const ConditionUpdate&) = default;
};

// The captf_* families bookkeeping moves (manager/controllers/metrics.h
// registers them).
enum class CounterMetric {
  kJobsTotal,                             // kind, op, result
  kJobErrorsTotal,                        // kind, op, error_kind, step
  kResourcesChangedTotal,                 // kind, op, action
  kDriftResourcesTotal,                   // kind, action
  kDestructivePlanApprovalsConsumedTotal, // kind
  kPlanApprovalsTotal,                    // kind, result
  kStateRestoresTotal,                    // kind, result
};
enum class HistogramMetric {
  kJobDurationSeconds,     // kind, op, result
  kJobStepDurationSeconds, // kind, op, step
  kJobQueueSeconds,        // kind, op
  kJobAttempts,            // kind, op
};
enum class GaugeMetric {
  kLastSuccessTimestampSeconds, // kind, namespace, name, op
};

// An increment (counters), an observation (histograms) or a value (gauges).
template <class Family> struct MetricChange {
  Family family;
  std::vector<std::string> labels;
  double value = 1;

  friend bool operator==(const MetricChange&, const MetricChange&) = default;
};

// status.plan after the run (kinds with plan approval only).
enum class PlanChange { kKeep, kSet, kClear };

// Everything the controller does for one finished Job, in this order:
// the Job's marks; adopt the state; pin the digest; remove the object's
// annotations; set the status fields and conditions; record the Events;
// set the gauges now; count and observe after the status patch (with the
// pass's other counts); record the run history with `result`; remove the
// per-run Secret and release the Leases the Job held (always). Nothing here
// asks for a requeue or a backoff: the decision reads both from the Job's
// marks and outcome (JobRecord) on the next pass.
struct Consequences {
  // The Job.
  JobOutcome job_outcome = JobOutcome::kFailed; // its record from now on
  // Annotations set to "true" on the Job, in order (captf.io/plan-unreadable,
  // then the FinishedRun's mark).
  std::vector<std::string_view> job_marks;
  // captf_jobs_total{result} and the run history's result: the outcome's
  // (workspace::jobsTotalResult), "deadline" for a failed Job at its deadline.
  std::string result;

  // Writes before the status (idempotent: a pass cut short repeats them).
  // A succeeded apply or restore: adopt the state with the Job's inputs hash.
  bool adopt_state = false;
  // A succeeded apply whose image digest is known: pinned on the durable
  // inputs Secret (a missing Secret is no error and records no Event).
  std::optional<std::string> pin_digest;
  // Annotations of the object to remove (consumed approvals), in order.
  std::vector<std::string_view> remove_annotations;

  // Status.
  api::LastRun last_run;                   // status.lastRun
  std::optional<api::SourceStatus> source; // status.source (a succeeded apply)
  PlanChange plan_change = PlanChange::kKeep;
  api::PlanPreview plan;                     // kSet
  std::optional<api::Time> last_refresh;     // status.lastRefresh
  std::optional<api::Time> last_drift_check; // status.lastDriftCheck
  // The run read the instance's health (a succeeded apply, refresh or drift
  // no newer Job of the pass gave): the pass's health sample is this
  // operation, finished at the Job's finish time.
  std::optional<api::Operation> health_sample;
  std::vector<ConditionUpdate> conditions; // set in order

  std::vector<RunEvent> events; // recorded in order, subject to their gates
  std::vector<MetricChange<CounterMetric>> counts;
  std::vector<MetricChange<HistogramMetric>> observations;
  std::vector<MetricChange<GaugeMetric>> gauges;
};

// What follows from finished run `run` (classifyFinishedRun of the Job) of
// the object `facts` describe. Per operation:
// - apply/destroy/plan own ApplyJobSucceeded: ApplySucceeded /
//   DestroySucceeded; a succeeded plan with a summary sets status.plan and
//   PlanAwaitingApproval (PlanReady); DestructivePlanBlocked
//   (DestructivePlanBlocked); PlanChanged (PlanChanged, counted
//   plan_approvals_total{changed}); otherwise ApplyFailed / DestroyFailed,
//   JobDeadlineExceeded, ImageInvalid.
// - A succeeded apply adopts the state, pins the digest (DigestPinned /
//   DigestUnknown), writes status.source, consumes the approvals that match
//   (DestructivePlanApprovalConsumed, PlanApplied) and resolves drift found
//   before it (DriftResolved); a remediation apply that did not succeed
//   leaves the drift pending.
// - drift/refresh own DriftJobSucceeded: DriftChecked, with lastRefresh (and
//   for drift lastDriftCheck and DriftDetected: DriftPending / DriftReported
//   with DriftDetected and drift_resources_total, or NoDrift with
//   DriftResolved on a transition from a checked state); DriftJobFailed /
//   DriftJobDeadlineExceeded.
// - restore owns RestoreJobSucceeded: StateRestored (state adopted) or
//   RestoreFailed, with state_restores_total.
// Every run counts jobs_total and its durations; a success observes
// job_attempts (1 + the failures of earlier attempts since the last
// success), sets last_success_timestamp_seconds and records
// JobSucceeded (not for plan); a failure counts job_errors_total and
// records JobDeadlineExceeded, JobInterrupted or JobFailed.
Consequences consequencesOf(const FinishedRun& run, const RunFacts& facts);

} // namespace captf::lifecycle
