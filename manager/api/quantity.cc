#include "manager/api/quantity.h"

#include <fmt/format.h>

namespace captf::api {

// The pattern of resource.Quantity in every Kubernetes-generated schema.
constexpr std::string_view kQuantityPattern =
    R"(^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$)";

void encodeJson(const Quantity& v, nlohmann::json& out) {
  out = v.value;
}

absl::Status decodeJson(const nlohmann::json& in, Quantity& v, const FieldPath& path) {
  if (in.is_string()) {
    v.value = in.get<std::string>();
    return absl::OkStatus();
  }
  if (in.is_number()) {
    v.value = in.dump();
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      fmt::format("{}: Invalid type: expected a quantity (string or number)", path.str()));
}

Schema schemaFor(const Quantity*) {
  Schema s;
  Schema integer;
  integer.type = Schema::Type::kInteger;
  Schema string;
  string.type = Schema::Type::kString;
  s.any_of = {integer, string};
  s.pattern = std::string(kQuantityPattern);
  s.int_or_string = true;
  return s;
}

} // namespace captf::api
