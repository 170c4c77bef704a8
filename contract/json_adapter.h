#pragma once

// The one place contract/ calls nlohmann/json's throwing entry points: every
// exception is caught here and returned as a Status. Parse errors keep the
// byte offset nlohmann reports and say what kind of error it is, never what
// was read (contract/json_error.h).

#include <istream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace captf::contract {

// Parses one JSON document. `what` names the document in the error
// ("terraform.tfvars.json: invalid JSON at byte 17: unexpected end of
// input"), where the byte is nlohmann's count of bytes read, i.e. the
// 1-based position of the byte that made the document invalid; the message
// never quotes the input. Duplicate object keys keep the last value, as
// nlohmann does.
absl::StatusOr<nlohmann::json> parseJson(std::string_view text, std::string_view what);

// Streams one JSON document from `in` through `handler` (nlohmann's SAX
// interface), for a reader that keeps only part of a document too large to
// hold as a tree. True when the document is valid and the handler never
// stopped. Every failure reaches the handler: a syntax error as a
// parse_error call (which should describe it with jsonErrorText, never with
// the library's message or `last_token`), and so does an exception the
// library throws. Reads `in` up to its end unless the parse stops.
bool saxParseJson(std::istream& in, nlohmann::json_sax<nlohmann::json>& handler);

enum class JsonLayout { kCompact, kIndented };

// Serializes `value` with UTF-8 kept as is (no \u escapes beyond the ones
// JSON requires). Object keys come out sorted (nlohmann::json is an ordered
// map). Fails with InvalidArgument when a string is not valid UTF-8.
// kIndented uses two spaces. Neither layout adds a trailing newline.
absl::StatusOr<std::string> dumpJson(const nlohmann::json& value, JsonLayout layout,
                                     std::string_view what);

} // namespace captf::contract
