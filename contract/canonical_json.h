#pragma once

// Canonical JSON: the byte string the inputs hash is computed over. Two JSON
// values that are equal as JSON (same members in any order, same strings,
// same integers) serialize to the same bytes; any difference in any value
// gives different bytes.
//
// Rules:
//   - no insignificant whitespace;
//   - object members sorted by the bytes of their UTF-8 keys (which is
//     Unicode code point order);
//   - strings as UTF-8; only `"` and `\` and U+0000..U+001F are escaped,
//     using \b \f \n \r \t where JSON has them and \u00xx (lower-case hex)
//     otherwise; invalid UTF-8 is an error;
//   - integers in shortest decimal form (`-0` is `0`); a fractional or
//     exponent number (anything nlohmann stores as floating point, which
//     includes integers beyond 64 bits) is an error, because its text form
//     is not canonical across producers.
// The encoding preserves bytes: unlike one historical renderer it never
// HTML-escapes `<`, `>` or `&`.

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/statusor.h"

namespace captf::contract {

// Returns InvalidArgument naming the path of the first offending value
// (e.g. `captf_cluster_outputs.ratio`).
absl::StatusOr<std::string> canonicalJson(const nlohmann::json& value);

} // namespace captf::contract
