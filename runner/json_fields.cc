#include "runner/json_fields.h"

namespace captf::runner {
namespace {

const nlohmann::json kNull = nullptr;

} // namespace

const nlohmann::json& member(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) {
    return kNull;
  }
  const auto found = object.find(key);
  return found == object.end() ? kNull : *found;
}

std::optional<std::string> stringMember(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json& value = member(object, key);
  if (!value.is_string()) {
    return std::nullopt;
  }
  return value.get<std::string>();
}

std::optional<std::int64_t> integerMember(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json& value = member(object, key);
  if (!value.is_number_integer()) {
    return std::nullopt;
  }
  return value.get<std::int64_t>();
}

bool boolMember(const nlohmann::json& object, std::string_view key, bool fallback) {
  const nlohmann::json& value = member(object, key);
  return value.is_boolean() ? value.get<bool>() : fallback;
}

} // namespace captf::runner
