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

using kube::str;

api::Time toApiTime(kube::WallTime t) {
  return api::Time{std::chrono::time_point_cast<std::chrono::seconds>(t)};
}

} // namespace

// ---- WorkloadReconciler ------------------------------------------------------------

WorkloadReconciler::WorkloadReconciler(ReconcilerDeps deps, std::unique_ptr<WorkloadKind> kind)
    : deps_(deps), kind_(std::move(kind)),
      identity_(deps.cached, deps.api, deps.events, deps.metrics), rbac_(deps.cache, deps.api),
      bookkeeping_(deps_, *kind_), inputs_(deps_, *kind_), starter_(deps_, *kind_) {}

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
  auto begun = kind_->begin(pass.object);
  if (!begun.ok()) {
    return kube::terminalError(begun.status());
  }
  pass.kind = *std::move(begun);
  pass.meta = &pass.kind->meta();
  pass.spec = &pass.kind->spec();
  pass.status = &pass.kind->status();
  pass.original = &pass.kind->original();
  pass.wall = deps_.clock.wallNow();
  pass.now = toApiTime(pass.wall);
  pass.generation = pass.meta->generation;
  pass.deleting = pass.meta->deletion_timestamp.has_value();
  pass.id = lifecycle::ObjectIdentity{kind_->role(), request.ns, request.name};
  pass.suffix = lifecycle::stateSuffix(pass.id);

  if (absl::Status s = pass.kind->reconcileOwner(pass); !s.ok()) {
    return s;
  }
  pass.ref = workspace::ObjectRef{kind_->role(), request.ns, request.name, pass.meta->uid,
                                  pass.cluster_name};
  // The effective settings (own, then inherited, then built-in).
  pass.policy = lifecycle::resolveJobPolicy(pass.spec->jobs, pass.kind->inheritedJobs(pass));
  pass.schedule = pass.kind->schedule(pass, deps_.settings.drift_default_interval);

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
        pass.patcher.patchStatus(pass.kind->originalJson(), pass.kind->statusJson());
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
  const std::string identity = pass.kind->identityName(pass);
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

absl::Status WorkloadReconciler::pausedBranch(WorkloadPass& pass) {
  if (pass.set(cond::kPaused, ConditionStatus::kTrue, cond::kReasonPaused, "")) {
    pass.event(kube::EventType::kNormal, "Paused", "reconciliation paused");
  }
  if (absl::Status s = bookkeeping_.reconcileJobs(pass); !s.ok()) {
    return s;
  }
  if (!bookkeeping_.waitForActiveJob(pass)) {
    if (kube::meta::annotations(pass.object).contains(str(api::kAnnotationBlockMove))) {
      return pass.patcher.setAnnotation(api::kAnnotationBlockMove, std::nullopt);
    }
  }
  return absl::OkStatus();
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
  return pass.kind->reconcileOutputs(pass);
}

absl::Status WorkloadReconciler::reconcileNormal(WorkloadPass& pass) {
  pass.set(cond::kDeleting, ConditionStatus::kFalse, cond::kReasonNotDeleting, "");
  if (absl::Status s = reconcileCredentials(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = bookkeeping_.reconcileJobs(pass); !s.ok()) {
    return s;
  }
  if (bookkeeping_.waitForActiveJob(pass)) {
    return absl::OkStatus();
  }
  if (absl::Status s = inputs_.reconcileState(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = inputs_.reconcileBackups(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = inputs_.reconcileInputs(pass); !s.ok()) {
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
  if (absl::Status s = bookkeeping_.reconcileJobs(pass); !s.ok()) {
    return s;
  }
  if (bookkeeping_.waitForActiveJob(pass)) {
    return absl::OkStatus();
  }
  // Dependents first.
  auto blocked = pass.kind->deletionBlocked(pass);
  if (!blocked.ok()) {
    return blocked.status();
  }
  if (*blocked) {
    return absl::OkStatus();
  }
  pass.set(cond::kDeletionBlocked, ConditionStatus::kFalse, cond::kReasonNotBlocked, "");
  if (absl::Status s = inputs_.reconcileState(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = inputs_.reconcileInputs(pass); !s.ok()) {
    return s;
  }
  return decideAndRun(pass);
}

// 10. Decide (docs/behaviour/lifecycle.md#choosing-the-next-operation) and start the Job, or wait.
absl::Status WorkloadReconciler::decideAndRun(WorkloadPass& pass) {
  std::optional<api::PlanPreview> no_plan;
  std::optional<api::PlanPreview>& status_plan =
      pass.kind->plan(pass) != nullptr ? *pass.kind->plan(pass) : no_plan;
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
  pass.kind->decisionInput(pass, in);
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
  return starter_.start(pass);
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
  if (absl::Status s = identity_.release(pass.object, pass.identity.identity.empty()
                                                          ? pass.kind->identityName(pass)
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
  pass.kind->summarize(pass);
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
