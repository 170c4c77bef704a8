#include "manager/controllers/job_start.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "contract/digest.h"
#include "contract/report.h"
#include "contract/status_macros.h"
#include "contract/strings.h"
#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/pass_inputs.h"
#include "manager/controllers/run_bookkeeping.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/names.h"
#include "manager/lifecycle/pass.h"
#include "manager/workspace/backups.h"
#include "manager/workspace/names.h"
#include "manager/workspace/secrets.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

using kube::str;

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

std::string JobStarter::kind() const {
  return kind_.gvk().kind;
}

absl::Status JobStarter::start(WorkloadPass& pass) {
  const lifecycle::Decision& d = pass.decision;
  if (!d.operation) {
    return absl::InternalError("the decision runs a Job but names no operation");
  }
  Start start;
  start.op = *d.operation;
  start.op_name = str(api::enumName(start.op));
  if (!credentialsInPlace(pass, start)) {
    return absl::OkStatus();
  }
  if (pass.inputs_blocked && start.op != api::Operation::kDestroy) {
    return absl::OkStatus();
  }
  CAPTF_ASSIGN_OR_RETURN(const bool rooted, chooseRoot(pass, start));
  if (!rooted) {
    return absl::OkStatus();
  }
  start.job_name = lifecycle::jobName(
      pass.id, lifecycle::JobNameParts{d.inputs_hash, start.op, d.attempt, d.tick});
  // A retried reconcile finds the Job it created.
  if (std::any_of(pass.jobs.begin(), pass.jobs.end(),
                  [&](const RunJob& run) { return run.record.name == start.job_name; })) {
    return absl::OkStatus();
  }
  CAPTF_ASSIGN_OR_RETURN(const bool current, decidedOnServersCopy(pass));
  if (!current) {
    return absl::OkStatus();
  }
  CAPTF_ASSIGN_OR_RETURN(const bool writable, readDurableInputs(pass, start));
  if (!writable) {
    return absl::OkStatus();
  }
  CAPTF_ASSIGN_OR_RETURN(const bool held, takeLeases(pass, start));
  if (!held) {
    return absl::OkStatus();
  }
  CAPTF_RETURN_IF_ERROR(setAsideBeforeRestore(pass, start));
  CAPTF_RETURN_IF_ERROR(setBlockMove(pass));
  if (!chooseCommit(pass, start)) {
    return absl::OkStatus();
  }
  CAPTF_RETURN_IF_ERROR(writeDurableInputs(pass, start));
  CAPTF_ASSIGN_OR_RETURN(const json created, createJob(pass, start));
  CAPTF_RETURN_IF_ERROR(createRunSecret(pass, start, created));
  reportStart(pass, start);
  return absl::OkStatus();
}

bool JobStarter::credentialsInPlace(WorkloadPass& pass, const Start& start) const {
  // Credentials must be in place for any Job (docs/behaviour/identities.md#resolution item 7).
  if (pass.identity.allowed.isTrue() && pass.identity.mirrored.isTrue() && pass.rbac.isTrue()) {
    return true;
  }
  if (!pass.identity.allowed.isTrue() &&
      (start.op == api::Operation::kApply || start.op == api::Operation::kDestroy)) {
    pass.set(cond::kApplyJobSucceeded, ConditionStatus::kFalse, cond::kReasonIdentityNotAllowed,
             "no Job can start: " + pass.identity.allowed.message);
  }
  pass.result.requeue_after = lifecycle::kLeaseRecheck;
  return false;
}

absl::StatusOr<bool> JobStarter::chooseRoot(WorkloadPass& pass, Start& start) const {
  // Which root the Job renders (docs/behaviour/inputs.md#durable-and-per-run-inputs-secrets table).
  const lifecycle::JobRoot which = lifecycle::rootForOperation(
      start.op, kind_.traits(), pass.durable.has_value(), pass.rendered.has_value());
  if (which == lifecycle::JobRoot::kDurable && pass.durable) {
    start.root = &pass.durable->root;
  } else if (which == lifecycle::JobRoot::kCurrent && pass.rendered) {
    start.root = &pass.rendered->root;
  }
  if (start.op != api::Operation::kRestore) {
    return start.root != nullptr;
  }
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
    return false;
  }
  start.restore = *std::move(found);
  return true;
}

