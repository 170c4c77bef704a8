#include "manager/lifecycle/bookkeeping.h"

#include <algorithm>

#include "manager/api/keys.h"
#include "manager/lifecycle/schedule.h"
#include "manager/workspace/secrets.h"

namespace captf::lifecycle {

namespace cond = api::conditions;
using api::ConditionStatus;
using workspace::RunOutcome;

std::string metricStepLabel(std::string_view step) {
  return std::find(kMetricStepLabels.begin(), kMetricStepLabels.end(), step) !=
                 kMetricStepLabels.end()
             ? std::string(step)
             : std::string("other");
}

FinishedRun classifyFinishedRun(const FinishedJobFacts& facts) {
  FinishedRun run;
  auto report = workspace::parseRunResult(
      facts.job, facts.operation,
      facts.termination_message ? std::optional<std::string_view>(*facts.termination_message)
                                : std::nullopt);
  if (report.ok()) {
    run.report = *report;
    run.last_run = report->last_run;
    run.outcome = report->outcome;
    if (facts.job_succeeded) {
      run.outcome = workspace::RunOutcome::kSucceeded;
    } else if (run.outcome == workspace::RunOutcome::kSucceeded) {
      run.outcome = workspace::RunOutcome::kFailed; // the Job failed after a good result
    }
  } else {
    run.last_run = workspace::lastRunWithoutResult(facts.job, facts.operation);
    run.outcome =
        facts.job_succeeded ? workspace::RunOutcome::kSucceeded : workspace::RunOutcome::kFailed;
    if (!facts.job_succeeded && !facts.pod_exists && !facts.deadline_exceeded &&
        !facts.termination_message) {
      run.outcome = workspace::RunOutcome::kInterrupted;
    }
    run.plan_unreadable = facts.operation == api::Operation::kPlan;
  }
  // A restore that hit its deadline failed, even when the runner reported
  // the SIGTERM as `interrupted`: it is not retried for the same serial
  // (docs/behaviour/state.md#restore), where other operations retry an
  // interrupted run at once.
  if (facts.operation == api::Operation::kRestore && facts.deadline_exceeded &&
      run.outcome == workspace::RunOutcome::kInterrupted) {
    run.outcome = workspace::RunOutcome::kFailed;
  }
  switch (run.outcome) {
  case workspace::RunOutcome::kInterrupted:
    run.mark = api::kAnnotationInterrupted;
    run.job_outcome = JobOutcome::kInterrupted;
    break;
  case workspace::RunOutcome::kBlocked:
    run.mark = api::kAnnotationDestructivePlanBlocked;
    run.job_outcome = JobOutcome::kBlocked;
    break;
  case workspace::RunOutcome::kPlanChanged:
    run.mark = api::kAnnotationPlanChanged;
    run.job_outcome = JobOutcome::kPlanChanged;
    break;
  case workspace::RunOutcome::kSucceeded:
    run.job_outcome = JobOutcome::kSucceeded;
    break;
  case workspace::RunOutcome::kFailed:
    run.job_outcome = JobOutcome::kFailed;
    break;
  }
  return run;
}

// ---- Approval hints ---------------------------------------------------------------

std::string approveCommand(std::string_view resource, const ObjectIdentity& id,
                           std::string_view key, std::string_view value) {
  std::string command = "kubectl -n " + id.ns + " annotate ";
  command.append(resource).append(" ").append(id.name).append(" ");
  command.append(key).append("=").append(value).append(" --overwrite");
  return command;
}

std::string planAwaitingApprovalMessage(std::string_view resource, const ObjectIdentity& id,
                                        std::string_view plan_hash) {
  return "plan " + std::string(plan_hash) + " awaits approval: " +
         approveCommand(resource, id, api::kAnnotationApprovePlan, plan_hash);
}

std::string planChangedMessage(std::string_view resource, const ObjectIdentity& id,
                               std::string_view plan_hash) {
  return "the approved plan changed; new plan " + std::string(plan_hash) + " awaits approval: " +
         approveCommand(resource, id, api::kAnnotationApprovePlan, plan_hash);
}

// ---- What follows from a finished run ----------------------------------------------

namespace {

// "+<add> ~<change> -<destroy>".
template <class Counts> std::string countsOf(const Counts& c) {
  return "+" + std::to_string(c.add.value_or(0)) + " ~" + std::to_string(c.change.value_or(0)) +
         " -" + std::to_string(c.destroy.value_or(0));
}

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& value : values) {
    if (!out.empty()) {
      out += ", ";
    }
    out += value;
  }
  return out;
}

