#include "manager/api/yaml.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace captf::api {
namespace {

using nlohmann::json;

bool plainWouldNotReadAsString(const std::string& s) {
  // Leave it to yaml-cpp, except for the plain scalars YAML 1.1 and 1.2
  // readers would take for booleans, nulls or numbers.
  static constexpr std::array<std::string_view, 27> kSpecial = {
      "",      "~",     "null", "Null", "NULL", "true", "True", "TRUE", "false",
      "False", "FALSE", "yes",  "Yes",  "YES",  "no",   "No",   "NO",   "on",
      "On",    "ON",    "off",  "Off",  "OFF",  "y",    "Y",    "n",    "N"};
  if (std::find(kSpecial.begin(), kSpecial.end(), s) != kSpecial.end()) {
    return true;
  }
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isdigit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
  });
}

void emit(YAML::Emitter& out, const json& j, YamlStrings strings) {
  switch (j.type()) {
  case json::value_t::object:
    if (j.empty()) {
      out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
      return;
    }
    out << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      out << YAML::Key << k << YAML::Value;
      emit(out, v, strings);
    }
    out << YAML::EndMap;
    return;
  case json::value_t::array:
    if (j.empty()) {
      out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
      return;
    }
    out << YAML::BeginSeq;
    for (const auto& v : j) {
      emit(out, v, strings);
    }
    out << YAML::EndSeq;
    return;
  case json::value_t::string: {
    const auto& s = j.get_ref<const std::string&>();
    if (strings == YamlStrings::kDoubleQuoted || plainWouldNotReadAsString(s)) {
      out << YAML::DoubleQuoted << s;
    } else {
      out << s;
    }
    return;
  }
  case json::value_t::boolean:
    out << j.get<bool>();
    return;
  case json::value_t::number_integer:
    out << j.get<std::int64_t>();
    return;
  case json::value_t::number_unsigned:
    out << j.get<std::uint64_t>();
    return;
  case json::value_t::number_float:
    out << j.get<double>();
    return;
  case json::value_t::null:
  case json::value_t::binary:
  case json::value_t::discarded:
    out << YAML::Null;
    return;
  }
}

} // namespace

std::string toYaml(const json& doc, YamlStrings strings) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  out.SetMapFormat(YAML::Block);
  emit(out, doc, strings);
  return std::string(out.c_str()) + "\n";
}

} // namespace captf::api
