#include "manager/workspace/inputs.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "contract/digest.h"
#include "contract/inputs_hash.h"
#include "contract/json_adapter.h"
#include "contract/status_macros.h"
#include "contract/strings.h"
#include "contract/text.h"
#include "manager/api/keys.h"
#include "manager/workspace/json_util.h"

namespace captf::workspace {
namespace {

using contract::strCat;
using nlohmann::json;

std::vector<std::string> stringList(const json& object, std::string_view path) {
  std::vector<std::string> out;
  const json* list = internal::at(object, path);
  if (list == nullptr || !list->is_array()) {
    return out;
  }
  for (const json& item : *list) {
    if (item.is_string()) {
      out.push_back(item.get<std::string>());
    }
  }
  return out;
}

std::optional<std::int64_t> parseCount(std::string_view text) {
  std::int64_t value = 0;
  const auto parsed = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || parsed.ec != std::errc() || parsed.ptr != text.data() + text.size() ||
      value < 0) {
    return std::nullopt;
  }
  return value;
}

bool validUtf8(std::string_view text) {
  return contract::sanitizeUtf8(text) == text;
}

} // namespace

contract::CommonInputs commonInputs(const api::ObjectMeta& object, std::string_view cluster_name) {
  contract::CommonInputs common;
  common.cluster_name = std::string(cluster_name);
  common.cluster_namespace = object.namespace_;
  common.object_name = object.name;
  common.object_namespace = object.namespace_;
  if (const auto found = object.annotations.find(std::string(api::kAnnotationClonedFromName));
      found != object.annotations.end()) {
    common.template_name = found->second;
  }
  return common;
}

contract::ClusterInputs clusterInputs(const api::TerraformCluster& object, const json& cluster,
                                      bool latched_cp_initialized) {
  contract::ClusterInputs inputs;
  inputs.common = commonInputs(object.metadata, internal::nameOf(cluster));
  inputs.control_plane_endpoint =
      endpointInput(readEndpointSource(object.metadata), clusterEndpoint(cluster),
                    object.spec.control_plane_endpoint);
  inputs.kubernetes_version = internal::stringAt(cluster, "spec.topology.version");
  inputs.control_plane_initialized =
      latched_cp_initialized ||
      internal::boolAt(cluster, "status.initialization.controlPlaneInitialized").value_or(false);
  const json* network = internal::at(cluster, "spec.clusterNetwork");
  if (network != nullptr && network->is_object()) {
    contract::ClusterNetwork out;
    out.pods = stringList(*network, "pods.cidrBlocks");
    out.services = stringList(*network, "services.cidrBlocks");
    out.service_domain = internal::stringAt(*network, "serviceDomain");
    out.api_server_port = internal::integerAt(*network, "apiServerPort");
    if (!out.pods.empty() || !out.services.empty() || out.service_domain || out.api_server_port) {
      inputs.cluster_network = std::move(out);
    }
  }
  return inputs;
}

absl::StatusOr<contract::BootstrapData> bootstrapData(const json& secret) {
  if (secret.is_null()) {
    return absl::NotFoundError("the bootstrap data Secret does not exist yet");
  }
  const std::string name = internal::nameOf(secret);
  bool bad = false;
  auto value = internal::secretData(secret, "value", &bad);
  if (!value) {
    return absl::FailedPreconditionError(
        strCat("bootstrap data Secret ", name,
               bad ? ": its value key is not valid base64" : " has no value key yet"));
  }
  std::optional<std::string> format_text = internal::secretData(secret, "format");
  std::optional<std::string_view> format;
  if (format_text) {
    format = *format_text;
  }
  auto parsed = contract::parseBootstrapFormat(format);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        strCat("bootstrap data Secret ", name, ": ", parsed.status().message()));
  }
  return contract::BootstrapData{*std::move(value), *parsed};
}

std::optional<std::string> machineBootstrapSecretName(const json& machine) {
  auto name = internal::stringAt(machine, "spec.bootstrap.dataSecretName");
  return name && !name->empty() ? name : std::nullopt;
}

std::optional<std::string> machinePoolBootstrapSecretName(const json& machine_pool) {
  auto name = internal::stringAt(machine_pool, "spec.template.spec.bootstrap.dataSecretName");
  return name && !name->empty() ? name : std::nullopt;
}