// One bookkeeping's consequences as they are built.
class Builder {
public:
  Builder(const FinishedRun& run, const RunFacts& facts, Consequences& out)
      : run_(run), facts_(facts), out_(out), op_(std::string(api::enumName(facts.job.operation))) {}

  void build();

private:
  bool succeeded() const { return run_.outcome == RunOutcome::kSucceeded; }
  const std::string& job() const { return facts_.job.name; }
  const workspace::RunReport* report() const { return run_.report ? &*run_.report : nullptr; }
  const api::PlanPreview* reportedPlan() const {
    return run_.report && run_.report->plan ? &*run_.report->plan : nullptr;
  }

  void set(std::string_view type, ConditionStatus status, std::string_view reason,
           std::string message) {
    out_.conditions.push_back({type, status, reason, std::move(message)});
  }
  void event(EventType type, std::string_view reason, std::string message,
             EventGate gate = EventGate::kAlways, std::string_view condition = {}) {
    out_.events.push_back({type, reason, std::move(message), gate, condition});
  }
  void count(CounterMetric family, std::vector<std::string> labels, double value = 1) {
    out_.counts.push_back({family, std::move(labels), value});
  }
  void observe(HistogramMetric family, std::vector<std::string> labels, double value) {
    out_.observations.push_back({family, std::move(labels), value});
  }
  // status.plan from the run's summary.
  void setPlan(const api::PlanPreview& reported) {
    out_.plan_change = PlanChange::kSet;
    out_.plan = reported;
    out_.plan.inputs_hash = facts_.job.inputs_hash;
    out_.plan.job = job();
    out_.plan.created_at = facts_.now;
  }

  void jobMarks();
  void succeededApply();
  void driftAfterApply();
  void healthSample();
  void applyCondition();
  void driftCondition();
  void restoreCondition();
  void jobMetricsAndEvents();

  const FinishedRun& run_;
  const RunFacts& facts_;
  Consequences& out_;
  const std::string op_;
  std::string summary_; // the error summary of the run ("" when none)
};

void Builder::build() {
  const api::Operation op = facts_.job.operation;
  out_.job_outcome = run_.job_outcome;
  out_.last_run = run_.last_run;
  out_.result = std::string(workspace::jobsTotalResult(run_.outcome));
  if (facts_.deadline_exceeded && !succeeded()) {
    out_.result = "deadline";
  }
  if (run_.last_run.error && run_.last_run.error->summary) {
    summary_ = *run_.last_run.error->summary;
  }
  jobMarks();
  if (succeeded() && (op == api::Operation::kApply || op == api::Operation::kRestore)) {
    // A restore adopts the restored state with the backup's inputs hash
    // (the restore Job carries it), so current inputs that differ re-apply.
    out_.adopt_state = true;
  }
  if (succeeded() && op == api::Operation::kApply) {
    succeededApply();
  }
  if (op == api::Operation::kApply) {
    driftAfterApply();
  }
  healthSample();
  switch (op) {
  case api::Operation::kApply:
  case api::Operation::kDestroy:
  case api::Operation::kPlan:
    applyCondition();
    break;
  case api::Operation::kDrift:
  case api::Operation::kRefresh:
    driftCondition();
    break;
  case api::Operation::kRestore:
    restoreCondition();
    break;
  }
  jobMetricsAndEvents();
}

// Marks the next passes (and the decision) read back from the Job.
void Builder::jobMarks() {
  if (run_.plan_unreadable) {
    out_.job_marks.push_back(api::kAnnotationPlanUnreadable);
  }
  if (run_.mark) {
    out_.job_marks.push_back(*run_.mark);
  }
}

