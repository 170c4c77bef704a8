#include "test/runner/e2e_support.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "contract/digest.h"
#include "contract/inputs.h"
#include "contract/result.h"
#include "manager/api/workspace.h"
#include "manager/lifecycle/job_builder.h"
#include "manager/workspace/names.h"

namespace captf::runner::e2e {

namespace fs = std::filesystem;

const rig::Env& env() {
  return rig::shared(rig::Tier::kE2e);
}

json kubectlJson(const std::vector<std::string>& args) {
  std::vector<std::string> full = args;
  full.insert(full.end(), {"-o", "json"});
  const rig::CommandResult r = rig::kubectl(env(), full);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "kubectl " << args.front() << ": " << r.output;
    return json::object();
  }
  return json::parse(r.output, nullptr, false);
}

void kubectlCreate(const json& manifest) {
  const rig::CommandResult r = rig::kubectl(env(), {"create", "-f", "-"}, manifest.dump());
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

std::string kubectlOut(const std::vector<std::string>& args) {
  const rig::CommandResult r = rig::kubectl(env(), args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

// --- Modules and images ----------------------------------------------------

namespace {

std::string variables(contract::Role role) {
  std::string out;
  for (const contract::InputSpec& input : contract::roleSpec(role).inputs) {
    out += "variable \"" + std::string(input.name) + "\" {}\n";
  }
  return out;
}

} // namespace

constexpr std::string_view kHealthy =
    "output \"health\" {\n"
    "  value = { state = \"running\", healthy = true, message = null, reasons = [] }\n"
    "}\n";

// A module of `role` made of terraform_data only. `revision` feeds
// triggers_replace: changing it replaces the resource.
std::string noopModule(contract::Role role, std::string_view revision,
                       std::string_view health_output) {
  std::string out = variables(role);
  switch (role) {
  case contract::Role::kCluster:
    out += "resource \"terraform_data\" \"cluster\" {\n"
           "  input            = var.captf_object.name\n"
           "  triggers_replace = \"" +
           std::string(revision) +
           "\"\n"
           "}\n"
           "output \"control_plane_endpoint\" {\n"
           "  value = { host = \"lb.${var.captf_object.name}.example\", port = 6443 }\n"
           "}\n"
           "output \"failure_domains\" {\n"
           "  value = [{ name = \"fd-a\", control_plane = true, attributes = {} }]\n"
           "}\n"
           "output \"exports\" {\n"
           "  value = { cluster_id = terraform_data.cluster.id, token = \"" +
           kExportSecret +
           "\" }\n"
           "}\n";
    break;
  case contract::Role::kMachine:
    out += "resource \"terraform_data\" \"instance\" {\n"
           "  input = var.machine_name\n"
           "}\n"
           "output \"provider_id\" {\n"
           "  value = \"noop://${terraform_data.instance.id}\"\n"
           "}\n"
           "output \"addresses\" {\n"
           "  value = [{ type = \"InternalIP\", address = \"10.0.0.10\" }]\n"
           "}\n"
           "output \"failure_domain\" {\n"
           "  value = var.failure_domain\n"
           "}\n"
           "output \"interruptible\" {\n"
           "  value = false\n"
           "}\n";
    break;
  case contract::Role::kMachinePool:
    out += "resource \"terraform_data\" \"group\" {\n"
           "  input = var.machinepool_name\n"
           "}\n"
           "output \"provider_id\" {\n"
           "  value = \"noop-group://${terraform_data.group.id}\"\n"
           "}\n"
           "output \"provider_id_list\" {\n"
           "  value = sort([for i in range(var.replicas) : "
           "\"noop://${terraform_data.group.id}/${i}\"])\n"
           "}\n"
           "output \"replicas\" {\n"
           "  value = var.replicas\n"
           "}\n"
           "output \"instances\" {\n"
           "  value = [for i in range(var.replicas) : { provider_id = "
           "\"noop://${terraform_data.group.id}/${i}\" }]\n"
           "}\n";
    break;
  }
  return out + std::string(health_output.empty() ? kHealthy : health_output);
}

// A local-exec of the test child (no shell in the image) that sleeps.
std::string slowMachineModule(int seconds) {
  return noopModule(contract::Role::kMachine) +
         "resource \"terraform_data\" \"slow\" {\n"
         "  input = var.machine_name\n"
         "  provisioner \"local-exec\" {\n"
         "    command     = \"sleep:" +
         std::to_string(seconds) +
         "\"\n"
         "    interpreter = [\"/captf/module/child\"]\n"
         "  }\n"
         "}\n";
}

std::string timedHealthModule(std::string_view state, std::string_view healthy) {
  return noopModule(contract::Role::kMachine, "1",
                    std::string("resource \"terraform_data\" \"born\" {\n"
                                "  input = plantimestamp()\n"
                                "  lifecycle {\n"
                                "    ignore_changes = [input]\n"
                                "  }\n"
                                "}\n"
                                "output \"health\" {\n"
                                "  value = {\n"
                                "    state   = ") +
                        std::string(state) + "\n    healthy = " + std::string(healthy) +
                        "\n"
                        "    message = null\n"
                        "    reasons = []\n"
                        "  }\n"
                        "}\n");
}

std::string sizedModule(contract::Role role, std::string_view revision) {
  return noopModule(role, revision) + "variable \"size\" {\n"
                                      "  type    = string\n"
                                      "  default = \"small\"\n"
                                      "}\n"
                                      "resource \"terraform_data\" \"sized\" {\n"
                                      "  input = var.size\n"
                                      "}\n";
}

// A machine module with a user variable big enough that Terraform splits
// its state into several Secrets.
std::string bigMachineModule() {
  return noopModule(contract::Role::kMachine) + "variable \"blob\" {\n"
                                                "  type    = string\n"
                                                "  default = \"\"\n"
                                                "}\n"
                                                "resource \"terraform_data\" \"big\" {\n"
                                                "  count = 3\n"
                                                "  input = var.blob\n"
                                                "}\n";
}

Images& Images::get() {
  static Images images;
  return images;
}

fs::path Images::root() {
  const fs::path path = fs::path(env().dir) / "runner-e2e";
  fs::create_directories(path);
  return path;
}

const std::string& Images::runner() {
  if (runner_.empty()) {
    const fs::path dir = root() / "runner-image";
    // The rig runs a read-only root filesystem as is: the mount points of
    // /dev and /proc must exist in the image (a container runtime would
    // create them).
    for (const char* mount : {"etc", "dev", "proc", "tmp"}) {
      fs::create_directories(dir / mount);
    }
    fs::copy_file(kRunnerStatic, dir / "runner", fs::copy_options::overwrite_existing);
    runner_ = rig::pushImage(env(), dir.string(), "captf/runner", "e2e");
  }
  return runner_;
}

std::string Images::module(const std::string& name, const std::string& main_tf,
                           const std::string& runtime,
                           const std::map<std::string, std::string>& extra_files) {
  const std::string key = name + "|" + runtime;
  if (auto found = modules_.find(key); found != modules_.end()) {
    return found->second;
  }
  const fs::path dir = root() / ("module-" + name);
  fs::remove_all(dir);
  for (const char* mount : {"captf/work", "captf/bin", "captf/config", "var/run/captf/credentials",
                            "tmp", "etc", "dev", "proc"}) {
    fs::create_directories(dir / mount);
  }
  fs::create_directories(dir / "captf/module");
  std::ofstream(dir / "captf/module/main.tf") << main_tf;
  fs::copy_file(kChild, dir / "captf/module/child");
  fs::copy_file(runtime, dir / "captf/runtime");
  fs::permissions(dir / "captf/runtime", fs::perms(0755));
  for (const auto& [source, target] : extra_files) {
    const fs::path path = dir / fs::path(target).relative_path();
    fs::create_directories(path.parent_path());
    fs::copy_file(source, path, fs::copy_options::overwrite_existing);
  }
  const std::string image = rig::pushImage(env(), dir.string(), "captf/module-" + name, "e2e");
  modules_[key] = image;
  return image;
}

// --- Objects and Jobs --------------------------------------------------------

// docs/behaviour/state.md, from manager/workspace (the manager's one source).
std::string stateSuffix(const std::string& ns, contract::Role role, const std::string& name) {
  return workspace::stateSuffix(workspace::ObjectRef{.role = role, .ns = ns, .name = name});
}

std::string backendLabels(contract::Role role, const std::string& name) {
  return workspace::backendLabelsHcl(
      workspace::ObjectRef{.role = role, .ns = "", .name = name, .cluster_name = "c1"});
}

namespace {

contract::CommonInputs common(const std::string& ns, const std::string& name) {
  return contract::CommonInputs{.cluster_name = "c1",
                                .cluster_namespace = ns,
                                .object_name = name,
                                .object_namespace = ns,
                                .template_name = ""};
}

} // namespace

contract::RenderRequest renderRequest(contract::Role role, const std::string& ns,
                                      const std::string& name,
                                      std::vector<contract::UserVariable> variables) {
  json inputs;
  switch (role) {
  case contract::Role::kCluster: {
    contract::ClusterInputs cluster;
    cluster.common = common(ns, name);
    inputs = contract::toInputsJson(cluster);
    break;
  }
  case contract::Role::kMachine: {
    contract::MachineInputs machine;
    machine.common = common(ns, name);
    machine.machine_name = name;
    machine.bootstrap.value = "#cloud-config\nruncmd: [echo e2e-bootstrap-secret]\n";
    inputs = contract::toInputsJson(machine);
    break;
  }
  case contract::Role::kMachinePool: {
    contract::MachinePoolInputs pool;
    pool.common = common(ns, name);
    pool.machinepool_name = name;
    pool.replicas = 3;
    pool.bootstrap.value = "#cloud-config\n";
    inputs = contract::toInputsJson(pool);
    break;
  }
  }
  return contract::RenderRequest{.role = role, .inputs = inputs, .variables = std::move(variables)};
}

void createNamespace(const std::string& ns) {
  kubectlCreate({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  // The runner's ServiceAccount and the rights of ClusterRole captf-runner
  // (docs/behaviour/security.md#runner-clusterrole), nothing more.
  kubectlCreate({{"apiVersion", "v1"},
                 {"kind", "ServiceAccount"},
                 {"metadata", {{"name", "captf-runner"}, {"namespace", ns}}}});
  kubectlCreate({{"apiVersion", "rbac.authorization.k8s.io/v1"},
                 {"kind", "Role"},
                 {"metadata", {{"name", "captf-runner"}, {"namespace", ns}}},
                 {"rules",
                  {{{"apiGroups", {""}},
                    {"resources", {"secrets"}},
                    {"verbs", {"get", "list", "create", "update", "delete"}}},
                   {{"apiGroups", {"coordination.k8s.io"}},
                    {"resources", {"leases"}},
                    {"verbs", {"get", "create", "update"}}}}}});
  kubectlCreate(
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "RoleBinding"},
       {"metadata", {{"name", "captf-runner"}, {"namespace", ns}}},
       {"roleRef",
        {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "captf-runner"}}},
       {"subjects", {{{"kind", "ServiceAccount"}, {"name", "captf-runner"}, {"namespace", ns}}}}});
  // The identity's credential mirror.
  kubectlCreate({{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "captf-creds-e2e"}, {"namespace", ns}}},
                 {"stringData", {{"NOOP_API_TOKEN", kCredentialValue}}}});
}

