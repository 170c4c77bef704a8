#include "contract/render.h"

#include <charconv>
#include <set>
#include <utility>

#include "absl/strings/cord.h"
#include "contract/canonical_json.h"
#include "contract/inputs.h"
#include "contract/json_adapter.h"
#include "contract/strings.h"

namespace captf::contract {
namespace {

using nlohmann::json;

// Carries the rendered size on a size-cap error.
constexpr char kTooLargePayload[] = "type.captf.io/captf.contract.RenderedBytes";

json backendOnlyRoot() {
  return {{"terraform", {{"backend", {{"kubernetes", json::object()}}}}}};
}

std::string interpolate(std::string_view prefix, std::string_view name) {
  return strCat("${", prefix, name, "}");
}

} // namespace

std::string gitModuleSource(std::string_view path) {
  std::string source = strCat("../..", kGitCheckoutPath.substr(std::string_view("/captf").size()));
  if (!path.empty()) {
    source = strCat(source, "/", path);
  }
  return source;
}

namespace {

json mainTf(const RenderRequest& request) {
  const RoleSpec& spec = roleSpec(request.role);
  json root = backendOnlyRoot();
  json variables = json::object();
  json module = {{"source", request.module_source.empty() ? std::string(kModuleSource)
                                                          : request.module_source}};
  for (const InputSpec& input_spec : spec.inputs) {
    json variable = {{"type", terraformType(*input_spec.declared_type)}};
    if (input_spec.value_type->nullability == Nullability::kNullable) {
      variable["default"] = nullptr;
    }
    if (input_spec.sensitivity == Sensitivity::kSensitive) {
      variable["sensitive"] = true;
    }
    const std::string name(input_spec.name);
    variables[name] = std::move(variable);
    module[name] = interpolate("var.", name);
  }
  for (const UserVariable& user : request.variables) {
    // No type: the module's own declaration converts the value.
    json variable = json::object();
    if (user.sensitivity == Sensitivity::kSensitive) {
      variable["sensitive"] = true;
    }
    variables[user.name] = std::move(variable);
    module[user.name] = interpolate("var.", user.name);
  }
  json outputs = json::object();
  for (const OutputSpec& output_spec : spec.outputs) {
    // Always sensitive, so a module may mark any output sensitive without
    // `plan` failing.
    outputs[std::string(output_spec.name)] = {
        {"value", interpolate(strCat("module.", kModuleCallName, "."), output_spec.name)},
        {"sensitive", true}};
  }
  root["variable"] = std::move(variables);
  root["module"] = {{std::string(kModuleCallName), std::move(module)}};
  root["output"] = std::move(outputs);
  return root;
}

} // namespace

absl::Status validateRenderRequest(const RenderRequest& request) {
  if (auto status = validateInputs(request.role, request.inputs); !status.ok()) {
    return status;
  }
  std::vector<std::string> errors;
  std::set<std::string_view> seen;
  for (const UserVariable& user : request.variables) {
    if (auto status = validateUserVariableName(request.role, user.name); !status.ok()) {
      errors.emplace_back(status.message());
      continue;
    }
    if (!seen.insert(user.name).second) {
      errors.push_back(strCat("variable \"", user.name, "\" is set more than once"));
      continue;
    }
    // The same check the inputs hash makes; the message of canonicalJson
    // names a path inside the value, never the value itself.
    if (auto canonical = canonicalJson(user.value); !canonical.ok()) {
      errors.push_back(strCat("variable \"", user.name, "\": ", canonical.status().message()));
    }
  }
  if (errors.empty()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(strCat("user variables: ", strJoin(errors, "; ")));
}

absl::StatusOr<RenderedRoot> renderRoot(const RenderRequest& request) {
  if (auto status = validateRenderRequest(request); !status.ok()) {
    return status;
  }
  json tfvars = request.inputs;
  for (const UserVariable& user : request.variables) {
    tfvars[user.name] = user.value;
  }
  auto main_text = dumpJson(mainTf(request), JsonLayout::kIndented, kMainFileName);
  if (!main_text.ok()) {
    return main_text.status();
  }
  auto tfvars_text = dumpJson(tfvars, JsonLayout::kCompact, kTfvarsFileName);
  if (!tfvars_text.ok()) {
    return tfvars_text.status();
  }
  RenderedRoot root{.main_tf_json = std::move(*main_text) + "\n",
                    .tfvars_json = std::move(*tfvars_text) + "\n"};
  const std::size_t total = root.totalBytes();
  if (total > kMaxRenderedBytes) {
    absl::Status status = absl::ResourceExhaustedError(strCat(
        "rendered inputs are ", total, " bytes, over the limit of ", kMaxRenderedBytes, " bytes (",
        kMainFileName, " ", root.main_tf_json.size(), " bytes, ", kTfvarsFileName, " ",
        root.tfvars_json.size(), " bytes); shrink the cluster exports or the user variables"));
    status.SetPayload(kTooLargePayload, absl::Cord(strCat(total)));
    return status;
  }
  return root;
}

std::string renderRestoreRoot() {
  // Cannot fail: the document is constant ASCII.
  return backendOnlyRoot().dump(2) + "\n";
}

std::optional<std::size_t> renderedBytesOverLimit(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kResourceExhausted) {
    return std::nullopt;
  }
  const auto payload = status.GetPayload(kTooLargePayload);
  if (!payload.has_value()) {
    return std::nullopt;
  }
  const std::string text(*payload);
  std::size_t bytes = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return bytes;
}

} // namespace captf::contract