contract::MachineInputs machineInputs(const api::TerraformMachine& object,
                                      std::string_view cluster_name, const json& machine,
                                      contract::BootstrapData bootstrap,
                                      const json& cluster_exports) {
  contract::MachineInputs inputs;
  inputs.common = commonInputs(object.metadata, cluster_name);
  inputs.cluster_outputs = cluster_exports.is_null() ? json::object() : cluster_exports;
  inputs.machine_name = internal::nameOf(machine);
  inputs.bootstrap = std::move(bootstrap);
  inputs.failure_domain = internal::stringAt(machine, "spec.failureDomain");
  inputs.kubernetes_version = internal::stringAt(machine, "spec.version");
  inputs.control_plane = internal::label(machine, api::kLabelControlPlane).has_value();
  return inputs;
}

AutoscalingReading readAutoscaling(const json& machine_pool) {
  AutoscalingReading reading;
  const auto min_text = internal::annotation(machine_pool, api::kAnnotationAutoscalerMinSize);
  const auto max_text = internal::annotation(machine_pool, api::kAnnotationAutoscalerMaxSize);
  if (!min_text && !max_text) {
    return reading;
  }
  reading.state = AutoscalingState::kInvalid;
  if (!min_text || !max_text) {
    reading.message =
        strCat("Only one of ", api::kAnnotationAutoscalerMinSize, " and ",
               api::kAnnotationAutoscalerMaxSize, " is set; the pool applies without autoscaling");
    return reading;
  }
  const auto min = parseCount(*min_text);
  const auto max = parseCount(*max_text);
  if (!min || !max) {
    reading.message = strCat("Autoscaling bounds min=\"", *min_text, "\" max=\"", *max_text,
                             "\" are not non-negative integers; the pool applies without "
                             "autoscaling");
    return reading;
  }
  if (*min > *max) {
    reading.message = strCat("Autoscaling min ", *min, " is greater than max ", *max,
                             "; the pool applies without autoscaling");
    return reading;
  }
  reading.state = AutoscalingState::kEnabled;
  reading.autoscaling = {true, *min, *max};
  return reading;
}

std::int64_t poolReplicasInput(const json& machine_pool,
                               std::optional<std::int32_t> observed_replicas,
                               const contract::Autoscaling& autoscaling) {
  const std::int64_t desired = internal::integerAt(machine_pool, "spec.replicas").value_or(1);
  if (!autoscaling.enabled) {
    return desired;
  }
  const std::int64_t value = observed_replicas ? *observed_replicas : desired;
  return std::clamp(value, autoscaling.min, autoscaling.max);
}

contract::MachinePoolInputs
machinePoolInputs(const api::TerraformMachinePool& object, std::string_view cluster_name,
                  const json& machine_pool, contract::BootstrapData bootstrap,
                  const json& cluster_exports, std::vector<std::string> cluster_failure_domains) {
  contract::MachinePoolInputs inputs;
  inputs.common = commonInputs(object.metadata, cluster_name);
  inputs.cluster_outputs = cluster_exports.is_null() ? json::object() : cluster_exports;
  inputs.machinepool_name = internal::nameOf(machine_pool);
  inputs.autoscaling = readAutoscaling(machine_pool).autoscaling;
  // status.replicas is an observation only once an apply's outputs were
  // read (the pool is provisioned): before that it is the 0 written for
  // Cluster API, and the MachinePool's request stands.
  const bool observed_known = object.status && object.status->initialization &&
                              object.status->initialization->provisioned.value_or(false);
  const std::optional<std::int32_t> observed =
      observed_known ? object.status->replicas : std::nullopt;
  inputs.replicas = poolReplicasInput(machine_pool, observed, inputs.autoscaling);
  inputs.bootstrap = std::move(bootstrap);
  inputs.failure_domains = stringList(machine_pool, "spec.failureDomains");
  inputs.cluster_failure_domains = std::move(cluster_failure_domains);
  inputs.kubernetes_version = internal::stringAt(machine_pool, "spec.template.spec.version");
  if (const json* labels = internal::at(machine_pool, "spec.template.metadata.labels");
      labels != nullptr && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      if (value.is_string()) {
        inputs.node_labels.emplace(key, value.get<std::string>());
      }
    }
  }
  return inputs;
}

