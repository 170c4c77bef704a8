#include "contract/roles.h"

#include <algorithm>
#include <array>
#include <cassert>

#include "contract/strings.h"

namespace captf::contract {
namespace {

// --- Scalars ------------------------------------------------------------------

constexpr TypeSpec kAny{.kind = TypeKind::kAny};
constexpr TypeSpec kNullableAny{.kind = TypeKind::kAny, .nullability = Nullability::kNullable};
constexpr TypeSpec kString{.kind = TypeKind::kString};
constexpr TypeSpec kNullableString{.kind = TypeKind::kString,
                                   .nullability = Nullability::kNullable};
constexpr TypeSpec kBool{.kind = TypeKind::kBool};
constexpr TypeSpec kNullableBool{.kind = TypeKind::kBool, .nullability = Nullability::kNullable};
constexpr TypeSpec kInteger{.kind = TypeKind::kInteger};
constexpr TypeSpec kNullableInteger{.kind = TypeKind::kInteger,
                                    .nullability = Nullability::kNullable};
constexpr TypeSpec kListOfString{.kind = TypeKind::kList, .element = &kString};
constexpr TypeSpec kMapOfString{.kind = TypeKind::kMap, .element = &kString};

// --- Common inputs ------------------------------------------------------------

constexpr std::array<std::string_view, 1> kContractVersions = {kContractVersion};
constexpr TypeSpec kContractVersionType{.kind = TypeKind::kString,
                                        .enum_values = kContractVersions};

constexpr std::array<Attribute, 2> kClusterRefAttributes = {{
    {.name = "name", .type = &kString},
    {.name = "namespace", .type = &kString},
}};
constexpr TypeSpec kClusterRef{.kind = TypeKind::kObject, .attributes = kClusterRefAttributes};

// captf_object.kind is a const per role.
constexpr std::array<std::string_view, 1> kClusterKind = {"TerraformCluster"};
constexpr std::array<std::string_view, 1> kMachineKind = {"TerraformMachine"};
constexpr std::array<std::string_view, 1> kMachinePoolKind = {"TerraformMachinePool"};
constexpr TypeSpec kClusterKindType{.kind = TypeKind::kString, .enum_values = kClusterKind};
constexpr TypeSpec kMachineKindType{.kind = TypeKind::kString, .enum_values = kMachineKind};
constexpr TypeSpec kMachinePoolKindType{.kind = TypeKind::kString, .enum_values = kMachinePoolKind};

constexpr std::array<Attribute, 3> kClusterObjectAttributes = {{
    {.name = "kind", .type = &kClusterKindType},
    {.name = "name", .type = &kString},
    {.name = "namespace", .type = &kString},
}};
constexpr std::array<Attribute, 3> kMachineObjectAttributes = {{
    {.name = "kind", .type = &kMachineKindType},
    {.name = "name", .type = &kString},
    {.name = "namespace", .type = &kString},
}};
constexpr std::array<Attribute, 3> kMachinePoolObjectAttributes = {{
    {.name = "kind", .type = &kMachinePoolKindType},
    {.name = "name", .type = &kString},
    {.name = "namespace", .type = &kString},
}};
constexpr TypeSpec kClusterObjectRef{.kind = TypeKind::kObject,
                                     .attributes = kClusterObjectAttributes};
constexpr TypeSpec kMachineObjectRef{.kind = TypeKind::kObject,
                                     .attributes = kMachineObjectAttributes};
constexpr TypeSpec kMachinePoolObjectRef{.kind = TypeKind::kObject,
                                         .attributes = kMachinePoolObjectAttributes};

constexpr std::array<std::string_view, 6> kTagKeys = {
    tag::kCluster, tag::kNamespace, tag::kKind, tag::kName, tag::kManagedBy, tag::kTemplate,
};
constexpr TypeSpec kTags{.kind = TypeKind::kMap, .element = &kString, .required_keys = kTagKeys};

// --- Role inputs ----------------------------------------------------------------

constexpr std::array<Attribute, 2> kEndpointAttributes = {{
    {.name = "host", .type = &kString},
    {.name = "port", .type = &kInteger},
}};
constexpr TypeSpec kNullableEndpoint{.kind = TypeKind::kObject,
                                     .nullability = Nullability::kNullable,
                                     .attributes = kEndpointAttributes};

constexpr std::array<Attribute, 4> kClusterNetworkAttributes = {{
    {.name = "pods", .type = &kListOfString},
    {.name = "services", .type = &kListOfString},
    {.name = "service_domain", .type = &kNullableString},
    {.name = "api_server_port", .type = &kNullableInteger},
}};
constexpr TypeSpec kNullableClusterNetwork{.kind = TypeKind::kObject,
                                           .nullability = Nullability::kNullable,
                                           .attributes = kClusterNetworkAttributes};

constexpr std::array<std::string_view, 2> kBootstrapFormats = {"cloud-config", "ignition"};
constexpr TypeSpec kBootstrapFormat{.kind = TypeKind::kString, .enum_values = kBootstrapFormats};

constexpr std::array<Attribute, 3> kAutoscalingAttributes = {{
    {.name = "enabled", .type = &kBool},
    {.name = "min", .type = &kInteger},
    {.name = "max", .type = &kInteger},
}};
constexpr TypeSpec kAutoscaling{.kind = TypeKind::kObject, .attributes = kAutoscalingAttributes};

// --- Outputs ------------------------------------------------------------------

constexpr std::array<std::string_view, 6> kHealthStates = {
    "pending", "running", "degraded", "stopped", "terminated", "unknown",
};
constexpr TypeSpec kHealthState{.kind = TypeKind::kString, .enum_values = kHealthStates};
constexpr TypeSpec kNullableHealthState{
    .kind = TypeKind::kString, .nullability = Nullability::kNullable, .enum_values = kHealthStates};

constexpr std::array<Attribute, 4> kHealthAttributes = {{
    {.name = "state", .type = &kHealthState},
    {.name = "healthy", .type = &kBool},
    {.name = "message",
     .type = &kNullableString,
     .optionality = Optionality::kOptional,
     .default_json = "null"},
    {.name = "reasons",
     .type = &kListOfString,
     .optionality = Optionality::kOptional,
     .default_json = "[]"},
}};
constexpr TypeSpec kHealth{.kind = TypeKind::kObject, .attributes = kHealthAttributes};

constexpr std::array<Attribute, 3> kFailureDomainAttributes = {{
    {.name = "name", .type = &kString},
    {.name = "control_plane",
     .type = &kBool,
     .optionality = Optionality::kOptional,
     .default_json = "true"},
    {.name = "attributes",
     .type = &kMapOfString,
     .optionality = Optionality::kOptional,
     .default_json = "{}"},
}};
constexpr TypeSpec kFailureDomain{.kind = TypeKind::kObject,
                                  .attributes = kFailureDomainAttributes};
constexpr TypeSpec kNullableFailureDomainList{
    .kind = TypeKind::kList, .nullability = Nullability::kNullable, .element = &kFailureDomain};

constexpr std::array<std::string_view, 5> kAddressTypes = {
    "Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS",
};
constexpr TypeSpec kAddressType{.kind = TypeKind::kString, .enum_values = kAddressTypes};
constexpr std::array<Attribute, 2> kAddressAttributes = {{
    {.name = "type", .type = &kAddressType},
    {.name = "address", .type = &kString},
}};
constexpr TypeSpec kAddress{.kind = TypeKind::kObject, .attributes = kAddressAttributes};
constexpr TypeSpec kAddressList{.kind = TypeKind::kList, .element = &kAddress};

constexpr std::array<Attribute, 5> kPoolInstanceAttributes = {{
    {.name = "provider_id", .type = &kString},
    {.name = "instance_id",
     .type = &kNullableString,
     .optionality = Optionality::kOptional,
     .default_json = "null"},
    {.name = "addresses",
     .type = &kAddressList,
     .optionality = Optionality::kOptional,
     .default_json = "[]"},
    {.name = "failure_domain",
     .type = &kNullableString,
     .optionality = Optionality::kOptional,
     .default_json = "null"},
    {.name = "state",
     .type = &kNullableHealthState,
     .optionality = Optionality::kOptional,
     .default_json = "null"},
}};
constexpr TypeSpec kPoolInstance{.kind = TypeKind::kObject, .attributes = kPoolInstanceAttributes};
constexpr TypeSpec kPoolInstanceList{.kind = TypeKind::kList, .element = &kPoolInstance};

// --- The table ----------------------------------------------------------------

constexpr std::array<InputSpec, 8> kClusterInputs = {{
    {.name = input::kCaptfContract, .value_type = &kContractVersionType, .declared_type = &kString},
    {.name = input::kCaptfCluster, .value_type = &kClusterRef, .declared_type = &kAny},
    {.name = input::kCaptfObject, .value_type = &kClusterObjectRef, .declared_type = &kAny},
    {.name = input::kCaptfTags, .value_type = &kTags, .declared_type = &kMapOfString},
    {.name = input::kControlPlaneEndpoint,
     .value_type = &kNullableEndpoint,
     .declared_type = &kNullableEndpoint},
    {.name = input::kKubernetesVersion,
     .value_type = &kNullableString,
     .declared_type = &kNullableString},
    {.name = input::kControlPlaneInitialized, .value_type = &kBool, .declared_type = &kBool},
    {.name = input::kClusterNetwork,
     .value_type = &kNullableClusterNetwork,
     .declared_type = &kNullableClusterNetwork},
}};

constexpr std::array<InputSpec, 11> kMachineInputs = {{
    {.name = input::kCaptfContract, .value_type = &kContractVersionType, .declared_type = &kString},
    {.name = input::kCaptfCluster, .value_type = &kClusterRef, .declared_type = &kAny},
    {.name = input::kCaptfObject, .value_type = &kMachineObjectRef, .declared_type = &kAny},
    {.name = input::kCaptfClusterOutputs, .value_type = &kAny, .declared_type = &kAny},
    {.name = input::kCaptfTags, .value_type = &kTags, .declared_type = &kMapOfString},
    {.name = input::kMachineName, .value_type = &kString, .declared_type = &kString},
    {.name = input::kBootstrapData,
     .value_type = &kString,
     .declared_type = &kString,
     .sensitivity = Sensitivity::kSensitive},
    {.name = input::kBootstrapFormat, .value_type = &kBootstrapFormat, .declared_type = &kString},
    {.name = input::kFailureDomain,
     .value_type = &kNullableString,
     .declared_type = &kNullableString},
    {.name = input::kKubernetesVersion,
     .value_type = &kNullableString,
     .declared_type = &kNullableString},
    {.name = input::kControlPlane, .value_type = &kBool, .declared_type = &kBool},
}};

constexpr std::array<InputSpec, 14> kMachinePoolInputs = {{
    {.name = input::kCaptfContract, .value_type = &kContractVersionType, .declared_type = &kString},
    {.name = input::kCaptfCluster, .value_type = &kClusterRef, .declared_type = &kAny},
    {.name = input::kCaptfObject, .value_type = &kMachinePoolObjectRef, .declared_type = &kAny},
    {.name = input::kCaptfClusterOutputs, .value_type = &kAny, .declared_type = &kAny},
    {.name = input::kCaptfTags, .value_type = &kTags, .declared_type = &kMapOfString},
    {.name = input::kMachinePoolName, .value_type = &kString, .declared_type = &kString},
    {.name = input::kReplicas, .value_type = &kInteger, .declared_type = &kInteger},
    {.name = input::kBootstrapData,
     .value_type = &kString,
     .declared_type = &kString,
     .sensitivity = Sensitivity::kSensitive},
    {.name = input::kBootstrapFormat, .value_type = &kBootstrapFormat, .declared_type = &kString},
    {.name = input::kFailureDomains, .value_type = &kListOfString, .declared_type = &kListOfString},
    {.name = input::kClusterFailureDomains,
     .value_type = &kListOfString,
     .declared_type = &kListOfString},
    {.name = input::kKubernetesVersion,
     .value_type = &kNullableString,
     .declared_type = &kNullableString},
    {.name = input::kNodeLabels, .value_type = &kMapOfString, .declared_type = &kMapOfString},
    {.name = input::kAutoscaling, .value_type = &kAutoscaling, .declared_type = &kAutoscaling},
}};

constexpr std::array<OutputSpec, 4> kClusterOutputs = {{
    {.name = output::kControlPlaneEndpoint, .type = &kNullableEndpoint},
    {.name = output::kFailureDomains, .type = &kNullableFailureDomainList},
    {.name = output::kExports, .type = &kNullableAny},
    {.name = output::kHealth, .type = &kHealth},
}};

constexpr std::array<OutputSpec, 5> kMachineOutputs = {{
    {.name = output::kProviderId, .type = &kNullableString},
    {.name = output::kAddresses, .type = &kAddressList},
    {.name = output::kFailureDomain, .type = &kNullableString},
    {.name = output::kInterruptible, .type = &kNullableBool},
    {.name = output::kHealth, .type = &kHealth},
}};

constexpr std::array<OutputSpec, 5> kMachinePoolOutputs = {{
    {.name = output::kProviderId, .type = &kNullableString},
    {.name = output::kProviderIdList, .type = &kListOfString},
    {.name = output::kReplicas, .type = &kInteger},
    {.name = output::kInstances, .type = &kPoolInstanceList},
    {.name = output::kHealth, .type = &kHealth},
}};

constexpr std::array<RoleSpec, 3> kRoles = {{
    {.role = Role::kCluster,
     .name = "cluster",
     .kind = "TerraformCluster",
     .kind_short = "c",
     .inputs = kClusterInputs,
     .outputs = kClusterOutputs},
    {.role = Role::kMachine,
     .name = "machine",
     .kind = "TerraformMachine",
     .kind_short = "m",
     .inputs = kMachineInputs,
     .outputs = kMachineOutputs},
    {.role = Role::kMachinePool,
     .name = "machinepool",
     .kind = "TerraformMachinePool",
     .kind_short = "mp",
     .inputs = kMachinePoolInputs,
     .outputs = kMachinePoolOutputs},
}};

constexpr std::array<std::string_view, 8> kMetaArguments = {
    "source", "version", "providers", "count", "for_each", "depends_on", "lifecycle", "locals",
};

bool isIdentifierStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool isIdentifierRest(char c) {
  return isIdentifierStart(c) || (c >= '0' && c <= '9') || c == '-';
}

} // namespace

std::span<const RoleSpec> allRoles() {
  return kRoles;
}

const RoleSpec& roleSpec(Role role) {
  const auto index = static_cast<std::size_t>(role);
  assert(index < kRoles.size() && kRoles[index].role == role);
  return kRoles[index];
}

absl::StatusOr<Role> parseRole(std::string_view name) {
  for (const RoleSpec& spec : kRoles) {
    if (spec.name == name) {
      return spec.role;
    }
  }
  return absl::InvalidArgumentError(
      strCat("unknown role \"", name, "\": want cluster, machine or machinepool"));
}

absl::StatusOr<Role> roleForKind(std::string_view kind) {
  for (const RoleSpec& spec : kRoles) {
    if (spec.kind == kind) {
      return spec.role;
    }
  }
  return absl::InvalidArgumentError(
      strCat("unknown kind \"", kind,
             "\": want TerraformCluster, TerraformMachine or TerraformMachinePool"));
}

const InputSpec* findInput(Role role, std::string_view name) {
  const auto inputs = roleSpec(role).inputs;
  const auto found = std::find_if(inputs.begin(), inputs.end(),
                                  [name](const InputSpec& spec) { return spec.name == name; });
  return found == inputs.end() ? nullptr : &*found;
}

const OutputSpec* findOutput(Role role, std::string_view name) {
  const auto outputs = roleSpec(role).outputs;
  const auto found = std::find_if(outputs.begin(), outputs.end(),
                                  [name](const OutputSpec& spec) { return spec.name == name; });
  return found == outputs.end() ? nullptr : &*found;
}

std::span<const std::string_view> captfTagKeys() {
  return kTagKeys;
}

std::span<const std::string_view> moduleMetaArguments() {
  return kMetaArguments;
}

absl::Status validateUserVariableName(Role role, std::string_view name) {
  if (name.empty() || !isIdentifierStart(name.front()) ||
      !std::all_of(name.begin() + 1, name.end(), isIdentifierRest)) {
    return absl::InvalidArgumentError(strCat(
        "variable name \"", name, "\" is not a Terraform identifier (^[a-zA-Z_][a-zA-Z0-9_-]*$)"));
  }
  if (name.starts_with(kReservedPrefix)) {
    return absl::InvalidArgumentError(
        strCat("variable name \"", name, "\" uses the reserved prefix ", kReservedPrefix));
  }
  if (findInput(role, name) != nullptr) {
    return absl::InvalidArgumentError(strCat(
        "variable name \"", name, "\" is a contract input of the ", roleSpec(role).name, " role"));
  }
  if (std::find(kMetaArguments.begin(), kMetaArguments.end(), name) != kMetaArguments.end()) {
    return absl::InvalidArgumentError(
        strCat("variable name \"", name, "\" is a module meta-argument"));
  }
  return absl::OkStatus();
}

} // namespace captf::contract