// Digest pinning, status.source and the approvals a succeeded apply used.
void Builder::succeededApply() {
  const std::optional<std::string> digest = workspace::digestFromImageId(facts_.image_id);
  if (digest) {
    out_.pin_digest = *digest;
    event(EventType::kNormal, "DigestPinned",
          "image " + facts_.source_image + " pinned to " + *digest, EventGate::kOnDigestPinned);
  } else {
    event(EventType::kWarning, "DigestUnknown", "no image digest could be pinned for Job " + job());
  }
  api::SourceStatus source;
  source.image =
      report() != nullptr && !report()->image.empty() ? report()->image : facts_.source_image;
  if (digest) {
    source.image_digest = *digest;
  }
  source.commit = facts_.git_commit;
  if (facts_.source) { // what the ref watcher reported this pass
    source.latest_commit = facts_.source->latest_commit;
    source.resolved_at = facts_.source->resolved_at;
  }
  if (report() != nullptr && !report()->runtime_version.empty()) {
    source.runtime_version = report()->runtime_version;
  }
  out_.source = std::move(source);

  const JobRecord& record = facts_.job;
  if (facts_.approve_destructive_plan && *facts_.approve_destructive_plan == record.inputs_hash) {
    out_.remove_annotations.push_back(api::kAnnotationApproveDestructivePlan);
    count(CounterMetric::kDestructivePlanApprovalsConsumedTotal, {facts_.kind});
    event(EventType::kNormal, "DestructivePlanApprovalConsumed",
          "the approval of inputs " + record.inputs_hash + " was used and removed");
  }
  if (!record.approved_plan.empty()) {
    if (facts_.approve_plan && *facts_.approve_plan == record.approved_plan) {
      out_.remove_annotations.push_back(api::kAnnotationApprovePlan);
    }
    out_.plan_change = PlanChange::kClear;
    count(CounterMetric::kPlanApprovalsTotal, {facts_.kind, "approved"});
    event(EventType::kNormal, "PlanApplied", "approved plan " + record.approved_plan + " applied");
  }
}

// docs/behaviour/drift-and-health.md: an apply that succeeded after the check that found drift (the
// remediation, or any apply: it converged reality to the inputs) resolves it
// at once (docs/decisions/lifecycle-decision.md, open question 30); a
// remediation that failed, was blocked or found its plan changed leaves it
// pending.
void Builder::driftAfterApply() {
  const JobRecord& record = facts_.job;
  // Bookkeeping runs newest Job first: an older apply bookkept in the same
  // pass as a newer drift check must not clear what that check found.
  const auto& checked = facts_.last_drift_check;
  const bool after_check = !checked || !record.finished || record.finished->value > checked->value;
  const bool drifted = facts_.drift_detected == ConditionStatus::kTrue;
  if (succeeded() && drifted && after_check) {
    std::string note =
        (record.drift_remediation ? "remediation apply " : "apply ") + job() + " succeeded";
    set(cond::kDriftDetected, ConditionStatus::kFalse, cond::kReasonNoDrift, note);
    event(EventType::kNormal, "DriftResolved", std::move(note));
  } else if (!succeeded() && record.drift_remediation) {
    set(cond::kDriftDetected, ConditionStatus::kTrue, cond::kReasonDriftPending,
        "remediation apply " + job() + " " + std::string(workspace::jobsTotalResult(run_.outcome)) +
            "; the drift is still pending");
  }
}

void Builder::healthSample() {
  const api::Operation op = facts_.job.operation;
  if (succeeded() &&
      (op == api::Operation::kApply || op == api::Operation::kRefresh ||
       op == api::Operation::kDrift) &&
      !facts_.health_sampled) {
    // Newest first: the newest reading is the sample.
    out_.health_sample = op;
  }
}

