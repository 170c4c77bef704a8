#include "manager/kube/json_read.h"

#include <fmt/format.h>

namespace captf::kube {

absl::Status jsonShapeError(std::string_view field, std::string_view want) {
  return absl::InvalidArgumentError(fmt::format("{}: expected {}", field, want));
}

absl::Status readOptionalString(const nlohmann::json& obj, const char* key, std::string_view path,
                                std::string& out) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    return absl::OkStatus();
  }
  if (!it->is_string()) {
    return jsonShapeError(fmt::format("{}.{}", path, key), "string");
  }
  out = it->get<std::string>();
  return absl::OkStatus();
}

} // namespace captf::kube
