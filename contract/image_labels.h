#pragma once

// The capacity labels of a machine-role module image (docs/contract.md,
// "Image labels"): what tfcapi-lint checks and what the TerraformMachineTemplate
// controller reports for Cluster API's scale-from-zero autoscaling. One
// parser for both.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace captf::contract {

inline constexpr std::string_view kLabelCapacity = "io.captf.capacity";
inline constexpr std::string_view kLabelNodeInfo = "io.captf.node-info";

// A Kubernetes resource quantity as text ("4", "16Gi", "500m", "1.5",
// "1e3"): an optional "+", digits with an optional fraction, then a binary
// (Ki..Ei), decimal (n, u, m, k, M..E) or exponent suffix. Negative
// quantities are not capacities.
bool isQuantity(std::string_view text);

// io.captf.capacity: a JSON object of resource name → quantity string
// ({"cpu":"4","memory":"16Gi","nvidia.com/gpu":"1"}), at least one entry.
// InvalidArgument says what is wrong (never more than the label holds).
absl::StatusOr<std::map<std::string, std::string>> parseCapacityLabel(std::string_view text);

struct NodeInfoLabel {
  std::optional<std::string> architecture;     // amd64, arm64, s390x or ppc64le
  std::optional<std::string> operating_system; // non-empty
};

// io.captf.node-info: {"architecture":"amd64","operatingSystem":"linux"},
// at least one of the two keys and no other.
absl::StatusOr<NodeInfoLabel> parseNodeInfoLabel(std::string_view text);

} // namespace captf::contract
