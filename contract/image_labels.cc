#include "contract/image_labels.h"

#include <algorithm>
#include <array>
#include <set>

#include <nlohmann/json.hpp>

namespace captf::contract {

namespace {

bool isDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

} // namespace

bool isQuantity(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && s[i] == '+') {
    ++i;
  }
  const std::size_t digits_start = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    ++i;
  }
  bool any = i > digits_start;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const std::size_t frac = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      ++i;
    }
    any = any || i > frac;
  }
  if (!any) {
    return false;
  }
  const std::string_view suffix = s.substr(i);
  static constexpr std::array<std::string_view, 16> kSuffixes = {
      "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"};
  if (std::find(kSuffixes.begin(), kSuffixes.end(), suffix) != kSuffixes.end()) {
    return true;
  }
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view exp = suffix.substr(1);
    if (exp.front() == '+' || exp.front() == '-') {
      exp.remove_prefix(1);
    }
    return isDigits(exp);
  }
  return false;
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
                                        "\" is not a quantity string such as \"4\" or \"16Gi\"");
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
