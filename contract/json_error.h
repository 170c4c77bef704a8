#pragma once

// What a failed JSON parse says, without a byte of the input. nlohmann/json's
// messages end in `last read: '<token>'`, where the token can be everything
// the lexer read of an unterminated string: a state or tfvars value, a
// token. Every adapter of the tree that turns a parse error into a Status
// (which reaches conditions, Events, logs and run history) describes it with
// these functions instead of the library's what(): the byte offset and one of
// a fixed set of kinds, never a quotation (docs/behaviour/security.md).
//
// Header-only, and it knows no CAPTF kind: every folder may include it
// (docs/architecture.md).

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "contract/strings.h"

namespace captf::contract {

// The kind of a parse error from nlohmann/json, in words of our own:
// "unexpected end of input", "invalid string", "invalid number",
// "invalid literal", "invalid byte order mark", "number out of range" or
// "syntax error". Only the library's fixed text before `; last read:` is
// looked at, and only to pick one of these constants.
inline std::string_view jsonErrorKind(const nlohmann::json::exception& error) {
  // out_of_range.406: "number overflow parsing '<token>'".
  if (error.id == 406) {
    return "number out of range";
  }
  std::string_view what = error.what();
  if (const std::size_t quoted = what.find("; last read: "); quoted != std::string_view::npos) {
    what = what.substr(0, quoted);
  }
  const auto says = [what](std::string_view part) {
    return what.find(part) != std::string_view::npos;
  };
  // An unterminated string or comment is the lexer meeting the end of input.
  if (says("unexpected end of input") || says("missing closing")) {
    return "unexpected end of input";
  }
  if (says("invalid string")) {
    return "invalid string";
  }
  if (says("invalid number")) {
    return "invalid number";
  }
  if (says("invalid literal")) {
    return "invalid literal";
  }
  if (says("invalid BOM")) {
    return "invalid byte order mark";
  }
  return "syntax error";
}

// "invalid JSON at byte <byte>: <kind>", where `byte` is nlohmann's count of
// bytes read (the 1-based position of the byte that made the document
// invalid, as parse_error::byte and a SAX parse_error's position give it);
// "invalid JSON: <kind>" when `byte` is 0 (unknown).
inline std::string jsonErrorText(std::size_t byte, const nlohmann::json::exception& error) {
  if (byte == 0) {
    return strCat("invalid JSON: ", jsonErrorKind(error));
  }
  return strCat("invalid JSON at byte ", byte, ": ", jsonErrorKind(error));
}

// The same for an exception nlohmann::json::parse threw: a parse_error
// carries its byte, the other exceptions none.
inline std::string jsonErrorText(const nlohmann::json::exception& error) {
  const auto* parse_error = dynamic_cast<const nlohmann::json::parse_error*>(&error);
  return jsonErrorText(parse_error != nullptr ? parse_error->byte : 0, error);
}

} // namespace captf::contract
