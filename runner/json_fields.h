#pragma once

// Reading members of JSON documents the runtimes print, which the runner
// does not trust: absent members and members of the wrong type read as
// "absent", never as an exception (nlohmann's value() and get<>() throw on
// a type mismatch).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace captf::runner {

// The member `key` of `object` when `object` is an object and the member is
// a string.
std::optional<std::string> stringMember(const nlohmann::json& object, std::string_view key);

// The member `key` when it is an integer.
std::optional<std::int64_t> integerMember(const nlohmann::json& object, std::string_view key);

// The member `key` when it is a boolean, else `fallback`.
bool boolMember(const nlohmann::json& object, std::string_view key, bool fallback);

// The member `key` (any type), or null.
const nlohmann::json& member(const nlohmann::json& object, std::string_view key);

} // namespace captf::runner
