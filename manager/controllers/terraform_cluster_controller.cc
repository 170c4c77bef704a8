#include "manager/controllers/terraform_cluster_controller.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/str_join.h"
#include "contract/render.h"
#include "manager/api/codec.h"
#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/api/terraform_cluster.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "manager/kube/patch.h"
#include "manager/lifecycle/bookkeeping.h"
#include "manager/lifecycle/decision.h"
#include "manager/lifecycle/defaults.h"
#include "manager/lifecycle/history.h"
#include "manager/lifecycle/job_builder.h"
#include "manager/lifecycle/leases.h"
#include "manager/lifecycle/names.h"
#include "manager/lifecycle/ready.h"
#include "manager/lifecycle/schedule.h"
#include "manager/workspace/backups.h"
#include "manager/workspace/inputs.h"
#include "manager/workspace/locks.h"
#include "manager/workspace/names.h"
#include "manager/workspace/outputs.h"
#include "manager/workspace/result.h"
#include "manager/workspace/secrets.h"
#include "manager/workspace/state.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

constexpr std::string_view kKind = api::kKindTerraformCluster;
constexpr std::chrono::seconds kDependentsRecheck{10};
constexpr std::chrono::minutes kStuckJobAge{1};

std::string str(std::string_view s) {
  return std::string(s);
}

ConditionStatus toStatus(const std::string& s) {
  return s == "True" ? ConditionStatus::kTrue
                     : (s == "False" ? ConditionStatus::kFalse : ConditionStatus::kUnknown);
}

api::Time toApiTime(kube::WallTime t) {
  return api::Time{std::chrono::time_point_cast<std::chrono::seconds>(t)};
}

bool isClusterOwner(const api::OwnerReference& ref) {
  const auto gvk = kube::GroupVersionKind::fromApiVersion(ref.api_version, ref.kind);
  return gvk.group == api::kClusterApiGroup && ref.kind == "Cluster";
}

std::string approveCommand(const std::string& ns, const std::string& name, std::string_view key,
                           const std::string& value) {
  return "kubectl -n " + ns + " annotate terraformcluster " + name + " " + str(key) + "=" + value +
         " --overwrite";
}

std::string planChangedMessage(const lifecycle::ObjectIdentity& id, const std::string& plan_hash) {
  return "the approved plan changed; new plan " + plan_hash + " awaits approval: " +
         approveCommand(id.ns, id.name, api::kAnnotationApprovePlan, plan_hash);
}

} // namespace

// One reconcile's working set.
struct TerraformClusterReconciler::Pass {
  explicit Pass(kube::Writer& api) : patcher(api, object) {}
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

  json object;              // as read, at the version of the pass's last own write
  ObjectPatcher patcher;    // every write to `object` (workload.h)
  api::TerraformCluster tc; // decoded
  api::TerraformClusterStatus status;
  api::TerraformClusterStatus original;
  kube::WallTime wall;
  api::Time now;
  std::int64_t generation = 0;
  bool deleting = false;
  spdlog::logger* log = nullptr;

  // Owner.
  std::string cluster_name;
  json cluster; // the CAPI Cluster, null when none / gone
  bool owner_ok = false;

  lifecycle::ObjectIdentity id;
  workspace::ObjectRef ref;
  std::string suffix;

  // Credentials.
  IdentityResult identity;
  ConditionResult rbac;
  lifecycle::EffectiveJobPolicy policy;

  // Jobs.
  std::vector<RunJob> jobs;
  std::vector<std::string> bookkept; // mark after the status patch
  const RunJob* active = nullptr;

  // State and inputs.
  workspace::ReadState state;
  workspace::StateVerdict verdict = workspace::StateVerdict::kNotFound;
  workspace::LockDecision lock;
  std::optional<workspace::DurableInputs> durable;
  std::optional<workspace::RenderedInputs> rendered;
  bool inputs_too_large = false;
  bool inputs_blocked = false; // a dependency (variables) keeps inputs from building
  workspace::ClusterOutputs outputs;
  bool provisioned = false;

  lifecycle::Decision decision;
  kube::Result result;
  absl::Status error; // returned after the status patch
  // The API server's status of the object is newer than the cached one
  // the pass decided on (runJob checks before creating a Job).
  bool stale = false;

  // Counter increments and histogram observations, made after the status
  // patch (§8: failure counters count transitions, and a transition counts
  // when its status lands).
  std::vector<std::pair<kube::Counter*, double>> counts;
  std::vector<std::pair<kube::Histogram*, double>> observations;
};

TerraformClusterReconciler::TerraformClusterReconciler(ReconcilerDeps deps)
    : deps_(deps), identity_(deps.cached, deps.api, deps.events, deps.metrics),
      rbac_(deps.cache, deps.api) {}

TerraformClusterReconciler::~TerraformClusterReconciler() = default;

void TerraformClusterReconciler::event(const Pass& pass, kube::EventType type,
                                       std::string_view reason, const std::string& note) {
  deps_.events.event(pass.object, type, reason, "Reconcile", note);
}

namespace {

bool set(TerraformClusterReconciler::Pass& pass, std::string_view type, ConditionStatus status,
         std::string_view reason, const std::string& message) {
  return lifecycle::setCondition(pass.status.conditions, type, status, reason, message,
                                 pass.generation,
                                 pass.now) == lifecycle::ConditionChange::kTransition;
}

bool set(TerraformClusterReconciler::Pass& pass, std::string_view type,
         const ConditionResult& result) {
  return set(pass, type, toStatus(result.status), result.reason, result.message);
}

void count(TerraformClusterReconciler::Pass& pass, kube::Counter& counter, double delta = 1) {
  pass.counts.emplace_back(&counter, delta);
}

void observe(TerraformClusterReconciler::Pass& pass, kube::Histogram& histogram, double value) {
  pass.observations.emplace_back(&histogram, value);
}

// The provisioned latch (§15.1): initialization.provisioned once true.
bool provisionedLatch(const api::TerraformClusterStatus& status) {
  return status.initialization && status.initialization->provisioned.value_or(false);
}

std::string conditionReasonOf(const api::TerraformClusterStatus& status, std::string_view type) {
  const api::Condition* c = lifecycle::findCondition(status.conditions, type);
  return c == nullptr ? "" : c->reason;
}

} // namespace

absl::StatusOr<kube::Result>
TerraformClusterReconciler::reconcile(const kube::ReconcileContext& ctx,
                                      const kube::Request& request) {
  absl::StatusOr<kube::Result> result = reconcilePass(ctx, request);
  if (kube::isConflict(result.status())) {
    // A guarded write lost a race with a newer one (most often the cache had
    // not yet seen this controller's previous status patch): nothing of the
    // pass was kept after it, and the pass runs again from the newer copy. A
    // lost race, not a reconcile error worth an error line and an alert.
    ctx.log.info("lost a write race, reconciling again object={} error=\"{}\"", request.str(),
                 std::string(result.status().message()));
    return kube::Result{.requeue_after = kube::Duration::zero(), .requeue = true};
  }
  return result;
}