// ApplyJobSucceeded of an apply, destroy or plan.
void Builder::applyCondition() {
  const api::Operation op = facts_.job.operation;
  const bool destroy = op == api::Operation::kDestroy;
  switch (run_.outcome) {
  case RunOutcome::kSucceeded:
    if (op != api::Operation::kPlan) {
      set(cond::kApplyJobSucceeded, ConditionStatus::kTrue,
          destroy ? cond::kReasonDestroySucceeded : cond::kReasonApplySucceeded, "");
    } else if (const api::PlanPreview* reported = reportedPlan()) {
      setPlan(*reported);
      const std::string& hash = out_.plan.plan_hash;
      set(cond::kApplyJobSucceeded, ConditionStatus::kUnknown, cond::kReasonPlanAwaitingApproval,
          planAwaitingApprovalMessage(facts_.resource, facts_.id, hash));
      event(EventType::kNormal, "PlanReady",
            "plan " + hash + " of Job " + job() + ": " + countsOf(out_.plan) + "; approve with " +
                approveCommand(facts_.resource, facts_.id, api::kAnnotationApprovePlan, hash));
    }
    break;
  case RunOutcome::kBlocked: {
    const std::string resources =
        reportedPlan() != nullptr ? joined(reportedPlan()->resources) : "";
    set(cond::kApplyJobSucceeded, ConditionStatus::kFalse, cond::kReasonDestructivePlanBlocked,
        "Job " + job() + " stopped before a plan that deletes or replaces " +
            (resources.empty() ? std::string("resources") : resources) + "; approve with " +
            approveCommand(facts_.resource, facts_.id, api::kAnnotationApproveDestructivePlan,
                           facts_.job.inputs_hash));
    event(EventType::kWarning, "DestructivePlanBlocked",
          "Job " + job() + " planned to delete or replace resources; inputs " +
              facts_.job.inputs_hash + " need captf.io/approve-destructive-plan");
    break;
  }
  case RunOutcome::kPlanChanged:
    if (const api::PlanPreview* reported = reportedPlan()) {
      setPlan(*reported);
      set(cond::kApplyJobSucceeded, ConditionStatus::kUnknown, cond::kReasonPlanChanged,
          planChangedMessage(facts_.resource, facts_.id, out_.plan.plan_hash));
    }
    count(CounterMetric::kPlanApprovalsTotal, {facts_.kind, "changed"});
    event(EventType::kWarning, "PlanChanged",
          "Job " + job() + " planned different changes than approved");
    break;
  case RunOutcome::kFailed:
  case RunOutcome::kInterrupted: {
    std::string_view reason = destroy ? cond::kReasonDestroyFailed : cond::kReasonApplyFailed;
    if (facts_.deadline_exceeded) {
      reason = cond::kReasonJobDeadlineExceeded;
    } else if (report() != nullptr && report()->error_kind == api::RunErrorKind::kImageLayout) {
      reason = cond::kReasonImageInvalid;
    }
    set(cond::kApplyJobSucceeded, ConditionStatus::kFalse, reason,
        "Job " + job() +
            (run_.outcome == RunOutcome::kInterrupted ? " was interrupted" : " failed") +
            (summary_.empty() ? std::string() : ": " + summary_));
    break;
  }
  }
}

// DriftJobSucceeded of a drift or refresh, and what a drift check found.
void Builder::driftCondition() {
  if (!succeeded()) {
    set(cond::kDriftJobSucceeded, ConditionStatus::kFalse,
        facts_.deadline_exceeded ? cond::kReasonDriftJobDeadlineExceeded
                                 : cond::kReasonDriftJobFailed,
        "Job " + job() + " failed" + (summary_.empty() ? std::string() : ": " + summary_));
    return;
  }
  set(cond::kDriftJobSucceeded, ConditionStatus::kTrue, cond::kReasonDriftChecked, "");
  out_.last_refresh = facts_.now;
  if (facts_.job.operation != api::Operation::kDrift) {
    return;
  }
  out_.last_drift_check = facts_.now;
  if (report() != nullptr && report()->drift_found) {
    const auto& d = report()->last_run.drift;
    const std::string counts = d ? countsOf(*d) : std::string();
    const bool remediate = facts_.drift_action == api::DriftAction::kRemediate;
    set(cond::kDriftDetected, ConditionStatus::kTrue,
        remediate ? cond::kReasonDriftPending : cond::kReasonDriftReported,
        "Job " + job() + " found drift " + counts);
    event(EventType::kWarning, "DriftDetected", "Job " + job() + " found drift " + counts);
    if (d) {
      count(CounterMetric::kDriftResourcesTotal, {facts_.kind, "add"}, d->add.value_or(0));
      count(CounterMetric::kDriftResourcesTotal, {facts_.kind, "change"}, d->change.value_or(0));
      count(CounterMetric::kDriftResourcesTotal, {facts_.kind, "destroy"}, d->destroy.value_or(0));
    }
    return;
  }
  set(cond::kDriftDetected, ConditionStatus::kFalse, cond::kReasonNoDrift,
      "Job " + job() + " found no drift");
  // Resolved only when drift had been checked before (not on the first check).
  if (!facts_.original_drift_reason.empty() &&
      facts_.original_drift_reason != cond::kReasonDriftNotChecked) {
    event(EventType::kNormal, "DriftResolved", "no drift any more", EventGate::kOnTransition,
          cond::kDriftDetected);
  }
}