absl::StatusOr<bool> JobStarter::decidedOnServersCopy(WorkloadPass& pass) const {
  // The decision came from the cached copy, and a Job cannot be taken
  // back: the API server's copy must be the one decided on. When someone
  // else wrote the object since (the previous pass's status patch, not in
  // the cache yet, e.g. a status.plan that would otherwise be planned
  // again; an approval withdrawn; a spec edit), the pass ends without
  // writing and runs again. The pass's own writes moved its copy along
  // (ObjectPatcher), so its resourceVersion is the server's unless someone
  // else wrote.
  CAPTF_ASSIGN_OR_RETURN(const bool current, isServersCopy(deps_.api, kind_.gvk(), pass.object));
  if (!current) {
    pass.stale = true;
  }
  return current;
}

absl::StatusOr<bool> JobStarter::readDurableInputs(WorkloadPass& pass, Start& start) const {
  // An apply writes the durable inputs: the API server's copy, not the
  // cache's (the digest this pass's bookkeeping pinned a moment ago is kept
  // while the image stays), read before any Lease is taken so that a
  // Secret of that name CAPTF did not make holds nothing but this object
  // (docs/behaviour/security.md#objects-captf-does-not-own).
  if (start.op != api::Operation::kApply) {
    return true;
  }
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
    return false;
  }
  if (existing.ok()) {
    start.existing_durable = *std::move(existing);
  }
  return true;
}

absl::StatusOr<bool> JobStarter::takeLeases(WorkloadPass& pass, const Start& start) {
  // Leases (docs/behaviour/lifecycle.md#run-leases-and-the-cluster-operation-gate).
  lifecycle::LeaseRequest lease;
  lease.kind = lifecycle::LeaseKind::kRun;
  lease.object = pass.id;
  lease.cluster_name = pass.cluster_name;
  lease.job = start.job_name;
  lease.operation = start.op;
  lease.active_deadline_seconds = pass.policy.active_deadline_seconds;
  lease.now = pass.now.value;
  std::string holder;
  auto verdict =
      takeLease(deps_.api, deps_.cached, lease, lifecycle::runLeaseName(pass.id), holder);
  if (!verdict.ok()) {
    return verdict.status();
  }
  if (*verdict == lifecycle::LeaseVerdict::kWait) {
    reportWait(pass, start, lifecycle::runLeaseWait(holder));
    return false;
  }
  const bool gate = deps_.settings.cluster_operation_gate == ClusterOperationGate::kOn;
  if (lifecycle::gateApplies(gate, start.op) && !pass.cluster_name.empty()) {
    return passGate(pass, start, lease);
  }
  return true;
}

absl::StatusOr<bool> JobStarter::passGate(WorkloadPass& pass, const Start& start,
                                          const lifecycle::LeaseRequest& lease) {
  auto gate_input = pass.kind->gateInput(pass, lease);
  if (!gate_input.ok()) {
    return gate_input.status();
  }
  gate_input->traits = kind_.traits();
  const lifecycle::GateVerdict verdict = lifecycle::evaluateGate(*gate_input);
  const std::optional<lifecycle::LeaseWait> wait =
      lifecycle::gateWait(verdict, gate_input->dependent_operations, pass.cluster_name);
  if (!wait) {
    return true;
  }
  // kWaitForMachineOperations: both Leases kept, new machine and pool
  // operations queue behind. kWaitForClusterOperation: the cluster applies
  // or destroys, so our run Lease goes back and the cluster never waits on
  // a machine that waits on it.
  if (verdict == lifecycle::GateVerdict::kWaitForClusterOperation) {
    CAPTF_RETURN_IF_ERROR(
        releaseLease(deps_.api, pass.id.ns, lifecycle::runLeaseName(pass.id), start.job_name));
  }
  reportWait(pass, start, *wait);
  return false;
}

void JobStarter::reportWait(WorkloadPass& pass, const Start& start,
                            const lifecycle::LeaseWait& wait) const {
  if (pass.set(lifecycle::waitConditionFor(start.op), ConditionStatus::kUnknown, wait.reason,
               wait.message)) {
    pass.count(deps_.metrics.lease_waits_total.withLabels({kind(), wait.metric}));
    pass.event(kube::EventType::kNormal, wait.event_reason, wait.event_note);
  }
  pass.result.requeue_after = lifecycle::kLeaseRecheck;
}

