#pragma once

// The role's contract outputs after a run, as `<runtime> output -json` reads
// them from state, checked against the role's output types
// (contract/roles.h). The controller reads outputs from state too and stays
// the judge of OutputsValid; this report lets it (and whoever reads the
// Job) see at once what the module produced and what is wrong with it.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/roles.h"

namespace captf::runner {

// Outputs whose values never go into the result document: `exports` is free
// form and may carry secrets (the termination message is readable by anyone
// who can read the pod), and it reaches the machines from state anyway.
inline constexpr std::string_view kWithheldOutputs[] = {contract::output::kExports};

enum class OutputsState {
  kValid,      // every required output non-null where required, well typed
  kPending,    // null where a value is required (not known yet)
  kInvalid,    // a value does not have its contract type
  kUnreadable, // `output -json` failed or printed something else
};

// "valid", "pending", "invalid", "unreadable".
std::string_view outputsStateName(OutputsState state);

struct OutputsReport {
  OutputsState state = OutputsState::kUnreadable;
  std::vector<std::string> pending;
  // "<path>: <problem>", never a value.
  std::vector<std::string> errors;
  // The required outputs' values after normalization ("" provider IDs become
  // null), except kWithheldOutputs; extra outputs are not included.
  nlohmann::json values = nlohmann::json::object();
  std::vector<std::string> withheld;
};

// Checks the document `output -json` printed ({name: {value, type,
// sensitive}}) for `role`. Invalid beats pending.
//
// An output absent from the document is null: the runtimes do not record
// null outputs in state, and an undeclared one cannot be absent after a
// successful run, because the generated root re-exports every contract
// output (`module.role.<name>`), which fails validation when the module
// does not declare it.
OutputsReport checkOutputs(contract::Role role, const nlohmann::json& output_json);

// A report for output that could not be read; `reason` names what failed.
OutputsReport unreadableOutputs(std::string reason);

// How much of a report goes into the result document, from most to least.
enum class OutputsDetail { kFull, kNoValues, kStateOnly };

// {"state", "pending", "errors", "values", "withheld"}, empty
// lists omitted.
nlohmann::json outputsJson(const OutputsReport& report, OutputsDetail detail);

} // namespace captf::runner
