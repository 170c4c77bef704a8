#include "manager/lifecycle/job_builder.h"

#include <algorithm>
#include <functional>
#include <set>

#include "absl/status/status.h"
#include "contract/git_source.h"
#include "contract/render.h"
#include "contract/strings.h"
#include "manager/api/keys.h"

namespace captf::lifecycle {

using contract::strCat;
using nlohmann::json;

namespace {

ObjectIdentity ownerOf(const JobBuildRequest& r) {
  ObjectIdentity owner = r.object;
  owner.cluster_name = r.cluster_name;
  owner.uid = r.object_uid;
  return owner;
}

json labelsOf(const JobBuildRequest& r) {
  json labels = json::object();
  for (const auto& [key, value] : workspace::ownerLabels(ownerOf(r))) {
    labels[key] = value;
  }
  labels[std::string(api::kLabelOp)] = std::string(api::enumName(r.operation));
  labels[std::string(api::kLabelAttempt)] = std::to_string(r.attempt);
  return labels;
}

std::string gitModulePath(const GitFetch& git) {
  return git.path.empty() ? std::string(contract::kGitCheckoutPath)
                          : strCat(contract::kGitCheckoutPath, "/", git.path);
}

json annotationsOf(const JobBuildRequest& r) {
  json annotations = json::object();
  if (!r.inputs_hash.empty()) {
    annotations[std::string(api::kAnnotationInputsHash)] = r.inputs_hash;
  }
  if (r.options.drift_remediation) {
    annotations[std::string(api::kAnnotationDriftRemediation)] = "true";
  }
  if (!r.options.expect_plan.empty()) {
    annotations[std::string(api::kAnnotationApprovedPlan)] = r.options.expect_plan;
  }
  if (r.options.restore_serial) {
    annotations[std::string(api::kAnnotationRestoreSerial)] =
        std::to_string(*r.options.restore_serial);
  }
  if (r.git) {
    annotations[std::string(api::kAnnotationGitCommit)] = r.git->commit;
  }
  if (r.runner_events && !r.report_token_hash.empty()) {
    annotations[std::string(api::kAnnotationReportTokenHash)] = r.report_token_hash;
  }
  return annotations;
}

bool keptPolicyVar(const api::EnvVar& var) {
  // resolveJobPolicy already dropped TF_/KUBE_ names; drop them here too in
  // case a policy was assembled by hand.
  return !var.name.starts_with("TF_") && !var.name.starts_with("KUBE_");
}

json envOf(const JobBuildRequest& r) {
  json env = json::array({
      {{"name", "TF_IN_AUTOMATION"}, {"value", "1"}},
      {{"name", "TF_INPUT"}, {"value", "0"}},
      {{"name", "HOME"}, {"value", std::string(kWorkPath)}},
      {{"name", "TMPDIR"}, {"value", "/tmp"}},
      {{"name", "KUBE_NAMESPACE"}, {"value", r.object.ns}},
      {{"name", "CHECKPOINT_DISABLE"}, {"value", "1"}},
  });
  // The names the Job sets itself: a credential key of the same name stays
  // a file only, so the Job's value is the one the runner sees (as an
  // explicit env entry won over envFrom) and no name is listed twice.
  std::set<std::string, std::less<>> taken;
  for (const json& var : env) {
    taken.insert(var["name"].get<std::string>());
  }
  for (const api::EnvVar& var : r.policy.env) {
    if (keptPolicyVar(var)) {
      taken.insert(var.name);
    }
  }
  // Before jobs.env, so a jobs.env value can still refer to a credential
  // with $(NAME), as it could under envFrom.
  for (const std::string& key : r.credential_env_keys) {
    if (taken.contains(key)) {
      continue;
    }
    env.push_back(
        {{"name", key},
         {"valueFrom",
          {{"secretKeyRef", {{"name", r.credentials_secret}, {"key", key}, {"optional", true}}}}}});
  }
  for (const api::EnvVar& var : r.policy.env) {
    if (keptPolicyVar(var)) {
      env.push_back(api::toJson(var));
    }
  }
  return env;
}

json configVolume(const JobBuildRequest& r) {
  const std::string secret = perRunSecretName(r.job_name);
  if (r.operation != api::Operation::kRestore) {
    return {{"name", "config"}, {"secret", {{"secretName", secret}}}};
  }
  // The per-run Secret plus each backup chunk's `tfstate` at restore/<i>
  // (docs/decisions/runner-design.md, restore handoff).
  json sources = json::array({{{"secret", {{"name", secret}}}}});
  for (std::size_t i = 0; i < r.restore_chunk_secrets.size(); ++i) {
    sources.push_back({{"secret",
                        {{"name", r.restore_chunk_secrets[i]},
                         {"items", {{{"key", "tfstate"}, {"path", strCat("restore/", i)}}}}}}});
  }
  return {{"name", "config"}, {"projected", {{"sources", sources}}}};
}

constexpr std::string_view kEphemeralStorage = "ephemeral-storage";

// A quantity in its canonical form, as the API server writes it back
// ("2Gi", not "2048Mi").
std::string mebibytes(std::int64_t mib) {
  constexpr std::int64_t kMiBPerGiB = 1024;
  return mib % kMiBPerGiB == 0 ? strCat(mib / kMiBPerGiB, "Gi") : strCat(mib, "Mi");
}

json scratchVolume(std::string_view name, std::int64_t mib) {
  return {{"name", std::string(name)}, {"emptyDir", {{"sizeLimit", mebibytes(mib)}}}};
}

// The policy's resources, with an ephemeral-storage request of every scratch
// volume's sizeLimit unless they name ephemeral-storage already.
api::ResourceRequirements sourceResources(const JobBuildRequest& r) {
  api::ResourceRequirements resources = r.policy.resources;
  const std::string key(kEphemeralStorage);
  if (resources.requests.contains(key) || resources.limits.contains(key)) {
    return resources;
  }
  const std::int64_t mib =
      kBinVolumeMiB + kWorkVolumeMiB + kTmpVolumeMiB + (r.git ? kSourceVolumeMiB : 0);
  resources.requests[key] = api::Quantity{mebibytes(mib)};
  return resources;
}

absl::Status validate(const JobBuildRequest& r) {
  const auto missing = [](std::string_view field) {
    return absl::InvalidArgumentError(strCat("job builder: ", field, " is required"));
  };
  if (r.job_name.empty()) {
    return missing("job_name");
  }
  if (r.object.name.empty()) {
    return missing("object.name");
  }
  if (r.object.ns.empty()) {
    return missing("object.ns");
  }
  if (r.object_uid.empty()) {
    return missing("object_uid");
  }
  if (r.image.empty()) {
    return missing("image");
  }
  if (r.git) {
    if (!contract::isCommitId(r.git->commit)) {
      return absl::InvalidArgumentError("job builder: git.commit must be a 40-hex commit id");
    }
    if (auto url = contract::parseGitUrl(r.git->url); !url.ok()) {
      return absl::InvalidArgumentError(
          strCat("job builder: git.url: ", std::string(url.status().message())));
    }
    if (auto path = contract::validateRepositoryPath(r.git->path); !path.ok()) {
      return absl::InvalidArgumentError(
          strCat("job builder: git.path: ", std::string(path.message())));
    }
  }
  if (r.runner_image.empty()) {
    return missing("runner_image");
  }
  if (r.credentials_secret.empty()) {
    return missing("credentials_secret");
  }
  std::set<std::string_view> env_keys;
  for (const std::string& key : r.credential_env_keys) {
    if (!isEnvVarName(key)) {
      return absl::InvalidArgumentError(strCat("job builder: credential_env_keys: \"", key,
                                               "\" is not an environment variable name"));
    }
    if (!env_keys.insert(key).second) {
      return absl::InvalidArgumentError(
          strCat("job builder: credential_env_keys: \"", key, "\" is listed twice"));
    }
  }
  if (r.attempt < 1) {
    return absl::InvalidArgumentError("job builder: attempt must be at least 1");
  }
  const bool apply = r.operation == api::Operation::kApply;
  if ((r.options.guard_deletes || !r.options.allow_deletes_hash.empty() ||
       !r.options.expect_plan.empty() || r.options.drift_remediation) &&
      !apply) {
    return absl::InvalidArgumentError(
        strCat("job builder: guard, expect-plan and remediation options need an apply, not ",
               api::enumName(r.operation)));
  }
  if (r.options.guard_deletes && r.inputs_hash.empty()) {
    return absl::InvalidArgumentError("job builder: a guarded apply needs inputs_hash");
  }
  if (r.operation == api::Operation::kRestore &&
      (r.restore_chunk_secrets.empty() || !r.options.restore_serial)) {
    return absl::InvalidArgumentError(
        "job builder: a restore needs the backup's chunk Secrets and serial");
  }
  if (r.termination_grace_period_seconds <= kStopTimeoutMargin) {
    return absl::InvalidArgumentError(strCat("job builder: terminationGracePeriodSeconds must "
                                             "exceed ",
                                             kStopTimeoutMargin));
  }
  return absl::OkStatus();
}

} // namespace

bool isEnvVarName(std::string_view name) {
  constexpr std::size_t kMaxSecretKey = 253;
  if (name.empty() || name.size() > kMaxSecretKey) {
    return false;
  }
  const auto allowed = [](char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' || c == '.' ||
           (!first && c >= '0' && c <= '9');
  };
  if (!allowed(name.front(), true)) {
    return false;
  }
  return std::all_of(name.begin() + 1, name.end(), [&](char c) { return allowed(c, false); });
}

std::vector<std::string> runnerArgs(const JobBuildRequest& r) {
  const std::string_view op = api::enumName(r.operation);
  std::vector<std::string> args = {
      strCat("--op=", op),
      strCat("--bin=", kRuntimePath),
      strCat("--image=", r.image_reference.empty() ? r.image : r.image_reference),
      strCat("--module=", r.git ? gitModulePath(*r.git) : std::string(kModulePath)),
      strCat("--providers=", kProvidersPath),
      strCat("--workdir=", kWorkPath),
      strCat("--config=", kConfigPath),
      strCat("--lock-timeout=", r.policy.lock_timeout_seconds, "s"),
      strCat("--stop-timeout=", r.termination_grace_period_seconds - kStopTimeoutMargin, "s"),
  };
  for (const std::string& value : workspace::backendConfig(ownerOf(r))) {
    args.push_back(strCat("--backend-config=", value));
  }
  if (!r.force_unlock_id.empty()) {
    args.push_back(strCat("--force-unlock=", r.force_unlock_id));
  }
  if (r.options.guard_deletes) {
    args.emplace_back("--guard-deletes");
    args.push_back(strCat("--inputs-hash=", r.inputs_hash));
    if (!r.options.allow_deletes_hash.empty()) {
      args.push_back(strCat("--allow-deletes-hash=", r.options.allow_deletes_hash));
    }
  }
  if (!r.options.expect_plan.empty()) {
    args.push_back(strCat("--expect-plan=", r.options.expect_plan));
  }
  if (r.runner_events) {
    args.push_back(strCat("--event-object=", api::kGroupVersion, "/",
                          contract::roleSpec(r.object.role).kind, "/", r.object.ns, "/",
                          r.object.name, "/", r.object_uid));
    args.push_back(strCat("--job-name=", r.job_name));
    if (!r.report_address.empty()) {
      args.push_back(strCat("--report-address=", r.report_address));
    }
  }
  if (r.operation == api::Operation::kRestore) {
    args.push_back(strCat("--restore-chunks=", r.restore_chunk_secrets.size()));
    args.push_back(strCat("--restore-resources=", r.restore_resources));
  }
  if (r.git) {
    args.push_back(strCat("--git-url=", r.git->url));
    args.push_back(strCat("--git-commit=", r.git->commit));
    if (!r.git->ref.empty()) {
      args.push_back(strCat("--git-ref=", r.git->ref));
    }
    args.push_back(strCat("--git-checkout=", contract::kGitCheckoutPath));
    if (!r.git->secret.empty()) {
      args.push_back(strCat("--git-credentials=", kGitCredentialsPath));
    }
  }
  return args;
}

absl::StatusOr<json> buildJob(const JobBuildRequest& r) {
  if (absl::Status status = validate(r); !status.ok()) {
    return status;
  }
  const json labels = labelsOf(r);
  json init_security = {{"allowPrivilegeEscalation", false},
                        {"capabilities", {{"drop", {"ALL"}}}},
                        {"runAsNonRoot", true},
                        {"runAsUser", kRunnerUid},
                        {"readOnlyRootFilesystem", true},
                        {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  json init = {
      {"name", std::string(kInitContainer)},
      {"image", r.runner_image},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", {std::string(kRunnerInImage), "copy", std::string(kRunnerPath)}},
      {"resources",
       {{"requests", {{"cpu", "10m"}, {"memory", "32Mi"}}},
        {"limits", {{"cpu", "100m"}, {"memory", "64Mi"}}}}},
      {"securityContext", init_security},
      {"volumeMounts", {{{"name", "bin"}, {"mountPath", std::string(kRunnerBinDir)}}}},
  };
  json source = {
      {"name", std::string(kSourceContainer)},
      {"image", r.image},
      {"imagePullPolicy", std::string(api::enumName(r.image_pull_policy))},
      {"command", {std::string(kRunnerPath), "run"}},
      {"args", runnerArgs(r)},
      {"env", envOf(r)},
      {"resources", api::toJson(sourceResources(r))},
      {"securityContext", api::toJson(r.policy.security_context)},
      {"terminationMessagePolicy", "File"},
      {"volumeMounts",
       {{{"name", "bin"}, {"mountPath", std::string(kRunnerBinDir)}, {"readOnly", true}},
        {{"name", "work"}, {"mountPath", std::string(kWorkPath)}},
        {{"name", "tmp"}, {"mountPath", "/tmp"}},
        {{"name", "config"}, {"mountPath", std::string(kConfigPath)}, {"readOnly", true}},
        {{"name", "credentials"},
         {"mountPath", std::string(kCredentialsPath)},
         {"readOnly", true}}}},
  };
  if (source["resources"].is_null()) {
    source["resources"] = json::object();
  }
  json pod_spec = {
      {"restartPolicy", "Never"},
      {"terminationGracePeriodSeconds", r.termination_grace_period_seconds},
      {"serviceAccountName", r.policy.service_account_name},
      {"securityContext", api::toJson(r.policy.pod_security_context)},
      {"initContainers", {init}},
      {"containers", {source}},
      {"volumes",
       {scratchVolume("bin", kBinVolumeMiB),
        scratchVolume("work", kWorkVolumeMiB),
        scratchVolume("tmp", kTmpVolumeMiB),
        configVolume(r),
        {{"name", "credentials"},
         {"secret", {{"secretName", r.credentials_secret}, {"defaultMode", 0440}}}}}},
  };
  if (r.git) {
    // The repository is written into an emptyDir; the runtime image's own
    // /captf/module, if any, is not used.
    json& mounts = pod_spec["containers"][0]["volumeMounts"];
    mounts.push_back({{"name", "source"}, {"mountPath", std::string(contract::kGitSourceMount)}});
    pod_spec["volumes"].push_back(scratchVolume("source", kSourceVolumeMiB));
    if (!r.git->secret.empty()) {
      mounts.push_back({{"name", "git-credentials"},
                        {"mountPath", std::string(kGitCredentialsPath)},
                        {"readOnly", true}});
      pod_spec["volumes"].push_back(
          {{"name", "git-credentials"},
           {"secret", {{"secretName", r.git->secret}, {"defaultMode", 0440}}}});
    }
  }
  if (!r.policy.image_pull_secrets.empty()) {
    json secrets = json::array();
    for (const api::LocalObjectReference& ref : r.policy.image_pull_secrets) {
      secrets.push_back({{"name", ref.name}});
    }
    pod_spec["imagePullSecrets"] = secrets;
  }
  json metadata = {
      {"name", r.job_name},
      {"namespace", r.object.ns},
      {"labels", labels},
      {"ownerReferences",
       json::array({workspace::ownerReference(ownerOf(r), workspace::OwnerControl::kController)})},
  };
  if (json annotations = annotationsOf(r); !annotations.empty()) {
    metadata["annotations"] = annotations;
  }
  return json{{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", metadata},
              {"spec",
               {{"backoffLimit", 0},
                {"activeDeadlineSeconds", r.policy.active_deadline_seconds},
                {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod_spec}}}}}};
}

} // namespace captf::lifecycle
