#pragma once

// Assembling the contract inputs of each role from the API objects (spec
// docs/behaviour/inputs.md), and rendering + hashing them (its size cap, the inputs hash).
// The typed input structs, the renderer and the hash are contract/ (inputs.h,
// render.h, inputs_hash.h); this header only reads the Kubernetes and
// Cluster API objects into them. Pure functions; the caller fetches.
//
// CAPI objects (Cluster, Machine, MachinePool) and core objects (Secret,
// ConfigMap) are nlohmann::json as the API server returns them; missing or
// mistyped fields read as unset.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "contract/inputs.h"
#include "contract/render.h"
#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_machine.h"
#include "manager/api/terraform_machine_pool.h"
#include "manager/workspace/outputs.h"

namespace captf::workspace {

// docs/behaviour/inputs.md captf_cluster / captf_object / captf_tags: the object's name and
// namespace, the Cluster's name (the object's namespace: a Cluster and its
// infrastructure share it), and `cluster.x-k8s.io/cloned-from-name`.
contract::CommonInputs commonInputs(const api::ObjectMeta& object, std::string_view cluster_name);

// docs/behaviour/inputs.md. `cluster` is the CAPI Cluster; `latched_cp_initialized` is true
// when the durable inputs last rendered `control_plane_initialized: true`
// (DurableInputs::control_plane_initialized). The endpoint input follows
// docs/behaviour/outputs.md#control-plane-endpoint (endpointInput in outputs.h).
contract::ClusterInputs clusterInputs(const api::TerraformCluster& object,
                                      const nlohmann::json& cluster, bool latched_cp_initialized);

// The bootstrap Secret's payload (docs/behaviour/inputs.md): raw bytes of `data.value`
// (base64-decoded from the API form), `data.format` (absent ⇒ cloud-config).
// Errors: NotFound when `secret` is null, FailedPrecondition when it has no
// `value` key or undecodable base64 (both: WaitingForBootstrapData),
// InvalidArgument for an unsupported `format`. Never includes the payload
// in a message.
absl::StatusOr<contract::BootstrapData> bootstrapData(const nlohmann::json& secret);

// The name of the bootstrap Secret a Machine / MachinePool points at
// (`spec.bootstrap.dataSecretName`, resp.
// `spec.template.spec.bootstrap.dataSecretName`); nullopt while unset or "".
std::optional<std::string> machineBootstrapSecretName(const nlohmann::json& machine);
std::optional<std::string> machinePoolBootstrapSecretName(const nlohmann::json& machine_pool);

// docs/behaviour/inputs.md. `machine` is the owning CAPI Machine, `bootstrap` from bootstrapData,
// `cluster_exports` the TerraformCluster's `exports` output (null ⇒ {}).
contract::MachineInputs machineInputs(const api::TerraformMachine& object,
                                      std::string_view cluster_name, const nlohmann::json& machine,
                                      contract::BootstrapData bootstrap,
                                      const nlohmann::json& cluster_exports);

// docs/behaviour/pools.md#autoscaling: the autoscaling annotations of a MachinePool.
enum class AutoscalingState {
  kDisabled, // neither annotation: AutoscalingActive=False/AutoscalingDisabled
  kEnabled,  // both parse, 0 <= min <= max: True/ReplicasManagedByModule
  kInvalid,  // one missing, unparsable or min > max: False/AutoscalingAnnotationsInvalid
};
struct AutoscalingReading {
  AutoscalingState state = AutoscalingState::kDisabled;
  // {enabled, min, max}; {false, 0, 0} unless kEnabled.
  contract::Autoscaling autoscaling{};
  // For kInvalid: what is wrong (annotation names and values).
  std::string message{};
};
AutoscalingReading readAutoscaling(const nlohmann::json& machine_pool);

// docs/behaviour/inputs.md `replicas`: without autoscaling `MachinePool.spec.replicas` (1 when
// unset); with it the observed `status.replicas` when known, else
// spec.replicas; clamped into [min, max] when enabled.
std::int64_t poolReplicasInput(const nlohmann::json& machine_pool,
                               std::optional<std::int32_t> observed_replicas,
                               const contract::Autoscaling& autoscaling);

// docs/behaviour/inputs.md. `cluster_failure_domains`: names from the cluster's state
// `failure_domains` output (clusterFailureDomainNames in outputs.h), or from
// TerraformCluster.status.failureDomains for an externally managed cluster.
contract::MachinePoolInputs machinePoolInputs(const api::TerraformMachinePool& object,
                                              std::string_view cluster_name,
                                              const nlohmann::json& machine_pool,
                                              contract::BootstrapData bootstrap,
                                              const nlohmann::json& cluster_exports,
                                              std::vector<std::string> cluster_failure_domains);

// ---- user variables (docs/behaviour/inputs.md) ------------------------------------------------

// One `variablesFrom` source as read from the API server.
struct VariablesSourceData {
  enum class Kind { kConfigMap, kSecret };
  Kind kind = Kind::kConfigMap;
  std::string name{};
  api::VariablesFormat format = api::VariablesFormat::kString;
  // key -> raw bytes (Secret data and ConfigMap binaryData base64-decoded;
  // ConfigMap data as is).
  std::vector<std::pair<std::string, std::string>> data{};
};

// Reads one source. `object` is the ConfigMap/Secret named by `source`
// (null when it does not exist). A missing or unlabeled
// (`captf.io/variables=true`) source is NotFound naming it — or, when
// `source.optional`, an empty source. Errors never include values.
absl::StatusOr<VariablesSourceData> readVariablesSource(const api::VariablesSource& source,
                                                        const nlohmann::json& object);

// Merges `variablesFrom` (list order, later wins) then inline
// `spec.variables` (wins over all). Format String keeps strings, JSON parses
// each value. Errors (InvalidArgument, for DependenciesReady=False/
// VariablesInvalid): a source key that is not a valid variable name for the
// role (contract::validateUserVariableName), a value that is not UTF-8,
// invalid JSON under format JSON — each naming source and key, never the
// value. Sensitivity: kSensitive iff the winning value came from a Secret.
// Output sorted by name.
absl::StatusOr<std::vector<contract::UserVariable>>
mergeUserVariables(contract::Role role, const nlohmann::json& inline_variables,
                   const std::vector<VariablesSourceData>& sources);

// ---- rendering ---------------------------------------------------------------

struct RenderedInputs {
  contract::RenderedRoot root{};
  // captf.io/inputs-hash of this render (HashView::kApply).
  std::string inputs_hash{};
  // What a destructive-plan approval names (HashView::kApproval); equal to
  // inputs_hash except for pools.
  std::string approval_hash{};
  // root.totalBytes(): captf_inputs_bytes.
  std::size_t bytes = 0;
};

// Renders and hashes. Errors: InvalidArgument from validation (a fractional
// number anywhere: unhashable inputs); ResourceExhausted when over
// 1,000,000 bytes (ApplyJobSucceeded=False/InputsTooLarge) — read the size
// with contract::renderedBytesOverLimit(status) for captf_inputs_bytes.
absl::StatusOr<RenderedInputs> renderInputs(const contract::RenderRequest& request,
                                            std::string_view image);

} // namespace captf::workspace
