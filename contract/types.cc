#include "contract/types.h"

#include <algorithm>
#include <cassert>
#include <string>

#include <nlohmann/json.hpp>

#include "contract/strings.h"

namespace captf::contract {
namespace {

void appendTerraformType(const TypeSpec& type, std::string& out) {
  switch (type.kind) {
  case TypeKind::kAny:
    out += "any";
    return;
  case TypeKind::kString:
    out += "string";
    return;
  case TypeKind::kBool:
    out += "bool";
    return;
  case TypeKind::kInteger:
    out += "number";
    return;
  case TypeKind::kList:
    assert(type.element != nullptr);
    out += "list(";
    appendTerraformType(*type.element, out);
    out += ')';
    return;
  case TypeKind::kMap:
    assert(type.element != nullptr);
    out += "map(";
    appendTerraformType(*type.element, out);
    out += ')';
    return;
  case TypeKind::kObject: {
    out += "object({";
    bool first = true;
    for (const Attribute& attribute : type.attributes) {
      if (!first) {
        out += ", ";
      }
      first = false;
      out += attribute.name;
      out += '=';
      if (attribute.optionality == Optionality::kOptional) {
        out += "optional(";
        appendTerraformType(*attribute.type, out);
        if (!attribute.default_json.empty() && attribute.default_json != "null") {
          out += ", ";
          out += attribute.default_json;
        }
        out += ')';
      } else {
        appendTerraformType(*attribute.type, out);
      }
    }
    out += "})";
    return;
  }
  }
}

std::string_view jsonKindName(const nlohmann::json& value) {
  switch (value.type()) {
  case nlohmann::json::value_t::null:
    return "null";
  case nlohmann::json::value_t::boolean:
    return "a bool";
  case nlohmann::json::value_t::number_integer:
  case nlohmann::json::value_t::number_unsigned:
    return "an integer";
  case nlohmann::json::value_t::number_float:
    return "a fractional number";
  case nlohmann::json::value_t::string:
    return "a string";
  case nlohmann::json::value_t::array:
    return "a list";
  case nlohmann::json::value_t::object:
    return "an object";
  case nlohmann::json::value_t::binary:
  case nlohmann::json::value_t::discarded:
    break;
  }
  return "an unsupported value";
}

std::string_view expectedName(TypeKind kind) {
  switch (kind) {
  case TypeKind::kAny:
    return "any value";
  case TypeKind::kString:
    return "a string";
  case TypeKind::kBool:
    return "a bool";
  case TypeKind::kInteger:
    return "an integer";
  case TypeKind::kList:
    return "a list";
  case TypeKind::kMap:
  case TypeKind::kObject:
    return "an object";
  }
  return "a value";
}

void fail(std::vector<std::string>& errors, const std::string& path, std::string_view message) {
  errors.push_back(strCat(path.empty() ? "value" : path, ": ", message));
}

std::string childPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : strCat(path, ".", key);
}

// Rejects a fractional or exponent number anywhere below an `any` value:
// the contract's numbers are integers, and the inputs hash accepts no other.
void checkAnyIntegersOnly(const nlohmann::json& value, const std::string& path,
                          std::vector<std::string>& errors) {
  if (value.is_number_float()) {
    fail(errors, path,
         "fractional or exponent numbers are not allowed; use an integer or a string");
  } else if (value.is_array()) {
    std::size_t index = 0;
    for (const auto& element : value) {
      checkAnyIntegersOnly(element, strCat(path, "[", index, "]"), errors);
      ++index;
    }
  } else if (value.is_object()) {
    for (const auto& [key, element] : value.items()) {
      checkAnyIntegersOnly(element, childPath(path, key), errors);
    }
  }
}

} // namespace

std::string terraformType(const TypeSpec& type) {
  std::string out;
  appendTerraformType(type, out);
  return out;
}

void checkValue(const TypeSpec& type, const nlohmann::json& value, Closure closure,
                const std::string& path, std::vector<std::string>& errors) {
  if (value.is_null()) {
    if (type.nullability != Nullability::kNullable) {
      fail(errors, path, "must not be null");
    }
    return;
  }
  switch (type.kind) {
  case TypeKind::kAny:
    checkAnyIntegersOnly(value, path, errors);
    return;
  case TypeKind::kString:
    if (!value.is_string()) {
      break;
    }
    if (!type.enum_values.empty()) {
      const auto& text = value.get_ref<const std::string&>();
      if (std::find(type.enum_values.begin(), type.enum_values.end(), text) ==
          type.enum_values.end()) {
        fail(errors, path,
             strCat("must be one of ", strJoin(type.enum_values, ", "), ", not \"", text, "\""));
      }
    }
    return;
  case TypeKind::kBool:
    if (!value.is_boolean()) {
      break;
    }
    return;
  case TypeKind::kInteger:
    if (!value.is_number_integer()) {
      break;
    }
    return;
  case TypeKind::kList: {
    if (!value.is_array()) {
      break;
    }
    std::size_t index = 0;
    for (const auto& element : value) {
      checkValue(*type.element, element, closure, strCat(path, "[", index, "]"), errors);
      ++index;
    }
    return;
  }
  case TypeKind::kMap: {
    if (!value.is_object()) {
      break;
    }
    for (const auto& [key, element] : value.items()) {
      checkValue(*type.element, element, closure, strCat(path, "[\"", key, "\"]"), errors);
    }
    if (!type.required_keys.empty()) {
      for (std::string_view key : type.required_keys) {
        if (!value.contains(key)) {
          fail(errors, path, strCat("missing key \"", key, "\""));
        }
      }
      for (const auto& [key, element] : value.items()) {
        if (std::find(type.required_keys.begin(), type.required_keys.end(), key) ==
            type.required_keys.end()) {
          fail(errors, path, strCat("unknown key \"", key, "\""));
        }
      }
    }
    return;
  }
  case TypeKind::kObject: {
    if (!value.is_object()) {
      break;
    }
    for (const Attribute& attribute : type.attributes) {
      const auto found = value.find(attribute.name);
      if (found == value.end()) {
        if (attribute.optionality == Optionality::kRequired) {
          fail(errors, path, strCat("missing attribute \"", attribute.name, "\""));
        }
        continue;
      }
      checkValue(*attribute.type, *found, closure, childPath(path, attribute.name), errors);
    }
    if (closure == Closure::kClosed) {
      for (const auto& [key, element] : value.items()) {
        const bool known =
            std::any_of(type.attributes.begin(), type.attributes.end(),
                        [&key = key](const Attribute& attribute) { return attribute.name == key; });
        if (!known) {
          fail(errors, path, strCat("unknown attribute \"", key, "\""));
        }
      }
    }
    return;
  }
  }
  fail(errors, path, strCat("must be ", expectedName(type.kind), ", not ", jsonKindName(value)));
}

} // namespace captf::contract
