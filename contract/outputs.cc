#include "contract/outputs.h"

#include <utility>

#include "contract/strings.h"
#include "contract/types.h"

namespace captf::contract {

nlohmann::json normalizeOutput(std::string_view name, nlohmann::json value) {
  if (name == output::kProviderId && value.is_string() &&
      value.get_ref<const std::string&>().empty()) {
    return nullptr;
  }
  return value;
}

RoleOutputsCheck checkRoleOutputs(Role role, const nlohmann::json& outputs) {
  RoleOutputsCheck check;
  if (!outputs.is_object()) {
    check.errors.emplace_back("outputs: not an object");
    return check;
  }
  for (const OutputSpec& spec : roleSpec(role).outputs) {
    const std::string name(spec.name);
    const auto entry = outputs.find(name);
    nlohmann::json value = nullptr;
    if (entry != outputs.end()) {
      if (!entry->is_object() || !entry->contains("value")) {
        check.errors.push_back(strCat(name, ": no value recorded for it"));
        continue;
      }
      value = normalizeOutput(name, entry->at("value"));
    }
    check.values[name] = value;
    if (value.is_null()) {
      if (spec.type->nullability == Nullability::kNonNull) {
        check.pending.push_back(name);
      }
      continue;
    }
    checkValue(*spec.type, value, Closure::kOpen, name, check.errors);
  }
  return check;
}

} // namespace captf::contract
