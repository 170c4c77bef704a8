#pragma once

// The rendered contract inputs of one object: typed builders for each role,
// which produce the `terraform.tfvars.json` object the generated root
// passes to the module, and the check every rendered input object must pass
// before it is written or hashed.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "contract/roles.h"

namespace captf::contract {

// The identity every role renders into `captf_cluster`, `captf_object` and
// `captf_tags`. Deliberately no uid, generation, labels or annotations:
// a move, a metadata edit or a controller write-back must never re-apply.
struct CommonInputs {
  // The owning CAPI Cluster.
  std::string cluster_name{};
  std::string cluster_namespace{};
  // The Terraform* object being rendered.
  std::string object_name{};
  std::string object_namespace{};
  // The object's `cluster.x-k8s.io/cloned-from-name` annotation, else "".
  std::string template_name{};
};

struct Endpoint {
  std::string host{};
  std::int64_t port = 0;
};

// Cluster.spec.clusterNetwork; unset lists render as [], unset scalars as
// null.
struct ClusterNetwork {
  std::vector<std::string> pods{};
  std::vector<std::string> services{};
  std::optional<std::string> service_domain{};
  std::optional<std::int64_t> api_server_port{};
};

struct ClusterInputs {
  CommonInputs common{};
  // An endpoint the module does not own; null means "create one".
  std::optional<Endpoint> control_plane_endpoint{};
  std::optional<std::string> kubernetes_version{};
  // Latched by the caller: true once ever rendered true.
  bool control_plane_initialized = false;
  std::optional<ClusterNetwork> cluster_network{};
};

enum class BootstrapFormat { kCloudConfig, kIgnition };

// "cloud-config" | "ignition".
std::string_view bootstrapFormatName(BootstrapFormat format);

// The bootstrap Secret's `format` key: absent means cloud-config; any value
// other than the two formats is InvalidArgument.
absl::StatusOr<BootstrapFormat> parseBootstrapFormat(std::optional<std::string_view> value);

// The bootstrap Secret's payload. `value` holds the raw bytes of its `value`
// key (which may be binary, e.g. gzip); it is rendered as standard padded
// base64 for every bootstrap provider.
struct BootstrapData {
  std::string value{};
  BootstrapFormat format = BootstrapFormat::kCloudConfig;
};

struct MachineInputs {
  CommonInputs common{};
  // The cluster's `exports` output verbatim; null renders as {}.
  nlohmann::json cluster_outputs = nlohmann::json::object();
  // The owning Machine's name (may differ from the TerraformMachine's).
  std::string machine_name{};
  BootstrapData bootstrap{};
  std::optional<std::string> failure_domain{};
  std::optional<std::string> kubernetes_version{};
  bool control_plane = false;
};

struct Autoscaling {
  bool enabled = false;
  std::int64_t min = 0;
  std::int64_t max = 0;
};

struct MachinePoolInputs {
  CommonInputs common{};
  nlohmann::json cluster_outputs = nlohmann::json::object();
  std::string machinepool_name{};
  // Already resolved and clamped by the caller (docs/contract.md#machine-pool-role).
  std::int64_t replicas = 0;
  BootstrapData bootstrap{};
  std::vector<std::string> failure_domains{};
  std::vector<std::string> cluster_failure_domains{};
  std::optional<std::string> kubernetes_version{};
  std::map<std::string, std::string> node_labels{};
  Autoscaling autoscaling{};
};

// The `captf_tags` value of an object of `role`.
nlohmann::json captfTags(Role role, const CommonInputs& common);

// The contract inputs object of each role: exactly the role's inputs from
// the table, keyed by name.
nlohmann::json toInputsJson(const ClusterInputs& inputs);
nlohmann::json toInputsJson(const MachineInputs& inputs);
nlohmann::json toInputsJson(const MachinePoolInputs& inputs);

// Checks a contract inputs object of `role` and returns every violation at
// once (InvalidArgument, one "; "-separated entry per violation): every
// input of the role present and no other key (user variables are passed
// separately), each value of its table type (closed objects, integers only,
// enums), `captf_contract` the current version, `captf_object.kind` the
// role's kind, and `captf_tags` consistent with `captf_cluster` and
// `captf_object`. Lengths and patterns are the JSON Schemas' business.
absl::Status validateInputs(Role role, const nlohmann::json& inputs);

} // namespace captf::contract