// The Job exactly as the manager builds it (lifecycle::buildJob), with what
// an e2e run needs on top: no owner (there is no Terraform* object), the
// extra runner arguments, TF_LOG in the environment as an image ENV could
// set it (the runner must drop it), and the benchmark's command override.
json jobManifest(const JobRequest& request) {
  lifecycle::JobBuildRequest build;
  build.object =
      lifecycle::ObjectIdentity{.role = request.role, .ns = request.ns, .name = request.object};
  build.object_uid = "e2e-" + request.object;
  build.cluster_name = "c1";
  build.job_name = request.name;
  const auto operation = api::parseEnum<api::Operation>(request.op);
  EXPECT_TRUE(operation.has_value()) << request.op;
  build.operation = operation.value_or(api::Operation::kApply);
  build.image = request.image;
  build.runner_image = Images::get().runner();
  build.policy = lifecycle::resolveJobPolicy(std::nullopt, std::nullopt);
  build.credentials_secret = request.credentials_secret;
  build.credential_env_keys = request.credential_env_keys;
  build.runner_events = false;
  build.termination_grace_period_seconds = request.grace_seconds;
  if (build.operation == api::Operation::kRestore) {
    build.options.restore_serial = 1;
    build.restore_chunk_secrets = request.restore_secrets;
  }
  auto built = lifecycle::buildJob(build);
  EXPECT_TRUE(built.ok()) << built.status();
  if (!built.ok()) {
    return json::object();
  }
  json job = *std::move(built);
  job["metadata"].erase("ownerReferences");
  json& source = job["spec"]["template"]["spec"]["containers"][0];
  // The builder derives --stop-timeout from the grace period; the request
  // states what it expects.
  EXPECT_NE(std::find(source["args"].begin(), source["args"].end(),
                      json("--stop-timeout=" + request.stop_timeout)),
            source["args"].end())
      << "grace " << request.grace_seconds
      << "s does not give --stop-timeout=" << request.stop_timeout;
  for (const std::string& arg : request.extra_args) {
    source["args"].push_back(arg);
  }
  source["env"].push_back({{"name", "TF_LOG"}, {"value", "TRACE"}});
  if (!request.command.empty()) {
    source["command"] = request.command;
    source["args"] = json::array();
  }
  return job;
}

