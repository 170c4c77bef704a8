#include "test/manager/api/yaml_json.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace captf::api::testing {

using nlohmann::json;

json yamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
  case YAML::NodeType::Map: {
    json out = json::object();
    for (const auto& kv : n) {
      out[kv.first.as<std::string>()] = yamlToJson(kv.second);
    }
    return out;
  }
  case YAML::NodeType::Sequence: {
    json out = json::array();
    for (const auto& item : n) {
      out.push_back(yamlToJson(item));
    }
    return out;
  }
  case YAML::NodeType::Scalar: {
    const std::string& s = n.Scalar();
    if (n.Tag() == "!") {
      return s;
    }
    if (s == "true" || s == "false") {
      return s == "true";
    }
    const bool integer = !s.empty() && std::all_of(s.begin() + (s[0] == '-' ? 1 : 0), s.end(),
                                                   [](unsigned char c) { return std::isdigit(c); });
    if (integer && s != "-") {
      return std::stoll(s);
    }
    if (s == "null" || s == "~") {
      return nullptr;
    }
    return s;
  }
  case YAML::NodeType::Null:
  case YAML::NodeType::Undefined:
    break;
  }
  return nullptr;
}

} // namespace captf::api::testing
