#pragma once

// The module contract v1alpha1, as one table: the three roles, their inputs
// and outputs (names, types, nullability, sensitivity), the `captf_tags`
// keys and the reserved names. The manager (rendering, output decoding), the
// runner and tfcapi-lint all read this table; nothing else spells the
// contract. contract/schemas/ must agree with it (test/contract/schemas_test).

#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "contract/types.h"

namespace captf::contract {

inline constexpr std::string_view kContractVersion = "v1alpha1";

// Variables and outputs starting with this prefix belong to the contract.
inline constexpr std::string_view kReservedPrefix = "captf_";

enum class Role { kCluster, kMachine, kMachinePool };

enum class Sensitivity { kNotSensitive, kSensitive };

// Names of contract inputs. Use these rather than literals.
namespace input {
inline constexpr std::string_view kCaptfContract = "captf_contract";
inline constexpr std::string_view kCaptfCluster = "captf_cluster";
inline constexpr std::string_view kCaptfObject = "captf_object";
inline constexpr std::string_view kCaptfClusterOutputs = "captf_cluster_outputs";
inline constexpr std::string_view kCaptfTags = "captf_tags";
inline constexpr std::string_view kControlPlaneEndpoint = "control_plane_endpoint";
inline constexpr std::string_view kKubernetesVersion = "kubernetes_version";
inline constexpr std::string_view kControlPlaneInitialized = "control_plane_initialized";
inline constexpr std::string_view kClusterNetwork = "cluster_network";
inline constexpr std::string_view kMachineName = "machine_name";
inline constexpr std::string_view kBootstrapData = "bootstrap_data";
inline constexpr std::string_view kBootstrapFormat = "bootstrap_format";
inline constexpr std::string_view kFailureDomain = "failure_domain";
inline constexpr std::string_view kControlPlane = "control_plane";
inline constexpr std::string_view kMachinePoolName = "machinepool_name";
inline constexpr std::string_view kReplicas = "replicas";
inline constexpr std::string_view kFailureDomains = "failure_domains";
inline constexpr std::string_view kClusterFailureDomains = "cluster_failure_domains";
inline constexpr std::string_view kNodeLabels = "node_labels";
inline constexpr std::string_view kAutoscaling = "autoscaling";
} // namespace input

// Names of contract outputs.
namespace output {
inline constexpr std::string_view kHealth = "health";
inline constexpr std::string_view kControlPlaneEndpoint = "control_plane_endpoint";
inline constexpr std::string_view kFailureDomains = "failure_domains";
inline constexpr std::string_view kExports = "exports";
inline constexpr std::string_view kProviderId = "provider_id";
inline constexpr std::string_view kAddresses = "addresses";
inline constexpr std::string_view kFailureDomain = "failure_domain";
inline constexpr std::string_view kInterruptible = "interruptible";
inline constexpr std::string_view kProviderIdList = "provider_id_list";
inline constexpr std::string_view kReplicas = "replicas";
inline constexpr std::string_view kInstances = "instances";
} // namespace output

// The six `captf_tags` keys (docs/contract.md#tags). No other key exists.
namespace tag {
inline constexpr std::string_view kCluster = "captf.io/cluster";
inline constexpr std::string_view kNamespace = "captf.io/namespace";
inline constexpr std::string_view kKind = "captf.io/kind";
inline constexpr std::string_view kName = "captf.io/name";
inline constexpr std::string_view kManagedBy = "captf.io/managed-by";
inline constexpr std::string_view kTemplate = "captf.io/template";
// The value of kManagedBy.
inline constexpr std::string_view kManagedByValue = "captf";
} // namespace tag

struct InputSpec {
  std::string_view name;
  // The JSON value the controller renders into terraform.tfvars.json.
  const TypeSpec* value_type = nullptr;
  // The type the generated root declares and tfcapi-lint checks module
  // declarations against. Differs from value_type only where the contract
  // lets the module choose (`captf_cluster`, `captf_object` are `any`).
  const TypeSpec* declared_type = nullptr;
  Sensitivity sensitivity = Sensitivity::kNotSensitive;
};

struct OutputSpec {
  std::string_view name;
  // The shape the controller decodes after normalization (`""` provider IDs
  // become null). Objects are open: extra attributes are ignored.
  const TypeSpec* type = nullptr;
};

struct RoleSpec {
  Role role;
  // "cluster", "machine", "machinepool".
  std::string_view name;
  // "TerraformCluster", "TerraformMachine", "TerraformMachinePool".
  std::string_view kind;
  // "c", "m", "mp": the <kindshort> of `captf-inputs-<kindshort>-<name>`.
  std::string_view kind_short;
  // Every contract input the controller renders for this role, common inputs
  // first, in the order of the specification's tables.
  std::span<const InputSpec> inputs;
  // Every required output (all are re-exported by the generated root).
  std::span<const OutputSpec> outputs;
};

// The three roles, in the order cluster, machine, machinepool.
std::span<const RoleSpec> allRoles();

const RoleSpec& roleSpec(Role role);

// "cluster" | "machine" | "machinepool" (as in `--role`).
absl::StatusOr<Role> parseRole(std::string_view name);

// "TerraformCluster" | "TerraformMachine" | "TerraformMachinePool".
absl::StatusOr<Role> roleForKind(std::string_view kind);

// The input or output of `role` with that name, or nullptr.
const InputSpec* findInput(Role role, std::string_view name);
const OutputSpec* findOutput(Role role, std::string_view name);

// The six `captf_tags` keys in the specification's order.
std::span<const std::string_view> captfTagKeys();

// Arguments of a `module` block that a user variable may not be named after.
std::span<const std::string_view> moduleMetaArguments();

// Whether `name` may be used as a user variable (spec.variables,
// variablesFrom) of an object of `role`: a Terraform identifier
// (^[a-zA-Z_][a-zA-Z0-9_-]*$) that is not `captf_`-prefixed, not a contract
// input of the role and not a module meta-argument. The error message names
// the variable and the rule; it never includes a value.
absl::Status validateUserVariableName(Role role, std::string_view name);

} // namespace captf::contract