absl::StatusOr<VariablesSourceData> readVariablesSource(const api::VariablesSource& source,
                                                        const json& object) {
  VariablesSourceData data;
  const bool is_secret = source.secret_ref.has_value();
  data.kind =
      is_secret ? VariablesSourceData::Kind::kSecret : VariablesSourceData::Kind::kConfigMap;
  data.name = is_secret ? source.secret_ref->name
                        : (source.config_map_ref ? source.config_map_ref->name : std::string());
  data.format = source.format.value_or(api::VariablesFormat::kString);
  const std::string what = strCat(is_secret ? "Secret " : "ConfigMap ", data.name);
  const bool labeled =
      object.is_object() && internal::label(object, api::kLabelVariables) == "true";
  if (!labeled) {
    if (source.optional.value_or(false)) {
      return data;
    }
    return absl::NotFoundError(strCat(
        "variables source ", what, object.is_object() ? " is not labeled " : " does not exist",
        object.is_object() ? strCat(api::kLabelVariables, "=true") : std::string()));
  }
  std::map<std::string, std::string> values;
  const auto take = [&](const char* field, bool encoded) -> absl::Status {
    const json* entries = internal::at(object, field);
    if (entries == nullptr || !entries->is_object()) {
      return absl::OkStatus();
    }
    for (const auto& [key, value] : entries->items()) {
      if (!value.is_string()) {
        continue;
      }
      if (!encoded) {
        values[key] = value.get<std::string>();
        continue;
      }
      auto decoded = contract::base64Decode(value.get_ref<const std::string&>());
      if (!decoded) {
        return absl::InvalidArgumentError(
            strCat("variables source ", what, ": key ", key, " is not valid base64"));
      }
      values[key] = *std::move(decoded);
    }
    return absl::OkStatus();
  };
  if (is_secret) {
    CAPTF_RETURN_IF_ERROR(take("data", true));
  } else {
    CAPTF_RETURN_IF_ERROR(take("binaryData", true));
    CAPTF_RETURN_IF_ERROR(take("data", false));
  }
  data.data.assign(values.begin(), values.end());
  return data;
}

absl::StatusOr<std::vector<contract::UserVariable>>
mergeUserVariables(contract::Role role, const json& inline_variables,
                   const std::vector<VariablesSourceData>& sources) {
  std::map<std::string, contract::UserVariable> merged;
  std::vector<std::string> errors;
  for (const VariablesSourceData& source : sources) {
    const std::string what = strCat(
        source.kind == VariablesSourceData::Kind::kSecret ? "Secret " : "ConfigMap ", source.name);
    for (const auto& [key, raw] : source.data) {
      if (auto s = contract::validateUserVariableName(role, key); !s.ok()) {
        errors.push_back(strCat("variables source ", what, ": ", s.message()));
        continue;
      }
      if (!validUtf8(raw)) {
        errors.push_back(strCat("variables source ", what, ": key ", key, " is not UTF-8"));
        continue;
      }
      contract::UserVariable variable;
      variable.name = key;
      variable.sensitivity = source.kind == VariablesSourceData::Kind::kSecret
                                 ? contract::Sensitivity::kSensitive
                                 : contract::Sensitivity::kNotSensitive;
      if (source.format == api::VariablesFormat::kJson) {
        auto parsed = contract::parseJson(raw, "value");
        if (!parsed.ok()) {
          errors.push_back(
              strCat("variables source ", what, ": key ", key, " is not valid JSON (format JSON)"));
          continue;
        }
        variable.value = *std::move(parsed);
      } else {
        variable.value = raw;
      }
      merged[key] = std::move(variable);
    }
  }
  if (inline_variables.is_object()) {
    for (const auto& [key, value] : inline_variables.items()) {
      if (auto s = contract::validateUserVariableName(role, key); !s.ok()) {
        errors.push_back(strCat("spec.variables: ", s.message()));
        continue;
      }
      merged[key] = contract::UserVariable{key, value, contract::Sensitivity::kNotSensitive};
    }
  } else if (!inline_variables.is_null()) {
    errors.emplace_back("spec.variables: must be a JSON object");
  }
  if (!errors.empty()) {
    return absl::InvalidArgumentError(contract::strJoin(errors, "; "));
  }
  std::vector<contract::UserVariable> out;
  out.reserve(merged.size());
  for (auto& [name, variable] : merged) {
    out.push_back(std::move(variable));
  }
  return out;
}

absl::StatusOr<RenderedInputs> renderInputs(const contract::RenderRequest& request,
                                            std::string_view image) {
  auto root = contract::renderRoot(request);
  if (!root.ok()) {
    return root.status();
  }
  auto hash = contract::inputsHash(request, image, contract::HashView::kApply);
  if (!hash.ok()) {
    return hash.status();
  }
  auto approval = contract::inputsHash(request, image, contract::HashView::kApproval);
  if (!approval.ok()) {
    return approval.status();
  }
  RenderedInputs out;
  out.bytes = root->totalBytes();
  out.root = *std::move(root);
  out.inputs_hash = *std::move(hash);
  out.approval_hash = *std::move(approval);
  return out;
}

} // namespace captf::workspace
