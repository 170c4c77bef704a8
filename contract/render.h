#pragma once

// Rendering of the generated root module (docs/behaviour/inputs.md): `main.tf.json` and
// `terraform.tfvars.json`, which the manager writes to the durable and the
// per-run inputs Secrets and the runner copies into /captf/work/root.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "contract/roles.h"

namespace captf::contract {

inline constexpr std::string_view kMainFileName = "main.tf.json";
inline constexpr std::string_view kTfvarsFileName = "terraform.tfvars.json";
// The root calls the module as `module "role"`; the local path resolves
// /captf/work/root/../../module to /captf/module, so `init` fetches nothing.
inline constexpr std::string_view kModuleCallName = "role";
inline constexpr std::string_view kModuleSource = "../../module";
// A Git source (docs/decisions/git-sources.md): the Job writes the
// repository at kGitCheckoutPath (an emptyDir at /captf/source) and the root
// calls the module at its path inside, gitModuleSource(path) from the root.
inline constexpr std::string_view kGitSourceMount = "/captf/source";
inline constexpr std::string_view kGitCheckoutPath = "/captf/source/repo";
std::string gitModuleSource(std::string_view path);
// main.tf.json plus terraform.tfvars.json, in bytes (docs/runner.md#runner-arguments).
inline constexpr std::size_t kMaxRenderedBytes = 1'000'000;

// One user variable after merging `variablesFrom` and `spec.variables`.
struct UserVariable {
  std::string name{};
  // A string for format String; any JSON for format JSON.
  nlohmann::json value{};
  // kSensitive iff the winning value came from a Secret.
  Sensitivity sensitivity = Sensitivity::kNotSensitive;
};

struct RenderRequest {
  Role role = Role::kCluster;
  // The role's contract inputs object (see contract/inputs.h).
  nlohmann::json inputs{};
  std::vector<UserVariable> variables{};
  // The module call's source; "" is kModuleSource (an image's module).
  std::string module_source{};
};

struct RenderedRoot {
  std::string main_tf_json{};
  std::string tfvars_json{};

  std::size_t totalBytes() const { return main_tf_json.size() + tfvars_json.size(); }
};

// Checks everything rendering and hashing need from a request: the inputs
// (validateInputs), each user variable name (validateUserVariableName), no
// name twice, and user values free of fractional numbers and invalid
// UTF-8. Errors name variables, never their values.
absl::Status validateRenderRequest(const RenderRequest& request);

// Renders the root of an apply, destroy, drift, refresh or plan run.
//
// main.tf.json holds a partial `kubernetes` backend (completed by
// -backend-config at init), one variable per tfvars key (contract inputs
// with their contract type, nullable ones with `default: null`,
// `bootstrap_data` sensitive; user variables without a type, sensitive iff
// from a Secret), `module "role"` forwarding each variable by name and
// nothing else, and every contract output of the role re-exported as
// sensitive. It is indented; terraform.tfvars.json is compact. Both end in a
// newline. Output is deterministic: the same request gives the same bytes.
//
// Errors: InvalidArgument from validateRenderRequest; ResourceExhausted when
// the two files together exceed kMaxRenderedBytes, with a message naming
// the size (recognize it with renderedBytesOverLimit).
absl::StatusOr<RenderedRoot> renderRoot(const RenderRequest& request);

// The root of a restore run: the backend block only, no module call and no
// variables.
std::string renderRestoreRoot();

// For an error from renderRoot caused by the size cap, the rendered size in
// bytes (for `captf_inputs_bytes` and the InputsTooLarge condition);
// otherwise nullopt.
std::optional<std::size_t> renderedBytesOverLimit(const absl::Status& status);

} // namespace captf::contract
