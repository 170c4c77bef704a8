#pragma once

// What the runner's e2e tests and its overhead benchmark share: the rig,
// module images (noop modules of each role, the runtime at /captf/runtime),
// the runner image, and Jobs built by the manager's own builder (spec
// docs/behaviour/jobs.md): an init container running `runner copy` from the runner
// image, the module image's `source` container running
// `/captf/bin/runner run`, the per-run Secret at /captf/config, the
// credential mirror, the runner's RBAC (docs/behaviour/security.md#runner-clusterrole).

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "captf/runner/v1alpha1/result.pb.h"
#include "contract/render.h"
#include "contract/roles.h"
#include "contract/state.h"
#include "test/rig/fixture.h"

namespace captf::runner::e2e {

using json = nlohmann::json;

// The static runner of the nested release-static build, and the test child.
inline constexpr char kRunnerStatic[] = CAPTF_RUNNER_STATIC;
inline constexpr char kChild[] = CAPTF_RUNNER_TEST_CHILD;
inline constexpr char kTerraform[] = "/usr/local/bin/terraform";
// In the credential mirror Secret; must never appear in a log or result.
inline constexpr char kCredentialValue[] = "e2e-credential-value-9f8e7d6c";
// In the cluster module's `exports`; must never appear in a result.
inline constexpr char kExportSecret[] = "e2e-export-token-5a4b3c2d";

// The rig of this binary (e2e tier).
const rig::Env& env();

json kubectlJson(const std::vector<std::string>& args);
void kubectlCreate(const json& manifest);
std::string kubectlOut(const std::vector<std::string>& args);

// A module of `role` made of terraform_data only, with the role's outputs.
// `revision` feeds triggers_replace: changing it replaces the resource.
// `health_output` replaces the always-healthy `health` output when set.
std::string noopModule(contract::Role role, std::string_view revision = "1",
                       std::string_view health_output = {});
// A machine module whose apply runs a local-exec of `seconds` (the test
// child, since the image has no shell).
std::string slowMachineModule(int seconds = 300);
// A machine module whose health output has `state` and `healthy` as given:
// HCL expressions that may compare plantimestamp() with
// terraform_data.born.output, the time of its first apply's plan.
std::string timedHealthModule(std::string_view state, std::string_view healthy);
// noopModule plus a string variable `size` (default "small") held by a
// resource: setting it changes the inputs, so the object applies again.
std::string sizedModule(contract::Role role, std::string_view revision = "1");
// A machine module with a string variable `blob` stored in state six
// times (three instances, input and output).
std::string bigMachineModule();

class Images {
public:
  static Images& get();
  // The runner image: the static runner at /runner.
  const std::string& runner();
  // A module image: `main_tf` at /captf/module/main.tf (the test child
  // beside it), `runtime` at /captf/runtime, empty mount points, and
  // `extra_files` (host path -> image path). Cached by name and runtime.
  std::string module(const std::string& name, const std::string& main_tf,
                     const std::string& runtime,
                     const std::map<std::string, std::string>& extra_files = {});

private:
  static std::filesystem::path root();

  std::string runner_;
  std::map<std::string, std::string> modules_;
};

// docs/behaviour/state.md#naming: hex(sha256("<namespace>/<kind>/<name>"))[0:16] + "-" + kindcode.
std::string stateSuffix(const std::string& ns, contract::Role role, const std::string& name);
// docs/behaviour/state.md#backend-labels labels as an HCL object for -backend-config=labels=.
std::string backendLabels(contract::Role role, const std::string& name);

// Inputs of an object `name` of `role` in `ns`, cluster "c1".
contract::RenderRequest renderRequest(contract::Role role, const std::string& ns,
                                      const std::string& name,
                                      std::vector<contract::UserVariable> variables = {});
// main.tf.json and terraform.tfvars.json of `request`.
std::map<std::string, std::string> rootFiles(const contract::RenderRequest& request);

// The namespace, the runner's ServiceAccount, Role and RoleBinding, and the
// credential mirror Secret `captf-creds-e2e`.
void createNamespace(const std::string& ns);

struct JobRequest {
  std::string ns{};
  std::string name{};
  std::string image{};
  contract::Role role = contract::Role::kMachine;
  std::string object{};
  std::string op = "apply";
  std::vector<std::string> extra_args{};
  // What --stop-timeout must be: the builder derives it from grace_seconds
  // (grace − 30s); jobManifest checks that they agree.
  std::string stop_timeout = "570s";
  int grace_seconds = 600;
  // The per-run Secret's files.
  std::map<std::string, std::string> config{};
  // Backup chunk Secrets projected to restore/<i> (restore only).
  std::vector<std::string> restore_secrets{};
  // Replaces `/captf/bin/runner run <args>` (the benchmark's driver).
  std::vector<std::string> command{};
  // The credential mirror and its keys that are environment variables
  // (what controllers::deliveryOf gives the manager's Jobs).
  std::string credentials_secret = "captf-creds-e2e";
  std::vector<std::string> credential_env_keys = {"NOOP_API_TOKEN"};
};

json jobManifest(const JobRequest& request);

struct JobOutcome {
  bool succeeded = false;
  std::string pod;
  std::string pod_uid;
  int exit_code = -1;
  std::string message; // the termination message
  std::string log;     // the source container's log
  captf::runner::v1alpha1::RunResult result;
  json document; // the termination message as JSON (for the outputs member)
};

// Creates the per-run Secret and the Job.
void startJob(const JobRequest& request);
// The Job's pod, once it exists.
json podOf(const std::string& ns, const std::string& job);
// Waits (up to 5 minutes) for the Job to finish and reads its pod. With
// `decode` the termination message must be a valid result document.
JobOutcome waitJob(const std::string& ns, const std::string& job, bool decode = true);
JobOutcome runJob(const JobRequest& request);

struct StoredState {
  std::vector<contract::NamedChunk> chunks;
  contract::StateSummary summary;
};

// Reads the state of `suffix` the way the controller does: every Secret of
// the suffix, ordered by chunk, concatenated, gunzipped, summarized.
StoredState readState(const std::string& ns, const std::string& suffix);

// The lock Lease's holder ("" when released).
std::string lockHolder(const std::string& ns, const std::string& suffix);

} // namespace captf::runner::e2e