absl::StatusOr<kube::Result>
TerraformClusterReconciler::reconcilePass(const kube::ReconcileContext& ctx,
                                          const kube::Request& request) {
  auto object = deps_.cached.get(kinds::kTerraformCluster, request);
  if (!object.ok()) {
    if (kube::isNotFound(object.status())) {
      deps_.metrics.forgetObject(str(kKind), request.ns, request.name);
      return kube::Result{};
    }
    return object.status();
  }
  Pass pass(deps_.api);
  pass.object = *std::move(object);
  pass.log = &ctx.log;
  // 1. Externally managed: nothing at all.
  if (kube::meta::annotations(pass.object).contains(str(api::kAnnotationManagedBy))) {
    return kube::Result{};
  }
  auto decoded = api::fromJson<api::TerraformCluster>(pass.object);
  if (!decoded.ok()) {
    return kube::terminalError(decoded.status());
  }
  pass.tc = *std::move(decoded);
  pass.status = pass.tc.status.value_or(api::TerraformClusterStatus{});
  pass.original = pass.status;
  pass.wall = deps_.clock.wallNow();
  pass.now = toApiTime(pass.wall);
  pass.generation = pass.tc.metadata.generation;
  pass.deleting = pass.tc.metadata.deletion_timestamp.has_value();
  pass.id = lifecycle::ObjectIdentity{contract::Role::kCluster, request.ns, request.name};
  pass.suffix = lifecycle::stateSuffix(pass.id);

  if (absl::Status s = reconcileOwner(pass); !s.ok()) {
    return s;
  }
  pass.ref = workspace::ObjectRef{contract::Role::kCluster, request.ns, request.name,
                                  pass.tc.metadata.uid, pass.cluster_name};

  absl::Status status = absl::OkStatus();
  bool patch = true;
  if (pass.cluster_name.empty()) {
    // No owner yet (or an owner-less object being deleted, handled inside).
    if (pass.deleting) {
      status = reconcileDelete(pass);
      patch = hasFinalizer(pass.object, api::kFinalizerTerraformCluster);
    }
  } else if (!pass.owner_ok && !pass.deleting) {
    // Stop: the owner is gone or does not reference us back.
  } else if (!pass.deleting && !hasFinalizer(pass.object, api::kFinalizerTerraformCluster)) {
    // 3. Finalizer: add it and end the pass so the write is visible.
    if (absl::Status s = pass.patcher.addFinalizer(api::kFinalizerTerraformCluster); !s.ok()) {
      return s;
    }
    return kube::Result{};
  } else if (pass.deleting && !hasFinalizer(pass.object, api::kFinalizerTerraformCluster)) {
    return kube::Result{};
  } else {
    const bool paused =
        kube::meta::annotations(pass.object).contains(str(api::kAnnotationPaused)) ||
        (pass.cluster.is_object() &&
         pass.cluster.value("spec", json::object()).value("paused", false));
    if (paused) {
      status = pausedBranch(pass);
    } else {
      if (set(pass, cond::kPaused, ConditionStatus::kFalse, cond::kReasonNotPaused, "") &&
          !pass.original.conditions.empty() &&
          conditionReasonOf(pass.original, cond::kPaused) == cond::kReasonPaused) {
        event(pass, kube::EventType::kNormal, "Resumed", "reconciliation resumed");
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
        pass.patcher.patchStatus(api::toJson(pass.original), api::toJson(pass.status));
    if (!patched.ok() && !kube::isNotFound(patched)) {
      return patched;
    }
    // §11.1: a finished Job is marked bookkept only after the status patch.
    for (const std::string& job : pass.bookkept) {
      json marker = {{"apiVersion", "batch/v1"},
                     {"kind", "Job"},
                     {"metadata", {{"name", job}, {"namespace", pass.id.ns}}}};
      absl::Status marked =
          patchAnnotation(deps_.api, marker, api::kAnnotationBookkept, std::string("true"));
      if (!marked.ok() && !kube::isNotFound(marked)) {
        return marked;
      }
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

// 2. Owner lookup and the back-reference checks of §11.3.
absl::Status TerraformClusterReconciler::reconcileOwner(Pass& pass) {
  const api::OwnerReference* owner = nullptr;
  for (const api::OwnerReference& ref : pass.tc.metadata.owner_references) {
    if (isClusterOwner(ref)) {
      owner = &ref;
      break;
    }
  }
  if (owner == nullptr) {
    set(pass, cond::kDependenciesReady, ConditionStatus::kUnknown, cond::kReasonWaitingForOwner,
        "waiting for a Cluster to own this TerraformCluster");
    return absl::OkStatus();
  }
  pass.cluster_name = owner->name;
  auto cluster = deps_.cached.get(kinds::kCluster, {pass.id.ns, owner->name});
  if (!cluster.ok()) {
    if (!kube::isNotFound(cluster.status())) {
      return cluster.status();
    }
    set(pass, cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonOwnerNotFound,
        "Cluster " + owner->name + " does not exist");
    return absl::OkStatus();
  }
  pass.cluster = *std::move(cluster);
  const json ref = pass.cluster.value("spec", json::object()).value("infrastructureRef", json());
  std::string group = ref.is_object() ? ref.value("apiGroup", "") : "";
  if (group.empty() && ref.is_object()) {
    group = kube::GroupVersionKind::fromApiVersion(ref.value("apiVersion", ""), "").group;
  }
  std::string mismatch;
  if (!ref.is_object() || group != api::kGroup || ref.value("kind", "") != kKind ||
      ref.value("name", "") != pass.id.name) {
    mismatch = "Cluster " + owner->name + " spec.infrastructureRef does not name this object";
  } else if (!owner->uid.empty() && owner->uid != kube::meta::uid(pass.cluster)) {
    mismatch = "the ownerReference's uid is not Cluster " + owner->name + "'s";
  }
  if (!mismatch.empty()) {
    set(pass, cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonOwnerMismatch,
        mismatch);
    return absl::OkStatus();
  }
  pass.owner_ok = true;
  set(pass, cond::kDependenciesReady, ConditionStatus::kTrue, cond::kReasonDependenciesReady, "");
  return absl::OkStatus();
}

// 5. Identity, credential mirror, runner RBAC.
absl::Status TerraformClusterReconciler::reconcileCredentials(Pass& pass) {
  pass.policy = lifecycle::resolveJobPolicy(pass.tc.spec.jobs, std::nullopt);
  const std::string identity = lifecycle::effectiveIdentityName(
      pass.tc.spec.identity_ref.name.empty()
          ? std::nullopt
          : std::optional<api::IdentityReference>(pass.tc.spec.identity_ref),
      std::nullopt);
  pass.identity = identity_.resolve(pass.object, identity);
  if (set(pass, cond::kIdentityAllowed, pass.identity.allowed) &&
      pass.identity.allowed.reason == cond::kReasonNamespaceNotAllowed) {
    event(pass, kube::EventType::kWarning, "IdentityNotAllowed", pass.identity.allowed.message);
  }
  set(pass, cond::kCredentialsMirrored, pass.identity.mirrored);
  if (!pass.identity.transient.ok()) {
    pass.error = pass.identity.transient;
  }
  absl::Status transient = absl::OkStatus();
  pass.rbac = rbac_.ensure(pass.id.ns, pass.policy.service_account_name, transient);
  set(pass, cond::kRunnerRbacReady, pass.rbac);
  if (!transient.ok() && pass.error.ok()) {
    pass.error = transient;
  }
  for (const std::string& dropped : pass.policy.dropped_env) {
    event(pass, kube::EventType::kWarning, "EnvDropped",
          "spec.jobs.env entry " + dropped + " dropped: names starting TF_ or KUBE_ are reserved");
  }
  return absl::OkStatus();
}

// 6. Bookkeeping of finished Jobs (§11.5) and history pruning.
absl::Status TerraformClusterReconciler::reconcileJobs(Pass& pass) {
  auto jobs =
      listRunJobs(deps_.cached, pass.id.ns, str(kKind), lifecycle::labelSafeName(pass.id.name));
  if (!jobs.ok()) {
    return jobs.status();
  }
  pass.jobs = *std::move(jobs);
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
    if (live.ok() && kube::meta::annotations(*live).contains(str(api::kAnnotationBookkept))) {
      continue;
    }
    if (absl::Status s = bookkeep(pass, i); !s.ok()) {
      return s;
    }
  }
  // History pruning per object and operation.
  std::vector<lifecycle::JobRecord> records;
  for (const RunJob& run : pass.jobs) {
    records.push_back(run.record);
  }
  for (const std::string& name :
       lifecycle::jobsToPrune(records, pass.policy.successful_jobs_history_limit,
                              pass.policy.failed_jobs_history_limit)) {
    kube::DeleteOptions options;
    options.propagation = kube::PropagationPolicy::kBackground;
    absl::Status removed = deps_.api.remove(kinds::kJob, {pass.id.ns, name}, options);
    if (!removed.ok() && !kube::isNotFound(removed)) {
      return removed;
    }
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

absl::Status TerraformClusterReconciler::bookkeep(Pass& pass, size_t index) {
  RunJob& run = pass.jobs[index];
  const std::string& name = run.record.name;
  const api::Operation op = run.record.operation;
  const std::string op_name = str(api::enumName(op));
  auto pod = podOfJob(deps_.cached, pass.id.ns, name);
  if (!pod.ok()) {
    return pod.status();
  }
  std::optional<std::string> message;
  if (pod->has_value()) {
    message = terminationMessage(**pod, kSourceContainer);
  }
  const bool deadline = jobDeadlineExceeded(run.job);
  lifecycle::FinishedJobFacts facts;
  facts.job = name;
  facts.operation = op;
  facts.job_succeeded = run.record.outcome == lifecycle::JobOutcome::kSucceeded;
  facts.pod_exists = pod->has_value();
  facts.deadline_exceeded = deadline;
  facts.termination_message = message;
  const lifecycle::FinishedRun finished = lifecycle::classifyFinishedRun(facts);
  const workspace::RunOutcome outcome = finished.outcome;
  const api::LastRun& last_run = finished.last_run;
  const std::optional<workspace::RunReport>& parsed = finished.report;
  run.record.outcome = finished.job_outcome;
  // Marks the next pass (and the decision) read back from the Job.
  if (finished.plan_unreadable) {
    json job_ref = run.job;
    if (absl::Status s = patchAnnotation(deps_.api, job_ref, api::kAnnotationPlanUnreadable,
                                         std::string("true"));
        !s.ok() && !kube::isNotFound(s)) {
      return s;
    }
  }
  if (finished.mark) {
    if (absl::Status s = patchAnnotation(deps_.api, run.job, *finished.mark, std::string("true"));
        !s.ok() && !kube::isNotFound(s)) {
      return s;
    }
  }

  // Adoption and approvals after a successful apply (before the status
  // patch: a crash repeats them, they are idempotent).
  if (outcome == workspace::RunOutcome::kSucceeded && op == api::Operation::kApply) {
    if (absl::Status s = adopt(pass, run.record.inputs_hash, name); !s.ok()) {
      return s;
    }
    // Digest pinning on the durable inputs Secret.
    const std::string image_id =
        pod->has_value() ? containerImageId(**pod, kSourceContainer) : std::string();
    const auto digest = workspace::digestFromImageId(image_id);
    json durable_ref = {
        {"apiVersion", "v1"},
        {"kind", "Secret"},
        {"metadata",
         {{"name", workspace::durableInputsSecretName(pass.ref)}, {"namespace", pass.id.ns}}}};
    if (digest) {
      auto pinned = deps_.api.patch(kinds::kSecret, kube::meta::key(durable_ref),
                                    kube::PatchType::kMerge, workspace::imageDigestPatch(*digest));
      if (pinned.ok()) {
        event(pass, kube::EventType::kNormal, "DigestPinned",
              "image " + pass.tc.spec.source.image + " pinned to " + *digest);
      } else if (!kube::isNotFound(pinned.status())) {
        return pinned.status();
      }
    } else {
      event(pass, kube::EventType::kWarning, "DigestUnknown",
            "no image digest could be pinned for Job " + name);
    }
    api::SourceStatus source;
    source.image = parsed && !parsed->image.empty() ? parsed->image : pass.tc.spec.source.image;
    if (digest) {
      source.image_digest = *digest;
    }
    if (parsed && !parsed->runtime_version.empty()) {
      source.runtime_version = parsed->runtime_version;
    }
    pass.status.source = source;
    const auto& annotations = pass.tc.metadata.annotations;
    if (auto it = annotations.find(str(api::kAnnotationApproveDestructivePlan));
        it != annotations.end() && it->second == run.record.inputs_hash) {
      if (absl::Status s =
              pass.patcher.setAnnotation(api::kAnnotationApproveDestructivePlan, std::nullopt);
          !s.ok()) {
        return s;
      }
      count(pass, deps_.metrics.destructive_plan_approvals_consumed_total.withLabels({str(kKind)}));
      event(pass, kube::EventType::kNormal, "DestructivePlanApprovalConsumed",
            "the approval of inputs " + run.record.inputs_hash + " was used and removed");
    }
    if (!run.record.approved_plan.empty()) {
      if (auto it = annotations.find(str(api::kAnnotationApprovePlan));
          it != annotations.end() && it->second == run.record.approved_plan) {
        if (absl::Status s = pass.patcher.setAnnotation(api::kAnnotationApprovePlan, std::nullopt);
            !s.ok()) {
          return s;
        }
      }
      pass.status.plan.reset();
      count(pass, deps_.metrics.plan_approvals_total.withLabels({str(kKind), "approved"}));
      event(pass, kube::EventType::kNormal, "PlanApplied",
            "approved plan " + run.record.approved_plan + " applied");
    }
  }
  // §16.6: an apply that succeeded after the check that found drift (the
  // remediation, or any apply: it converged reality to the inputs) resolves
  // it at once (docs/decisions/lifecycle-decision.md, open question 30); a
  // remediation that failed, was blocked or found its plan changed leaves it
  // pending.
  if (op == api::Operation::kApply) {
    const api::Condition* drift =
        lifecycle::findCondition(pass.status.conditions, cond::kDriftDetected);
    // Bookkeeping runs newest Job first: an older apply bookkept in the
    // same pass as a newer drift check must not clear what that check found.
    const auto& checked = pass.status.last_drift_check;
    const bool after_check =
        !checked || !run.record.finished || run.record.finished->value > checked->value;
    const bool drifted = drift != nullptr && drift->status == ConditionStatus::kTrue;
    if (outcome == workspace::RunOutcome::kSucceeded && drifted && after_check) {
      const std::string note =
          (run.record.drift_remediation ? "remediation apply " : "apply ") + name + " succeeded";
      set(pass, cond::kDriftDetected, ConditionStatus::kFalse, cond::kReasonNoDrift, note);
      event(pass, kube::EventType::kNormal, "DriftResolved", note);
    } else if (outcome != workspace::RunOutcome::kSucceeded && run.record.drift_remediation) {
      set(pass, cond::kDriftDetected, ConditionStatus::kTrue, cond::kReasonDriftPending,
          "remediation apply " + name + " " + str(workspace::jobsTotalResult(outcome)) +
              "; the drift is still pending");
    }
  }
  // §14.7: the restored state is adopted with the backup's inputs hash (the
  // restore Job carries it), so current inputs that differ re-apply.
  if (outcome == workspace::RunOutcome::kSucceeded && op == api::Operation::kRestore) {
    if (absl::Status s = adopt(pass, run.record.inputs_hash, name); !s.ok()) {
      return s;
    }
  }

  // status.lastRun and the operation's condition.
  pass.status.last_run = last_run;
  const std::string summary =
      last_run.error && last_run.error->summary ? *last_run.error->summary : std::string();
  switch (op) {
  case api::Operation::kApply:
  case api::Operation::kDestroy:
  case api::Operation::kPlan: {
    const bool destroy = op == api::Operation::kDestroy;
    if (outcome == workspace::RunOutcome::kSucceeded) {
      if (op == api::Operation::kPlan) {
        if (parsed && parsed->plan) {
          api::PlanPreview plan = *parsed->plan;
          plan.inputs_hash = run.record.inputs_hash;
          plan.job = name;
          plan.created_at = pass.now;
          pass.status.plan = plan;
          set(pass, cond::kApplyJobSucceeded, ConditionStatus::kUnknown,
              cond::kReasonPlanAwaitingApproval,
              "plan " + plan.plan_hash + " awaits approval: " +
                  approveCommand(pass.id.ns, pass.id.name, api::kAnnotationApprovePlan,
                                 plan.plan_hash));
          event(pass, kube::EventType::kNormal, "PlanReady",
                "plan " + plan.plan_hash + " of Job " + name + ": +" +
                    std::to_string(plan.add.value_or(0)) + " ~" +
                    std::to_string(plan.change.value_or(0)) + " -" +
                    std::to_string(plan.destroy.value_or(0)) + "; approve with " +
                    approveCommand(pass.id.ns, pass.id.name, api::kAnnotationApprovePlan,
                                   plan.plan_hash));
        }
      } else {
        set(pass, cond::kApplyJobSucceeded, ConditionStatus::kTrue,
            destroy ? cond::kReasonDestroySucceeded : cond::kReasonApplySucceeded, "");
      }
    } else if (outcome == workspace::RunOutcome::kBlocked) {
      std::string resources;
      if (parsed && parsed->plan) {
        resources = absl::StrJoin(parsed->plan->resources, ", ");
      }
      set(pass, cond::kApplyJobSucceeded, ConditionStatus::kFalse,
          cond::kReasonDestructivePlanBlocked,
          "Job " + name + " stopped before a plan that deletes or replaces " +
              (resources.empty() ? std::string("resources") : resources) + "; approve with " +
              approveCommand(pass.id.ns, pass.id.name, api::kAnnotationApproveDestructivePlan,
                             run.record.inputs_hash));
      event(pass, kube::EventType::kWarning, "DestructivePlanBlocked",
            "Job " + name + " planned to delete or replace resources; inputs " +
                run.record.inputs_hash + " need captf.io/approve-destructive-plan");
    } else if (outcome == workspace::RunOutcome::kPlanChanged) {
      if (parsed && parsed->plan) {
        api::PlanPreview plan = *parsed->plan;
        plan.inputs_hash = run.record.inputs_hash;
        plan.job = name;
        plan.created_at = pass.now;
        pass.status.plan = plan;
        set(pass, cond::kApplyJobSucceeded, ConditionStatus::kUnknown, cond::kReasonPlanChanged,
            planChangedMessage(pass.id, plan.plan_hash));
      }
      count(pass, deps_.metrics.plan_approvals_total.withLabels({str(kKind), "changed"}));
      event(pass, kube::EventType::kWarning, "PlanChanged",
            "Job " + name + " planned different changes than approved");
    } else {
      std::string_view reason = destroy ? cond::kReasonDestroyFailed : cond::kReasonApplyFailed;
      if (deadline) {
        reason = cond::kReasonJobDeadlineExceeded;
      } else if (parsed && parsed->error_kind == api::RunErrorKind::kImageLayout) {
        reason = cond::kReasonImageInvalid;
      }
      set(pass, cond::kApplyJobSucceeded, ConditionStatus::kFalse, reason,
          "Job " + name +
              (outcome == workspace::RunOutcome::kInterrupted ? " was interrupted" : " failed") +
              (summary.empty() ? std::string() : ": " + summary));
    }
    break;
  }
  case api::Operation::kDrift:
  case api::Operation::kRefresh: {
    if (outcome == workspace::RunOutcome::kSucceeded) {
      set(pass, cond::kDriftJobSucceeded, ConditionStatus::kTrue, cond::kReasonDriftChecked, "");
      pass.status.last_refresh = pass.now;
      if (op == api::Operation::kDrift) {
        pass.status.last_drift_check = pass.now;
        const bool found = parsed && parsed->drift_found;
        const bool remediate = pass.tc.spec.drift && pass.tc.spec.drift->action &&
                               *pass.tc.spec.drift->action == api::DriftAction::kRemediate;
        if (found) {
          const auto& d = parsed->last_run.drift;
          const std::string counts = d ? "+" + std::to_string(d->add.value_or(0)) + " ~" +
                                             std::to_string(d->change.value_or(0)) + " -" +
                                             std::to_string(d->destroy.value_or(0))
                                       : std::string();
          set(pass, cond::kDriftDetected, ConditionStatus::kTrue,
              remediate ? cond::kReasonDriftPending : cond::kReasonDriftReported,
              "Job " + name + " found drift " + counts);
          event(pass, kube::EventType::kWarning, "DriftDetected",
                "Job " + name + " found drift " + counts);
          if (d) {
            count(pass, deps_.metrics.drift_resources_total.withLabels({str(kKind), "add"}),
                  d->add.value_or(0));
            count(pass, deps_.metrics.drift_resources_total.withLabels({str(kKind), "change"}),
                  d->change.value_or(0));
            count(pass, deps_.metrics.drift_resources_total.withLabels({str(kKind), "destroy"}),
                  d->destroy.value_or(0));
          }
        } else {
          if (set(pass, cond::kDriftDetected, ConditionStatus::kFalse, cond::kReasonNoDrift,
                  "Job " + name + " found no drift") &&
              conditionReasonOf(pass.original, cond::kDriftDetected) != "" &&
              conditionReasonOf(pass.original, cond::kDriftDetected) !=
                  cond::kReasonDriftNotChecked) {
            event(pass, kube::EventType::kNormal, "DriftResolved", "no drift any more");
          }
        }
      }
    } else {
      set(pass, cond::kDriftJobSucceeded, ConditionStatus::kFalse,
          deadline ? cond::kReasonDriftJobDeadlineExceeded : cond::kReasonDriftJobFailed,
          "Job " + name + " failed" + (summary.empty() ? std::string() : ": " + summary));
    }
    break;
  }
  case api::Operation::kRestore:
    if (outcome == workspace::RunOutcome::kSucceeded) {
      set(pass, cond::kRestoreJobSucceeded, ConditionStatus::kTrue, cond::kReasonStateRestored, "");
      event(pass, kube::EventType::kNormal, "StateRestored", "Job " + name + " restored state");
      count(pass, deps_.metrics.state_restores_total.withLabels({str(kKind), "succeeded"}));
    } else {
      set(pass, cond::kRestoreJobSucceeded, ConditionStatus::kFalse, cond::kReasonRestoreFailed,
          "Job " + name + " failed" + (summary.empty() ? std::string() : ": " + summary));
      event(pass, kube::EventType::kWarning, "StateRestoreFailed", "Job " + name + " failed");
      count(pass, deps_.metrics.state_restores_total.withLabels({str(kKind), "failed"}));
    }
    break;
  }

  // Events and metrics of the finished Job.
  std::string result = str(workspace::jobsTotalResult(outcome));
  if (deadline && outcome != workspace::RunOutcome::kSucceeded) {
    result = "deadline";
  }
  count(pass, deps_.metrics.jobs_total.withLabels({str(kKind), op_name, result}));
  const json* created = kube::fieldAt(run.job, "metadata.creationTimestamp");
  const json* completed = kube::fieldAt(run.job, "status.completionTime");
  if (created != nullptr && created->is_string()) {
    auto start = kube::parseTime(created->get<std::string>());
    auto end = completed != nullptr && completed->is_string()
                   ? kube::parseTime(completed->get<std::string>())
                   : absl::StatusOr<kube::WallTime>(pass.wall);
    if (start.ok() && end.ok()) {
      observe(pass, deps_.metrics.job_duration_seconds.withLabels({str(kKind), op_name, result}),
              std::chrono::duration<double>(*end - *start).count());
      if (pod->has_value()) {
        if (auto started = containerStartTime(**pod, kSourceContainer)) {
          observe(pass, deps_.metrics.job_queue_seconds.withLabels({str(kKind), op_name}),
                  std::chrono::duration<double>(*started - *start).count());
        }
      }
    }
  }
  for (const api::RunStep& step : last_run.steps) {
    if (step.duration_milliseconds) {
      observe(pass,
              deps_.metrics.job_step_duration_seconds.withLabels({str(kKind), op_name, step.name}),
              static_cast<double>(*step.duration_milliseconds) / 1000.0);
    }
  }
  if (parsed && parsed->changes) {
    const auto& c = *parsed->changes;
    count(pass, deps_.metrics.resources_changed_total.withLabels({str(kKind), op_name, "add"}),
          c.add());
    count(pass, deps_.metrics.resources_changed_total.withLabels({str(kKind), op_name, "change"}),
          c.change());
    count(pass, deps_.metrics.resources_changed_total.withLabels({str(kKind), op_name, "destroy"}),
          c.destroy());
    count(pass, deps_.metrics.resources_changed_total.withLabels({str(kKind), op_name, "import"}),
          c.import());
  }
  if (outcome == workspace::RunOutcome::kSucceeded) {
    std::vector<lifecycle::JobRecord> records;
    for (const RunJob& r : pass.jobs) {
      records.push_back(r.record);
    }
    observe(pass, deps_.metrics.job_attempts.withLabels({str(kKind), op_name}),
            1 + lifecycle::consecutiveFailures(records, op));
    deps_.metrics.last_success_timestamp_seconds
        .withLabels({str(kKind), pass.id.ns, pass.id.name, op_name})
        .set(static_cast<double>(
            std::chrono::duration_cast<std::chrono::seconds>(pass.wall.time_since_epoch())
                .count()));
    if (op != api::Operation::kPlan) {
      event(pass, kube::EventType::kNormal, "JobSucceeded",
            op_name + " Job " + name + " succeeded");
    }
  } else {
    const std::string error_kind =
        deadline ? "deadline"
                 : (parsed && parsed->error_kind ? str(api::enumName(*parsed->error_kind))
                                                 : std::string("unknown"));
    const std::string step =
        last_run.error && last_run.error->step ? *last_run.error->step : std::string("none");
    count(pass, deps_.metrics.job_errors_total.withLabels({str(kKind), op_name, error_kind, step}));
    if (deadline) {
      event(pass, kube::EventType::kWarning, "JobDeadlineExceeded",
            op_name + " Job " + name + " hit its deadline");
    } else if (outcome == workspace::RunOutcome::kInterrupted) {
      event(pass, kube::EventType::kWarning, "JobInterrupted",
            op_name + " Job " + name + " was stopped from outside; retrying without backoff");
    } else if (outcome == workspace::RunOutcome::kFailed) {
      event(pass, kube::EventType::kWarning, "JobFailed",
            op_name + " Job " + name + " failed" + (summary.empty() ? "" : ": " + summary));
    }
  }

  // The per-run Secret goes once the result is read; this releases the
  // leases the Job held.
  absl::Status removed =
      deps_.api.remove(kinds::kSecret, {pass.id.ns, lifecycle::perRunSecretName(name)});
  if (!removed.ok() && !kube::isNotFound(removed)) {
    return removed;
  }
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

// §14.5: owner references on every chunk, the inputs hash on the base.
absl::Status TerraformClusterReconciler::adopt(Pass& pass, const std::string& inputs_hash,
                                               const std::string& job) {
  if (inputs_hash.empty()) {
    return absl::OkStatus();
  }
  kube::ListOptions options;
  options.ns = pass.id.ns;
  options.label_selector = workspace::stateSelector(pass.suffix);
  auto secrets = deps_.api.list(kinds::kSecret, options);
  if (!secrets.ok()) {
    return secrets.status();
  }
  const auto patches =
      workspace::adoptionPatches(pass.ref, secrets->items, pass.suffix, inputs_hash);
  for (const workspace::SecretPatch& p : patches) {
    auto written =
        deps_.api.patch(kinds::kSecret, {pass.id.ns, p.name}, kube::PatchType::kMerge, p.patch);
    if (!written.ok()) {
      return written.status();
    }
  }
  if (!patches.empty()) {
    event(pass, kube::EventType::kNormal, "StateAdopted",
          "state of Job " + job + " adopted with inputs hash " + inputs_hash);
  }
  return absl::OkStatus();
}

// 7. Active Job: wait (stuck Jobs are deleted to be restarted).
bool TerraformClusterReconciler::waitForActiveJob(Pass& pass) {
  if (pass.active == nullptr) {
    pass.status.active_job.reset();
    return false;
  }
  const RunJob& run = *pass.active;
  api::ActiveJob active;
  active.name = run.record.name;
  active.operation = run.record.operation;
  active.attempt = run.record.attempt;
  active.start_time = run.record.created;
  pass.status.active_job = active;
  if (run.record.operation == api::Operation::kApply && !pass.status.initialization) {
    set(pass, cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
        "apply Job " + run.record.name + " is running");
  }
  if (run.record.operation == api::Operation::kDrift) {
    set(pass, cond::kDriftJobSucceeded, ConditionStatus::kUnknown, cond::kReasonDriftJobRunning,
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
          event(pass, kube::EventType::kWarning, "StuckJobDeleted",
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

absl::Status TerraformClusterReconciler::pausedBranch(Pass& pass) {
  if (set(pass, cond::kPaused, ConditionStatus::kTrue, cond::kReasonPaused, "")) {
    event(pass, kube::EventType::kNormal, "Paused", "reconciliation paused");
  }
  pass.policy = lifecycle::resolveJobPolicy(pass.tc.spec.jobs, std::nullopt);
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
absl::Status TerraformClusterReconciler::reconcileState(Pass& pass) {
  kube::ListOptions options;
  options.ns = pass.id.ns;
  options.label_selector = workspace::stateSelector(pass.suffix);
  auto secrets = deps_.cached.list(kinds::kSecret, options);
  if (!secrets.ok()) {
    return secrets.status();
  }
  pass.state = workspace::readState(pass.suffix, secrets->items);
  // The cache may not have seen this pass's adoption yet: when the newest
  // successful apply's hash is not the state's, read the Secrets again from
  // the API server rather than decide on a stale copy.
  for (const RunJob& run : pass.jobs) {
    if (run.record.operation == api::Operation::kApply &&
        run.record.outcome == lifecycle::JobOutcome::kSucceeded) {
      if (!run.record.inputs_hash.empty() && run.record.inputs_hash != pass.state.inputs_hash) {
        auto fresh = deps_.api.list(kinds::kSecret, options);
        if (!fresh.ok()) {
          return fresh.status();
        }
        pass.state = workspace::readState(pass.suffix, fresh->items);
      }
      break;
    }
  }
  const bool latched = provisionedLatch(pass.status);
  pass.verdict = workspace::classifyState(pass.state, contract::Role::kCluster,
                                          latched ? workspace::Provisioned::kYes
                                                  : workspace::Provisioned::kNo);
  // Lock check (§14.4).
  auto lease = deps_.api.get(kinds::kLease, {pass.id.ns, lifecycle::lockLeaseName(pass.id)});
  if (!lease.ok() && !kube::isNotFound(lease.status())) {
    return lease.status();
  }
  workspace::OwnRunners own;
  for (const RunJob& run : pass.jobs) {
    own.job_names.push_back(run.record.name);
    auto pod = podOfJob(deps_.cached, pass.id.ns, run.record.name);
    if (pod.ok() && pod->has_value()) {
      const std::string phase =
          (**pod).value("status", json::object()).value("phase", std::string());
      own.pods.push_back(
          workspace::RunnerPod{kube::meta::name(**pod), phase == "Succeeded" || phase == "Failed"});
    }
  }
  pass.lock = workspace::decideLock(workspace::readLock(lease.ok() ? *lease : json()), own);
  if (pass.lock.state == workspace::LockState::kForeign) {
    pass.verdict = workspace::StateVerdict::kLocked;
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
  if (set(pass, cond::kStateReadable, status, reason, message) &&
      status == ConditionStatus::kFalse) {
    count(pass, deps_.metrics.state_read_errors_total.withLabels(
                    {str(kKind), str(workspace::stateMetricReason(pass.verdict))}));
    event(pass, kube::EventType::kWarning, workspace::stateEventReason(pass.verdict), message);
  }
  if (pass.verdict == workspace::StateVerdict::kRead) {
    pass.status.observed_state_serial = pass.state.summary.serial;
    deps_.metrics.state_resources.withLabels({str(kKind), pass.id.ns, pass.id.name})
        .set(static_cast<double>(pass.state.summary.managed_resources));
  }
  if (pass.state.compressed_bytes > 0) {
    deps_.metrics.state_bytes.withLabels({str(kKind), pass.id.ns, pass.id.name})
        .set(static_cast<double>(pass.state.compressed_bytes));
  }
  pass.status.state_secret_suffix = pass.suffix;
  return absl::OkStatus();
}

// Backups of new serials (§14.6).
absl::Status TerraformClusterReconciler::reconcileBackups(Pass& pass) {
  kube::ListOptions options;
  options.ns = pass.id.ns;
  options.label_selector = workspace::backupSelector(pass.suffix);
  auto secrets = deps_.cached.list(kinds::kSecret, options);
  if (!secrets.ok()) {
    return secrets.status();
  }
  auto sets = workspace::listBackups(pass.suffix, secrets->items);
  const auto decision =
      workspace::decideBackup(pass.state, sets, deps_.settings.state_backups, pass.deleting);
  if (decision == workspace::BackupDecision::kTake) {
    workspace::BackupRequest request;
    request.ref = pass.ref;
    request.state = &pass.state;
    request.taken_at = api::formatTime(pass.now);
    request.source_job = pass.status.last_run ? pass.status.last_run->job : "";
    bool ok = true;
    for (const json& secret : workspace::backupSecrets(request)) {
      auto created = deps_.api.create(secret);
      if (!created.ok() && !kube::isAlreadyExists(created.status())) {
        ok = false;
        pass.log->warn("state backup failed error=\"{}\"", std::string(created.status().message()));
        break;
      }
    }
    count(pass,
          deps_.metrics.state_backups_total.withLabels({str(kKind), ok ? "taken" : "skipped"}));
    if (ok) {
      event(pass, kube::EventType::kNormal, "StateBackedUp",
            "state serial " + std::to_string(pass.state.summary.serial) + " backed up");
      auto again = deps_.api.list(kinds::kSecret, options);
      if (again.ok()) {
        sets = workspace::listBackups(pass.suffix, again->items);
      }
    }
  } else if (decision == workspace::BackupDecision::kStateUnusable) {
    count(pass, deps_.metrics.state_backups_total.withLabels({str(kKind), "skipped"}));
  }
  for (const std::string& name : workspace::backupsToPrune(sets, deps_.settings.state_backups)) {
    absl::Status removed = deps_.api.remove(kinds::kSecret, {pass.id.ns, name});
    if (!removed.ok() && !kube::isNotFound(removed)) {
      return removed;
    }
    count(pass, deps_.metrics.state_backups_total.withLabels({str(kKind), "pruned"}));
  }
  pass.status.state_backups = workspace::statusBackups(sets);
  return absl::OkStatus();
}

// Builds the current inputs (§12.3, §12.6) and renders them.
absl::Status TerraformClusterReconciler::reconcileInputs(Pass& pass) {
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
  if (!pass.cluster.is_object()) {
    return absl::OkStatus(); // owner gone: destroy renders the durable inputs
  }
  // variablesFrom, read straight from the API server.
  std::vector<workspace::VariablesSourceData> sources;
  for (const api::VariablesSource& source : pass.tc.spec.variables_from) {
    const bool secret = source.secret_ref.has_value();
    const std::string name = secret ? source.secret_ref->name
                                    : (source.config_map_ref ? source.config_map_ref->name : "");
    auto fetched = deps_.api.get(secret ? kinds::kSecret : kinds::kConfigMap, {pass.id.ns, name});
    if (!fetched.ok() && !kube::isNotFound(fetched.status())) {
      return fetched.status();
    }
    auto data = workspace::readVariablesSource(source, fetched.ok() ? *fetched : json());
    if (!data.ok()) {
      set(pass, cond::kDependenciesReady, ConditionStatus::kFalse,
          cond::kReasonVariablesSourceNotFound, std::string(data.status().message()));
      pass.inputs_blocked = true;
      return absl::OkStatus();
    }
    sources.push_back(*std::move(data));
  }
  auto variables =
      workspace::mergeUserVariables(contract::Role::kCluster, pass.tc.spec.variables, sources);
  if (!variables.ok()) {
    set(pass, cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonVariablesInvalid,
        std::string(variables.status().message()));
    pass.inputs_blocked = true;
    return absl::OkStatus();
  }
  const contract::ClusterInputs inputs = workspace::clusterInputs(
      pass.tc, pass.cluster, pass.durable && pass.durable->control_plane_initialized);
  contract::RenderRequest request{contract::Role::kCluster, contract::toInputsJson(inputs),
                                  *std::move(variables)};
  auto rendered = workspace::renderInputs(request, pass.tc.spec.source.image);
  if (!rendered.ok()) {
    if (auto bytes = contract::renderedBytesOverLimit(rendered.status())) {
      pass.inputs_too_large = true;
      deps_.metrics.inputs_bytes.withLabels({str(kKind), pass.id.ns, pass.id.name})
          .set(static_cast<double>(*bytes));
      set(pass, cond::kApplyJobSucceeded, ConditionStatus::kFalse, cond::kReasonInputsTooLarge,
          "the rendered inputs are " + std::to_string(*bytes) +
              " bytes, over the 1000000-byte limit");
      return absl::OkStatus();
    }
    set(pass, cond::kOutputsValid, ConditionStatus::kFalse, cond::kReasonOutputsInvalid,
        "inputs cannot be hashed: " + std::string(rendered.status().message()));
    pass.inputs_blocked = true;
    return absl::OkStatus();
  }
  deps_.metrics.inputs_bytes.withLabels({str(kKind), pass.id.ns, pass.id.name})
      .set(static_cast<double>(rendered->bytes));
  pass.rendered = *std::move(rendered);
  // §15.2: a user endpoint is recorded before the first apply.
  const auto source = workspace::readEndpointSource(pass.tc.metadata);
  if (workspace::shouldMarkUserEndpoint(source, workspace::clusterEndpoint(pass.cluster),
                                        pass.tc.spec.control_plane_endpoint)) {
    if (absl::Status s = pass.patcher.setAnnotation(api::kAnnotationEndpointSource,
                                                    str(workspace::kEndpointSourceUser));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// §15.1, §15.2, §16.3: outputs, provisioned latch, endpoint write-back.
absl::Status TerraformClusterReconciler::reconcileOutputs(Pass& pass) {
  const bool latched = provisionedLatch(pass.status);
  pass.provisioned = latched;
  const bool started = std::any_of(pass.jobs.begin(), pass.jobs.end(), [](const RunJob& run) {
    return run.record.operation == api::Operation::kApply;
  });
  if (pass.verdict != workspace::StateVerdict::kRead) {
    if (!latched) {
      if (started || pass.verdict != workspace::StateVerdict::kNotFound) {
        set(pass, cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
            "the first apply has not completed");
      } else {
        set(pass, cond::kInfrastructureHealthy, ConditionStatus::kUnknown,
            cond::kReasonWaitingForProvisioning, "no apply has started yet");
      }
      if (!lifecycle::findCondition(pass.status.conditions, cond::kOutputsValid)) {
        set(pass, cond::kOutputsValid, ConditionStatus::kUnknown, cond::kReasonOutputsPending,
            "no state yet");
      }
    }
    return absl::OkStatus();
  }
  pass.outputs = workspace::decodeClusterOutputs(pass.state.summary.outputs);
  const bool usable = workspace::outputsUsable(pass.outputs.verdict);
  ConditionStatus outputs_status = ConditionStatus::kUnknown;
  if (usable) {
    outputs_status = ConditionStatus::kTrue;
  } else if (pass.outputs.verdict != workspace::OutputsVerdict::kPending) {
    outputs_status = ConditionStatus::kFalse;
  }
  if (set(pass, cond::kOutputsValid, outputs_status, workspace::outputsReason(pass.outputs.verdict),
          pass.outputs.message) &&
      outputs_status == ConditionStatus::kFalse) {
    count(pass, deps_.metrics.outputs_invalid_total.withLabels(
                    {str(kKind), str(workspace::outputsReason(pass.outputs.verdict))}));
    event(pass, kube::EventType::kWarning, "OutputsInvalid", pass.outputs.message);
  }
  if (!latched && workspace::clusterProvisioned(!pass.state.inputs_hash.empty(), pass.outputs)) {
    pass.provisioned = true;
    pass.status.initialization = api::Initialization{true};
    event(pass, kube::EventType::kNormal, "Provisioned", "cluster infrastructure provisioned");
  }
  if (pass.provisioned) {
    const auto health = workspace::healthCondition(pass.outputs.health);
    const bool changed =
        set(pass, cond::kInfrastructureHealthy, health.status, health.reason, health.message);
    if (changed && health.status == ConditionStatus::kTrue) {
      event(pass, kube::EventType::kNormal, "InstanceHealthy", "infrastructure is healthy");
    } else if (changed && health.status == ConditionStatus::kFalse) {
      event(pass, kube::EventType::kWarning, "InstanceUnhealthy",
            health.reason + (health.message.empty() ? "" : ": " + health.message));
    }
  } else if (!latched) {
    set(pass, cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
        "waiting for the outputs of a successful apply");
  }
  if (usable) {
    if (pass.status.failure_domains != pass.outputs.failure_domains) {
      pass.status.failure_domains = pass.outputs.failure_domains;
      event(pass, kube::EventType::kNormal, "FailureDomainsChanged",
            std::to_string(pass.outputs.failure_domains.size()) + " failure domains");
    }
    const auto write_back = workspace::decideEndpointWriteBack(
        workspace::readEndpointSource(pass.tc.metadata), pass.outputs,
        pass.tc.spec.control_plane_endpoint,
        !pass.durable || pass.durable->control_plane_endpoint_null);
    if (write_back) {
      json patch = {
          {"spec",
           {{"controlPlaneEndpoint",
             {{"host", write_back->endpoint.host}, {"port", write_back->endpoint.port}}}}}};
      if (write_back->mark_module) {
        patch["metadata"]["annotations"][str(api::kAnnotationEndpointSource)] =
            str(workspace::kEndpointSourceModule);
      }
      // Through the patcher: the pass's status patch must not conflict with
      // this write of its own.
      if (absl::Status s = pass.patcher.patch(patch); !s.ok()) {
        return s;
      }
      event(pass, kube::EventType::kNormal, "ControlPlaneEndpointSet",
            "spec.controlPlaneEndpoint set to " + write_back->endpoint.host + ":" +
                std::to_string(write_back->endpoint.port) + " from the module output");
    }
  }
  const auto endpoint = workspace::endpointAvailable(pass.provisioned, pass.outputs,
                                                     workspace::clusterEndpoint(pass.cluster));
  set(pass, cond::kEndpointAvailable, endpoint.status, endpoint.reason, endpoint.message);
  return absl::OkStatus();
}

absl::Status TerraformClusterReconciler::reconcileNormal(Pass& pass) {
  set(pass, cond::kDeleting, ConditionStatus::kFalse, cond::kReasonNotDeleting, "");
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
  if (absl::Status s = reconcileOutputs(pass); !s.ok()) {
    return s;
  }
  return decideAndRun(pass);
}

absl::Status TerraformClusterReconciler::reconcileDelete(Pass& pass) {
  if (set(pass, cond::kDeleting, ConditionStatus::kTrue, cond::kReasonDeleting,
          "the object is being deleted")) {
    event(pass, kube::EventType::kNormal, "DeletionStarted", "deletion started");
  }
  if (!pass.cluster_name.empty()) {
    if (absl::Status s = reconcileCredentials(pass); !s.ok()) {
      return s;
    }
  } else {
    pass.policy = lifecycle::resolveJobPolicy(pass.tc.spec.jobs, std::nullopt);
  }
  if (absl::Status s = reconcileJobs(pass); !s.ok()) {
    return s;
  }
  if (waitForActiveJob(pass)) {
    return absl::OkStatus();
  }
  // §11.12: dependents first.
  if (!pass.cluster_name.empty()) {
    kube::ListOptions options;
    options.ns = pass.id.ns;
    options.label_selector = str(api::kLabelClusterName) + "=" + pass.cluster_name;
    size_t dependents = 0;
    for (const auto* gvk : {&kinds::kTerraformMachine, &kinds::kTerraformMachinePool}) {
      auto objects = deps_.cached.list(*gvk, options);
      if (!objects.ok()) {
        return objects.status();
      }
      dependents += objects->items.size();
    }
    if (dependents > 0) {
      set(pass, cond::kDeletionBlocked, ConditionStatus::kTrue, cond::kReasonDependentsExist,
          std::to_string(dependents) + " TerraformMachines/TerraformMachinePools of Cluster " +
              pass.cluster_name + " still exist");
      pass.result.requeue_after = kDependentsRecheck;
      return absl::OkStatus();
    }
  }
  set(pass, cond::kDeletionBlocked, ConditionStatus::kFalse, cond::kReasonNotBlocked, "");
  if (absl::Status s = reconcileState(pass); !s.ok()) {
    return s;
  }
  if (absl::Status s = reconcileInputs(pass); !s.ok()) {
    return s;
  }
  return decideAndRun(pass);
}

// 10. Decide (§11.6) and start the Job, or wait.
absl::Status TerraformClusterReconciler::decideAndRun(Pass& pass) {
  lifecycle::DecisionInput in;
  in.role = contract::Role::kCluster;
  in.deleting = pass.deleting;
  in.provisioned = pass.provisioned || provisionedLatch(pass.status);
  switch (pass.verdict) {
  case workspace::StateVerdict::kNotFound:
    in.state = lifecycle::StateReading::kNotFound;
    break;
  case workspace::StateVerdict::kRead:
    in.state = lifecycle::StateReading::kRead;
    break;
  case workspace::StateVerdict::kLost:
    // The decision applies the lost rule itself from provisioned + state.
    in.state = pass.state.status == workspace::StateStatus::kNotFound
                   ? lifecycle::StateReading::kNotFound
                   : lifecycle::StateReading::kRead;
    break;
  default:
    in.state = lifecycle::StateReading::kUnreadable;
    break;
  }
  in.state_inputs_hash = pass.state.inputs_hash;
  in.current_inputs_hash = pass.rendered ? pass.rendered->inputs_hash : "";
  in.inputs_too_large = pass.inputs_too_large;
  in.destroy_inputs_available = pass.durable.has_value() || pass.rendered.has_value();
  const auto& annotations = pass.tc.metadata.annotations;
  if (auto it = annotations.find(str(api::kAnnotationRestoreState)); it != annotations.end()) {
    in.restore_request = it->second;
  }
  if (auto it = annotations.find(str(api::kAnnotationApproveDestructivePlan));
      it != annotations.end()) {
    in.approve_destructive_plan = it->second;
  }
  if (auto it = annotations.find(str(api::kAnnotationApprovePlan)); it != annotations.end()) {
    in.approve_plan = it->second;
  }
  for (const api::StateBackup& backup : pass.status.state_backups) {
    in.backup_serials.push_back(backup.serial);
  }
  in.plan = pass.status.plan;
  const std::string drift_reason = conditionReasonOf(pass.status, cond::kDriftDetected);
  in.drift_pending =
      drift_reason == cond::kReasonDriftPending || drift_reason == cond::kReasonDriftRemediating;
  in.last_refresh = pass.status.last_refresh;
  in.last_drift_check = pass.status.last_drift_check;
  in.pending_refreshes = pass.status.pending_refreshes.value_or(0);
  in.apply_policy = lifecycle::effectiveApplyPolicy(pass.tc.spec);
  in.schedule = lifecycle::resolveSchedule(pass.tc.spec, deps_.settings.drift_default_interval);
  in.failed_jobs_history_limit = pass.policy.failed_jobs_history_limit;
  for (const RunJob& run : pass.jobs) {
    in.jobs.push_back(run.record);
  }
  in.now = pass.now.value;
  in.jitter = lifecycle::jitterFor(pass.tc.metadata.uid);
  pass.decision = lifecycle::decideNextOperation(in);
  if (pass.decision.clear_plan) {
    pass.status.plan.reset();
  }
  const lifecycle::Decision& d = pass.decision;
  count(pass, deps_.metrics.reconcile_op_decisions_total.withLabels(
                  {str(kKind), str(lifecycle::opLabel(d)), str(lifecycle::reasonName(d))}));
  if (d.requeue_after) {
    pass.result.requeue_after = *d.requeue_after;
  }
  if (d.remove_restore_annotation) {
    if (absl::Status s = pass.patcher.setAnnotation(api::kAnnotationRestoreState, std::nullopt);
        !s.ok()) {
      return s;
    }
  }
  switch (d.hold) {
  case lifecycle::Hold::kRestoreBackupNotFound:
    if (set(pass, cond::kRestoreJobSucceeded, ConditionStatus::kFalse,
            cond::kReasonRestoreBackupNotFound,
            "captf.io/restore-state names no complete backup")) {
      count(pass, deps_.metrics.state_restores_total.withLabels({str(kKind), "not_found"}));
    }
    break;
  case lifecycle::Hold::kPlanAwaitingApproval:
    if (pass.status.plan) {
      set(pass, cond::kApplyJobSucceeded, ConditionStatus::kUnknown,
          cond::kReasonPlanAwaitingApproval,
          "plan " + pass.status.plan->plan_hash + " awaits approval: " +
              approveCommand(pass.id.ns, pass.id.name, api::kAnnotationApprovePlan,
                             pass.status.plan->plan_hash));
    }
    break;
  case lifecycle::Hold::kPlanChanged:
    // §17.2 step 5: the new plan of an approved apply keeps PlanChanged.
    if (pass.status.plan) {
      set(pass, cond::kApplyJobSucceeded, ConditionStatus::kUnknown, cond::kReasonPlanChanged,
          planChangedMessage(pass.id, pass.status.plan->plan_hash));
    }
    break;
  case lifecycle::Hold::kDestroyInputsMissing:
    set(pass, cond::kApplyJobSucceeded, ConditionStatus::kFalse, cond::kReasonDestroyFailed,
        "The durable inputs Secret is missing, so destroy cannot be rendered; see "
        "<https://captf.io/docs/operator-guide/runbooks/stuck-destroy.html>");
    break;
  default:
    break;
  }
  if (d.action == lifecycle::Action::kCleanup) {
    return cleanup(pass);
  }
  if (!lifecycle::findCondition(pass.status.conditions, cond::kApplyJobSucceeded)) {
    set(pass, cond::kApplyJobSucceeded, ConditionStatus::kUnknown, cond::kReasonNoApplyYet,
        "no apply has completed yet");
  }
  if (!lifecycle::findCondition(pass.status.conditions, cond::kDriftDetected)) {
    set(pass, cond::kDriftDetected, ConditionStatus::kUnknown, cond::kReasonDriftNotChecked, "");
    set(pass, cond::kDriftJobSucceeded, ConditionStatus::kUnknown, cond::kReasonDriftNotChecked,
        "");
  }
  if (d.action != lifecycle::Action::kRunJob || !d.operation) {
    // Not needed any more: clear the block-move annotation (§11.10).
    if (kube::meta::annotations(pass.object).contains(str(api::kAnnotationBlockMove))) {
      return pass.patcher.setAnnotation(api::kAnnotationBlockMove, std::nullopt);
    }
    return absl::OkStatus();
  }
  return runJob(pass);
}

absl::Status TerraformClusterReconciler::runJob(Pass& pass) {
  const lifecycle::Decision& d = pass.decision;
  const api::Operation op = *d.operation;
  const std::string op_name = str(api::enumName(op));
  // Credentials must be in place for any Job (§19.1 item 7).
  if (!pass.identity.allowed.isTrue() || !pass.identity.mirrored.isTrue() || !pass.rbac.isTrue()) {
    if (!pass.identity.allowed.isTrue() &&
        (op == api::Operation::kApply || op == api::Operation::kDestroy)) {
      set(pass, cond::kApplyJobSucceeded, ConditionStatus::kFalse, cond::kReasonIdentityNotAllowed,
          "no Job can start: " + pass.identity.allowed.message);
    }
    pass.result.requeue_after = lifecycle::kLeaseRecheck;
    return absl::OkStatus();
  }
  if (pass.inputs_blocked && op != api::Operation::kDestroy) {
    return absl::OkStatus();
  }
  // Which root the Job renders (§12.7 table).
  const contract::RenderedRoot* root = nullptr;
  if (op == api::Operation::kDestroy) {
    root = pass.durable ? &pass.durable->root : (pass.rendered ? &pass.rendered->root : nullptr);
  } else if (op == api::Operation::kDrift || op == api::Operation::kRefresh) {
    root = pass.rendered ? &pass.rendered->root : (pass.durable ? &pass.durable->root : nullptr);
  } else if (op != api::Operation::kRestore) {
    root = pass.rendered ? &pass.rendered->root : nullptr;
  }
  if (root == nullptr && op != api::Operation::kRestore) {
    return absl::OkStatus();
  }
  std::optional<workspace::RestoreInputs> restore;
  if (op == api::Operation::kRestore) {
    kube::ListOptions options;
    options.ns = pass.id.ns;
    options.label_selector = workspace::backupSelector(pass.suffix);
    auto secrets = deps_.cached.list(kinds::kSecret, options);
    if (!secrets.ok()) {
      return secrets.status();
    }
    auto found = workspace::findRestoreBackup(
        pass.tc.metadata.annotations[str(api::kAnnotationRestoreState)],
        workspace::listBackups(pass.suffix, secrets->items));
    if (!found.ok()) {
      set(pass, cond::kRestoreJobSucceeded, ConditionStatus::kFalse,
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
  // The decision came from the cached object's status, and a Job cannot be
  // taken back: the API server's status must be the one decided on. When
  // it moved on (the previous pass's status patch, not in the cache yet,
  // e.g. a status.plan that would otherwise be planned again), the pass
  // ends without writing and runs again.
  auto live = deps_.api.get(kinds::kTerraformCluster, {pass.id.ns, pass.id.name});
  if (!live.ok()) {
    return kube::isNotFound(live.status()) ? absl::OkStatus() : live.status();
  }
  if (live->value("status", json()) != pass.object.value("status", json())) {
    pass.stale = true;
    return absl::OkStatus();
  }

  // Leases (§11.9).
  lifecycle::LeaseRequest lease;
  lease.kind = lifecycle::LeaseKind::kRun;
  lease.object = pass.id;
  lease.cluster_name = pass.cluster_name;
  lease.job = job_name;
  lease.operation = op;
  lease.active_deadline_seconds = pass.policy.active_deadline_seconds;
  lease.now = pass.now.value;
  const std::string_view wait_condition =
      op == api::Operation::kDrift || op == api::Operation::kRefresh ? cond::kDriftJobSucceeded
      : op == api::Operation::kRestore                               ? cond::kRestoreJobSucceeded
                                                                     : cond::kApplyJobSucceeded;
  std::string holder;
  auto verdict =
      takeLease(deps_.api, deps_.cached, lease, lifecycle::runLeaseName(pass.id), holder);
  if (!verdict.ok()) {
    return verdict.status();
  }
  if (*verdict == lifecycle::LeaseVerdict::kWait) {
    if (set(pass, wait_condition, ConditionStatus::kUnknown, cond::kReasonWaitingForRunLease,
            "the run lease is held by Job " + holder)) {
      count(pass, deps_.metrics.lease_waits_total.withLabels({str(kKind), "run_lease"}));
      event(pass, kube::EventType::kNormal, "WaitingForRunLease",
            "waiting for Job " + holder + " to release the run lease");
    }
    pass.result.requeue_after = lifecycle::kLeaseRecheck;
    return absl::OkStatus();
  }
  const bool gate = deps_.settings.cluster_operation_gate == ClusterOperationGate::kOn;
  if (lifecycle::gateApplies(gate, op) && !pass.cluster_name.empty()) {
    lifecycle::LeaseRequest cluster_lease = lease;
    cluster_lease.kind = lifecycle::LeaseKind::kCluster;
    std::string cluster_holder;
    auto cluster_verdict =
        takeLease(deps_.api, deps_.cached, cluster_lease,
                  lifecycle::clusterLeaseName(pass.id.ns, pass.cluster_name), cluster_holder);
    if (!cluster_verdict.ok()) {
      return cluster_verdict.status();
    }
    // Machines and pools of the cluster applying or destroying now.
    std::int32_t dependents = 0;
    kube::ListOptions options;
    options.ns = pass.id.ns;
    options.label_selector = str(api::kLabelClusterName) + "=" + pass.cluster_name;
    auto jobs = deps_.cached.list(kinds::kJob, options);
    if (!jobs.ok()) {
      return jobs.status();
    }
    for (const json& job : jobs->items) {
      const std::string kind = kube::meta::labels(job).value(str(api::kLabelOwnerKind), "");
      auto record = lifecycle::jobRecordFromJob(job);
      if (kind != kKind && record.ok() && record->outcome == lifecycle::JobOutcome::kActive &&
          (record->operation == api::Operation::kApply ||
           record->operation == api::Operation::kDestroy ||
           record->operation == api::Operation::kRestore)) {
        ++dependents;
      }
    }
    lifecycle::GateInput gate_input;
    gate_input.role = contract::Role::kCluster;
    gate_input.cluster_lease_verdict = *cluster_verdict;
    gate_input.dependent_operations = dependents;
    const auto gate_verdict = lifecycle::evaluateGate(gate_input);
    if (*cluster_verdict == lifecycle::LeaseVerdict::kWait ||
        gate_verdict != lifecycle::GateVerdict::kProceed) {
      if (set(pass, wait_condition, ConditionStatus::kUnknown,
              cond::kReasonWaitingForMachineOperations,
              std::to_string(dependents) + " machine/pool operations of Cluster " +
                  pass.cluster_name + " are running")) {
        count(pass, deps_.metrics.lease_waits_total.withLabels({str(kKind), "machine_operations"}));
        event(pass, kube::EventType::kNormal, "WaitingForMachineOperations",
              "waiting for machine and pool operations of Cluster " + pass.cluster_name);
      }
      pass.result.requeue_after = lifecycle::kLeaseRecheck;
      return absl::OkStatus();
    }
  }

  // §11.10: block-move, written directly before the Job exists.
  if (lifecycle::blockMoveAction(
          kube::meta::annotations(pass.object).contains(str(api::kAnnotationBlockMove)), false,
          true) == lifecycle::BlockMoveAction::kSet) {
    if (absl::Status s = pass.patcher.setAnnotation(api::kAnnotationBlockMove, std::string("true"));
        !s.ok()) {
      return s;
    }
  }

  // §12.7: the durable inputs are written when an apply Job starts.
  std::optional<std::string> pinned;
  if (pass.durable && pass.durable->annotations.image == pass.tc.spec.source.image) {
    pinned = pass.durable->annotations.image_digest;
  }
  if (op == api::Operation::kApply) {
    workspace::DurableAnnotations annotations;
    annotations.image = pass.tc.spec.source.image;
    annotations.image_digest = pinned;
    annotations.identity = pass.identity.identity;
    json durable = workspace::durableInputsSecret(pass.ref, *root, annotations);
    auto existing = deps_.api.get(kinds::kSecret, kube::meta::key(durable));
    if (existing.ok()) {
      durable["metadata"]["resourceVersion"] = kube::meta::resourceVersion(*existing);
      auto written = deps_.api.update(durable);
      if (!written.ok()) {
        return written.status();
      }
    } else if (kube::isNotFound(existing.status())) {
      auto created = deps_.api.create(durable);
      if (!created.ok()) {
        return created.status();
      }
    } else {
      return existing.status();
    }
  }

  lifecycle::JobBuildRequest build;
  build.object = pass.id;
  build.object_uid = pass.tc.metadata.uid;
  build.cluster_name = pass.cluster_name;
  build.job_name = job_name;
  build.operation = op;
  build.attempt = d.attempt;
  build.image = pass.tc.spec.source.image;
  build.image_reference = pass.tc.spec.source.image;
  build.image_pull_policy = lifecycle::effectivePullPolicy(pass.tc.spec.source);
  build.runner_image = deps_.settings.runner_image;
  build.policy = pass.policy;
  build.credentials_secret = pass.identity.mirror_name;
  build.inputs_hash = d.inputs_hash;
  build.options = d.job;
  if (pass.lock.state == workspace::LockState::kStale) {
    build.force_unlock_id = pass.lock.lock.id;
    count(pass, deps_.metrics.lock_force_unlocks_total.withLabels({str(kKind)}));
    event(pass, kube::EventType::kWarning, "ForceUnlocked", pass.lock.message);
  }
  build.runner_events = deps_.settings.runner_events == RunnerEvents::kOn;
  if (restore) {
    build.restore_chunk_secrets = restore->chunk_secrets;
    build.restore_resources = restore->resources;
    // Annotated on the Job: what bookkeeping adopts once the push succeeded.
    build.inputs_hash = restore->inputs_hash;
  }
  auto job = lifecycle::buildJob(build);
  if (!job.ok()) {
    return kube::terminalError(job.status());
  }
  auto created = deps_.api.create(*job);
  if (!created.ok() && !kube::isAlreadyExists(created.status())) {
    return created.status();
  }
  if (!created.ok()) {
    created = deps_.api.get(kinds::kJob, {pass.id.ns, job_name});
    if (!created.ok()) {
      return created.status();
    }
  }
  // The per-run Secret, owned by the Job; the pod waits for it.
  json run_secret =
      op == api::Operation::kRestore
          ? workspace::restoreRunSecret(pass.ref, job_name, kube::meta::uid(*created))
          : workspace::runSecret(pass.ref, job_name, kube::meta::uid(*created), *root);
  auto secret = deps_.api.create(run_secret);
  if (!secret.ok() && !kube::isAlreadyExists(secret.status())) {
    return secret.status();
  }

  // Events, metrics and status of the start.
  std::string why = str(lifecycle::triggerName(d.trigger));
  event(pass, kube::EventType::kNormal, "JobCreated",
        op_name + " Job " + job_name + " (attempt " + std::to_string(d.attempt) + ", image " +
            pass.tc.spec.source.image + "): " + why);
  if (d.trigger == lifecycle::Trigger::kInputsChanged) {
    count(pass, deps_.metrics.inputs_hash_changes_total.withLabels({str(kKind)}));
    event(pass, kube::EventType::kNormal, "InputsChanged",
          "inputs hash " + d.inputs_hash + " differs from the state's " + pass.state.inputs_hash);
  }
  if (d.trigger == lifecycle::Trigger::kDriftRemediation) {
    set(pass, cond::kDriftDetected, ConditionStatus::kTrue, cond::kReasonDriftRemediating,
        "remediation apply " + job_name + " is running");
    event(pass, kube::EventType::kNormal, "DriftRemediationStarted",
          "remediation apply " + job_name + " started");
  }
  if (!d.job.expect_plan.empty()) {
    event(pass, kube::EventType::kNormal, "PlanApproved",
          "apply of approved plan " + d.job.expect_plan + " started");
  }
  api::ActiveJob active;
  active.name = job_name;
  active.operation = op;
  active.attempt = d.attempt;
  active.start_time = pass.now;
  pass.status.active_job = active;
  if (op == api::Operation::kApply && !pass.provisioned) {
    set(pass, cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
        "apply Job " + job_name + " is running");
  }
  pass.result.requeue_after = std::chrono::minutes(1);
  return absl::OkStatus();
}

// §11.12 final cleanup, then the finalizer goes.
absl::Status TerraformClusterReconciler::cleanup(Pass& pass) {
  const auto plan = workspace::stateCleanup(pass.ref, pass.state.secret_names);
  for (const std::string& name : plan.secrets) {
    absl::Status s = deps_.api.remove(kinds::kSecret, {pass.id.ns, name});
    if (!s.ok() && !kube::isNotFound(s)) {
      return s;
    }
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
  if (!pass.cluster_name.empty()) {
    if (absl::Status s = deleteLease(deps_.api, pass.id.ns,
                                     lifecycle::clusterLeaseName(pass.id.ns, pass.cluster_name));
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = identity_.release(pass.object, pass.identity.identity.empty()
                                                          ? pass.tc.spec.identity_ref.name
                                                          : pass.identity.identity);
      !s.ok()) {
    return s;
  }
  const bool destroyed = std::any_of(pass.jobs.begin(), pass.jobs.end(), [](const RunJob& run) {
    return run.record.operation == api::Operation::kDestroy &&
           run.record.outcome == lifecycle::JobOutcome::kSucceeded;
  });
  if (destroyed) {
    event(pass, kube::EventType::kNormal, "Destroyed", "infrastructure destroyed, state removed");
  }
  if (absl::Status s = pass.patcher.removeFinalizer(api::kFinalizerTerraformCluster); !s.ok()) {
    return s;
  }
  set(pass, cond::kDeleting, ConditionStatus::kTrue, cond::kReasonDeletionCompleted, "");
  event(pass, kube::EventType::kNormal, "FinalizerRemoved", "finalizer removed");
  deps_.metrics.forgetObject(str(kKind), pass.id.ns, pass.id.name);
  return absl::OkStatus();
}

// Ready (§5.2), observedGeneration and the per-object gauges.
void TerraformClusterReconciler::summarize(Pass& pass) {
  const bool provisioned = provisionedLatch(pass.status);
  // The v1beta1 contract's status.ready mirrors the latch.
  pass.status.ready = provisioned;
  lifecycle::setReady(pass.status.conditions, contract::Role::kCluster, provisioned,
                      pass.generation, pass.now);
  if (pass.generation > 0) {
    pass.status.observed_generation = pass.generation;
  }
  const auto value = [&](std::string_view type) {
    const api::Condition* c = lifecycle::findCondition(pass.status.conditions, type);
    if (c == nullptr || c->status == ConditionStatus::kUnknown) {
      return -1.0;
    }
    return c->status == ConditionStatus::kTrue ? 1.0 : 0.0;
  };
  const std::vector<std::string> labels = {str(kKind), pass.id.ns, pass.id.name};
  deps_.metrics.ready.withLabels(labels).set(value(cond::kReady));
  deps_.metrics.infrastructure_healthy.withLabels(labels).set(value(cond::kInfrastructureHealthy));
  deps_.metrics.drift_detected.withLabels(labels).set(value(cond::kDriftDetected) == 1.0 ? 1 : 0);
  // ConditionChanged for other owned conditions that changed status or
  // reason, Warning when the change is into a bad state.
  for (const api::Condition& c : pass.status.conditions) {
    if (c.type == cond::kReady) {
      continue;
    }
    const api::Condition* before = lifecycle::findCondition(pass.original.conditions, c.type);
    if (before != nullptr && before->status == c.status && before->reason == c.reason) {
      continue;
    }
    if (before == nullptr) {
      continue; // first report, not a change
    }
    const bool bad = lifecycle::isNegativePolarity(c.type) ? c.status == ConditionStatus::kTrue
                                                           : c.status == ConditionStatus::kFalse;
    deps_.events.event(pass.object, bad ? kube::EventType::kWarning : kube::EventType::kNormal,
                       "ConditionChanged", "Reconcile",
                       c.type + " is now " + str(api::enumName(c.status)) + " (" + c.reason + ")");
  }
}

} // namespace captf::controllers
