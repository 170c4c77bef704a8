#pragma once

// The check of a role's outputs against the contract (docs/contract.md,
// docs/behaviour/outputs.md, general rules), shared by the runner (which
// reports them in the result document) and the manager (which judges
// OutputsValid from state). Both read the same document shape:
// {name: {value, type, sensitive}}, which is what `<runtime> output -json`
// prints and what the state's root `outputs` member holds.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/roles.h"

namespace captf::contract {

struct RoleOutputsCheck {
  // Each required output of the role after normalization (`""` provider IDs
  // become null); an output absent from the document is null (the runtimes
  // do not record null outputs). An entry that is not an object with a
  // `value` is left out (and reported in `errors`).
  nlohmann::json values = nlohmann::json::object();
  // Outputs whose type is non-null but whose value is null, in table order.
  std::vector<std::string> pending{};
  // "<path>: <problem>", never a value: kinds, integers, enums, required
  // attributes (objects are open: extra attributes are ignored).
  std::vector<std::string> errors{};
};

// Normalization the controller applies before checking (docs/behaviour/outputs.md): `""` is the
// same as null for `provider_id`.
nlohmann::json normalizeOutput(std::string_view name, nlohmann::json value);

// Checks `outputs` for `role`. A document that is not an object gives one
// error and nothing else.
RoleOutputsCheck checkRoleOutputs(Role role, const nlohmann::json& outputs);

} // namespace captf::contract
