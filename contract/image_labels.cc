#include "contract/image_labels.h"

#include <set>

#include <nlohmann/json.hpp>

#include "contract/quantity.h"

namespace captf::contract {

bool isQuantity(std::string_view s) {
  const std::optional<QuantityParts> parts = parseQuantity(s);
  return parts && parts->sign != '-';
}

absl::StatusOr<std::map<std::string, std::string>> parseCapacityLabel(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("it is not a JSON object");
  }
  if (doc.empty()) {
    return absl::InvalidArgumentError("it names no resource");
  }
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : doc.items()) {
    if (key.empty()) {
      return absl::InvalidArgumentError("a resource name is empty");
    }
    if (!value.is_string() || !isQuantity(value.get<std::string>())) {
      return absl::InvalidArgumentError("the value of \"" + key +
                                        R"(" is not a quantity string such as "4" or "16Gi")");
    }
    out[key] = value.get<std::string>();
  }
  return out;
}

absl::StatusOr<NodeInfoLabel> parseNodeInfoLabel(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("it is not a JSON object");
  }
  if (doc.empty()) {
    return absl::InvalidArgumentError("it has neither architecture nor operatingSystem");
  }
  static const std::set<std::string> kArchitectures = {"amd64", "arm64", "s390x", "ppc64le"};
  NodeInfoLabel out;
  for (const auto& [key, value] : doc.items()) {
    if (key == "architecture") {
      if (!value.is_string() || !kArchitectures.contains(value.get<std::string>())) {
        return absl::InvalidArgumentError("architecture must be one of amd64, arm64, s390x, "
                                          "ppc64le");
      }
      out.architecture = value.get<std::string>();
    } else if (key == "operatingSystem") {
      if (!value.is_string() || value.get<std::string>().empty()) {
        return absl::InvalidArgumentError("operatingSystem must be a non-empty string");
      }
      out.operating_system = value.get<std::string>();
    } else {
      return absl::InvalidArgumentError("unknown key \"" + key +
                                        "\" (known: architecture, operatingSystem)");
    }
  }
  return out;
}

} // namespace captf::contract