void startJob(const JobRequest& request) {
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "captf-run-" + request.name}, {"namespace", request.ns}}},
                 {"stringData", json::object()}};
  for (const auto& [key, value] : request.config) {
    secret["stringData"][key] = value;
  }
  kubectlCreate(secret);
  kubectlCreate(jobManifest(request));
}

// The pod of the Job once it exists.
json podOf(const std::string& ns, const std::string& job) {
  for (int i = 0; i < 600; ++i) {
    json pods = kubectlJson({"-n", ns, "get", "pods", "-l", "job-name=" + job});
    if (pods.contains("items") && !pods["items"].empty()) {
      return pods["items"][0];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ADD_FAILURE() << "no pod for job " << job;
  return json::object();
}

JobOutcome waitJob(const std::string& ns, const std::string& job, bool decode) {
  JobOutcome outcome;
  bool done = false;
  for (int i = 0; i < 1200 && !done; ++i) {
    const json status = kubectlJson({"-n", ns, "get", "job", job}).value("status", json::object());
    if (status.value("succeeded", 0) > 0) {
      outcome.succeeded = true;
      done = true;
    } else if (status.value("failed", 0) > 0) {
      done = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  EXPECT_TRUE(done) << "job " << ns << "/" << job << " did not finish";
  const json pod = podOf(ns, job);
  outcome.pod = pod["metadata"].value("name", "");
  outcome.pod_uid = pod["metadata"].value("uid", "");
  for (const json& status : pod["status"].value("containerStatuses", json::array())) {
    if (status.value("name", "") == "source" && status["state"].contains("terminated")) {
      outcome.exit_code = status["state"]["terminated"].value("exitCode", -1);
      outcome.message = status["state"]["terminated"].value("message", "");
    }
  }
  outcome.log = rig::podLog(env(), ns, outcome.pod, "source");
  if (decode) {
    auto decoded = contract::decodeResult(outcome.message);
    EXPECT_TRUE(decoded.ok()) << decoded.status() << "\nlog:\n" << outcome.log;
    if (decoded.ok()) {
      outcome.result = *decoded;
    }
  }
  outcome.document = json::parse(outcome.message, nullptr, false);
  return outcome;
}

JobOutcome runJob(const JobRequest& request) {
  startJob(request);
  return waitJob(request.ns, request.name);
}

std::map<std::string, std::string> rootFiles(const contract::RenderRequest& request) {
  auto root = contract::renderRoot(request);
  EXPECT_TRUE(root.ok()) << root.status();
  if (!root.ok()) {
    return {};
  }
  return {{std::string(contract::kMainFileName), root->main_tf_json},
          {std::string(contract::kTfvarsFileName), root->tfvars_json}};
}

// Reads the state of `suffix` the way the controller does: every Secret of
// the suffix, ordered by chunk, concatenated, gunzipped.
StoredState readState(const std::string& ns, const std::string& suffix) {
  StoredState stored;
  const json secrets =
      kubectlJson({"-n", ns, "get", "secrets", "-l", "tfstateSecretSuffix=" + suffix});
  for (const json& secret : secrets.value("items", json::array())) {
    std::string data;
    EXPECT_TRUE(absl::Base64Unescape(secret["data"].value("tfstate", ""), &data));
    stored.chunks.push_back({secret["metadata"]["name"].get<std::string>(), data});
  }
  auto ordered = contract::orderChunks("tfstate-default-" + suffix, stored.chunks);
  EXPECT_TRUE(ordered.ok()) << ordered.status();
  if (!ordered.ok()) {
    return stored;
  }
  auto text = contract::assembleState(*ordered);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) {
    return stored;
  }
  auto summary = contract::inspectState(*text);
  EXPECT_TRUE(summary.ok()) << summary.status();
  if (summary.ok()) {
    stored.summary = *summary;
  }
  return stored;
}

std::string lockHolder(const std::string& ns, const std::string& suffix) {
  return kubectlOut({"-n", ns, "get", "lease", "lock-tfstate-default-" + suffix, "-o",
                     "jsonpath={.spec.holderIdentity}"});
}

} // namespace captf::runner::e2e
