#include "manager/workspace/json_util.h"

#include "contract/digest.h"

namespace captf::workspace::internal {

const nlohmann::json* at(const nlohmann::json& object, std::string_view dotted_path) {
  const nlohmann::json* current = &object;
  while (!dotted_path.empty()) {
    const std::size_t dot = dotted_path.find('.');
    const std::string_view part = dotted_path.substr(0, dot);
    if (!current->is_object()) {
      return nullptr;
    }
    const auto found = current->find(std::string(part));
    if (found == current->end()) {
      return nullptr;
    }
    current = &*found;
    dotted_path = dot == std::string_view::npos ? std::string_view() : dotted_path.substr(dot + 1);
  }
  return current;
}

std::optional<std::string> stringAt(const nlohmann::json& object, std::string_view dotted_path) {
  const nlohmann::json* value = at(object, dotted_path);
  if (value == nullptr || !value->is_string()) {
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::optional<std::int64_t> integerAt(const nlohmann::json& object, std::string_view dotted_path) {
  const nlohmann::json* value = at(object, dotted_path);
  if (value == nullptr || !value->is_number_integer()) {
    return std::nullopt;
  }
  return value->get<std::int64_t>();
}

std::optional<bool> boolAt(const nlohmann::json& object, std::string_view dotted_path) {
  const nlohmann::json* value = at(object, dotted_path);
  if (value == nullptr || !value->is_boolean()) {
    return std::nullopt;
  }
  return value->get<bool>();
}

namespace {
std::optional<std::string> metaString(const nlohmann::json& object, const char* map,
                                      std::string_view key) {
  const nlohmann::json* values = at(object, "metadata");
  if (values == nullptr || !values->is_object()) {
    return std::nullopt;
  }
  const auto found = values->find(map);
  if (found == values->end() || !found->is_object()) {
    return std::nullopt;
  }
  const auto value = found->find(std::string(key));
  if (value == found->end() || !value->is_string()) {
    return std::nullopt;
  }
  return value->get<std::string>();
}
} // namespace

std::optional<std::string> label(const nlohmann::json& object, std::string_view key) {
  return metaString(object, "labels", key);
}

std::optional<std::string> annotation(const nlohmann::json& object, std::string_view key) {
  return metaString(object, "annotations", key);
}

std::string nameOf(const nlohmann::json& object) {
  return stringAt(object, "metadata.name").value_or("");
}

std::optional<std::string> secretData(const nlohmann::json& secret, std::string_view key,
                                      bool* bad_encoding) {
  if (bad_encoding != nullptr) {
    *bad_encoding = false;
  }
  const nlohmann::json* data = at(secret, "data");
  if (data == nullptr || !data->is_object()) {
    return std::nullopt;
  }
  const auto value = data->find(std::string(key));
  if (value == data->end() || !value->is_string()) {
    return std::nullopt;
  }
  auto decoded = contract::base64Decode(value->get_ref<const std::string&>());
  if (!decoded && bad_encoding != nullptr) {
    *bad_encoding = true;
  }
  return decoded;
}

} // namespace captf::workspace::internal
