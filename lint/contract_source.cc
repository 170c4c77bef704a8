#include "lint/contract_source.h"

#include "contract/roles.h"
#include "contract/strings.h"
#include "contract/types.h"

namespace captf::lint {

using contract::strCat;

std::vector<std::string> ContractTables::versions() const {
  return {std::string(contract::kContractVersion)};
}

std::vector<std::string> ContractTables::roles(std::string_view version) const {
  std::vector<std::string> out;
  if (version != contract::kContractVersion) {
    return out;
  }
  for (const contract::RoleSpec& spec : contract::allRoles()) {
    out.emplace_back(spec.name);
  }
  return out;
}

absl::StatusOr<RoleContract> ContractTables::role(std::string_view version,
                                                  std::string_view role) const {
  if (version != contract::kContractVersion) {
    return absl::NotFoundError(strCat("unknown contract \"", version, "\""));
  }
  const absl::StatusOr<contract::Role> parsed = contract::parseRole(role);
  if (!parsed.ok()) {
    return absl::NotFoundError(strCat("unknown role \"", role, "\""));
  }
  const contract::RoleSpec& spec = contract::roleSpec(*parsed);
  RoleContract out;
  out.version = std::string(version);
  out.role = std::string(spec.name);
  for (const contract::InputSpec& in : spec.inputs) {
    const contract::TypeSpec* declared =
        in.declared_type != nullptr ? in.declared_type : in.value_type;
    const contract::TypeSpec* value = in.value_type != nullptr ? in.value_type : declared;
    out.inputs.push_back(ContractInput{
        std::string(in.name), declared == nullptr ? "any" : contract::terraformType(*declared),
        value != nullptr && value->nullability == contract::Nullability::kNullable});
  }
  for (const contract::OutputSpec& o : spec.outputs) {
    out.outputs.emplace_back(o.name);
  }
  return out;
}

} // namespace captf::lint