absl::Status JobStarter::setAsideBeforeRestore(WorkloadPass& pass, const Start& start) const {
  // docs/behaviour/state.md#restore-over-an-unreadable-state: with the
  // Leases held and before the Job exists, an unreadable state goes aside.
  // When it cannot, no Job is made and the Leases go back.
  if (!start.restore) {
    return absl::OkStatus();
  }
  absl::Status s = setAsideUnreadableState(deps_, kind_, pass, start.restore->serial);
  if (s.ok()) {
    return s;
  }
  CAPTF_RETURN_IF_ERROR(
      releaseLease(deps_.api, pass.id.ns, lifecycle::runLeaseName(pass.id), start.job_name));
  if (!pass.cluster_name.empty()) {
    CAPTF_RETURN_IF_ERROR(releaseLease(deps_.api, pass.id.ns,
                                       lifecycle::clusterLeaseName(pass.id.ns, pass.cluster_name),
                                       start.job_name));
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

absl::Status JobStarter::setBlockMove(WorkloadPass& pass) const {
  // docs/behaviour/lifecycle.md: block-move, written directly before the Job exists.
  if (lifecycle::blockMoveAction(
          kube::meta::annotations(pass.object).contains(str(api::kAnnotationBlockMove)), false,
          true) == lifecycle::BlockMoveAction::kSet) {
    return pass.patcher.setAnnotation(api::kAnnotationBlockMove, std::string("true"));
  }
  return absl::OkStatus();
}

bool JobStarter::chooseCommit(WorkloadPass& pass, Start& start) const {
  // A Git source's commit follows the root the Job renders: the durable
  // root ran the durable commit (docs/decisions/git-sources.md).
  if (!pass.spec->source.git) {
    return true;
  }
  const bool durable_root =
      pass.durable && (start.root == &pass.durable->root || start.op == api::Operation::kRestore);
  if (durable_root && pass.durable->annotations.git_commit && pass.git_spec) {
    // Also when nothing resolved this pass (deleting, or the owner is
    // gone): the source as the spec names it, at the durable commit.
    start.git = pass.git_spec;
    start.git->commit = *pass.durable->annotations.git_commit;
  } else {
    start.git = pass.git;
  }
  if (!start.git) {
    // Nothing to fetch yet (the ref is unresolved): no Job.
    pass.result.requeue_after = lifecycle::kLeaseRecheck;
    return false;
  }
  return true;
}

absl::Status JobStarter::writeDurableInputs(WorkloadPass& pass, const Start& start) const {
  // docs/behaviour/inputs.md: the durable inputs are written when an apply Job starts.
  if (start.op != api::Operation::kApply) {
    return absl::OkStatus();
  }
  workspace::DurableAnnotations annotations;
  annotations.image = pass.git ? pass.source_identity : pass.spec->source.image;
  if (start.existing_durable) {
    const json& notes = kube::meta::annotations(*start.existing_durable);
    const auto digest = notes.find(str(api::kAnnotationImageDigest));
    if (notes.value(str(api::kAnnotationImage), "") == pass.spec->source.image &&
        digest != notes.end() && digest->is_string()) {
      annotations.image_digest = digest->get<std::string>();
    }
  }
  annotations.identity = pass.identity.identity;
  if (start.git) {
    annotations.git_commit = start.git->commit;
  }
  json durable = workspace::durableInputsSecret(pass.ref, *start.root, annotations);
  if (start.existing_durable) {
    durable["metadata"]["resourceVersion"] = kube::meta::resourceVersion(*start.existing_durable);
    return deps_.api.update(durable).status();
  }
  return deps_.api.create(durable).status();
}

lifecycle::JobStart JobStarter::jobStart(WorkloadPass& pass, Start& start) const {
  lifecycle::JobStart job;
  job.object = pass.id;
  job.object_uid = pass.meta->uid;
  job.cluster_name = pass.cluster_name;
  job.job_name = start.job_name;
  job.traits = kind_.traits();
  job.source = pass.spec->source;
  if (pass.durable) {
    job.durable = pass.durable->annotations;
  }
  job.git = start.git;
  job.runner_image = deps_.settings.runner_image;
  job.policy = pass.policy;
  job.credentials_secret = pass.identity.mirror_name;
  job.credential_env_keys = pass.identity.delivery.env;
  if (pass.lock.state == workspace::LockState::kStale) {
    job.force_unlock_id = pass.lock.lock.id;
    pass.count(deps_.metrics.lock_force_unlocks_total.withLabels({kind()}));
    pass.event(kube::EventType::kWarning, "ForceUnlocked", pass.lock.message);
  }
  job.runner_events = deps_.settings.runner_events == RunnerEvents::kOn;
  // The run's report credential (docs/decisions/run-reports.md): only its
  // hash on the Job, the token in the per-run Secret.
  if (deps_.settings.runReportsOn()) {
    start.report_token = contract::newReportToken();
    job.report_address = deps_.settings.run_reports.address;
    job.report_token_hash = contract::reportTokenHash(start.report_token);
  }
  job.restore = std::move(start.restore);
  return job;
}

absl::StatusOr<json> JobStarter::createJob(WorkloadPass& pass, Start& start) const {
  auto job = lifecycle::buildJob(lifecycle::jobBuildRequest(pass.decision, jobStart(pass, start)));
  if (!job.ok()) {
    return kube::terminalError(job.status());
  }
  auto created = deps_.api.create(*job);
  if (!created.ok() && !kube::isAlreadyExists(created.status())) {
    return created.status();
  }
  if (created.ok()) {
    return created;
  }
  // Created by an earlier pass with another token: this run reports
  // nothing rather than with a credential its Job does not hold.
  start.report_token.clear();
  created = deps_.api.get(kinds::kJob, {pass.id.ns, start.job_name});
  if (!created.ok()) {
    return created.status();
  }
  if (!controlledBy(*created, kube::meta::uid(pass.object))) {
    // The name is held by an earlier object's Job, which the cache has
    // not shown yet: it goes, and a later pass creates this one's.
    CAPTF_RETURN_IF_ERROR(removeLeftoverJob(deps_.api, pass, *created));
    return absl::UnavailableError("Job " + start.job_name +
                                  " belonged to an earlier object of this name; deleted, this "
                                  "object's Job is created on the next pass");
  }
  return created;
}

absl::Status JobStarter::createRunSecret(WorkloadPass& pass, const Start& start,
                                         const json& job) const {
  // The per-run Secret, owned by the Job; the pod waits for it.
  json run_secret =
      start.op == api::Operation::kRestore
          ? workspace::restoreRunSecret(pass.ref, start.job_name, kube::meta::uid(job))
          : workspace::runSecret(pass.ref, start.job_name, kube::meta::uid(job), *start.root);
  if (!start.report_token.empty()) {
    addReportCredential(run_secret, start.report_token, deps_.settings.run_reports.ca_file);
  }
  auto secret = deps_.api.create(run_secret);
  if (!secret.ok() && !kube::isAlreadyExists(secret.status())) {
    return secret.status();
  }
  if (secret.ok()) {
    return absl::OkStatus();
  }
  // Only the Secret this Job owns is its inputs; one left by an earlier
  // Job of the same name (garbage not yet collected) goes first.
  auto existing = deps_.api.get(kinds::kSecret, {pass.id.ns, kube::meta::name(run_secret)});
  if (!existing.ok()) {
    return existing.status();
  }
  if (!controlledBy(*existing, kube::meta::uid(job))) {
    kube::DeleteOptions options;
    options.preconditions.uid = kube::meta::uid(*existing);
    CAPTF_RETURN_IF_ERROR(kube::ignoreNotFound(
        deps_.api.remove(kinds::kSecret, {pass.id.ns, kube::meta::name(run_secret)}, options)));
    return absl::UnavailableError("the inputs Secret of Job " + start.job_name +
                                  " was left by an earlier Job of that name; deleted, it is "
                                  "written again on the next pass");
  }
  return absl::OkStatus();
}

void JobStarter::reportStart(WorkloadPass& pass, const Start& start) const {
  // Events, metrics and status of the start.
  const lifecycle::Decision& d = pass.decision;
  const std::string& job_name = start.job_name;
  std::string why = str(lifecycle::triggerName(d.trigger));
  pass.log.info("run Job created", {{"Job", kube::objectRef(pass.id.ns, job_name)},
                                    {"operation", start.op_name},
                                    {"attempt", d.attempt},
                                    {"trigger", why}});
  pass.event(kube::EventType::kNormal, "JobCreated",
             start.op_name + " Job " + job_name + " (attempt " + std::to_string(d.attempt) +
                 ", image " + lifecycle::sourceImage(pass.spec->source) +
                 (start.git ? ", commit " + start.git->commit.substr(0, 12) : std::string()) +
                 "): " + why);
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
  active.operation = start.op;
  active.attempt = d.attempt;
  active.start_time = pass.now;
  pass.status->active_job = active;
  if (start.op == api::Operation::kApply && !pass.provisioned) {
    pass.set(cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
             "apply Job " + job_name + " is running");
  }
  pass.result.requeue_after = std::chrono::minutes(1);
}

} // namespace captf::controllers
