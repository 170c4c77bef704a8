#include "contract/inputs.h"

#include <string>
#include <utility>

#include "contract/digest.h"
#include "contract/strings.h"

namespace captf::contract {
namespace {

using nlohmann::json;

json optionalString(const std::optional<std::string>& value) {
  return value.has_value() ? json(*value) : json(nullptr);
}

json stringList(const std::vector<std::string>& values) {
  // Never null: an unset list renders as [].
  json out = json::array();
  for (const auto& value : values) {
    out.push_back(value);
  }
  return out;
}

void addCommon(Role role, const CommonInputs& common, json& out) {
  const RoleSpec& spec = roleSpec(role);
  out[std::string(input::kCaptfContract)] = kContractVersion;
  out[std::string(input::kCaptfCluster)] = {{"name", common.cluster_name},
                                            {"namespace", common.cluster_namespace}};
  out[std::string(input::kCaptfObject)] = {
      {"kind", spec.kind}, {"name", common.object_name}, {"namespace", common.object_namespace}};
  out[std::string(input::kCaptfTags)] = captfTags(role, common);
}

json clusterOutputsOrEmpty(const json& cluster_outputs) {
  // A null `exports` is treated as {}.
  return cluster_outputs.is_null() ? json::object() : cluster_outputs;
}

std::string key(std::string_view name) {
  return std::string(name);
}

} // namespace

std::string_view bootstrapFormatName(BootstrapFormat format) {
  switch (format) {
  case BootstrapFormat::kCloudConfig:
    return "cloud-config";
  case BootstrapFormat::kIgnition:
    return "ignition";
  }
  return "cloud-config";
}

absl::StatusOr<BootstrapFormat> parseBootstrapFormat(std::optional<std::string_view> value) {
  if (!value.has_value() || *value == "cloud-config") {
    return BootstrapFormat::kCloudConfig;
  }
  if (*value == "ignition") {
    return BootstrapFormat::kIgnition;
  }
  return absl::InvalidArgumentError(strCat("bootstrap data format \"", *value,
                                           "\" is not supported: want cloud-config or ignition"));
}

json captfTags(Role role, const CommonInputs& common) {
  return {
      {key(tag::kCluster), common.cluster_name},    {key(tag::kNamespace), common.object_namespace},
      {key(tag::kKind), roleSpec(role).kind},       {key(tag::kName), common.object_name},
      {key(tag::kManagedBy), tag::kManagedByValue}, {key(tag::kTemplate), common.template_name},
  };
}

json toInputsJson(const ClusterInputs& inputs) {
  json out = json::object();
  addCommon(Role::kCluster, inputs.common, out);
  if (inputs.control_plane_endpoint.has_value()) {
    out[key(input::kControlPlaneEndpoint)] = {{"host", inputs.control_plane_endpoint->host},
                                              {"port", inputs.control_plane_endpoint->port}};
  } else {
    out[key(input::kControlPlaneEndpoint)] = nullptr;
  }
  out[key(input::kKubernetesVersion)] = optionalString(inputs.kubernetes_version);
  out[key(input::kControlPlaneInitialized)] = inputs.control_plane_initialized;
  if (inputs.cluster_network.has_value()) {
    const ClusterNetwork& network = *inputs.cluster_network;
    out[key(input::kClusterNetwork)] = {
        {"pods", stringList(network.pods)},
        {"services", stringList(network.services)},
        {"service_domain", optionalString(network.service_domain)},
        {"api_server_port",
         network.api_server_port.has_value() ? json(*network.api_server_port) : json(nullptr)},
    };
  } else {
    out[key(input::kClusterNetwork)] = nullptr;
  }
  return out;
}

json toInputsJson(const MachineInputs& inputs) {
  json out = json::object();
  addCommon(Role::kMachine, inputs.common, out);
  out[key(input::kCaptfClusterOutputs)] = clusterOutputsOrEmpty(inputs.cluster_outputs);
  out[key(input::kMachineName)] = inputs.machine_name;
  out[key(input::kBootstrapData)] = base64Encode(inputs.bootstrap.value);
  out[key(input::kBootstrapFormat)] = bootstrapFormatName(inputs.bootstrap.format);
  out[key(input::kFailureDomain)] = optionalString(inputs.failure_domain);
  out[key(input::kKubernetesVersion)] = optionalString(inputs.kubernetes_version);
  out[key(input::kControlPlane)] = inputs.control_plane;
  return out;
}

json toInputsJson(const MachinePoolInputs& inputs) {
  json out = json::object();
  addCommon(Role::kMachinePool, inputs.common, out);
  out[key(input::kCaptfClusterOutputs)] = clusterOutputsOrEmpty(inputs.cluster_outputs);
  out[key(input::kMachinePoolName)] = inputs.machinepool_name;
  out[key(input::kReplicas)] = inputs.replicas;
  out[key(input::kBootstrapData)] = base64Encode(inputs.bootstrap.value);
  out[key(input::kBootstrapFormat)] = bootstrapFormatName(inputs.bootstrap.format);
  out[key(input::kFailureDomains)] = stringList(inputs.failure_domains);
  out[key(input::kClusterFailureDomains)] = stringList(inputs.cluster_failure_domains);
  out[key(input::kKubernetesVersion)] = optionalString(inputs.kubernetes_version);
  json labels = json::object();
  for (const auto& [name, value] : inputs.node_labels) {
    labels[name] = value;
  }
  out[key(input::kNodeLabels)] = std::move(labels);
  out[key(input::kAutoscaling)] = {{"enabled", inputs.autoscaling.enabled},
                                   {"min", inputs.autoscaling.min},
                                   {"max", inputs.autoscaling.max}};
  return out;
}

absl::Status validateInputs(Role role, const json& inputs) {
  const RoleSpec& spec = roleSpec(role);
  if (!inputs.is_object()) {
    return absl::InvalidArgumentError(
        strCat(spec.name, " inputs: must be a JSON object of contract inputs"));
  }
  std::vector<std::string> errors;
  for (const InputSpec& input_spec : spec.inputs) {
    const auto found = inputs.find(input_spec.name);
    if (found == inputs.end()) {
      errors.push_back(strCat(input_spec.name, ": missing contract input"));
      continue;
    }
    checkValue(*input_spec.value_type, *found, Closure::kClosed, std::string(input_spec.name),
               errors);
  }
  for (const auto& item : inputs.items()) {
    if (findInput(role, item.key()) == nullptr) {
      errors.push_back(strCat(item.key(), ": not a contract input of the ", spec.name, " role"));
    }
  }
  if (errors.empty()) {
    // Structure is sound; check that the identity fields agree with each
    // other (the builders guarantee it, hand-made objects may not).
    const json& tags = inputs.at(key(input::kCaptfTags));
    const json& cluster = inputs.at(key(input::kCaptfCluster));
    const json& object = inputs.at(key(input::kCaptfObject));
    const auto expect_tag = [&](std::string_view tag_key, const json& want,
                                std::string_view source) {
      if (tags.at(key(tag_key)) != want) {
        errors.push_back(strCat(input::kCaptfTags, "[\"", tag_key, "\"]: must equal ", source,
                                " (\"", want.get_ref<const std::string&>(), "\")"));
      }
    };
    expect_tag(tag::kCluster, cluster.at("name"), "captf_cluster.name");
    expect_tag(tag::kNamespace, object.at("namespace"), "captf_object.namespace");
    expect_tag(tag::kKind, object.at("kind"), "captf_object.kind");
    expect_tag(tag::kName, object.at("name"), "captf_object.name");
    expect_tag(tag::kManagedBy, json(tag::kManagedByValue), "the constant");
  }
  if (errors.empty()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(strCat(spec.name, " inputs: ", strJoin(errors, "; ")));
}

} // namespace captf::contract
