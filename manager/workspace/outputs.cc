#include "manager/workspace/outputs.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "contract/canonical_json.h"
#include "contract/outputs.h"
#include "contract/strings.h"
#include "manager/api/keys.h"
#include "manager/workspace/json_util.h"

namespace captf::workspace {
namespace {

using contract::strCat;
using nlohmann::json;
namespace out = contract::output;

constexpr std::size_t kMaxHost = 512;
constexpr std::int64_t kMaxPort = 65535;
constexpr std::size_t kMaxFailureDomains = 100;
constexpr std::size_t kMaxName = 256;
constexpr std::size_t kMaxProviderId = 512;
constexpr std::size_t kMaxAddresses = 256;
constexpr std::size_t kMaxAddress = 256;
constexpr std::size_t kMaxProviderIds = 10000;

const json& valueOf(const json& values, std::string_view name) {
  static const json kNull = nullptr;
  const auto found = values.find(std::string(name));
  return found == values.end() ? kNull : *found;
}

bool lengthWithin(const std::string& text, std::size_t max) {
  return !text.empty() && text.size() <= max;
}

std::optional<Health> decodeHealth(const json& value) {
  if (!value.is_object()) {
    return std::nullopt;
  }
  Health health;
  const auto state = internal::stringAt(value, "state");
  if (!state) {
    return std::nullopt;
  }
  const auto parsed = api::parseEnum<api::HealthState>(*state);
  if (!parsed) {
    return std::nullopt;
  }
  health.state = *parsed;
  health.healthy = internal::boolAt(value, "healthy").value_or(false);
  health.message = internal::stringAt(value, "message");
  if (const json* reasons = internal::at(value, "reasons");
      reasons != nullptr && reasons->is_array()) {
    for (const json& reason : *reasons) {
      if (reason.is_string()) {
        health.reasons.push_back(reason.get<std::string>());
      }
    }
  }
  return health;
}

int addressRank(api::MachineAddressType type) {
  switch (type) {
  case api::MachineAddressType::kInternalIP:
    return 0;
  case api::MachineAddressType::kInternalDNS:
    return 1;
  case api::MachineAddressType::kExternalIP:
    return 2;
  case api::MachineAddressType::kExternalDNS:
    return 3;
  case api::MachineAddressType::kHostname:
    return 4;
  }
  return 5;
}

// Decodes a type-checked list of {type, address}; appends length problems.
std::vector<api::MachineAddress> decodeAddresses(const json& value, const std::string& path,
                                                 std::vector<std::string>& errors) {
  std::vector<api::MachineAddress> addresses;
  if (!value.is_array()) {
    return addresses;
  }
  if (value.size() > kMaxAddresses) {
    errors.push_back(strCat(path, ": ", value.size(), " entries, at most ", kMaxAddresses));
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto type = internal::stringAt(value[i], "type");
    const auto address = internal::stringAt(value[i], "address");
    const auto parsed = type ? api::parseEnum<api::MachineAddressType>(*type) : std::nullopt;
    if (!parsed || !address) {
      continue; // reported by the type check
    }
    if (!lengthWithin(*address, kMaxAddress)) {
      errors.push_back(strCat(path, "[", i, "].address: must be 1-", kMaxAddress, " characters"));
      continue;
    }
    addresses.push_back({*parsed, *address});
  }
  std::sort(addresses.begin(), addresses.end(),
            [](const api::MachineAddress& a, const api::MachineAddress& b) {
              const int ra = addressRank(a.type);
              const int rb = addressRank(b.type);
              return ra != rb ? ra < rb : a.address < b.address;
            });
  return addresses;
}

// The common part of every role: type check, health decode, pending.
struct Common {
  json values;
  std::vector<std::string> errors;
  std::vector<std::string> pending;
  std::optional<Health> health;
};

Common check(contract::Role role, const json& state_outputs) {
  contract::RoleOutputsCheck checked = contract::checkRoleOutputs(role, state_outputs);
  Common common{std::move(checked.values), std::move(checked.errors), std::move(checked.pending),
                std::nullopt};
  common.health = decodeHealth(valueOf(common.values, out::kHealth));
  return common;
}

template <class Outputs> void finish(Outputs& outputs, const Common& common) {
  if (!common.errors.empty()) {
    outputs.verdict = OutputsVerdict::kInvalid;
    outputs.message =
        strCat("Outputs violate the contract: ", contract::strJoin(common.errors, "; "));
  } else if (!common.pending.empty()) {
    outputs.verdict = OutputsVerdict::kPending;
    outputs.message = strCat("Waiting for outputs: ", contract::strJoin(common.pending, ", "));
  } else {
    outputs.verdict = OutputsVerdict::kValid;
    outputs.message.clear();
  }
}

// The provider_id output of a machine or a pool (a string): unset, with the
// error recorded, when it is longer than a providerID may be.
std::optional<std::string> decodeProviderId(const json& provider_id, Common& common) {
  const auto& id = provider_id.get_ref<const std::string&>();
  if (id.size() > kMaxProviderId) {
    common.errors.push_back(strCat(out::kProviderId, ": longer than ", kMaxProviderId));
    return std::nullopt;
  }
  return id;
}

} // namespace

std::string_view outputsReason(OutputsVerdict verdict) {
  switch (verdict) {
  case OutputsVerdict::kValid:
    return "OutputsValid";
  case OutputsVerdict::kInstancesTruncated:
    return "InstancesTruncated";
  case OutputsVerdict::kPending:
    return "OutputsPending";
  case OutputsVerdict::kInvalid:
    return "OutputsInvalid";
  case OutputsVerdict::kFailureDomainMismatch:
    return "FailureDomainMismatch";
  case OutputsVerdict::kProviderIdChanged:
    return "ProviderIDChanged";
  }
  return "OutputsInvalid";
}

bool outputsUsable(OutputsVerdict verdict) {
  return verdict == OutputsVerdict::kValid || verdict == OutputsVerdict::kInstancesTruncated;
}

HealthCondition healthCondition(const std::optional<Health>& health) {
  HealthCondition condition;
  if (!health) {
    condition.status = api::ConditionStatus::kUnknown;
    condition.reason = "HealthUnknown";
    condition.message = "The module reports no health";
    return condition;
  }
  switch (health->state) {
  case api::HealthState::kPending:
    condition = {api::ConditionStatus::kFalse, "InstancePending", ""};
    break;
  case api::HealthState::kRunning:
    condition = health->healthy
                    ? HealthCondition{api::ConditionStatus::kTrue, "Healthy", ""}
                    : HealthCondition{api::ConditionStatus::kFalse, "InstanceUnhealthy", ""};
    break;
  case api::HealthState::kDegraded:
    condition = {api::ConditionStatus::kFalse, "InstanceDegraded", ""};
    break;
  case api::HealthState::kStopped:
    condition = {api::ConditionStatus::kFalse, "InstanceStopped", ""};
    break;
  case api::HealthState::kTerminated:
    condition = {api::ConditionStatus::kFalse, "InstanceTerminated", ""};
    break;
  case api::HealthState::kUnknown:
    condition = {api::ConditionStatus::kUnknown, "HealthUnknown", ""};
    break;
  }
  std::string message = health->message.value_or("");
  if (!health->reasons.empty()) {
    message += strCat(message.empty() ? "" : ": ", contract::strJoin(health->reasons, "; "));
  }
  condition.message = std::move(message);
  return condition;
}

// ---- cluster -------------------------------------------------------------------

ClusterOutputs decodeClusterOutputs(const json& state_outputs) {
  Common common = check(contract::Role::kCluster, state_outputs);
  ClusterOutputs outputs;
  outputs.health = common.health;

  const json& endpoint = valueOf(common.values, out::kControlPlaneEndpoint);
  if (endpoint.is_object()) {
    const auto host = internal::stringAt(endpoint, "host");
    const auto port = internal::integerAt(endpoint, "port");
    if (host && port) {
      if (!lengthWithin(*host, kMaxHost) || *port < 1 || *port > kMaxPort) {
        common.errors.push_back(
            strCat(out::kControlPlaneEndpoint, ": host must be 1-512 characters and port 1-65535"));
      } else {
        outputs.endpoint = api::ApiEndpoint{*host, static_cast<std::int32_t>(*port)};
      }
    }
  }

  const json& domains = valueOf(common.values, out::kFailureDomains);
  if (domains.is_array()) {
    if (domains.size() > kMaxFailureDomains) {
      common.errors.push_back(strCat(out::kFailureDomains, ": ", domains.size(),
                                     " entries, at most ", kMaxFailureDomains));
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < domains.size(); ++i) {
      const auto name = internal::stringAt(domains[i], "name");
      if (!name) {
        continue; // reported by the type check
      }
      if (!lengthWithin(*name, kMaxName)) {
        common.errors.push_back(
            strCat(out::kFailureDomains, "[", i, "].name: must be 1-", kMaxName, " characters"));
        continue;
      }
      if (!names.insert(*name).second) {
        common.errors.push_back(
            strCat(out::kFailureDomains, "[", i, "].name: \"", *name, "\" appears twice"));
        continue;
      }
      api::FailureDomain domain;
      domain.name = *name;
      domain.control_plane = internal::boolAt(domains[i], "control_plane").value_or(true);
      if (const json* attributes = internal::at(domains[i], "attributes");
          attributes != nullptr && attributes->is_object()) {
        for (const auto& [key, value] : attributes->items()) {
          if (value.is_string()) {
            domain.attributes.emplace(key, value.get<std::string>());
          }
        }
      }
      outputs.failure_domains.push_back(std::move(domain));
    }
  }

  const json& exports = valueOf(common.values, out::kExports);
  outputs.exports = exports.is_null() ? json::object() : exports;
  if (auto canonical = contract::canonicalJson(outputs.exports); !canonical.ok()) {
    common.errors.push_back(strCat(out::kExports, ": not hashable (", canonical.status().message(),
                                   "); exports must hold integers only"));
  }
  finish(outputs, common);
  return outputs;
}

std::vector<std::string> clusterFailureDomainNames(const json& state_outputs) {
  const ClusterOutputs outputs = decodeClusterOutputs(state_outputs);
  std::vector<std::string> names;
  if (outputs.verdict == OutputsVerdict::kInvalid) {
    return names;
  }
  for (const api::FailureDomain& domain : outputs.failure_domains) {
    names.push_back(domain.name);
  }
  return names;
}

bool clusterProvisioned(bool state_has_inputs_hash, const ClusterOutputs& outputs) {
  return state_has_inputs_hash && outputsUsable(outputs.verdict) && outputs.health &&
         outputs.health->state != api::HealthState::kPending;
}

EndpointSource readEndpointSource(const api::ObjectMeta& object) {
  const auto found = object.annotations.find(std::string(api::kAnnotationEndpointSource));
  if (found == object.annotations.end()) {
    return EndpointSource::kNone;
  }
  if (found->second == kEndpointSourceUser) {
    return EndpointSource::kUser;
  }
  if (found->second == kEndpointSourceModule) {
    return EndpointSource::kModule;
  }
  return EndpointSource::kNone;
}

bool validEndpoint(const std::optional<api::ApiEndpoint>& endpoint) {
  return endpoint && !endpoint->host.empty() && endpoint->port > 0;
}

std::optional<api::ApiEndpoint> clusterEndpoint(const json& cluster) {
  const auto host = internal::stringAt(cluster, "spec.controlPlaneEndpoint.host");
  const auto port = internal::integerAt(cluster, "spec.controlPlaneEndpoint.port");
  if (!host && !port) {
    return std::nullopt;
  }
  api::ApiEndpoint endpoint;
  endpoint.host = host.value_or("");
  endpoint.port = port && *port > 0 && *port <= kMaxPort ? static_cast<std::int32_t>(*port) : 0;
  return endpoint;
}

std::optional<contract::Endpoint>
endpointInput(EndpointSource source, const std::optional<api::ApiEndpoint>& cluster_endpoint,
              const std::optional<api::ApiEndpoint>& object_endpoint) {
  if (source == EndpointSource::kModule) {
    return std::nullopt;
  }
  for (const auto* endpoint : {&cluster_endpoint, &object_endpoint}) {
    if (endpoint->has_value() && validEndpoint(*endpoint)) {
      return contract::Endpoint{(*endpoint)->host, (*endpoint)->port};
    }
  }
  return std::nullopt;
}

bool shouldMarkUserEndpoint(EndpointSource source,
                            const std::optional<api::ApiEndpoint>& cluster_endpoint,
                            const std::optional<api::ApiEndpoint>& object_endpoint) {
  return source == EndpointSource::kNone &&
         (validEndpoint(cluster_endpoint) || validEndpoint(object_endpoint));
}

std::optional<EndpointWriteBack>
decideEndpointWriteBack(EndpointSource source, const ClusterOutputs& outputs,
                        const std::optional<api::ApiEndpoint>& object_endpoint,
                        bool rendered_input_was_null) {
  if (!outputsUsable(outputs.verdict) || !outputs.endpoint || !validEndpoint(outputs.endpoint) ||
      !rendered_input_was_null || (object_endpoint && !object_endpoint->host.empty()) ||
      source == EndpointSource::kUser) {
    return std::nullopt;
  }
  return EndpointWriteBack{*outputs.endpoint, source == EndpointSource::kNone};
}

HealthCondition endpointAvailable(bool provisioned, const ClusterOutputs& outputs,
                                  const std::optional<api::ApiEndpoint>& cluster_endpoint) {
  if (provisioned && !validEndpoint(outputs.endpoint) && !validEndpoint(cluster_endpoint)) {
    return {api::ConditionStatus::kFalse, "WaitingForEndpoint",
            "Neither the module's control_plane_endpoint output nor "
            "Cluster.spec.controlPlaneEndpoint is a valid endpoint (host and port)"};
  }
  return {api::ConditionStatus::kTrue, "EndpointAvailable", ""};
}

// ---- machine -------------------------------------------------------------------

MachineOutputs decodeMachineOutputs(const json& state_outputs,
                                    const std::optional<std::string>& input_failure_domain,
                                    const std::optional<std::string>& current_provider_id,
                                    bool provisioned) {
  Common common = check(contract::Role::kMachine, state_outputs);
  MachineOutputs outputs;
  outputs.health = common.health;

  const json& provider_id = valueOf(common.values, out::kProviderId);
  if (provider_id.is_string()) {
    outputs.provider_id = decodeProviderId(provider_id, common);
  } else if (provider_id.is_null() && !provisioned) {
    common.pending.insert(common.pending.begin(), std::string(out::kProviderId));
  }
  outputs.addresses = decodeAddresses(valueOf(common.values, out::kAddresses),
                                      std::string(out::kAddresses), common.errors);
  const json& failure_domain = valueOf(common.values, out::kFailureDomain);
  if (failure_domain.is_string()) {
    const auto& name = failure_domain.get_ref<const std::string&>();
    if (!lengthWithin(name, kMaxName)) {
      common.errors.push_back(strCat(out::kFailureDomain, ": must be 1-", kMaxName, " characters"));
    } else {
      outputs.failure_domain = name;
    }
  }
  const json& interruptible = valueOf(common.values, out::kInterruptible);
  outputs.interruptible = interruptible.is_boolean() && interruptible.get<bool>();
  finish(outputs, common);
  if (outputs.verdict == OutputsVerdict::kInvalid) {
    return outputs;
  }
  if (current_provider_id && !current_provider_id->empty() && outputs.provider_id &&
      *outputs.provider_id != *current_provider_id) {
    outputs.verdict = OutputsVerdict::kProviderIdChanged;
    outputs.message = strCat("provider_id changed from \"", *current_provider_id, "\" to \"",
                             *outputs.provider_id, "\"; spec.providerID is never rewritten");
    return outputs;
  }
  if (input_failure_domain && outputs.failure_domain != input_failure_domain) {
    outputs.verdict = OutputsVerdict::kFailureDomainMismatch;
    outputs.message = strCat("failure_domain output ",
                             outputs.failure_domain ? strCat("\"", *outputs.failure_domain, "\"")
                                                    : std::string("null"),
                             " differs from the requested \"", *input_failure_domain, "\"");
  }
  return outputs;
}

bool machineProvisioned(bool state_has_inputs_hash, const MachineOutputs& outputs) {
  return state_has_inputs_hash && outputs.provider_id.has_value() && outputs.health &&
         outputs.health->state != api::HealthState::kPending &&
         outputs.verdict != OutputsVerdict::kInvalid;
}

HealthCondition machineHealthCondition(const MachineOutputs& outputs, bool provisioned) {
  if (provisioned && !outputs.provider_id && outputs.verdict != OutputsVerdict::kInvalid) {
    return {api::ConditionStatus::kFalse, "InstanceTerminated",
            "provider_id became null after provisioning: the instance is gone"};
  }
  return healthCondition(outputs.health);
}

// ---- machine pool --------------------------------------------------------------

MachinePoolOutputs decodeMachinePoolOutputs(const json& state_outputs) {
  Common common = check(contract::Role::kMachinePool, state_outputs);
  MachinePoolOutputs outputs;
  outputs.health = common.health;
  const json& provider_id = valueOf(common.values, out::kProviderId);
  if (provider_id.is_string()) {
    outputs.provider_id = decodeProviderId(provider_id, common);
  }
  const json& list = valueOf(common.values, out::kProviderIdList);
  if (list.is_array()) {
    if (list.size() > kMaxProviderIds) {
      common.errors.push_back(
          strCat(out::kProviderIdList, ": ", list.size(), " entries, at most ", kMaxProviderIds));
    }
    std::set<std::string> ids;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) {
        continue;
      }
      const auto& id = list[i].get_ref<const std::string&>();
      if (!lengthWithin(id, kMaxProviderId)) {
        common.errors.push_back(
            strCat(out::kProviderIdList, "[", i, "]: must be 1-", kMaxProviderId, " characters"));
        continue;
      }
      ids.insert(id);
    }
    outputs.provider_id_list.assign(ids.begin(), ids.end());
  }
  const json& replicas = valueOf(common.values, out::kReplicas);
  if (replicas.is_number_integer()) {
    const auto value = replicas.get<std::int64_t>();
    if (value < 0 || value > std::numeric_limits<std::int32_t>::max()) {
      common.errors.push_back(strCat(out::kReplicas, ": must be an integer >= 0"));
    } else {
      outputs.replicas = static_cast<std::int32_t>(value);
    }
  }
  bool truncated = false;
  const json& instances = valueOf(common.values, out::kInstances);
  if (instances.is_array()) {
    for (std::size_t i = 0; i < instances.size(); ++i) {
      if (outputs.instances.size() == kMaxPoolInstances) {
        truncated = true;
        break;
      }
      const json& entry = instances[i];
      const std::string path = strCat(out::kInstances, "[", i, "]");
      const auto id = internal::stringAt(entry, "provider_id");
      if (!id) {
        continue; // reported by the type check
      }
      if (!lengthWithin(*id, kMaxProviderId)) {
        common.errors.push_back(
            strCat(path, ".provider_id: must be 1-", kMaxProviderId, " characters"));
        continue;
      }
      api::MachinePoolInstance instance;
      instance.provider_id = *id;
      instance.instance_id = internal::stringAt(entry, "instance_id");
      if (instance.instance_id && !lengthWithin(*instance.instance_id, kMaxName)) {
        common.errors.push_back(strCat(path, ".instance_id: must be 1-", kMaxName, " characters"));
      }
      if (const json* addresses = internal::at(entry, "addresses"); addresses != nullptr) {
        instance.addresses = decodeAddresses(*addresses, path + ".addresses", common.errors);
      }
      instance.failure_domain = internal::stringAt(entry, "failure_domain");
      if (instance.failure_domain && !lengthWithin(*instance.failure_domain, kMaxName)) {
        common.errors.push_back(
            strCat(path, ".failure_domain: must be 1-", kMaxName, " characters"));
      }
      if (const auto state = internal::stringAt(entry, "state")) {
        instance.state = api::parseEnum<api::HealthState>(*state);
      }
      outputs.instances.push_back(std::move(instance));
    }
  }
  finish(outputs, common);
  if (outputs.verdict == OutputsVerdict::kValid && truncated) {
    outputs.verdict = OutputsVerdict::kInstancesTruncated;
    outputs.message = strCat("The instances output lists ", instances.size(),
                             " instances; status keeps the first ", kMaxPoolInstances);
  }
  return outputs;
}

bool machinePoolProvisioned(bool state_has_inputs_hash, const MachinePoolOutputs& outputs) {
  return state_has_inputs_hash && outputs.health &&
         outputs.health->state != api::HealthState::kPending &&
         outputs.verdict != OutputsVerdict::kInvalid;
}

} // namespace captf::workspace
