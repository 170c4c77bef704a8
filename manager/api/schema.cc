#include "manager/api/schema.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace captf::api {

const Schema* Schema::property(std::string_view name) const {
  for (const Property& p : properties) {
    if (p.name == name) {
      return &p.schema;
    }
  }
  return nullptr;
}

Schema* Schema::property(std::string_view name) {
  for (Property& p : properties) {
    if (p.name == name) {
      return &p.schema;
    }
  }
  return nullptr;
}

bool Schema::isRequired(std::string_view name) const {
  return std::find(required.begin(), required.end(), name) != required.end();
}

std::string_view typeName(Schema::Type t) {
  switch (t) {
  case Schema::Type::kUnset:
    return "";
  case Schema::Type::kObject:
    return "object";
  case Schema::Type::kArray:
    return "array";
  case Schema::Type::kString:
    return "string";
  case Schema::Type::kInteger:
    return "integer";
  case Schema::Type::kNumber:
    return "number";
  case Schema::Type::kBoolean:
    return "boolean";
  }
  return "";
}

nlohmann::json schemaToJson(const Schema& s) {
  // nlohmann::json objects are std::map-backed, so keys come out sorted: the
  // order kubebuilder uses too, which keeps generated files diff-friendly.
  nlohmann::json j = nlohmann::json::object();
  if (s.additional_properties) {
    j["additionalProperties"] = schemaToJson(*s.additional_properties);
  }
  if (!s.any_of.empty()) {
    nlohmann::json a = nlohmann::json::array();
    for (const Schema& alt : s.any_of) {
      a.push_back(schemaToJson(alt));
    }
    j["anyOf"] = std::move(a);
  }
  if (!s.description.empty()) {
    j["description"] = s.description;
  }
  if (!s.enum_values.empty()) {
    j["enum"] = s.enum_values;
  }
  if (!s.format.empty()) {
    j["format"] = s.format;
  }
  if (s.items) {
    j["items"] = schemaToJson(*s.items);
  }
  if (s.max_items) {
    j["maxItems"] = *s.max_items;
  }
  if (s.max_length) {
    j["maxLength"] = *s.max_length;
  }
  if (s.max_properties) {
    j["maxProperties"] = *s.max_properties;
  }
  if (s.maximum) {
    j["maximum"] = *s.maximum;
  }
  if (s.min_items) {
    j["minItems"] = *s.min_items;
  }
  if (s.min_length) {
    j["minLength"] = *s.min_length;
  }
  if (s.min_properties) {
    j["minProperties"] = *s.min_properties;
  }
  if (s.minimum) {
    j["minimum"] = *s.minimum;
  }
  if (!s.pattern.empty()) {
    j["pattern"] = s.pattern;
  }
  if (!s.properties.empty()) {
    nlohmann::json props = nlohmann::json::object();
    for (const Property& p : s.properties) {
      props[p.name] = schemaToJson(p.schema);
    }
    j["properties"] = std::move(props);
  }
  if (!s.required.empty()) {
    std::vector<std::string> req = s.required;
    std::sort(req.begin(), req.end());
    j["required"] = req;
  }
  if (s.type != Schema::Type::kUnset) {
    j["type"] = std::string(typeName(s.type));
  }
  if (s.int_or_string) {
    j["x-kubernetes-int-or-string"] = true;
  }
  if (!s.list_map_keys.empty()) {
    j["x-kubernetes-list-map-keys"] = s.list_map_keys;
  }
  if (!s.list_type.empty()) {
    j["x-kubernetes-list-type"] = s.list_type;
  }
  if (!s.map_type.empty()) {
    j["x-kubernetes-map-type"] = s.map_type;
  }
  if (s.preserve_unknown_fields) {
    j["x-kubernetes-preserve-unknown-fields"] = true;
  }
  if (!s.validations.empty()) {
    nlohmann::json rules = nlohmann::json::array();
    for (const CelRule& r : s.validations) {
      nlohmann::json rule = {{"rule", r.rule}, {"message", r.message}};
      if (!r.field_path.empty()) {
        rule["fieldPath"] = r.field_path;
      }
      if (!r.reason.empty()) {
        rule["reason"] = r.reason;
      }
      rules.push_back(std::move(rule));
    }
    j["x-kubernetes-validations"] = std::move(rules);
  }
  return j;
}

} // namespace captf::api
