#pragma once

// Reading fields of Kubernetes objects held as nlohmann::json without
// exceptions: a missing or mistyped field reads as absent. Internal to
// manager/workspace.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace captf::workspace::internal {

// The member at a dotted path ("spec.bootstrap.dataSecretName"), or nullptr.
const nlohmann::json* at(const nlohmann::json& object, std::string_view dotted_path);

std::optional<std::string> stringAt(const nlohmann::json& object, std::string_view dotted_path);
std::optional<std::int64_t> integerAt(const nlohmann::json& object, std::string_view dotted_path);
std::optional<bool> boolAt(const nlohmann::json& object, std::string_view dotted_path);

// metadata.labels[key] / metadata.annotations[key] when a string.
std::optional<std::string> label(const nlohmann::json& object, std::string_view key);
std::optional<std::string> annotation(const nlohmann::json& object, std::string_view key);

// metadata.name.
std::string nameOf(const nlohmann::json& object);

// `data[key]` of a Secret, base64-decoded. nullopt when the key is absent;
// the inner nullopt-vs-value distinction is folded: an undecodable value is
// reported through `bad_encoding`.
std::optional<std::string> secretData(const nlohmann::json& secret, std::string_view key,
                                      bool* bad_encoding = nullptr);

} // namespace captf::workspace::internal
