#pragma once

// SHA-256 and base64 through OpenSSL, for the inputs hash, the plan hash and
// `bootstrap_data`.

#include <optional>
#include <string>
#include <string_view>

namespace captf::contract {

// Lower-case hex SHA-256 of `data` (64 characters).
std::string sha256Hex(std::string_view data);

// Standard, padded base64 (RFC 4648 §4) without line breaks.
std::string base64Encode(std::string_view data);

// Decodes standard, padded base64 (what the API server uses for Secret
// `data`). nullopt for any other character, a length that is not a multiple
// of 4, or misplaced padding.
std::optional<std::string> base64Decode(std::string_view text);

} // namespace captf::contract
