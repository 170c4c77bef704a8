#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "lint/finding.h"

// Rendering a report (docs/lint.md#output-formats). The bytes are normative: CI systems compare
// them, so every format here is tested against exact golden text.
namespace captf::lint {

// One line per finding, `<severity> <id> <file>:<line> <message>` (an empty
// file prints as "-"), then
// `<E> error(s), <W> warning(s), <I> info (read <set> files)`.
std::string renderText(const Report& report);

// The --json document: two-space indentation, a trailing newline, keys in the
// spec's order, and Go encoding/json's HTML escaping of <, > and & (and of
// U+2028, U+2029). Fails (the linter's exit 2) when a string is not valid
// UTF-8.
absl::StatusOr<std::string> renderJson(const Report& report);

// A SARIF 2.1.0 log with one run of tool "tfcapi-lint": one result per
// finding (ruleId, level error/warning/note, message, and a physical location
// relative to the module directory when the finding has a file). Not in the
// spec's flag table; see docs/decisions/lint-sarif.md.
absl::StatusOr<std::string> renderSarif(const Report& report, std::string_view tool_version);

} // namespace captf::lint
