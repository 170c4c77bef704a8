#pragma once

// Outputs processing (docs/behaviour/outputs.md): the role's outputs as the state stores them
// ({name: {value, type, sensitive}}, contract::StateSummary::outputs),
// checked against the role's output types (contract/outputs.h, shared with
// the runner) and the CAPI markers the controller enforces, decoded into
// what status needs; the control-plane endpoint rules (docs/behaviour/outputs.md) and the
// health mapping (docs/behaviour/drift-and-health.md). Pure. Messages never contain output values
// except names and addresses already destined for status.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/inputs.h"
#include "manager/api/core_types.h"
#include "manager/api/workspace.h"

namespace captf::workspace {

// ---- verdicts ------------------------------------------------------------------

enum class OutputsVerdict {
  kValid,                 // True/OutputsValid
  kInstancesTruncated,    // True/InstancesTruncated (pool, > 1000 instances)
  kPending,               // Unknown/OutputsPending: a required output still null
  kInvalid,               // False/OutputsInvalid: nothing is written
  kFailureDomainMismatch, // False/FailureDomainMismatch (machine)
  kProviderIdChanged,     // False/ProviderIDChanged (machine)
};

// The OutputsValid reason of a verdict.
std::string_view outputsReason(OutputsVerdict verdict);
// True for kValid and kInstancesTruncated.
bool outputsUsable(OutputsVerdict verdict);

// ---- health (docs/behaviour/outputs.md common output, docs/behaviour/drift-and-health.md) -------

struct Health {
  api::HealthState state = api::HealthState::kUnknown;
  bool healthy = false;
  std::optional<std::string> message{};
  std::vector<std::string> reasons{};
};

struct HealthCondition {
  api::ConditionStatus status = api::ConditionStatus::kUnknown;
  std::string reason{};
  // message and reasons joined ("<message>: <r1>; <r2>"), "" when none.
  std::string message{};
};

// drift-and-health.md for a reading (provisioning rows are the caller's): nullopt (no
// health output) ⇒ Unknown/HealthUnknown.
HealthCondition healthCondition(const std::optional<Health>& health);

// ---- cluster (docs/behaviour/outputs.md) ------------------------------------------------------

struct ClusterOutputs {
  OutputsVerdict verdict = OutputsVerdict::kPending;
  // "; "-joined problems (paths and expectations), for the condition.
  std::string message{};
  // The fields below are meaningful when outputsUsable(verdict) or, for
  // health, whenever it decoded.
  std::optional<api::ApiEndpoint> endpoint{};
  // null and [] both give an empty list (clears status.failureDomains).
  std::vector<api::FailureDomain> failure_domains{};
  // null ⇒ {}; checked integer-only canonicalizable.
  nlohmann::json exports = nlohmann::json::object();
  std::optional<Health> health{};
};

// Checks and decodes the cluster role's outputs. Invalid: a value not of its
// contract type, health.state outside the enum, endpoint half set or host
// not 1–512 / port not 1–65535, more than 100 failure domains, a name not
// 1–256 or repeated, exports with a fractional number. Pending: health null.
ClusterOutputs decodeClusterOutputs(const nlohmann::json& state_outputs);

// The names of the cluster's `failure_domains` output as read from its
// state (the pool input `cluster_failure_domains`); empty when absent,
// null or not decodable.
std::vector<std::string> clusterFailureDomainNames(const nlohmann::json& state_outputs);

// docs/behaviour/outputs.md provisioned: the base state Secret carries the inputs hash of a
// successful apply, the outputs are usable and health.state != pending.
bool clusterProvisioned(bool state_has_inputs_hash, const ClusterOutputs& outputs);

// `captf.io/endpoint-source`.
enum class EndpointSource { kNone, kUser, kModule };
inline constexpr std::string_view kEndpointSourceUser = "user";
inline constexpr std::string_view kEndpointSourceModule = "module";
// Any other value reads as kNone (and is never overwritten by writeBack).
EndpointSource readEndpointSource(const api::ObjectMeta& object);

// A valid APIEndpoint: host non-empty and port set (> 0).
bool validEndpoint(const std::optional<api::ApiEndpoint>& endpoint);
// Cluster.spec.controlPlaneEndpoint of a CAPI Cluster, if any.
std::optional<api::ApiEndpoint> clusterEndpoint(const nlohmann::json& cluster);

// docs/behaviour/inputs.md `control_plane_endpoint` input: null with source `module`; else the
// Cluster's endpoint if valid; else the TerraformCluster's if valid; else
// null.
std::optional<contract::Endpoint>
endpointInput(EndpointSource source, const std::optional<api::ApiEndpoint>& cluster_endpoint,
              const std::optional<api::ApiEndpoint>& object_endpoint);

// docs/behaviour/outputs.md `user`: write `captf.io/endpoint-source: user` before the first
// apply when the annotation is absent and either endpoint is valid.
bool shouldMarkUserEndpoint(EndpointSource source,
                            const std::optional<api::ApiEndpoint>& cluster_endpoint,
                            const std::optional<api::ApiEndpoint>& object_endpoint);

struct EndpointWriteBack {
  // Write to TerraformCluster.spec.controlPlaneEndpoint (event
  // ControlPlaneEndpointSet).
  api::ApiEndpoint endpoint{};
  // Also write `captf.io/endpoint-source: module` (annotation absent).
  bool mark_module = false;
};

// docs/behaviour/outputs.md write-back: all of — output non-null and valid (decoded outputs
// usable), spec.controlPlaneEndpoint still without host, the apply's
// rendered input was null (DurableInputs::control_plane_endpoint_null).
std::optional<EndpointWriteBack>
decideEndpointWriteBack(EndpointSource source, const ClusterOutputs& outputs,
                        const std::optional<api::ApiEndpoint>& object_endpoint,
                        bool rendered_input_was_null);

// EndpointAvailable (docs/reference/conditions.md): False/WaitingForEndpoint once provisioned while
// neither the output nor Cluster.spec.controlPlaneEndpoint is valid; else
// True/EndpointAvailable.
HealthCondition endpointAvailable(bool provisioned, const ClusterOutputs& outputs,
                                  const std::optional<api::ApiEndpoint>& cluster_endpoint);

// ---- machine (docs/behaviour/outputs.md) --------------------------------------------------------

struct MachineOutputs {
  OutputsVerdict verdict = OutputsVerdict::kPending;
  std::string message{};
  // "" normalized to null.
  std::optional<std::string> provider_id{};
  // Sorted: InternalIP, InternalDNS, ExternalIP, ExternalDNS, Hostname,
  // then by address.
  std::vector<api::MachineAddress> addresses{};
  std::optional<std::string> failure_domain{};
  // null ⇒ false.
  bool interruptible = false;
  std::optional<Health> health{};
};

// `input_failure_domain`: the rendered `failure_domain` input (null ⇒ no
// check); `current_provider_id`: spec.providerID (a different non-null
// output ⇒ kProviderIdChanged). Pending: provider_id null (before
// provisioning; after it, `provisioned` true makes null provider_id a
// terminated reading instead) or health null.
MachineOutputs decodeMachineOutputs(const nlohmann::json& state_outputs,
                                    const std::optional<std::string>& input_failure_domain,
                                    const std::optional<std::string>& current_provider_id,
                                    bool provisioned);

bool machineProvisioned(bool state_has_inputs_hash, const MachineOutputs& outputs);

// InfrastructureHealthy of a machine reading: as healthCondition, except
// that a provisioned machine whose provider_id turned null is
// False/InstanceTerminated (docs/behaviour/outputs.md#machine-role out-of-band termination).
HealthCondition machineHealthCondition(const MachineOutputs& outputs, bool provisioned);

// ---- machine pool (docs/behaviour/outputs.md) ---------------------------------------------------

inline constexpr std::size_t kMaxPoolInstances = 1000;

struct MachinePoolOutputs {
  OutputsVerdict verdict = OutputsVerdict::kPending;
  std::string message{};
  std::optional<std::string> provider_id{};
  // Sorted, de-duplicated.
  std::vector<std::string> provider_id_list{};
  std::int32_t replicas = 0;
  // At most 1000 (kInstancesTruncated beyond).
  std::vector<api::MachinePoolInstance> instances{};
  std::optional<Health> health{};
};

MachinePoolOutputs decodeMachinePoolOutputs(const nlohmann::json& state_outputs);

bool machinePoolProvisioned(bool state_has_inputs_hash, const MachinePoolOutputs& outputs);

} // namespace captf::workspace
