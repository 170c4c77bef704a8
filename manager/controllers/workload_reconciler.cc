#include "manager/controllers/workload_reconciler.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include "contract/digest.h"
#include "contract/git_source.h"
#include "contract/render.h"
#include "contract/report.h"
#include "contract/status_macros.h"
#include "contract/strings.h"
#include "manager/api/codec.h"
#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "manager/kube/patch.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/bookkeeping.h"
#include "manager/lifecycle/decision.h"
#include "manager/lifecycle/defaults.h"
#include "manager/lifecycle/history.h"
#include "manager/lifecycle/job_builder.h"
#include "manager/lifecycle/leases.h"
#include "manager/lifecycle/names.h"
#include "manager/lifecycle/pass.h"
#include "manager/lifecycle/ready.h"
#include "manager/lifecycle/schedule.h"
#include "manager/workspace/backups.h"
#include "manager/workspace/inputs.h"
#include "manager/workspace/locks.h"
#include "manager/workspace/names.h"
#include "manager/workspace/outputs.h"
#include "manager/workspace/result.h"
#include "manager/workspace/run_history.h"
#include "manager/workspace/secrets.h"
#include "manager/workspace/set_aside.h"
#include "manager/workspace/state.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

constexpr std::chrono::minutes kStuckJobAge{1};

using kube::str;

ConditionStatus toStatus(const std::string& s) {
  return s == "True" ? ConditionStatus::kTrue
                     : (s == "False" ? ConditionStatus::kFalse : ConditionStatus::kUnknown);
}

api::Time toApiTime(kube::WallTime t) {
  return api::Time{std::chrono::time_point_cast<std::chrono::seconds>(t)};
}

} // namespace

// ---- WorkloadPass --------------------------------------------------------------

bool WorkloadPass::set(std::string_view type, ConditionStatus condition_status,
                       std::string_view reason, const std::string& message) {
  return lifecycle::setCondition(status->conditions, type, condition_status, reason, message,
                                 generation, now) == lifecycle::ConditionChange::kTransition;
}

bool WorkloadPass::set(std::string_view type, const ConditionResult& condition) {
  return set(type, toStatus(condition.status), condition.reason, condition.message);
}

void WorkloadPass::event(kube::EventType type, std::string_view reason,
                         const std::string& note) const {
  events->event(object, type, reason, "Reconcile", note);
}

std::string WorkloadPass::originalReason(std::string_view type) const {
  const api::Condition* c = lifecycle::findCondition(original->conditions, type);
  return c == nullptr ? "" : c->reason;
}

std::string WorkloadPass::currentReason(std::string_view type) const {
  const api::Condition* c = lifecycle::findCondition(status->conditions, type);
  return c == nullptr ? "" : c->reason;
}

bool WorkloadPass::latched() const {
  return status->initialization && status->initialization->provisioned.value_or(false);
}

std::vector<lifecycle::JobRecord> WorkloadPass::records() const {
  std::vector<lifecycle::JobRecord> out;
  out.reserve(jobs.size());
  for (const RunJob& run : jobs) {
    out.push_back(run.record);
  }
  return out;
}

bool reportOutputs(WorkloadPass& pass, CaptfMetrics& metrics, workspace::OutputsVerdict verdict,
                   const std::string& message) {
  const bool usable = workspace::outputsUsable(verdict);
  ConditionStatus status = ConditionStatus::kUnknown;
  if (usable) {
    status = ConditionStatus::kTrue;
  } else if (verdict != workspace::OutputsVerdict::kPending) {
    status = ConditionStatus::kFalse;
  }
  if (pass.set(cond::kOutputsValid, status, workspace::outputsReason(verdict), message) &&
      status == ConditionStatus::kFalse) {
    pass.count(metrics.outputs_invalid_total.withLabels(
        {pass.object.value("kind", ""), str(workspace::outputsReason(verdict))}));
    pass.event(kube::EventType::kWarning, "OutputsInvalid", message);
  }
  return usable;
}

void reportHealth(WorkloadPass& pass, const workspace::HealthCondition& health) {
  const bool changed =
      pass.set(cond::kInfrastructureHealthy, health.status, health.reason, health.message);
  if (changed && health.status == ConditionStatus::kTrue) {
    pass.event(kube::EventType::kNormal, "InstanceHealthy", "infrastructure is healthy");
  } else if (changed && health.status == ConditionStatus::kFalse) {
    pass.event(kube::EventType::kWarning, "InstanceUnhealthy",
               health.reason + (health.message.empty() ? "" : ": " + health.message));
  }
}

void countPendingSample(WorkloadPass& pass, const std::optional<workspace::Health>& health) {
  if (!pass.health_sample) {
    return;
  }
  if (health && health->state == api::HealthState::kPending) {
    pass.status->pending_refreshes = pass.status->pending_refreshes.value_or(0) + 1;
  } else {
    pass.status->pending_refreshes.reset();
  }
}

// ---- WorkloadReconciler ------------------------------------------------------------

WorkloadReconciler::WorkloadReconciler(ReconcilerDeps deps, std::unique_ptr<WorkloadKind> kind)
    : deps_(deps), kind_(std::move(kind)),
      identity_(deps.cached, deps.api, deps.events, deps.metrics), rbac_(deps.cache, deps.api) {}

WorkloadReconciler::~WorkloadReconciler() = default;

std::string WorkloadReconciler::kind() const {
  return kind_->gvk().kind;
}

absl::StatusOr<kube::Result> WorkloadReconciler::reconcile(const kube::ReconcileContext& ctx,
                                                           const kube::Request& request) {
  absl::StatusOr<kube::Result> result = reconcilePass(ctx, request);
  if (kube::isConflict(result.status())) {
    // A guarded write lost a race with a newer one (most often the cache had
    // not yet seen this controller's previous status patch): nothing of the
    // pass was kept after it, and the pass runs again from the newer copy. A
    // lost race, not a reconcile error worth an error line and an alert.
    ctx.log.info("lost a write race, reconciling again",
                 {{"conflict", std::string(result.status().message())}});
    return kube::Result{.requeue_after = kube::Duration::zero(), .requeue = true};
  }
  return result;
}

