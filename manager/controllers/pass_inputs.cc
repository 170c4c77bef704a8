#include "manager/controllers/pass_inputs.h"

#include "contract/git_source.h"
#include "contract/render.h"
#include "contract/status_macros.h"
#include "contract/strings.h"
#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/names.h"
#include "manager/lifecycle/pass.h"
#include "manager/workspace/backups.h"
#include "manager/workspace/inputs.h"
#include "manager/workspace/locks.h"
#include "manager/workspace/names.h"
#include "manager/workspace/secrets.h"
#include "manager/workspace/set_aside.h"
#include "manager/workspace/state.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

using kube::str;

} // namespace

std::string PassInputs::kind() const {
  return kind_.gvk().kind;
}

// 9. State: read, classify, lock check.
absl::Status PassInputs::reconcileState(WorkloadPass& pass) {
  auto secrets = listSecrets(deps_.cached, pass.id.ns, workspace::stateSelector(pass.suffix));
  if (!secrets.ok()) {
    return secrets.status();
  }
  pass.state = workspace::readState(pass.suffix, *secrets);
  // The cached read is not decided on, but read again once from the API
  // server, when the cache may be behind where it matters: a provisioned
  // object is StateLost, and a deleting one leaves without a destroy, only
  // when the API server too has no state
  // (docs/behaviour/state.md#a-deleting-object-without-state), and the
  // newest successful apply's adoption may not have reached the cache (its
  // hash is not the state's).
  bool read_live =
      pass.state.status == workspace::StateStatus::kNotFound && (pass.deleting || pass.latched());
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
  pass.verdict = workspace::classifyState(pass.state, kind_.traits(),
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
absl::Status PassInputs::reconcileBackups(WorkloadPass& pass) {
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

namespace {

std::string shortCommit(const std::string& commit) {
  return commit.substr(0, 12);
}

} // namespace

// A Git source's commit (docs/decisions/git-sources.md): what the ref
// watcher resolved, or for an immutable kind that applied once the commit of
// that apply; sets pass.git and pass.source_identity, or blocks the inputs
// with a DependenciesReady reason naming the failure.
void PassInputs::resolveSource(WorkloadPass& pass) {
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
  if (kind_.traits().immutable_inputs && pass.durable && pass.durable->annotations.git_commit &&
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
    const std::string_view reason = lifecycle::gitSourceReason(resolved->status.code());
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

// Builds the current inputs (the kind's gates, variablesFrom, the role's
// inputs) and renders them. An immutable kind builds them only until it is
// provisioned.
absl::Status PassInputs::reconcileInputs(WorkloadPass& pass) {
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
  if (kind_.traits().immutable_inputs && (pass.latched() || pass.deleting)) {
    resolveSource(pass);
    return absl::OkStatus(); // never rebuilt once provisioned
  }
  auto ready = pass.kind->inputsReady(pass);
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
  auto variables = workspace::mergeUserVariables(kind_.role(), pass.spec->variables, sources);
  if (!variables.ok()) {
    pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonVariablesInvalid,
             std::string(variables.status().message()));
    pass.inputs_blocked = true;
    return absl::OkStatus();
  }
  auto inputs = pass.kind->roleInputs(pass);
  if (!inputs.ok()) {
    return inputs.status();
  }
  contract::RenderRequest request{kind_.role(), *std::move(inputs), *std::move(variables)};
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
  return pass.kind->afterInputs(pass);
}

absl::Status setAsideUnreadableState(const ReconcilerDeps& deps, const WorkloadKind& kind,
                                     WorkloadPass& pass, std::int64_t serial) {
  // Read from the API server: the cache holds no Secret data and may be
  // behind, and what is deleted must be exactly what was copied.
  auto secrets = listSecrets(deps.api, pass.id.ns, workspace::stateSelector(pass.suffix));
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
      workspace::classifyState(live, kind.traits(), workspace::Provisioned::kNo)));
  request.set_aside_at = api::formatTime(pass.now);
  request.restore_serial = serial;
  const std::vector<workspace::SetAsideCopy> copies = workspace::setAsideCopies(request);
  // Every copy first: nothing is deleted unless all of them are in place.
  for (const workspace::SetAsideCopy& copy : copies) {
    const std::string name = kube::meta::name(copy.copy);
    absl::Status created = deps.api.create(copy.copy).status();
    if (kube::isAlreadyExists(created)) {
      auto existing = deps.api.get(kinds::kSecret, {pass.id.ns, name});
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
    absl::Status removed = deps.api.remove(kinds::kSecret, {pass.id.ns, copy.source}, options);
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

} // namespace captf::controllers