// RestoreJobSucceeded of a restore.
void Builder::restoreCondition() {
  if (succeeded()) {
    set(cond::kRestoreJobSucceeded, ConditionStatus::kTrue, cond::kReasonStateRestored, "");
    event(EventType::kNormal, "StateRestored", "Job " + job() + " restored state");
    count(CounterMetric::kStateRestoresTotal, {facts_.kind, "succeeded"});
    return;
  }
  set(cond::kRestoreJobSucceeded, ConditionStatus::kFalse, cond::kReasonRestoreFailed,
      "Job " + job() + " failed" + (summary_.empty() ? std::string() : ": " + summary_));
  event(EventType::kWarning, "StateRestoreFailed", "Job " + job() + " failed");
  count(CounterMetric::kStateRestoresTotal, {facts_.kind, "failed"});
}

// The Events and metrics of every finished Job.
void Builder::jobMetricsAndEvents() {
  const std::string& kind = facts_.kind;
  const api::Operation op = facts_.job.operation;
  count(CounterMetric::kJobsTotal, {kind, op_, out_.result});
  if (facts_.duration_seconds) {
    observe(HistogramMetric::kJobDurationSeconds, {kind, op_, out_.result},
            *facts_.duration_seconds);
    if (facts_.queue_seconds) {
      observe(HistogramMetric::kJobQueueSeconds, {kind, op_}, *facts_.queue_seconds);
    }
  }
  for (const api::RunStep& step : run_.last_run.steps) {
    if (step.duration_milliseconds) {
      observe(HistogramMetric::kJobStepDurationSeconds, {kind, op_, metricStepLabel(step.name)},
              static_cast<double>(*step.duration_milliseconds) / 1000.0);
    }
  }
  if (report() != nullptr && report()->changes) {
    const auto& c = *report()->changes;
    count(CounterMetric::kResourcesChangedTotal, {kind, op_, "add"}, c.add());
    count(CounterMetric::kResourcesChangedTotal, {kind, op_, "change"}, c.change());
    count(CounterMetric::kResourcesChangedTotal, {kind, op_, "destroy"}, c.destroy());
    count(CounterMetric::kResourcesChangedTotal, {kind, op_, "import"}, c.import());
  }
  if (succeeded()) {
    // 1 + the failed Jobs of the operation since it last succeeded before
    // this one: the Jobs of earlier attempts (this success and any newer Job
    // would end the count at once).
    std::vector<JobRecord> earlier;
    for (const JobRecord& record : facts_.records) {
      if (record.operation == op && record.attempt < facts_.job.attempt) {
        earlier.push_back(record);
      }
    }
    observe(HistogramMetric::kJobAttempts, {kind, op_}, 1 + consecutiveFailures(earlier, op));
    // Drift and refresh series are the reconciler's, from status and the
    // schedule, so they exist only while the reading is scheduled
    // (docs/runbooks/CAPTFNoRecentSuccess.md).
    if (op != api::Operation::kDrift && op != api::Operation::kRefresh) {
      out_.gauges.push_back({GaugeMetric::kLastSuccessTimestampSeconds,
                             {kind, facts_.id.ns, facts_.id.name, op_},
                             static_cast<double>(facts_.now.value.time_since_epoch().count())});
    }
    if (op != api::Operation::kPlan) {
      event(EventType::kNormal, "JobSucceeded", op_ + " Job " + job() + " succeeded");
    }
    return;
  }
  const workspace::RunReport* parsed = report();
  const std::string error_kind = facts_.deadline_exceeded
                                     ? "deadline"
                                     : (parsed != nullptr && parsed->error_kind
                                            ? std::string(api::enumName(*parsed->error_kind))
                                            : std::string("unknown"));
  const std::string step = run_.last_run.error && run_.last_run.error->step
                               ? *run_.last_run.error->step
                               : std::string("none");
  count(CounterMetric::kJobErrorsTotal, {kind, op_, error_kind, metricStepLabel(step)});
  if (facts_.deadline_exceeded) {
    event(EventType::kWarning, "JobDeadlineExceeded", op_ + " Job " + job() + " hit its deadline");
  } else if (run_.outcome == RunOutcome::kInterrupted) {
    event(EventType::kWarning, "JobInterrupted",
          op_ + " Job " + job() + " was stopped from outside; retrying without backoff");
  } else if (run_.outcome == RunOutcome::kFailed) {
    event(EventType::kWarning, "JobFailed",
          op_ + " Job " + job() + " failed" + (summary_.empty() ? "" : ": " + summary_));
  }
}

} // namespace

Consequences consequencesOf(const FinishedRun& run, const RunFacts& facts) {
  Consequences out;
  Builder(run, facts, out).build();
  return out;
}

} // namespace captf::lifecycle
