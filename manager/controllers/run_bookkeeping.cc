#include "manager/controllers/run_bookkeeping.h"

#include <algorithm>

#include "contract/status_macros.h"
#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "manager/kube/patch.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/bookkeeping.h"
#include "manager/lifecycle/history.h"
#include "manager/lifecycle/names.h"
#include "manager/lifecycle/pass.h"
#include "manager/lifecycle/ready.h"
#include "manager/workspace/backups.h"
#include "manager/workspace/names.h"
#include "manager/workspace/run_history.h"
#include "manager/workspace/secrets.h"
#include "manager/workspace/state.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

using kube::str;

constexpr std::chrono::minutes kStuckJobAge{1};

} // namespace

std::string RunBookkeeping::kind() const {
  return kind_.gvk().kind;
}

// 6. Bookkeeping of finished Jobs (docs/behaviour/lifecycle.md#bookkeeping) and history pruning.
absl::Status RunBookkeeping::reconcileJobs(WorkloadPass& pass) {
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
    CAPTF_RETURN_IF_ERROR(removeLeftoverJob(deps_.api, pass, leftover));
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
absl::Status RunBookkeeping::bookkeep(WorkloadPass& pass, size_t index) {
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
  facts.resource = str(kind_.resource());
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
    if (auto* status_plan = pass.kind->plan(pass)) {
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

absl::Status RunBookkeeping::recordRun(WorkloadPass& pass, const RunJob& run,
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
absl::Status RunBookkeeping::adopt(WorkloadPass& pass, const std::string& inputs_hash,
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

absl::Status removeLeftoverJob(kube::Client& api, WorkloadPass& pass, const json& job) {
  kube::DeleteOptions options;
  options.propagation = kube::PropagationPolicy::kBackground;
  options.preconditions.uid = kube::meta::uid(job);
  absl::Status removed = api.remove(kinds::kJob, kube::meta::key(job), options);
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
bool RunBookkeeping::waitForActiveJob(WorkloadPass& pass) {
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
void RunBookkeeping::replaceOutdatedPullWait(WorkloadPass& pass, const RunJob& run) {
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
             (run.record.operation == api::Operation::kApply || !kind_.traits().immutable_inputs)) {
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

} // namespace captf::controllers