namespace {

// Marks the pass's bookkept Jobs captf.io/bookkept (a Job already gone
// needs no mark).
absl::Status markBookkept(kube::Client& client, const std::string& ns,
                          const std::vector<std::string>& jobs) {
  for (const std::string& job : jobs) {
    json marker = {{"apiVersion", "batch/v1"},
                   {"kind", "Job"},
                   {"metadata", {{"name", job}, {"namespace", ns}}}};
    absl::Status marked =
        patchAnnotation(client, marker, api::kAnnotationBookkept, std::string("true"));
    CAPTF_RETURN_IF_ERROR(kube::ignoreNotFound(marked));
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<kube::Result> WorkloadReconciler::reconcilePass(const kube::ReconcileContext& ctx,
                                                               const kube::Request& request) {
  auto object = deps_.cached.get(kind_->gvk(), request);
  if (!object.ok()) {
    if (kube::isNotFound(object.status())) {
      deps_.metrics.forgetObject(kind(), request.ns, request.name);
      if (deps_.refs != nullptr) {
        deps_.refs->forget({kind(), request.ns, request.name});
      }
      return kube::Result{};
    }
    return object.status();
  }
  WorkloadPass pass(deps_.api, deps_.events);
  pass.object = *std::move(object);
  pass.log = ctx.log;
  // 1. Externally managed, or another manager's by --watch-filter: nothing
  // at all. Owned Jobs, owners, Clusters, identities, variables sources and
  // the ref watcher wake objects whatever their labels, so the filter is
  // checked here and not only at the primary watch
  // (docs/decisions/manager-binary.md).
  if (kube::meta::annotations(pass.object).contains(str(api::kAnnotationManagedBy))) {
    return kube::Result{};
  }
  if (const std::string& filter = deps_.settings.watch_filter;
      !filter.empty() &&
      kube::meta::labels(pass.object).value(str(api::kLabelWatchFilter), "") != filter) {
    return kube::Result{};
  }
  auto decoded = kind_->decode(pass.object);
  if (!decoded.ok()) {
    return kube::terminalError(decoded.status());
  }
  pass.typed = *std::move(decoded);
  pass.meta = &pass.typed->meta();
  pass.spec = &pass.typed->spec();
  pass.status = &pass.typed->status();
  pass.original = &pass.typed->original();
  pass.wall = deps_.clock.wallNow();
  pass.now = toApiTime(pass.wall);
  pass.generation = pass.meta->generation;
  pass.deleting = pass.meta->deletion_timestamp.has_value();
  pass.id = lifecycle::ObjectIdentity{kind_->role(), request.ns, request.name};
  pass.suffix = lifecycle::stateSuffix(pass.id);

  if (absl::Status s = kind_->reconcileOwner(pass); !s.ok()) {
    return s;
  }
  pass.ref = workspace::ObjectRef{kind_->role(), request.ns, request.name, pass.meta->uid,
                                  pass.cluster_name};
  // The effective settings (own, then inherited, then built-in).
  pass.policy = lifecycle::resolveJobPolicy(pass.spec->jobs, kind_->inheritedJobs(pass));
  pass.schedule = kind_->schedule(pass, deps_.settings.drift_default_interval);

  absl::Status status = absl::OkStatus();
  bool patch = true;
  const std::string_view finalizer = kind_->finalizer();
  if (pass.cluster_name.empty()) {
    // No owner yet (or an owner-less object being deleted, handled inside).
    if (pass.deleting) {
      status = reconcileDelete(pass);
      patch = hasFinalizer(pass.object, finalizer);
    }
  } else if (!pass.owner_ok && !pass.deleting) {
    // Stop: the owner is gone or does not reference us back.
  } else if (!pass.deleting && !hasFinalizer(pass.object, finalizer)) {
    // 3. Finalizer: add it and end the pass so the write is visible.
    if (absl::Status s = pass.patcher.addFinalizer(finalizer); !s.ok()) {
      return s;
    }
    return kube::Result{};
  } else if (pass.deleting && !hasFinalizer(pass.object, finalizer)) {
    return kube::Result{};
  } else {
    pass.paused = kube::meta::annotations(pass.object).contains(str(api::kAnnotationPaused)) ||
                  (pass.cluster.is_object() &&
                   pass.cluster.value("spec", json::object()).value("paused", false));
    if (pass.paused) {
      status = pausedBranch(pass);
    } else {
      if (pass.set(cond::kPaused, ConditionStatus::kFalse, cond::kReasonNotPaused, "") &&
          !pass.original->conditions.empty() &&
          pass.originalReason(cond::kPaused) == cond::kReasonPaused) {
        pass.event(kube::EventType::kNormal, "Resumed", "reconciliation resumed");
      }
      status = pass.deleting ? reconcileDelete(pass) : reconcileNormal(pass);
      patch =
          !(pass.deleting && pass.decision.action == lifecycle::Action::kCleanup && status.ok());
    }
  }
  if (!status.ok() && pass.error.ok()) {
    pass.error = status;
  }
  if (pass.stale) {
    // Nothing decided from the stale copy is written.
    return kube::Result{.requeue_after = kube::Duration::zero(), .requeue = true};
  }
  if (patch) {
    summarize(pass);
    absl::Status patched =
        pass.patcher.patchStatus(pass.typed->originalJson(), pass.typed->statusJson());
    CAPTF_RETURN_IF_ERROR(kube::ignoreNotFound(patched));
    // A finished Job is marked bookkept only after the status patch.
    if (absl::Status marked = markBookkept(deps_.api, pass.id.ns, pass.bookkept); !marked.ok()) {
      return marked;
    }
  }
  // The pass's counts land with its status: a pass whose status patch (or
  // bookkept mark) failed is run again, and counts then, once.
  if (patch || status.ok()) {
    for (const auto& [counter, delta] : pass.counts) {
      counter->inc(delta);
    }
    for (const auto& [histogram, value] : pass.observations) {
      histogram->observe(value);
    }
  }
  if (!pass.error.ok()) {
    return pass.error;
  }
  return pass.result;
}

// 5. Identity, credential mirror, runner RBAC.
absl::Status WorkloadReconciler::reconcileCredentials(WorkloadPass& pass) {
  const std::string identity = kind_->identityName(pass);
  pass.identity = identity_.resolve(pass.object, identity);
  if (pass.set(cond::kIdentityAllowed, pass.identity.allowed)) {
    // A denial counts once, when it begins, not on every pass that sees it.
    if (!pass.identity.denied.empty()) {
      pass.count(deps_.metrics.identity_denied_total.withLabels({pass.identity.denied}));
    }
    if (pass.identity.allowed.reason == cond::kReasonNamespaceNotAllowed) {
      pass.event(kube::EventType::kWarning, "IdentityNotAllowed", pass.identity.allowed.message);
    }
  }
  pass.set(cond::kCredentialsMirrored, pass.identity.mirrored);
  if (!pass.identity.transient.ok()) {
    pass.error = pass.identity.transient;
  }
  absl::Status transient = absl::OkStatus();
  pass.rbac = rbac_.ensure(pass.id.ns, pass.policy.service_account_name, transient);
  pass.set(cond::kRunnerRbacReady, pass.rbac);
  if (!transient.ok() && pass.error.ok()) {
    pass.error = transient;
  }
  for (const std::string& dropped : pass.policy.dropped_env) {
    pass.event(kube::EventType::kWarning, "EnvDropped",
               "spec.jobs.env entry " + dropped +
                   " dropped: names starting TF_ or KUBE_ are reserved");
  }
  return absl::OkStatus();
}

// 6. Bookkeeping of finished Jobs (docs/behaviour/lifecycle.md#bookkeeping) and history pruning.
absl::Status WorkloadReconciler::reconcileJobs(WorkloadPass& pass) {
  std::vector<json> leftovers;
  auto jobs = listRunJobs(deps_.cached, pass.id.ns, kind(), lifecycle::labelSafeName(pass.id.name),
                          kube::meta::uid(pass.object), &leftovers);
  if (!jobs.ok()) {
    return jobs.status();
  }
  pass.jobs = *std::move(jobs);
  // Jobs of an earlier object of this name are never this one's history;
  // they go (an orphaned one would stay forever, and one still holding a
  // name this object's Job needs would block it). A lock one of them holds
  // stays foreign until its runner lets go
  // (docs/behaviour/jobs.md#an-object-created-again).
  for (const json& leftover : leftovers) {
    CAPTF_RETURN_IF_ERROR(removeLeftoverJob(pass, leftover));
  }
  for (size_t i = 0; i < pass.jobs.size(); ++i) {
    const RunJob& run = pass.jobs[i];
    if (run.record.outcome == lifecycle::JobOutcome::kActive || run.bookkept) {
      continue;
    }
    // The cache may not show yet the mark a pass wrote a moment ago: the API
    // server's copy decides, so a Job is bookkept (Events, metrics) once.
    auto live = deps_.api.get(kinds::kJob, {pass.id.ns, run.record.name});
    if (!live.ok() && !kube::isNotFound(live.status())) {
      return live.status();
    }
    // A Job the API server no longer has (its owner's garbage collection
    // after the finalizer went, or deleted by hand) while the cache still
    // lists it cannot be marked, so every pass until the cache catches up
    // would count it again: it is not bookkept.
    if (!live.ok() || kube::meta::annotations(*live).contains(str(api::kAnnotationBookkept))) {
      continue;
    }
    if (absl::Status s = bookkeep(pass, i); !s.ok()) {
      return s;
    }
  }
  // History pruning per object and operation.
  for (const std::string& name :
       lifecycle::jobsToPrune(pass.records(), pass.policy.successful_jobs_history_limit,
                              pass.policy.failed_jobs_history_limit)) {
    kube::DeleteOptions options;
    options.propagation = kube::PropagationPolicy::kBackground;
    absl::Status removed = deps_.api.remove(kinds::kJob, {pass.id.ns, name}, options);
    CAPTF_RETURN_IF_ERROR(kube::ignoreNotFound(removed));
    std::erase_if(pass.jobs, [&](const RunJob& run) { return run.record.name == name; });
  }
  pass.active = nullptr;
  for (const RunJob& run : pass.jobs) {
    if (run.record.outcome == lifecycle::JobOutcome::kActive) {
      pass.active = &run;
      break;
    }
  }
  return absl::OkStatus();
}

namespace {

kube::EventType eventTypeOf(lifecycle::EventType type) {
  return type == lifecycle::EventType::kWarning ? kube::EventType::kWarning
                                                : kube::EventType::kNormal;
}

kube::CounterFamily& familyOf(CaptfMetrics& metrics, lifecycle::CounterMetric family) {
  switch (family) {
  case lifecycle::CounterMetric::kJobsTotal:
    return metrics.jobs_total;
  case lifecycle::CounterMetric::kJobErrorsTotal:
    return metrics.job_errors_total;
  case lifecycle::CounterMetric::kResourcesChangedTotal:
    return metrics.resources_changed_total;
  case lifecycle::CounterMetric::kDriftResourcesTotal:
    return metrics.drift_resources_total;
  case lifecycle::CounterMetric::kDestructivePlanApprovalsConsumedTotal:
    return metrics.destructive_plan_approvals_consumed_total;
  case lifecycle::CounterMetric::kPlanApprovalsTotal:
    return metrics.plan_approvals_total;
  case lifecycle::CounterMetric::kStateRestoresTotal:
    return metrics.state_restores_total;
  }
  return metrics.jobs_total; // unreachable: every enumerator is handled
}

kube::HistogramFamily& familyOf(CaptfMetrics& metrics, lifecycle::HistogramMetric family) {
  switch (family) {
  case lifecycle::HistogramMetric::kJobDurationSeconds:
    return metrics.job_duration_seconds;
  case lifecycle::HistogramMetric::kJobStepDurationSeconds:
    return metrics.job_step_duration_seconds;
  case lifecycle::HistogramMetric::kJobQueueSeconds:
    return metrics.job_queue_seconds;
  case lifecycle::HistogramMetric::kJobAttempts:
    return metrics.job_attempts;
  }
  return metrics.job_duration_seconds; // unreachable
}

kube::GaugeFamily& familyOf(CaptfMetrics& metrics, lifecycle::GaugeMetric family) {
  switch (family) {
  case lifecycle::GaugeMetric::kLastSuccessTimestampSeconds:
    return metrics.last_success_timestamp_seconds;
  }
  return metrics.last_success_timestamp_seconds; // unreachable
}

// The Job's durations for the run facts: creation to completion (or `now`),
// and creation to the source container's start.
void jobTimes(const json& job, const std::optional<json>& pod, kube::WallTime now,
              lifecycle::RunFacts& facts) {
  const json* created = kube::fieldAt(job, "metadata.creationTimestamp");
  const json* completed = kube::fieldAt(job, "status.completionTime");
  if (created == nullptr || !created->is_string()) {
    return;
  }
  auto start = kube::parseTime(created->get<std::string>());
  auto end = completed != nullptr && completed->is_string()
                 ? kube::parseTime(completed->get<std::string>())
                 : absl::StatusOr<kube::WallTime>(now);
  if (!start.ok() || !end.ok()) {
    return;
  }
  facts.duration_seconds = std::chrono::duration<double>(*end - *start).count();
  if (pod) {
    if (auto started = containerStartTime(*pod, kSourceContainer)) {
      facts.queue_seconds = std::chrono::duration<double>(*started - *start).count();
    }
  }
}

} // namespace

// The pure part (what follows from the run) is lifecycle::consequencesOf
// (docs/decisions/manager-reconcile-pass.md, "Bookkeeping split"); this
// gathers its facts and applies its result.
absl::Status WorkloadReconciler::bookkeep(WorkloadPass& pass, size_t index) {
  RunJob& run = pass.jobs[index];
  const std::string& name = run.record.name;
  auto pod = podOfJob(deps_.cached, pass.id.ns, name);
  if (!pod.ok()) {
    return pod.status();
  }
  std::optional<std::string> message;
  if (pod->has_value()) {
    message = terminationMessage(**pod, kSourceContainer);
  }
  if (!message) {
    // The Pod informer may lag the Job's: a finished Job whose cached pod
    // is missing or not terminated yet is read from the API server, so its
    // result and image digest are not lost.
    pod = podOfJob(deps_.api, pass.id.ns, name);
    if (!pod.ok()) {
      return pod.status();
    }
    if (pod->has_value()) {
      message = terminationMessage(**pod, kSourceContainer);
    }
  }
  lifecycle::FinishedJobFacts job_facts;
  job_facts.job = name;
  job_facts.operation = run.record.operation;
  job_facts.job_succeeded = run.record.outcome == lifecycle::JobOutcome::kSucceeded;
  job_facts.pod_exists = pod->has_value();
  job_facts.deadline_exceeded = jobDeadlineExceeded(run.job);
  job_facts.termination_message = message;
  const lifecycle::FinishedRun finished = lifecycle::classifyFinishedRun(job_facts);
  run.record.outcome = finished.job_outcome;

  lifecycle::RunFacts facts;
  facts.kind = kind();
  facts.resource = str(kind_->resource());
  facts.id = pass.id;
  facts.now = pass.now;
  facts.job = run.record;
  facts.deadline_exceeded = job_facts.deadline_exceeded;
  if (pod->has_value()) {
    facts.image_id = containerImageId(**pod, kSourceContainer);
  }
  const json& job_notes = kube::meta::annotations(run.job);
  if (auto commit = job_notes.find(str(api::kAnnotationGitCommit));
      commit != job_notes.end() && commit->is_string()) {
    facts.git_commit = commit->get<std::string>();
  }
  jobTimes(run.job, *pod, pass.wall, facts);
  facts.records = pass.records();
  facts.source_image = lifecycle::sourceImage(pass.spec->source);
  facts.source = pass.status->source;
  const auto& annotations = pass.meta->annotations;
  if (auto it = annotations.find(str(api::kAnnotationApproveDestructivePlan));
      it != annotations.end()) {
    facts.approve_destructive_plan = it->second;
  }
  if (auto it = annotations.find(str(api::kAnnotationApprovePlan)); it != annotations.end()) {
    facts.approve_plan = it->second;
  }
  facts.drift_action = pass.schedule.drift_action;
  if (const api::Condition* drift =
          lifecycle::findCondition(pass.status->conditions, cond::kDriftDetected)) {
    facts.drift_detected = drift->status;
  }
  facts.original_drift_reason = pass.originalReason(cond::kDriftDetected);
  facts.last_drift_check = pass.status->last_drift_check;
  facts.health_sampled = pass.health_sample.has_value();
  const lifecycle::Consequences then = lifecycle::consequencesOf(finished, facts);

  // Writes before the status patch (idempotent: a pass cut short repeats
  // them): the Job's marks, which later passes and the decision read back;
  // adoption, the digest pin and the consumed approvals.
  for (std::string_view mark : then.job_marks) {
    if (absl::Status s = patchAnnotation(deps_.api, run.job, mark, std::string("true"));
        !s.ok() && !kube::isNotFound(s)) {
      return s;
    }
  }
  if (then.adopt_state) {
    if (absl::Status s = adopt(pass, run.record.inputs_hash, name); !s.ok()) {
      return s;
    }
  }
  bool pinned = false;
  if (then.pin_digest) {
    auto written =
        deps_.api.patch(kinds::kSecret, {pass.id.ns, workspace::durableInputsSecretName(pass.ref)},
                        kube::PatchType::kMerge, workspace::imageDigestPatch(*then.pin_digest));
    if (written.ok()) {
      pinned = true;
    } else if (!kube::isNotFound(written.status())) {
      return written.status();
    }
  }
  for (std::string_view key : then.remove_annotations) {
    if (absl::Status s = pass.patcher.setAnnotation(key, std::nullopt); !s.ok()) {
      return s;
    }
  }

  // The status, its conditions, the Events and the metrics.
  pass.status->last_run = then.last_run;
  if (then.source) {
    pass.status->source = *then.source;
  }
  if (then.plan_change != lifecycle::PlanChange::kKeep) {
    if (auto* status_plan = kind_->plan(pass)) {
      if (then.plan_change == lifecycle::PlanChange::kSet) {
        *status_plan = then.plan;
      } else {
        status_plan->reset();
      }
    }
  }
  if (then.last_refresh) {
    pass.status->last_refresh = then.last_refresh;
  }
  if (then.last_drift_check) {
    pass.status->last_drift_check = then.last_drift_check;
  }
  if (then.health_sample) {
    pass.health_sample = then.health_sample;
    pass.health_sample_finished = run.record.finished;
  }
  std::vector<std::string_view> transitions;
  for (const lifecycle::ConditionUpdate& c : then.conditions) {
    if (pass.set(c.type, c.status, c.reason, c.message)) {
      transitions.push_back(c.type);
    }
  }
  for (const lifecycle::RunEvent& e : then.events) {
    if ((e.gate == lifecycle::EventGate::kOnDigestPinned && !pinned) ||
        (e.gate == lifecycle::EventGate::kOnTransition &&
         std::find(transitions.begin(), transitions.end(), e.condition) == transitions.end())) {
      continue;
    }
    pass.event(eventTypeOf(e.type), e.reason, e.message);
  }
  for (const auto& gauge : then.gauges) {
    familyOf(deps_.metrics, gauge.family).withLabels(gauge.labels).set(gauge.value);
  }
  for (const auto& counter : then.counts) {
    pass.count(familyOf(deps_.metrics, counter.family).withLabels(counter.labels), counter.value);
  }
  for (const auto& histogram : then.observations) {
    pass.observe(familyOf(deps_.metrics, histogram.family).withLabels(histogram.labels),
                 histogram.value);
  }

  // The run history (docs/decisions/run-reports.md), before the per-run
  // Secret goes: a pass cut short repeats it, and a record of the same Job
  // replaces the first.
  if (absl::Status s = recordRun(pass, run, then.last_run, finished.report, then.result); !s.ok()) {
    return s;
  }

  // The per-run Secret goes once the result is read; this releases the
  // leases the Job held.
  absl::Status removed =
      deps_.api.remove(kinds::kSecret, {pass.id.ns, lifecycle::perRunSecretName(name)});
  CAPTF_RETURN_IF_ERROR(kube::ignoreNotFound(removed));
  if (absl::Status s = releaseLease(deps_.api, pass.id.ns, lifecycle::runLeaseName(pass.id), name);
      !s.ok()) {
    return s;
  }
  if (!pass.cluster_name.empty()) {
    if (absl::Status s =
            releaseLease(deps_.api, pass.id.ns,
                         lifecycle::clusterLeaseName(pass.id.ns, pass.cluster_name), name);
        !s.ok()) {
      return s;
    }
  }
  pass.bookkept.push_back(name);
  return absl::OkStatus();
}

absl::Status WorkloadReconciler::recordRun(WorkloadPass& pass, const RunJob& run,
                                           const api::LastRun& last_run,
                                           const std::optional<workspace::RunReport>& parsed,
                                           const std::string& result) {
  const std::string uid = kube::meta::uid(run.job);
  json record = {{"job", run.record.name},
                 {"operation", str(api::enumName(run.record.operation))},
                 {"attempt", run.record.attempt},
                 {"result", result}};
  const api::Time finished =
      run.record.finished
          ? *run.record.finished
          : api::Time{std::chrono::time_point_cast<std::chrono::seconds>(pass.wall)};
  if (run.record.created) {
    record["startTime"] = api::formatTime(*run.record.created);
    record["durationSeconds"] =
        std::chrono::duration_cast<std::chrono::seconds>(finished.value - run.record.created->value)
            .count();
  }
  record["finishTime"] = api::formatTime(finished);
  json steps = json::array();
  for (const api::RunStep& step : last_run.steps) {
    json entry = {{"step", step.name}, {"exitCode", step.exit_code}};
    if (step.duration_milliseconds) {
      entry["durationSeconds"] = static_cast<double>(*step.duration_milliseconds) / 1000.0;
    }
    steps.push_back(std::move(entry));
  }
  record["steps"] = std::move(steps);
  if (parsed && parsed->changes) {
    record["changes"] = {{"add", parsed->changes->add()},
                         {"change", parsed->changes->change()},
                         {"destroy", parsed->changes->destroy()},
                         {"import", parsed->changes->import()}};
  }
  if (last_run.error) {
    json error = {{"kind", str(api::enumName(last_run.error->kind))}};
    if (last_run.error->step) {
      error["step"] = *last_run.error->step;
    }
    if (last_run.error->summary) {
      error["summary"] = *last_run.error->summary;
    }
    record["error"] = std::move(error);
  }
  reports::ReportedTail tail;
  if (deps_.reports != nullptr) {
    tail = deps_.reports->tail(uid);
  }
  record["logTail"] = tail.lines;
  record["logLinesDropped"] = tail.dropped;
  record["logTailSource"] = tail.reported ? "reports" : "none";

  const std::string name = workspace::runHistoryName(pass.ref);
  auto existing = deps_.api.get(kinds::kConfigMap, {pass.id.ns, name});
  if (!existing.ok() && !kube::isNotFound(existing.status())) {
    return existing.status();
  }
  if (existing.ok() && !workspace::isManaged(*existing)) {
    // Someone else's ConfigMap of the history's name: left as it is.
    pass.event(kube::EventType::kWarning, "RunHistoryNotRecorded",
               "run of Job " + run.record.name + " not recorded: ConfigMap " + name +
                   " exists and is not CAPTF's (no captf.io/managed=true label)");
    if (deps_.reports != nullptr) {
      deps_.reports->forget(uid);
    }
    return absl::OkStatus();
  }
  const json updated =
      workspace::withRunRecord(pass.ref, existing.ok() ? *existing : json(), record);
  const absl::StatusOr<json> written =
      existing.ok() ? deps_.api.update(updated) : deps_.api.create(updated);
  if (!written.ok() &&
      (kube::isConflict(written.status()) || kube::isTransient(written.status()))) {
    return written.status(); // retried by the next pass
  }
  if (!written.ok()) {
    // The history is a side record: a write the API server refuses for good
    // (Forbidden, too large, a quota) is said once per run and never holds
    // the bookkeeping, nor a deletion's destroy
    // (docs/behaviour/lifecycle.md#bookkeeping).
    pass.log.error("run history not recorded", written.status(),
                   {{"ConfigMap", kube::objectRef(pass.id.ns, name)}});
    pass.event(kube::EventType::kWarning, "RunHistoryNotRecorded",
               "run of Job " + run.record.name + " not recorded in ConfigMap " + name + ": " +
                   std::string(kube::reasonName(kube::reasonOf(written.status()))));
  }
  if (deps_.reports != nullptr) {
    deps_.reports->forget(uid);
  }
  return absl::OkStatus();
}

// docs/behaviour/state.md#adoption: owner references on every chunk, the inputs hash on the base.
absl::Status WorkloadReconciler::adopt(WorkloadPass& pass, const std::string& inputs_hash,
                                       const std::string& job) {
  if (inputs_hash.empty()) {
    return absl::OkStatus();
  }
  auto secrets = listSecrets(deps_.api, pass.id.ns, workspace::stateSelector(pass.suffix));
  if (!secrets.ok()) {
    return secrets.status();
  }
  const auto patches = workspace::adoptionPatches(pass.ref, *secrets, pass.suffix, inputs_hash);
  for (const workspace::SecretPatch& p : patches) {
    auto written =
        deps_.api.patch(kinds::kSecret, {pass.id.ns, p.name}, kube::PatchType::kMerge, p.patch);
    if (!written.ok()) {
      return written.status();
    }
  }
  if (!patches.empty()) {
    pass.event(kube::EventType::kNormal, "StateAdopted",
               "state of Job " + job + " adopted with inputs hash " + inputs_hash);
  }
  return absl::OkStatus();
}

absl::Status WorkloadReconciler::removeLeftoverJob(WorkloadPass& pass, const json& job) {
  kube::DeleteOptions options;
  options.propagation = kube::PropagationPolicy::kBackground;
  options.preconditions.uid = kube::meta::uid(job);
  absl::Status removed = deps_.api.remove(kinds::kJob, kube::meta::key(job), options);
  if (kube::isNotFound(removed) || kube::isConflict(removed)) {
    return absl::OkStatus(); // gone already, or the name is another Job's now
  }
  CAPTF_RETURN_IF_ERROR(removed);
  pass.log.info("deleted a Job left by an earlier object of this name",
                {{"Job", kube::objectRef(pass.id.ns, kube::meta::name(job))}});
  return absl::OkStatus();
}

namespace {

// ImagePullFailed on the operation's condition while the active Job's pod
// waits for an image it cannot pull, with one Warning Event and one count
// per transition; once the pull succeeded the Job runs and the condition
// says so (docs/behaviour/jobs.md#image-pulls). The Job is left alone: the
// kubelet keeps trying, so a pushed image or a created pull Secret lets it
// run. True while the condition is ImagePullFailed.
bool reportImagePull(WorkloadPass& pass, kube::Reader& pods, CaptfMetrics& metrics,
                     const std::string& kind, const RunJob& run) {
  const std::string_view type = lifecycle::waitConditionFor(run.record.operation);
  const std::string op(api::enumName(run.record.operation));
  auto pod = podOfJob(pods, pass.id.ns, run.record.name);
  if (!pod.ok() || !pod->has_value()) {
    return pass.currentReason(type) == cond::kReasonImagePullFailed; // as it was
  }
  if (const std::optional<ImagePullWait> wait = imagePullWait(**pod)) {
    const std::string note = op + " Job " + run.record.name + ": " + imagePullMessage(*wait);
    if (pass.set(type, ConditionStatus::kFalse, cond::kReasonImagePullFailed, note)) {
      pass.event(kube::EventType::kWarning, cond::kReasonImagePullFailed, note);
      pass.count(metrics.image_pull_failures_total.withLabels({kind, op}));
    }
    return true;
  }
  if (pass.currentReason(type) == cond::kReasonImagePullFailed) {
    pass.set(type, ConditionStatus::kUnknown,
             type == cond::kDriftJobSucceeded ? cond::kReasonDriftJobRunning
                                              : cond::kReasonJobRunning,
             op + " Job " + run.record.name + " pulled its images and is running");
  }
  return false;
}

} // namespace

// 7. Active Job: wait (stuck Jobs are deleted to be restarted).
bool WorkloadReconciler::waitForActiveJob(WorkloadPass& pass) {
  if (pass.active == nullptr) {
    pass.status->active_job.reset();
    return false;
  }
  const RunJob& run = *pass.active;
  api::ActiveJob active;
  active.name = run.record.name;
  active.operation = run.record.operation;
  active.attempt = run.record.attempt;
  active.start_time = run.record.created;
  pass.status->active_job = active;
  if (run.record.operation == api::Operation::kApply && !pass.status->initialization) {
    pass.set(cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
             "apply Job " + run.record.name + " is running");
  }
  const bool pull_failed = reportImagePull(pass, deps_.cached, deps_.metrics, kind(), run);
  if (pull_failed && !pass.paused) {
    replaceOutdatedPullWait(pass, run);
  }
  if (run.record.operation == api::Operation::kDrift && !pull_failed) {
    pass.set(cond::kDriftJobSucceeded, ConditionStatus::kUnknown, cond::kReasonDriftJobRunning,
             "drift Job " + run.record.name + " is running");
  }
  // Stuck: the per-run Secret is missing, no pod ever started, Job age ≥ 1m.
  if (run.record.created &&
      pass.now.value - run.record.created->value >= std::chrono::seconds(kStuckJobAge)) {
    auto secret =
        deps_.api.get(kinds::kSecret, {pass.id.ns, lifecycle::perRunSecretName(run.record.name)});
    if (!secret.ok() && kube::isNotFound(secret.status())) {
      auto pod = podOfJob(deps_.cached, pass.id.ns, run.record.name);
      if (pod.ok() && (!pod->has_value() || !podStarted(**pod))) {
        kube::DeleteOptions options;
        options.propagation = kube::PropagationPolicy::kBackground;
        if (deps_.api.remove(kinds::kJob, {pass.id.ns, run.record.name}, options).ok()) {
          pass.event(
              kube::EventType::kWarning, "StuckJobDeleted",
              "Job " + run.record.name +
                  " could never start (its inputs Secret is missing); deleted to be restarted");
        }
      }
    }
  }
  // Job events wake the object; this is a safety net.
  pass.result.requeue_after = std::chrono::minutes(1);
  return true;
}

// A Job waiting for an image the object no longer names (spec.source.image
// corrected; the manager's runner image changed) never started a
// container, so it changed nothing: it is deleted, and the next pass starts
// one with the image named now (docs/behaviour/jobs.md#image-pulls). The
// pod is read again from the API server first: one the cache still shows
// waiting may have started. Which image a Job runs is jobBuildRequest's
// rule; a kind with immutable inputs runs every operation but apply from
// its pinned digest, so only its apply is compared.
void WorkloadReconciler::replaceOutdatedPullWait(WorkloadPass& pass, const RunJob& run) {
  auto pod = podOfJob(deps_.api, pass.id.ns, run.record.name);
  if (!pod.ok() || !pod->has_value() || podStarted(**pod)) {
    return;
  }
  const std::optional<ImagePullWait> wait = imagePullWait(**pod);
  if (!wait) {
    return;
  }
  std::string named;
  if (wait->container == lifecycle::kInitContainer) {
    named = deps_.settings.runner_image;
  } else if (wait->container == lifecycle::kSourceContainer &&
             (run.record.operation == api::Operation::kApply ||
              !kind_->traits().immutable_inputs)) {
    named = lifecycle::sourceImage(pass.spec->source);
  }
  if (named.empty() || named == wait->image) {
    return;
  }
  kube::DeleteOptions options;
  options.propagation = kube::PropagationPolicy::kBackground;
  options.preconditions.uid = kube::meta::uid(run.job);
  absl::Status removed = deps_.api.remove(kinds::kJob, {pass.id.ns, run.record.name}, options);
  if (!removed.ok()) {
    if (!kube::isNotFound(removed) && !kube::isConflict(removed)) {
      pass.log.error("cannot delete a Job waiting for an outdated image", removed,
                     {{"Job", kube::objectRef(pass.id.ns, run.record.name)}});
    }
    return;
  }
  pass.event(kube::EventType::kNormal, "OutdatedImageJobDeleted",
             std::string(api::enumName(run.record.operation)) + " Job " + run.record.name +
                 " waited for image " + wait->image + ", which the object no longer names; " +
                 "deleted to start one with " + named);
}

absl::Status WorkloadReconciler::pausedBranch(WorkloadPass& pass) {
  if (pass.set(cond::kPaused, ConditionStatus::kTrue, cond::kReasonPaused, "")) {
    pass.event(kube::EventType::kNormal, "Paused", "reconciliation paused");
  }
  if (absl::Status s = reconcileJobs(pass); !s.ok()) {
    return s;
  }
  if (!waitForActiveJob(pass)) {
    if (kube::meta::annotations(pass.object).contains(str(api::kAnnotationBlockMove))) {
      return pass.patcher.setAnnotation(api::kAnnotationBlockMove, std::nullopt);
    }
  }
  return absl::OkStatus();
}

// 9. State: read, classify, lock check.
absl::Status WorkloadReconciler::reconcileState(WorkloadPass& pass) {
  auto secrets = listSecrets(deps_.cached, pass.id.ns, workspace::stateSelector(pass.suffix));
  if (!secrets.ok()) {
    return secrets.status();
  }
  pass.state = workspace::readState(pass.suffix, *secrets);
  // The cached read is not decided on, but read again once from the API
  // server, when the cache may be behind where it matters: a deleting object
  // leaves without a destroy only when it has no state
  // (docs/behaviour/state.md#a-deleting-object-without-state), and the
  // newest successful apply's adoption may not have reached the cache (its
  // hash is not the state's).
  bool read_live = pass.deleting && pass.state.status == workspace::StateStatus::kNotFound;
  for (const RunJob& run : pass.jobs) {
    if (run.record.operation == api::Operation::kApply &&
        run.record.outcome == lifecycle::JobOutcome::kSucceeded) {
      read_live = read_live || (!run.record.inputs_hash.empty() &&
                                run.record.inputs_hash != pass.state.inputs_hash);
      break;
    }
  }
  if (read_live) {
    auto fresh = listSecrets(deps_.api, pass.id.ns, workspace::stateSelector(pass.suffix));
    if (!fresh.ok()) {
      return fresh.status();
    }
    pass.state = workspace::readState(pass.suffix, *fresh);
  }
  const bool latched = pass.latched();
  pass.verdict = workspace::classifyState(pass.state, kind_->traits(),
                                          latched ? workspace::Provisioned::kYes
                                                  : workspace::Provisioned::kNo);
  // Lock check (docs/behaviour/state.md#locks).
  auto lease = deps_.api.get(kinds::kLease, {pass.id.ns, lifecycle::lockLeaseName(pass.id)});
  if (!lease.ok() && !kube::isNotFound(lease.status())) {
    return lease.status();
  }
  const auto lock = workspace::readLock(lease.ok() ? *lease : json());
  workspace::OwnRunners own;
  std::optional<api::Time> holder_end;
  // Only a held lock needs its holder's pod, and then read live: a pod the
  // cache has not seen yet, or still shows finished from before, is no
  // proof (docs/behaviour/state.md#locks).
  for (const RunJob& run : pass.jobs) {
    own.job_names.push_back(run.record.name);
    if (!lock || !workspace::heldByPodOf(*lock, run.record.name)) {
      continue;
    }
    auto pod = podOfJob(deps_.api, pass.id.ns, run.record.name);
    if (!pod.ok()) {
      return pod.status();
    }
    if (pod->has_value()) {
      const std::string phase =
          (**pod).value("status", json::object()).value("phase", std::string());
      own.pods.push_back(
          workspace::RunnerPod{kube::meta::name(**pod), phase == "Succeeded" || phase == "Failed"});
    }
    // A pod gone without a terminal phase proves nothing by itself (one
    // deleted with --force while its node cannot be reached runs on): its
    // Job's deadline and grace period bound it.
    const std::optional<api::Time> end = podsEndBy(run);
    if (end && *end <= pass.now) {
      own.past_deadline.push_back(run.record.name);
    } else if (end) {
      holder_end = end;
    }
  }
  pass.lock = workspace::decideLock(lock, own);
  if (pass.lock.state == workspace::LockState::kForeign ||
      pass.lock.state == workspace::LockState::kHolderGone) {
    pass.verdict = workspace::StateVerdict::kLocked;
  }
  if (pass.lock.state == workspace::LockState::kHolderGone && holder_end) {
    pass.lock.forced_from = holder_end->value;
    pass.lock.message += " (at " + api::formatTime(*holder_end) + ")";
  }
  const std::string reason = str(workspace::stateReason(pass.verdict));
  ConditionStatus status = ConditionStatus::kFalse;
  if (pass.verdict == workspace::StateVerdict::kRead) {
    status = ConditionStatus::kTrue;
  } else if (pass.verdict == workspace::StateVerdict::kNotFound) {
    status = ConditionStatus::kUnknown;
  }
  const std::string message = pass.verdict == workspace::StateVerdict::kLocked
                                  ? pass.lock.message
                                  : workspace::stateMessage(pass.verdict, pass.state, pass.suffix);
  if (pass.set(cond::kStateReadable, status, reason, message) &&
      status == ConditionStatus::kFalse) {
    pass.count(deps_.metrics.state_read_errors_total.withLabels(
        {kind(), str(workspace::stateMetricReason(pass.verdict))}));
    pass.event(kube::EventType::kWarning, workspace::stateEventReason(pass.verdict), message);
  }
  if (pass.verdict == workspace::StateVerdict::kRead) {
    pass.status->observed_state_serial = pass.state.summary.serial;
    deps_.metrics.state_resources.withLabels({kind(), pass.id.ns, pass.id.name})
        .set(static_cast<double>(pass.state.summary.managed_resources));
  }
  if (pass.state.compressed_bytes > 0) {
    deps_.metrics.state_bytes.withLabels({kind(), pass.id.ns, pass.id.name})
        .set(static_cast<double>(pass.state.compressed_bytes));
  }
  pass.status->state_secret_suffix = pass.suffix;
  return absl::OkStatus();
}

// Backups of new serials (docs/behaviour/state.md#backups).
absl::Status WorkloadReconciler::reconcileBackups(WorkloadPass& pass) {
  auto secrets = listSecrets(deps_.cached, pass.id.ns, workspace::backupSelector(pass.suffix));
  if (!secrets.ok()) {
    return secrets.status();
  }
  auto sets = workspace::listBackups(pass.suffix, *secrets);
  const auto decision =
      workspace::decideBackup(pass.state, sets, deps_.settings.state_backups, pass.deleting);
  if (decision == workspace::BackupDecision::kTake) {
    workspace::BackupRequest request;
    request.ref = pass.ref;
    request.state = &pass.state;
    request.taken_at = api::formatTime(pass.now);
    request.source_job = pass.status->last_run ? pass.status->last_run->job : "";
    bool ok = true;
    for (const json& secret : workspace::backupSecrets(request)) {
      const std::string name = kube::meta::name(secret);
      absl::Status failure = deps_.api.create(secret).status();
      if (kube::isAlreadyExists(failure)) {
        // Only the leftover of an earlier copy of this very chunk lets the
        // copy go on; other content under the name is never "taken"
        // (docs/behaviour/state.md#backups).
        auto existing = deps_.api.get(kinds::kSecret, {pass.id.ns, name});
        if (!existing.ok()) {
          failure = existing.status();
        } else if (workspace::sameBackupChunk(*existing, secret)) {
          failure = absl::OkStatus();
        } else {
          failure = absl::AlreadyExistsError(
              "the Secret holds another backup chunk (set, chunk, digest or data differ)");
          pass.event(kube::EventType::kWarning, "StateBackupConflict",
                     "state serial " + std::to_string(pass.state.summary.serial) +
                         " not backed up: Secret " + name +
                         " already exists with other content (set, chunk, digest or data differ)");
        }
      }
      if (failure.ok()) {
        continue;
      }
      ok = false;
      pass.log.error("state backup failed", failure,
                     {{"Secret", kube::objectRef(pass.id.ns, name)}});
      break;
    }
    pass.count(deps_.metrics.state_backups_total.withLabels({kind(), ok ? "taken" : "skipped"}));
    if (ok) {
      pass.event(kube::EventType::kNormal, "StateBackedUp",
                 "state serial " + std::to_string(pass.state.summary.serial) + " backed up");
      auto again = listSecrets(deps_.api, pass.id.ns, workspace::backupSelector(pass.suffix));
      if (again.ok()) {
        sets = workspace::listBackups(pass.suffix, *again);
      }
    }
  } else if (decision == workspace::BackupDecision::kStateUnusable) {
    pass.count(deps_.metrics.state_backups_total.withLabels({kind(), "skipped"}));
  }
  for (const std::string& name : workspace::backupsToPrune(sets, deps_.settings.state_backups)) {
    absl::Status removed = deps_.api.remove(kinds::kSecret, {pass.id.ns, name});
    CAPTF_RETURN_IF_ERROR(kube::ignoreNotFound(removed));
    pass.count(deps_.metrics.state_backups_total.withLabels({kind(), "pruned"}));
  }
  pass.status->state_backups = workspace::statusBackups(sets);
  return absl::OkStatus();
}

// Builds the current inputs (the kind's gates, variablesFrom, the role's
// inputs) and renders them. An immutable kind builds them only until it is
// provisioned.
namespace {

// DependenciesReady's reason for a Git source that cannot be resolved
// (contract/git.h's status classes).
std::string_view gitReason(const absl::Status& status) {
  switch (status.code()) {
  case absl::StatusCode::kUnauthenticated:
  case absl::StatusCode::kPermissionDenied:
    return cond::kReasonGitAuthenticationFailed;
  case absl::StatusCode::kNotFound:
    return cond::kReasonGitRefNotFound;
  case absl::StatusCode::kUnavailable:
  case absl::StatusCode::kDeadlineExceeded:
    return cond::kReasonGitUnreachable;
  case absl::StatusCode::kFailedPrecondition:
    return cond::kReasonGitServerNotTrusted;
  case absl::StatusCode::kInvalidArgument:
    return cond::kReasonGitCredentialsInvalid;
  default:
    return cond::kReasonGitSourceFailed;
  }
}

std::string shortCommit(const std::string& commit) {
  return commit.substr(0, 12);
}

// The run's report token and the CA its runner trusts, as per-run Secret
// keys (contract/report.h). Without a readable CA the runner reports
// nothing (it says so in its log).
void addReportCredential(json& run_secret, const std::string& token, const std::string& ca_file) {
  std::ifstream in(ca_file, std::ios::binary);
  const std::string ca((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (ca.empty()) {
    return;
  }
  run_secret["data"][std::string(contract::kReportTokenKey)] = contract::base64Encode(token);
  run_secret["data"][std::string(contract::kReportCaKey)] = contract::base64Encode(ca);
}

} // namespace

// A Git source's commit (docs/decisions/git-sources.md): what the ref
// watcher resolved, or for an immutable kind that applied once the commit of
// that apply; sets pass.git and pass.source_identity, or blocks the inputs
// with a DependenciesReady reason naming the failure.
void WorkloadReconciler::resolveSource(WorkloadPass& pass) {
  const RefFollower follower{kind(), pass.id.ns, pass.id.name};
  const std::optional<api::GitSource>& git = pass.spec->source.git;
  if (!git) {
    pass.source_identity = pass.spec->source.image;
    if (deps_.refs != nullptr) {
      deps_.refs->forget(follower);
    }
    return;
  }
  auto url = contract::parseGitUrl(git->url);
  if (!url.ok()) { // admission refuses it; an object from before the webhook
    pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonGitCredentialsInvalid,
             "spec.source.git.url: " + std::string(url.status().message()));
    pass.inputs_blocked = true;
    return;
  }
  contract::GitRef ref;
  if (git->ref.commit) {
    ref = {contract::GitRefKind::kCommit, *git->ref.commit};
  } else if (git->ref.tag) {
    ref = {contract::GitRefKind::kTag, *git->ref.tag};
  } else {
    ref = {contract::GitRefKind::kBranch, git->ref.branch.value_or("")};
  }
  lifecycle::GitFetch fetch;
  fetch.url = url->canonical;
  fetch.ref = ref.kind == contract::GitRefKind::kCommit ? "" : contract::fullRefName(ref);
  fetch.path = git->path;
  fetch.secret = git->secret_ref ? git->secret_ref->name : "";
  pass.git_spec = fetch;
  const auto identity_at = [&](const std::string& commit) {
    return contract::gitSourceIdentity(*url, git->path, commit, git->runtime_image);
  };
  // The commit an immutable kind's first apply ran, while the source is the
  // one that apply had.
  std::optional<std::string> pinned;
  if (kind_->traits().immutable_inputs && pass.durable && pass.durable->annotations.git_commit &&
      pass.durable->annotations.image == identity_at(*pass.durable->annotations.git_commit)) {
    pinned = pass.durable->annotations.git_commit;
  }
  if (pass.deleting || deps_.refs == nullptr) {
    if (deps_.refs != nullptr) {
      deps_.refs->forget(follower);
    }
    if (pinned || ref.kind == contract::GitRefKind::kCommit) {
      fetch.commit = pinned ? *pinned : ref.name;
      pass.source_identity = identity_at(fetch.commit);
      pass.git = fetch;
    }
    return;
  }
  const std::optional<RefResolution> resolved =
      deps_.refs->follow(follower, *url, fetch.secret, ref);
  const std::string where = contract::describeGitRef(ref) + " of " + url->canonical;
  if (resolved && resolved->status.ok()) {
    // Created only with a field set (the schema wants one at least).
    api::SourceStatus& source =
        pass.status->source ? *pass.status->source : pass.status->source.emplace();
    const std::optional<std::string> before = source.latest_commit;
    source.latest_commit = resolved->commit;
    source.resolved_at =
        api::Time{std::chrono::time_point_cast<std::chrono::seconds>(resolved->at)};
    if (before && *before != resolved->commit) {
      if (pinned && *pinned != resolved->commit) {
        pass.event(kube::EventType::kNormal, "NewCommitAvailable",
                   where + " moved to " + shortCommit(resolved->commit) + "; this " + kind() +
                       " keeps " + shortCommit(*pinned) +
                       " (it is immutable); new ones get the new commit");
      } else if (!pinned) {
        pass.event(kube::EventType::kNormal, "SourceCommitChanged",
                   where + " moved from " + shortCommit(*before) + " to " +
                       shortCommit(resolved->commit));
      }
    }
  }
  if (pinned) {
    // Provisioned from a commit it keeps: the watcher only informs.
    fetch.commit = *pinned;
    pass.source_identity = identity_at(fetch.commit);
    pass.git = fetch;
    return;
  }
  if (!resolved) {
    pass.set(cond::kDependenciesReady, ConditionStatus::kUnknown, cond::kReasonGitRefResolving,
             "resolving " + where);
    pass.inputs_blocked = true;
    return;
  }
  if (!resolved->status.ok()) {
    const std::string_view reason = gitReason(resolved->status);
    const std::string message = std::string(resolved->status.message());
    if (pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, reason, message)) {
      pass.event(kube::EventType::kWarning, reason, message);
    }
    pass.inputs_blocked = true;
    return;
  }
  fetch.commit = resolved->commit;
  pass.source_identity = identity_at(fetch.commit);
  pass.git = fetch;
}

absl::Status WorkloadReconciler::reconcileInputs(WorkloadPass& pass) {
  auto durable =
      deps_.cached.get(kinds::kSecret, {pass.id.ns, workspace::durableInputsSecretName(pass.ref)});
  if (durable.ok()) {
    auto read = workspace::readDurableInputs(*durable);
    if (read.ok()) {
      pass.durable = *std::move(read);
    }
  } else if (!kube::isNotFound(durable.status())) {
    return durable.status();
  }
  if (!pass.cluster.is_object() || !pass.owner_ok) {
    resolveSource(pass);
    return absl::OkStatus(); // owner gone: destroy renders the durable inputs
  }
  if (kind_->traits().immutable_inputs && (pass.latched() || pass.deleting)) {
    resolveSource(pass);
    return absl::OkStatus(); // never rebuilt once provisioned
  }
  auto ready = kind_->inputsReady(pass);
  if (!ready.ok()) {
    return ready.status();
  }
  if (!*ready) {
    pass.inputs_blocked = true;
    return absl::OkStatus();
  }
  resolveSource(pass);
  if (pass.inputs_blocked) {
    return absl::OkStatus();
  }
  // variablesFrom, read straight from the API server.
  std::vector<workspace::VariablesSourceData> sources;
  for (const api::VariablesSource& source : pass.spec->variables_from) {
    const bool secret = source.secret_ref.has_value();
    const std::string name = secret ? source.secret_ref->name
                                    : (source.config_map_ref ? source.config_map_ref->name : "");
    auto fetched = deps_.api.get(secret ? kinds::kSecret : kinds::kConfigMap, {pass.id.ns, name});
    if (!fetched.ok() && !kube::isNotFound(fetched.status())) {
      return fetched.status();
    }
    auto data = workspace::readVariablesSource(source, fetched.ok() ? *fetched : json());
    if (!data.ok()) {
      pass.set(cond::kDependenciesReady, ConditionStatus::kFalse,
               cond::kReasonVariablesSourceNotFound, std::string(data.status().message()));
      pass.inputs_blocked = true;
      return absl::OkStatus();
    }
    sources.push_back(*std::move(data));
  }
  auto variables = workspace::mergeUserVariables(kind_->role(), pass.spec->variables, sources);
  if (!variables.ok()) {
    pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonVariablesInvalid,
             std::string(variables.status().message()));
    pass.inputs_blocked = true;
    return absl::OkStatus();
  }
  auto inputs = kind_->roleInputs(pass);
  if (!inputs.ok()) {
    return inputs.status();
  }
  contract::RenderRequest request{kind_->role(), *std::move(inputs), *std::move(variables)};
  if (pass.git) {
    request.module_source = contract::gitModuleSource(pass.git->path);
  }
  auto rendered = workspace::renderInputs(request, pass.source_identity);
  if (!rendered.ok()) {
    if (auto bytes = contract::renderedBytesOverLimit(rendered.status())) {
      pass.inputs_too_large = true;
      deps_.metrics.inputs_bytes.withLabels({kind(), pass.id.ns, pass.id.name})
          .set(static_cast<double>(*bytes));
      pass.set(cond::kApplyJobSucceeded, ConditionStatus::kFalse, cond::kReasonInputsTooLarge,
               "the rendered inputs are " + std::to_string(*bytes) +
                   " bytes, over the 1000000-byte limit");
      return absl::OkStatus();
    }
    pass.set(cond::kOutputsValid, ConditionStatus::kFalse, cond::kReasonOutputsInvalid,
             "inputs cannot be hashed: " + std::string(rendered.status().message()));
    pass.inputs_blocked = true;
    return absl::OkStatus();
  }
  deps_.metrics.inputs_bytes.withLabels({kind(), pass.id.ns, pass.id.name})
      .set(static_cast<double>(rendered->bytes));
  pass.rendered = *std::move(rendered);
  return kind_->afterInputs(pass);
}

// Outputs: before readable state the provisioning conditions; with it the
// kind's outputs.
absl::Status WorkloadReconciler::reconcileOutputs(WorkloadPass& pass) {
  const bool latched = pass.latched();
  pass.provisioned = latched;
  const bool started = std::any_of(pass.jobs.begin(), pass.jobs.end(), [](const RunJob& run) {
    return run.record.operation == api::Operation::kApply;
  });
  if (pass.verdict != workspace::StateVerdict::kRead) {
    if (!latched) {
      if (started || pass.verdict != workspace::StateVerdict::kNotFound) {
        pass.set(cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
                 "the first apply has not completed");
      } else {
        pass.set(cond::kInfrastructureHealthy, ConditionStatus::kUnknown,
                 cond::kReasonWaitingForProvisioning, "no apply has started yet");
      }
      if (!lifecycle::findCondition(pass.status->conditions, cond::kOutputsValid)) {
        pass.set(cond::kOutputsValid, ConditionStatus::kUnknown, cond::kReasonOutputsPending,
                 "no state yet");
      }
    }
    return absl::OkStatus();
  }
  return kind_->reconcileOutputs(pass);
}

absl::Status WorkloadReconciler::reconcileNormal(WorkloadPass& pass) {
  pass.set(cond::kDeleting, ConditionStatus::kFalse, cond::kReasonNotDeleting, "");
  if (absl::Status s = reconcileCredentials(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = reconcileJobs(pass); !s.ok()) {
    return s;
  }
  if (waitForActiveJob(pass)) {
    return absl::OkStatus();
  }
  if (absl::Status s = reconcileState(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = reconcileBackups(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = reconcileInputs(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = reconcileOutputs(pass); !s.ok() || pass.stale) {
    return s;
  }
  return decideAndRun(pass);
}

absl::Status WorkloadReconciler::reconcileDelete(WorkloadPass& pass) {
  if (pass.set(cond::kDeleting, ConditionStatus::kTrue, cond::kReasonDeleting,
               "the object is being deleted")) {
    pass.event(kube::EventType::kNormal, "DeletionStarted", "deletion started");
  }
  if (!pass.cluster_name.empty()) {
    if (absl::Status s = reconcileCredentials(pass); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = reconcileJobs(pass); !s.ok()) {
    return s;
  }
  if (waitForActiveJob(pass)) {
    return absl::OkStatus();
  }
  // Dependents first.
  auto blocked = kind_->deletionBlocked(pass);
  if (!blocked.ok()) {
    return blocked.status();
  }
  if (*blocked) {
    return absl::OkStatus();
  }
  pass.set(cond::kDeletionBlocked, ConditionStatus::kFalse, cond::kReasonNotBlocked, "");
  if (absl::Status s = reconcileState(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = reconcileInputs(pass); !s.ok()) {
    return s;
  }
  return decideAndRun(pass);
}

// 10. Decide (docs/behaviour/lifecycle.md#choosing-the-next-operation) and start the Job, or wait.
absl::Status WorkloadReconciler::decideAndRun(WorkloadPass& pass) {
  std::optional<api::PlanPreview> no_plan;
  std::optional<api::PlanPreview>& status_plan =
      kind_->plan(pass) != nullptr ? *kind_->plan(pass) : no_plan;
  lifecycle::DecisionInput in;
  in.traits = kind_->traits();
  in.deleting = pass.deleting;
  in.provisioned = pass.provisioned || pass.latched();
  in.state_observed = pass.status->observed_state_serial.has_value();
  in.state = lifecycle::stateReadingOf(pass.verdict, pass.state.status);
  in.state_inputs_hash = pass.state.inputs_hash;
  in.current_inputs_hash = pass.rendered ? pass.rendered->inputs_hash : "";
  in.inputs_too_large = pass.inputs_too_large;
  // A kind with immutable inputs destroys from its durable inputs only.
  in.destroy_inputs_available =
      pass.durable.has_value() || (!kind_->traits().immutable_inputs && pass.rendered.has_value());
  const auto& annotations = pass.meta->annotations;
  if (auto it = annotations.find(str(api::kAnnotationRestoreState)); it != annotations.end()) {
    in.restore_request = it->second;
  }
  if (auto it = annotations.find(str(api::kAnnotationOrphanOnDelete)); it != annotations.end()) {
    in.orphan_accepted = it->second == "true";
  }
  for (const api::StateBackup& backup : pass.status->state_backups) {
    in.backup_serials.push_back(backup.serial);
  }
  in.plan = status_plan;
  const std::string drift_reason = pass.currentReason(cond::kDriftDetected);
  in.drift_pending =
      drift_reason == cond::kReasonDriftPending || drift_reason == cond::kReasonDriftRemediating;
  in.last_refresh = pass.status->last_refresh;
  in.last_drift_check = pass.status->last_drift_check;
  in.pending_refreshes = pass.status->pending_refreshes.value_or(0);
  in.schedule = pass.schedule;
  in.failed_jobs_history_limit = pass.policy.failed_jobs_history_limit;
  in.jobs = pass.records();
  in.now = pass.now.value;
  in.jitter = lifecycle::jitterFor(pass.meta->uid);
  kind_->decisionInput(pass, in);
  pass.decision = lifecycle::decideNextOperation(in);
  if (pass.decision.clear_plan) {
    status_plan.reset();
  }
  const lifecycle::Decision& d = pass.decision;
  pass.count(deps_.metrics.reconcile_op_decisions_total.withLabels(
      {kind(), str(lifecycle::opLabel(d)), str(lifecycle::reasonName(d))}));
  pass.log.verbose(4, "next operation decided",
                   {{"operation", str(lifecycle::opLabel(d))},
                    {"reason", str(lifecycle::reasonName(d))},
                    {"attempt", d.attempt}});
  if (d.requeue_after) {
    pass.result.requeue_after = *d.requeue_after;
  }
  if (pass.lock.forced_from) {
    const kube::Duration until_forced = pass.lock.forced_from->time_since_epoch() -
                                        pass.now.value.time_since_epoch() + std::chrono::seconds(1);
    if (pass.result.requeue_after <= kube::Duration::zero() ||
        until_forced < pass.result.requeue_after) {
      pass.result.requeue_after = until_forced;
    }
  }
  if (d.remove_restore_annotation) {
    if (absl::Status s = pass.patcher.setAnnotation(api::kAnnotationRestoreState, std::nullopt);
        !s.ok()) {
      return s;
    }
  }
  if (const auto held = lifecycle::holdCondition(d.hold, kind_->resource(), pass.id, status_plan)) {
    if (pass.set(held->type, held->status, held->reason, held->message) &&
        d.hold == lifecycle::Hold::kRestoreBackupNotFound) {
      pass.count(deps_.metrics.state_restores_total.withLabels({kind(), "not_found"}));
    }
  }
  if (pass.deleting && d.hold == lifecycle::Hold::kStateLost) {
    // docs/behaviour/state.md#a-deleting-object-without-state: held, and said how to go on.
    pass.event(
        kube::EventType::kWarning, "DestroyBlocked",
        contract::strCat("no destroy can run: the state of this ", kind(),
                         " is gone and its infrastructure would be left behind; restore a backup "
                         "listed in status.stateBackups with the annotation ",
                         api::kAnnotationRestoreState,
                         "=<serial> to destroy it, or accept leaving it "
                         "behind with the annotation ",
                         api::kAnnotationOrphanOnDelete, "=true"));
  }
  if (d.action == lifecycle::Action::kCleanup) {
    if (d.orphaned) {
      pass.event(kube::EventType::kWarning, "ResourcesOrphaned",
                 contract::strCat("deleted without a destroy, as ", api::kAnnotationOrphanOnDelete,
                                  "=true allows: the state was lost and whatever infrastructure "
                                  "it managed was left behind"));
    }
    return cleanup(pass);
  }
  if (!lifecycle::findCondition(pass.status->conditions, cond::kApplyJobSucceeded)) {
    pass.set(cond::kApplyJobSucceeded, ConditionStatus::kUnknown, cond::kReasonNoApplyYet,
             "no apply has completed yet");
  }
  if (!lifecycle::findCondition(pass.status->conditions, cond::kDriftDetected)) {
    pass.set(cond::kDriftDetected, ConditionStatus::kUnknown, cond::kReasonDriftNotChecked, "");
    pass.set(cond::kDriftJobSucceeded, ConditionStatus::kUnknown, cond::kReasonDriftNotChecked, "");
  }
  if (d.action != lifecycle::Action::kRunJob || !d.operation) {
    // Not needed any more: clear the block-move annotation (docs/behaviour/lifecycle.md).
    if (kube::meta::annotations(pass.object).contains(str(api::kAnnotationBlockMove))) {
      return pass.patcher.setAnnotation(api::kAnnotationBlockMove, std::nullopt);
    }
    return absl::OkStatus();
  }
  return runJob(pass);
}

absl::Status WorkloadReconciler::runJob(WorkloadPass& pass) {
  const lifecycle::Decision& d = pass.decision;
  if (!d.operation) {
    return absl::InternalError("the decision runs a Job but names no operation");
  }
  const api::Operation op = *d.operation;
  const std::string op_name = str(api::enumName(op));
  // Credentials must be in place for any Job (docs/behaviour/identities.md#resolution item 7).
  if (!pass.identity.allowed.isTrue() || !pass.identity.mirrored.isTrue() || !pass.rbac.isTrue()) {
    if (!pass.identity.allowed.isTrue() &&
        (op == api::Operation::kApply || op == api::Operation::kDestroy)) {
      pass.set(cond::kApplyJobSucceeded, ConditionStatus::kFalse, cond::kReasonIdentityNotAllowed,
               "no Job can start: " + pass.identity.allowed.message);
    }
    pass.result.requeue_after = lifecycle::kLeaseRecheck;
    return absl::OkStatus();
  }
  if (pass.inputs_blocked && op != api::Operation::kDestroy) {
    return absl::OkStatus();
  }
  // Which root the Job renders (docs/behaviour/inputs.md#durable-and-per-run-inputs-secrets table).
  const contract::RenderedRoot* root = nullptr;
  const lifecycle::JobRoot which = lifecycle::rootForOperation(
      op, kind_->traits(), pass.durable.has_value(), pass.rendered.has_value());
  if (which == lifecycle::JobRoot::kDurable && pass.durable) {
    root = &pass.durable->root;
  } else if (which == lifecycle::JobRoot::kCurrent && pass.rendered) {
    root = &pass.rendered->root;
  }
  if (root == nullptr && op != api::Operation::kRestore) {
    return absl::OkStatus();
  }
  std::optional<workspace::RestoreInputs> restore;
  if (op == api::Operation::kRestore) {
    auto secrets = listSecrets(deps_.cached, pass.id.ns, workspace::backupSelector(pass.suffix));
    if (!secrets.ok()) {
      return secrets.status();
    }
    const auto request = pass.meta->annotations.find(str(api::kAnnotationRestoreState));
    auto found = workspace::findRestoreBackup(
        request == pass.meta->annotations.end() ? std::string() : request->second,
        workspace::listBackups(pass.suffix, *secrets));
    if (!found.ok()) {
      pass.set(cond::kRestoreJobSucceeded, ConditionStatus::kFalse,
               cond::kReasonRestoreBackupNotFound, std::string(found.status().message()));
      return absl::OkStatus();
    }
    restore = *std::move(found);
  }

  const std::string job_name =
      lifecycle::jobName(pass.id, lifecycle::JobNameParts{d.inputs_hash, op, d.attempt, d.tick});
  // A retried reconcile finds the Job it created.
  if (std::any_of(pass.jobs.begin(), pass.jobs.end(),
                  [&](const RunJob& run) { return run.record.name == job_name; })) {
    return absl::OkStatus();
  }
  // The decision came from the cached copy, and a Job cannot be taken
  // back: the API server's copy must be the one decided on. When someone
  // else wrote the object since (the previous pass's status patch, not in
  // the cache yet, e.g. a status.plan that would otherwise be planned
  // again; an approval withdrawn; a spec edit), the pass ends without
  // writing and runs again. The pass's own writes moved its copy along
  // (ObjectPatcher), so its resourceVersion is the server's unless someone
  // else wrote.
  CAPTF_ASSIGN_OR_RETURN(const bool current, isServersCopy(deps_.api, kind_->gvk(), pass.object));
  if (!current) {
    pass.stale = true;
    return absl::OkStatus();
  }

  // An apply writes the durable inputs: the API server's copy, not the
  // cache's (the digest this pass's bookkeeping pinned a moment ago is kept
  // while the image stays), read before any Lease is taken so that a
  // Secret of that name CAPTF did not make holds nothing but this object
  // (docs/behaviour/security.md#objects-captf-does-not-own).
  std::optional<json> existing_durable;
  if (op == api::Operation::kApply) {
    const std::string name = workspace::durableInputsSecretName(pass.ref);
    auto existing = deps_.api.get(kinds::kSecret, {pass.id.ns, name});
    if (!existing.ok() && !kube::isNotFound(existing.status())) {
      return existing.status();
    }
    if (existing.ok() && !workspace::isManaged(*existing)) {
      const std::string message = "Secret " + name +
                                  " exists and is not CAPTF's (no captf.io/managed=true label); "
                                  "it is never overwritten: rename or delete it";
      if (pass.set(cond::kApplyJobSucceeded, ConditionStatus::kFalse,
                   cond::kReasonInputsSecretConflict, message)) {
        pass.event(kube::EventType::kWarning, cond::kReasonInputsSecretConflict, message);
      }
      pass.result.requeue_after = lifecycle::kLeaseRecheck;
      return absl::OkStatus();
    }
    if (existing.ok()) {
      existing_durable = *std::move(existing);
    }
  }

  // Leases (docs/behaviour/lifecycle.md#run-leases-and-the-cluster-operation-gate).
  lifecycle::LeaseRequest lease;
  lease.kind = lifecycle::LeaseKind::kRun;
  lease.object = pass.id;
  lease.cluster_name = pass.cluster_name;
  lease.job = job_name;
  lease.operation = op;
  lease.active_deadline_seconds = pass.policy.active_deadline_seconds;
  lease.now = pass.now.value;
  const std::string_view wait_condition = lifecycle::waitConditionFor(op);
  std::string holder;
  auto verdict =
      takeLease(deps_.api, deps_.cached, lease, lifecycle::runLeaseName(pass.id), holder);
  if (!verdict.ok()) {
    return verdict.status();
  }
  if (*verdict == lifecycle::LeaseVerdict::kWait) {
    if (pass.set(wait_condition, ConditionStatus::kUnknown, cond::kReasonWaitingForRunLease,
                 "the run lease is held by Job " + holder)) {
      pass.count(deps_.metrics.lease_waits_total.withLabels({kind(), "run_lease"}));
      pass.event(kube::EventType::kNormal, "WaitingForRunLease",
                 "waiting for Job " + holder + " to release the run lease");
    }
    pass.result.requeue_after = lifecycle::kLeaseRecheck;
    return absl::OkStatus();
  }
  const bool gate = deps_.settings.cluster_operation_gate == ClusterOperationGate::kOn;
  if (lifecycle::gateApplies(gate, op) && !pass.cluster_name.empty()) {
    auto gate_input = kind_->gateInput(pass, lease);
    if (!gate_input.ok()) {
      return gate_input.status();
    }
    gate_input->traits = kind_->traits();
    switch (lifecycle::evaluateGate(*gate_input)) {
    case lifecycle::GateVerdict::kProceed:
      break;
    case lifecycle::GateVerdict::kWaitForMachineOperations:
      // Both Leases kept: new machine and pool operations queue behind.
      if (pass.set(
              wait_condition, ConditionStatus::kUnknown, cond::kReasonWaitingForMachineOperations,
              std::to_string(gate_input->dependent_operations) +
                  " machine/pool operations of Cluster " + pass.cluster_name + " are running")) {
        pass.count(deps_.metrics.lease_waits_total.withLabels({kind(), "machine_operations"}));
        pass.event(kube::EventType::kNormal, "WaitingForMachineOperations",
                   "waiting for machine and pool operations of Cluster " + pass.cluster_name);
      }
      pass.result.requeue_after = lifecycle::kLeaseRecheck;
      return absl::OkStatus();
    case lifecycle::GateVerdict::kWaitForClusterOperation:
      // The cluster applies or destroys: our run Lease goes back so the
      // cluster never waits on a machine that waits on it.
      if (absl::Status s =
              releaseLease(deps_.api, pass.id.ns, lifecycle::runLeaseName(pass.id), job_name);
          !s.ok()) {
        return s;
      }
      if (pass.set(wait_condition, ConditionStatus::kUnknown,
                   cond::kReasonWaitingForClusterOperation,
                   "an operation of Cluster " + pass.cluster_name + " is running")) {
        pass.count(deps_.metrics.lease_waits_total.withLabels({kind(), "cluster_operation"}));
        pass.event(kube::EventType::kNormal, "WaitingForClusterOperation",
                   "waiting for the operation of Cluster " + pass.cluster_name);
      }
      pass.result.requeue_after = lifecycle::kLeaseRecheck;
      return absl::OkStatus();
    }
  }

  // docs/behaviour/state.md#restore-over-an-unreadable-state: with the
  // Leases held and before the Job exists, an unreadable state goes aside.
  // When it cannot, no Job is made and the Leases go back.
  if (restore) {
    if (absl::Status s = setAsideUnreadableState(pass, restore->serial); !s.ok()) {
      CAPTF_RETURN_IF_ERROR(
          releaseLease(deps_.api, pass.id.ns, lifecycle::runLeaseName(pass.id), job_name));
      if (!pass.cluster_name.empty()) {
        CAPTF_RETURN_IF_ERROR(
            releaseLease(deps_.api, pass.id.ns,
                         lifecycle::clusterLeaseName(pass.id.ns, pass.cluster_name), job_name));
      }
      const std::string message =
          "the unreadable state was not set aside, so no restore Job was made: " +
          std::string(s.message());
      if (pass.set(cond::kRestoreJobSucceeded, ConditionStatus::kFalse,
                   cond::kReasonStateSetAsideFailed, message)) {
        pass.event(kube::EventType::kWarning, "StateSetAsideFailed", message);
      }
      return s;
    }
  }

  // docs/behaviour/lifecycle.md: block-move, written directly before the Job exists.
  if (lifecycle::blockMoveAction(
          kube::meta::annotations(pass.object).contains(str(api::kAnnotationBlockMove)), false,
          true) == lifecycle::BlockMoveAction::kSet) {
    if (absl::Status s = pass.patcher.setAnnotation(api::kAnnotationBlockMove, std::string("true"));
        !s.ok()) {
      return s;
    }
  }

  // docs/behaviour/inputs.md: the durable inputs are written when an apply Job starts.
  // A Git source's commit follows the root the Job renders: the durable
  // root ran the durable commit (docs/decisions/git-sources.md).
  std::optional<lifecycle::GitFetch> git;
  if (pass.spec->source.git) {
    const bool durable_root =
        pass.durable && (root == &pass.durable->root || op == api::Operation::kRestore);
    if (durable_root && pass.durable->annotations.git_commit && pass.git_spec) {
      // Also when nothing resolved this pass (deleting, or the owner is
      // gone): the source as the spec names it, at the durable commit.
      git = pass.git_spec;
      git->commit = *pass.durable->annotations.git_commit;
    } else {
      git = pass.git;
    }
    if (!git) {
      // Nothing to fetch yet (the ref is unresolved): no Job.
      pass.result.requeue_after = lifecycle::kLeaseRecheck;
      return absl::OkStatus();
    }
  }
  if (op == api::Operation::kApply) {
    workspace::DurableAnnotations annotations;
    annotations.image = pass.git ? pass.source_identity : pass.spec->source.image;
    if (existing_durable) {
      const json& notes = kube::meta::annotations(*existing_durable);
      const auto digest = notes.find(str(api::kAnnotationImageDigest));
      if (notes.value(str(api::kAnnotationImage), "") == pass.spec->source.image &&
          digest != notes.end() && digest->is_string()) {
        annotations.image_digest = digest->get<std::string>();
      }
    }
    annotations.identity = pass.identity.identity;
    if (git) {
      annotations.git_commit = git->commit;
    }
    json durable = workspace::durableInputsSecret(pass.ref, *root, annotations);
    if (existing_durable) {
      durable["metadata"]["resourceVersion"] = kube::meta::resourceVersion(*existing_durable);
      auto written = deps_.api.update(durable);
      if (!written.ok()) {
        return written.status();
      }
    } else {
      auto created = deps_.api.create(durable);
      if (!created.ok()) {
        return created.status();
      }
    }
  }

  lifecycle::JobStart start;
  start.object = pass.id;
  start.object_uid = pass.meta->uid;
  start.cluster_name = pass.cluster_name;
  start.job_name = job_name;
  start.traits = kind_->traits();
  start.source = pass.spec->source;
  if (pass.durable) {
    start.durable = pass.durable->annotations;
  }
  start.git = git;
  start.runner_image = deps_.settings.runner_image;
  start.policy = pass.policy;
  start.credentials_secret = pass.identity.mirror_name;
  start.credential_env_keys = pass.identity.delivery.env;
  if (pass.lock.state == workspace::LockState::kStale) {
    start.force_unlock_id = pass.lock.lock.id;
    pass.count(deps_.metrics.lock_force_unlocks_total.withLabels({kind()}));
    pass.event(kube::EventType::kWarning, "ForceUnlocked", pass.lock.message);
  }
  start.runner_events = deps_.settings.runner_events == RunnerEvents::kOn;
  // The run's report credential (docs/decisions/run-reports.md): only its
  // hash on the Job, the token in the per-run Secret.
  std::string report_token;
  if (deps_.settings.runReportsOn()) {
    report_token = contract::newReportToken();
    start.report_address = deps_.settings.run_reports.address;
    start.report_token_hash = contract::reportTokenHash(report_token);
  }
  start.restore = std::move(restore);
  auto job = lifecycle::buildJob(lifecycle::jobBuildRequest(d, start));
  if (!job.ok()) {
    return kube::terminalError(job.status());
  }
  auto created = deps_.api.create(*job);
  if (!created.ok() && !kube::isAlreadyExists(created.status())) {
    return created.status();
  }
  if (!created.ok()) {
    // Created by an earlier pass with another token: this run reports
    // nothing rather than with a credential its Job does not hold.
    report_token.clear();
    created = deps_.api.get(kinds::kJob, {pass.id.ns, job_name});
    if (!created.ok()) {
      return created.status();
    }
    if (!controlledBy(*created, kube::meta::uid(pass.object))) {
      // The name is held by an earlier object's Job, which the cache has
      // not shown yet: it goes, and a later pass creates this one's.
      CAPTF_RETURN_IF_ERROR(removeLeftoverJob(pass, *created));
      return absl::UnavailableError("Job " + job_name +
                                    " belonged to an earlier object of this name; deleted, this "
                                    "object's Job is created on the next pass");
    }
  }
  // The per-run Secret, owned by the Job; the pod waits for it.
  json run_secret =
      op == api::Operation::kRestore
          ? workspace::restoreRunSecret(pass.ref, job_name, kube::meta::uid(*created))
          : workspace::runSecret(pass.ref, job_name, kube::meta::uid(*created), *root);
  if (!report_token.empty()) {
    addReportCredential(run_secret, report_token, deps_.settings.run_reports.ca_file);
  }
  auto secret = deps_.api.create(run_secret);
  if (!secret.ok() && !kube::isAlreadyExists(secret.status())) {
    return secret.status();
  }
  if (!secret.ok()) {
    // Only the Secret this Job owns is its inputs; one left by an earlier
    // Job of the same name (garbage not yet collected) goes first.
    auto existing = deps_.api.get(kinds::kSecret, {pass.id.ns, kube::meta::name(run_secret)});
    if (!existing.ok()) {
      return existing.status();
    }
    if (!controlledBy(*existing, kube::meta::uid(*created))) {
      kube::DeleteOptions options;
      options.preconditions.uid = kube::meta::uid(*existing);
      CAPTF_RETURN_IF_ERROR(kube::ignoreNotFound(
          deps_.api.remove(kinds::kSecret, {pass.id.ns, kube::meta::name(run_secret)}, options)));
      return absl::UnavailableError("the inputs Secret of Job " + job_name +
                                    " was left by an earlier Job of that name; deleted, it is "
                                    "written again on the next pass");
    }
  }

  // Events, metrics and status of the start.
  std::string why = str(lifecycle::triggerName(d.trigger));
  pass.log.info("run Job created", {{"Job", kube::objectRef(pass.id.ns, job_name)},
                                    {"operation", op_name},
                                    {"attempt", d.attempt},
                                    {"trigger", why}});
  pass.event(kube::EventType::kNormal, "JobCreated",
             op_name + " Job " + job_name + " (attempt " + std::to_string(d.attempt) + ", image " +
                 lifecycle::sourceImage(pass.spec->source) +
                 (git ? ", commit " + git->commit.substr(0, 12) : std::string()) + "): " + why);
  if (d.trigger == lifecycle::Trigger::kInputsChanged) {
    pass.count(deps_.metrics.inputs_hash_changes_total.withLabels({kind()}));
    pass.event(kube::EventType::kNormal, "InputsChanged",
               "inputs hash " + d.inputs_hash + " differs from the state's " +
                   pass.state.inputs_hash);
  }
  if (d.trigger == lifecycle::Trigger::kDriftRemediation) {
    pass.set(cond::kDriftDetected, ConditionStatus::kTrue, cond::kReasonDriftRemediating,
             "remediation apply " + job_name + " is running");
    pass.event(kube::EventType::kNormal, "DriftRemediationStarted",
               "remediation apply " + job_name + " started");
  }
  if (!d.job.expect_plan.empty()) {
    pass.event(kube::EventType::kNormal, "PlanApproved",
               "apply of approved plan " + d.job.expect_plan + " started");
  }
  api::ActiveJob active;
  active.name = job_name;
  active.operation = op;
  active.attempt = d.attempt;
  active.start_time = pass.now;
  pass.status->active_job = active;
  if (op == api::Operation::kApply && !pass.provisioned) {
    pass.set(cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
             "apply Job " + job_name + " is running");
  }
  pass.result.requeue_after = std::chrono::minutes(1);
  return absl::OkStatus();
}

absl::Status WorkloadReconciler::setAsideUnreadableState(WorkloadPass& pass, std::int64_t serial) {
  // Read from the API server: the cache holds no Secret data and may be
  // behind, and what is deleted must be exactly what was copied.
  auto secrets = listSecrets(deps_.api, pass.id.ns, workspace::stateSelector(pass.suffix));
  if (!secrets.ok()) {
    return secrets.status();
  }
  const workspace::ReadState live = workspace::readState(pass.suffix, *secrets);
  if (workspace::decideSetAside(live.status, pass.lock.state) !=
      workspace::SetAsideDecision::kSetAside) {
    return absl::OkStatus();
  }
  workspace::SetAsideRequest request;
  request.ref = pass.ref;
  request.state_secrets = *std::move(secrets);
  request.reason = str(workspace::stateReason(
      workspace::classifyState(live, kind_->traits(), workspace::Provisioned::kNo)));
  request.set_aside_at = api::formatTime(pass.now);
  request.restore_serial = serial;
  const std::vector<workspace::SetAsideCopy> copies = workspace::setAsideCopies(request);
  // Every copy first: nothing is deleted unless all of them are in place.
  for (const workspace::SetAsideCopy& copy : copies) {
    const std::string name = kube::meta::name(copy.copy);
    absl::Status created = deps_.api.create(copy.copy).status();
    if (kube::isAlreadyExists(created)) {
      auto existing = deps_.api.get(kinds::kSecret, {pass.id.ns, name});
      if (!existing.ok()) {
        created = existing.status();
      } else if (workspace::sameSetAsideCopy(*existing, copy.copy)) {
        created = absl::OkStatus();
      } else {
        created = absl::AlreadyExistsError(
            contract::strCat("Secret ", name, " already exists with other content"));
      }
    }
    if (!created.ok()) {
      return absl::Status(created.code(), contract::strCat("copying state Secret ", copy.source,
                                                           " to ", name, ": ", created.message()));
    }
  }
  // Then the chunks, each only as it was copied: a chunk written since
  // fails the deletion (Conflict), and the next pass copies it again under
  // a set-aside id of its own.
  constexpr std::size_t kListed = 4; // the Event names a few; the runbook's selector finds all
  std::string kept;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    const workspace::SetAsideCopy& copy = copies[i];
    const std::string name = kube::meta::name(copy.copy);
    kube::DeleteOptions options;
    options.preconditions.uid = copy.source_uid;
    options.preconditions.resource_version = copy.source_resource_version;
    absl::Status removed = deps_.api.remove(kinds::kSecret, {pass.id.ns, copy.source}, options);
    if (!removed.ok() && !kube::isNotFound(removed)) {
      return absl::Status(removed.code(),
                          contract::strCat("deleting state Secret ", copy.source, " (copied to ",
                                           name, "): ", removed.message()));
    }
    if (i < kListed) {
      contract::strAppend(kept, i == 0 ? "" : ", ", copy.source, " as ", name);
    }
  }
  if (copies.size() > kListed) {
    contract::strAppend(kept, " and ", copies.size() - kListed, " more");
  }
  pass.log.info("unreadable state set aside before a restore",
                {{"reason", request.reason}, {"secrets", static_cast<int>(copies.size())}});
  pass.event(kube::EventType::kNormal, "StateSetAside",
             contract::strCat("the unreadable state (", request.reason,
                              ") was set aside before restoring serial ", serial,
                              "; kept: ", kept));
  return absl::OkStatus();
}

// docs/behaviour/lifecycle.md#deletion final cleanup, then the finalizer goes.
absl::Status WorkloadReconciler::cleanup(WorkloadPass& pass) {
  const auto plan = workspace::stateCleanup(pass.ref, pass.state.secret_names);
  for (const std::string& name : plan.secrets) {
    absl::Status s = deps_.api.remove(kinds::kSecret, {pass.id.ns, name});
    CAPTF_RETURN_IF_ERROR(kube::ignoreNotFound(s));
  }
  for (const std::string& name : plan.leases) {
    if (absl::Status s = deleteLease(deps_.api, pass.id.ns, name); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = deleteLease(deps_.api, pass.id.ns, lifecycle::runLeaseName(pass.id));
      !s.ok()) {
    return s;
  }
  if (kind_->traits().owns_cluster_lease && !pass.cluster_name.empty()) {
    if (absl::Status s = deleteLease(deps_.api, pass.id.ns,
                                     lifecycle::clusterLeaseName(pass.id.ns, pass.cluster_name));
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s =
          identity_.release(pass.object, pass.identity.identity.empty() ? kind_->identityName(pass)
                                                                        : pass.identity.identity);
      !s.ok()) {
    return s;
  }
  const bool destroyed = std::any_of(pass.jobs.begin(), pass.jobs.end(), [](const RunJob& run) {
    return run.record.operation == api::Operation::kDestroy &&
           run.record.outcome == lifecycle::JobOutcome::kSucceeded;
  });
  if (destroyed) {
    pass.event(kube::EventType::kNormal, "Destroyed", "infrastructure destroyed, state removed");
  }
  // No status patch follows the finalizer's removal, so the Jobs this pass
  // bookkept (the destroy) are marked now, while they surely exist: a pass
  // on a cached copy that still shows the finalizer then skips them instead
  // of counting the destroy a second time.
  if (absl::Status s = markBookkept(deps_.api, pass.id.ns, pass.bookkept); !s.ok()) {
    return s;
  }
  if (absl::Status s = pass.patcher.removeFinalizer(kind_->finalizer()); !s.ok()) {
    return s;
  }
  pass.set(cond::kDeleting, ConditionStatus::kTrue, cond::kReasonDeletionCompleted, "");
  pass.event(kube::EventType::kNormal, "FinalizerRemoved", "finalizer removed");
  deps_.metrics.forgetObject(kind(), pass.id.ns, pass.id.name);
  return absl::OkStatus();
}

// The drift and refresh series of captf_last_success_timestamp_seconds
// exist only while the object is scheduled for them
// (docs/runbooks/CAPTFNoRecentSuccess.md): a paused, deleting or unscheduled
// object withdraws them, so the alert never fires for a reading nobody
// waits for. While scheduled they carry status.lastDriftCheck and
// status.lastRefresh (a drift Job is a refresh too), which outlive the
// manager and a pause: a reading that stays stale after a restart or an
// unpause still alerts.
void WorkloadReconciler::exportReadingTimes(const WorkloadPass& pass) {
  lifecycle::DecisionInput in;
  in.traits = kind_->traits();
  in.deleting = pass.deleting;
  in.paused = pass.paused;
  in.provisioned = pass.provisioned || pass.latched();
  in.pending_refreshes = pass.status->pending_refreshes.value_or(0);
  in.schedule = pass.schedule;
  const lifecycle::RecurringReadings scheduled = lifecycle::recurringReadings(in);
  const auto export_one = [&](api::Operation op, bool on, const std::optional<api::Time>& last) {
    const std::vector<std::string> labels = {kind(), pass.id.ns, pass.id.name,
                                             str(api::enumName(op))};
    if (on && last) {
      deps_.metrics.last_success_timestamp_seconds.withLabels(labels).set(
          static_cast<double>(last->value.time_since_epoch().count()));
    } else {
      deps_.metrics.last_success_timestamp_seconds.remove(labels);
    }
  };
  export_one(api::Operation::kDrift, scheduled.drift, pass.status->last_drift_check);
  export_one(api::Operation::kRefresh, scheduled.refresh, pass.status->last_refresh);
}

// Ready (docs/behaviour/lifecycle.md), observedGeneration and the per-object gauges.
void WorkloadReconciler::summarize(WorkloadPass& pass) {
  const bool provisioned = pass.latched();
  kind_->summarize(pass);
  lifecycle::setReady(pass.status->conditions, kind_->traits(), provisioned, pass.generation,
                      pass.now);
  if (pass.generation > 0) {
    pass.status->observed_generation = pass.generation;
  }
  const auto value = [&](std::string_view type) {
    const api::Condition* c = lifecycle::findCondition(pass.status->conditions, type);
    if (c == nullptr || c->status == ConditionStatus::kUnknown) {
      return -1.0;
    }
    return c->status == ConditionStatus::kTrue ? 1.0 : 0.0;
  };
  const std::vector<std::string> labels = {kind(), pass.id.ns, pass.id.name};
  deps_.metrics.ready.withLabels(labels).set(value(cond::kReady));
  deps_.metrics.infrastructure_healthy.withLabels(labels).set(value(cond::kInfrastructureHealthy));
  deps_.metrics.drift_detected.withLabels(labels).set(value(cond::kDriftDetected) == 1.0 ? 1 : 0);
  exportReadingTimes(pass);
  // ConditionChanged for other owned conditions that changed status or
  // reason, Warning when the change is into a bad state.
  for (const api::Condition& c : pass.status->conditions) {
    if (c.type == cond::kReady) {
      continue;
    }
    const api::Condition* before = lifecycle::findCondition(pass.original->conditions, c.type);
    if (before != nullptr && before->status == c.status && before->reason == c.reason) {
      continue;
    }
    if (before == nullptr) {
      continue; // first report, not a change
    }
    const bool bad = lifecycle::isNegativePolarity(c.type) ? c.status == ConditionStatus::kTrue
                                                           : c.status == ConditionStatus::kFalse;
    pass.event(bad ? kube::EventType::kWarning : kube::EventType::kNormal, "ConditionChanged",
               c.type + " is now " + str(api::enumName(c.status)) + " (" + c.reason + ")");
  }
}

} // namespace captf::controllers
