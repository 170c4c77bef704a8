#pragma once

// SHA-256 and base64 through OpenSSL, for the inputs hash, the plan hash and
// `bootstrap_data`.

#include <string>
#include <string_view>

namespace captf::contract {

// Lower-case hex SHA-256 of `data` (64 characters).
std::string sha256Hex(std::string_view data);

// Standard, padded base64 (RFC 4648 §4) without line breaks.
std::string base64Encode(std::string_view data);

} // namespace captf::contract
