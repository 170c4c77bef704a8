#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

// The narrow view of the module contract that the checks read. contract/
// owns the tables (contract/roles.h); lint/contract_source.h adapts them to
// this interface, and tests build RoleContracts directly. Keeping the checks
// on this interface keeps lint/ independent of how contract/ stores types.
namespace captf::lint {

struct ContractInput {
  std::string name;
  // The Terraform type expression the module's declaration must accept, as
  // docs/lint.md#module-checks spells it in messages: "map(string)",
  // "object({host=string, port=number})".
  std::string type;
  // The controller may pass null (e.g. cluster's control_plane_endpoint).
  bool nullable = false;
};

// One role of one contract version.
struct RoleContract {
  std::string version; // "v1alpha1"
  std::string role;    // "cluster", "machine" or "machinepool"
  std::vector<ContractInput> inputs;
  std::vector<std::string> outputs; // every required output, "health" included

  const ContractInput* input(std::string_view name) const {
    for (const ContractInput& in : inputs) {
      if (in.name == name) {
        return &in;
      }
    }
    return nullptr;
  }
  bool hasOutput(std::string_view name) const {
    for (const std::string& out : outputs) {
      if (out == name) {
        return true;
      }
    }
    return false;
  }
};

// Where the CLI gets contract tables from. Implementations are immutable and
// safe to share between threads.
class ContractSource {
public:
  virtual ~ContractSource() = default;
  // The known contract versions, e.g. {"v1alpha1"}.
  virtual std::vector<std::string> versions() const = 0;
  // The roles of a known version, e.g. {"cluster", "machine", "machinepool"}.
  virtual std::vector<std::string> roles(std::string_view version) const = 0;
  // The role's table; NotFound for an unknown version or role.
  virtual absl::StatusOr<RoleContract> role(std::string_view version,
                                            std::string_view role) const = 0;
};

} // namespace captf::lint
