#pragma once

#include "lint/contract_view.h"

namespace captf::lint {

// The contract tables of contract/ (contract/roles.h), seen through the
// ContractSource interface the checks use. Stateless.
class ContractTables final : public ContractSource {
public:
  std::vector<std::string> versions() const override;
  std::vector<std::string> roles(std::string_view version) const override;
  absl::StatusOr<RoleContract> role(std::string_view version, std::string_view role) const override;
};

} // namespace captf::lint
