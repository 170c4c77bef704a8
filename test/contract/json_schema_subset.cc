#include "test/contract/json_schema_subset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "contract/json_adapter.h"
#include "contract/strings.h"

namespace captf::contract::testing {
namespace {

using nlohmann::json;

const std::set<std::string>& supportedKeywords() {
  static const std::set<std::string> keywords = {
      // Identifiers and annotations (no validation effect).
      "$schema", "$id", "$defs", "$comment", "title", "description", "default",
      // Applicators and assertions.
      "$ref", "type", "enum", "const", "properties", "required", "additionalProperties", "items",
      "minItems", "maxItems", "minLength", "maxLength", "pattern", "minimum", "maximum", "anyOf",
      "allOf", "not"};
  return keywords;
}

std::size_t codePoints(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
  }));
}

bool hasType(const json& instance, const std::string& type) {
  if (type == "null") {
    return instance.is_null();
  }
  if (type == "boolean") {
    return instance.is_boolean();
  }
  if (type == "object") {
    return instance.is_object();
  }
  if (type == "array") {
    return instance.is_array();
  }
  if (type == "string") {
    return instance.is_string();
  }
  if (type == "number") {
    return instance.is_number();
  }
  if (type == "integer") {
    if (instance.is_number_integer()) {
      return true;
    }
    if (instance.is_number_float()) {
      const double value = instance.get<double>();
      return std::isfinite(value) && std::floor(value) == value;
    }
    return false;
  }
  return false;
}

std::string pointerEscape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

bool jsonEqual(const json& a, const json& b) {
  // JSON Schema compares numbers mathematically.
  if (a.is_number() && b.is_number()) {
    return a.get<double>() == b.get<double>();
  }
  return a == b;
}

class Validator {
public:
  explicit Validator(const SchemaSet& set) : set_(set) {}

  absl::Status validate(const json& schema, const std::string& base_id, const json& instance,
                        const std::string& path, std::vector<SchemaError>& errors) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) {
        errors.push_back({path, "false schema"});
      }
      return absl::OkStatus();
    }
    if (!schema.is_object()) {
      return absl::InvalidArgumentError(strCat("schema at ", path, " is not an object"));
    }
    for (const auto& item : schema.items()) {
      if (supportedKeywords().count(item.key()) == 0) {
        return absl::InvalidArgumentError(
            strCat("unsupported schema keyword \"", item.key(), "\" in ", base_id));
      }
    }
    const auto fail = [&](std::string message) { errors.push_back({path, std::move(message)}); };

    if (schema.contains("$ref")) {
      auto target = set_.resolve(base_id, schema.at("$ref").get<std::string>());
      if (!target.ok()) {
        return target.status();
      }
      if (auto status = validate(*target->first, target->second, instance, path, errors);
          !status.ok()) {
        return status;
      }
    }
    if (schema.contains("type")) {
      const json& type = schema.at("type");
      bool matched = false;
      if (type.is_string()) {
        matched = hasType(instance, type.get<std::string>());
      } else {
        for (const json& option : type) {
          matched = matched || hasType(instance, option.get<std::string>());
        }
      }
      if (!matched) {
        fail(strCat("not of type ", type.dump()));
        return absl::OkStatus();
      }
    }
    if (schema.contains("const") && !jsonEqual(schema.at("const"), instance)) {
      fail(strCat("not the constant ", schema.at("const").dump()));
    }
    if (schema.contains("enum")) {
      const json& options = schema.at("enum");
      if (std::none_of(options.begin(), options.end(),
                       [&](const json& option) { return jsonEqual(option, instance); })) {
        fail(strCat("not one of ", options.dump()));
      }
    }
    if (instance.is_string()) {
      const auto& text = instance.get_ref<const std::string&>();
      if (schema.contains("minLength") &&
          codePoints(text) < schema.at("minLength").get<std::size_t>()) {
        fail("shorter than minLength");
      }
      if (schema.contains("maxLength") &&
          codePoints(text) > schema.at("maxLength").get<std::size_t>()) {
        fail("longer than maxLength");
      }
      if (schema.contains("pattern")) {
        const std::regex pattern(schema.at("pattern").get<std::string>(), std::regex::ECMAScript);
        if (!std::regex_search(text, pattern)) {
          fail("does not match pattern");
        }
      }
    }
    if (instance.is_number()) {
      const double value = instance.get<double>();
      if (schema.contains("minimum") && value < schema.at("minimum").get<double>()) {
        fail("less than minimum");
      }
      if (schema.contains("maximum") && value > schema.at("maximum").get<double>()) {
        fail("greater than maximum");
      }
    }
    if (instance.is_array()) {
      if (schema.contains("minItems") &&
          instance.size() < schema.at("minItems").get<std::size_t>()) {
        fail("fewer than minItems");
      }
      if (schema.contains("maxItems") &&
          instance.size() > schema.at("maxItems").get<std::size_t>()) {
        fail("more than maxItems");
      }
      if (schema.contains("items")) {
        for (std::size_t i = 0; i < instance.size(); ++i) {
          if (auto status =
                  validate(schema.at("items"), base_id, instance[i], strCat(path, "/", i), errors);
              !status.ok()) {
            return status;
          }
        }
      }
    }
    if (instance.is_object()) {
      if (schema.contains("required")) {
        for (const json& name : schema.at("required")) {
          if (!instance.contains(name.get<std::string>())) {
            fail(strCat("missing required property ", name.dump()));
          }
        }
      }
      const json empty = json::object();
      const json& properties = schema.contains("properties") ? schema.at("properties") : empty;
      for (const auto& item : instance.items()) {
        const std::string child = strCat(path, "/", pointerEscape(item.key()));
        if (properties.contains(item.key())) {
          if (auto status =
                  validate(properties.at(item.key()), base_id, item.value(), child, errors);
              !status.ok()) {
            return status;
          }
        } else if (schema.contains("additionalProperties")) {
          if (auto status =
                  validate(schema.at("additionalProperties"), base_id, item.value(), child, errors);
              !status.ok()) {
            return status;
          }
        }
      }
    }
    if (schema.contains("allOf")) {
      for (const json& branch : schema.at("allOf")) {
        if (auto status = validate(branch, base_id, instance, path, errors); !status.ok()) {
          return status;
        }
      }
    }
    if (schema.contains("anyOf")) {
      bool any = false;
      for (const json& branch : schema.at("anyOf")) {
        std::vector<SchemaError> branch_errors;
        if (auto status = validate(branch, base_id, instance, path, branch_errors); !status.ok()) {
          return status;
        }
        any = any || branch_errors.empty();
      }
      if (!any) {
        fail("not valid under any of anyOf");
      }
    }
    if (schema.contains("not")) {
      std::vector<SchemaError> branch_errors;
      if (auto status = validate(schema.at("not"), base_id, instance, path, branch_errors);
          !status.ok()) {
        return status;
      }
      if (branch_errors.empty()) {
        fail("valid under not");
      }
    }
    return absl::OkStatus();
  }

private:
  const SchemaSet& set_;
};

} // namespace

absl::StatusOr<SchemaSet> SchemaSet::load(const std::string& directory) {
  SchemaSet set;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") {
      continue;
    }
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    auto document = parseJson(text.str(), entry.path().string());
    if (!document.ok()) {
      return document.status();
    }
    if (!document->contains("$id") || !document->at("$id").is_string()) {
      return absl::InvalidArgumentError(strCat(entry.path().string(), " has no $id"));
    }
    const std::string id = document->at("$id").get<std::string>();
    set.documents_[id] = *std::move(document);
  }
  if (error) {
    return absl::NotFoundError(strCat("cannot read ", directory, ": ", error.message()));
  }
  return set;
}

absl::StatusOr<std::pair<const json*, std::string>>
SchemaSet::resolve(const std::string& base_id, const std::string& ref) const {
  const auto hash = ref.find('#');
  std::string document_id = base_id;
  if (hash != 0) {
    const std::string relative = ref.substr(0, hash);
    document_id = base_id.substr(0, base_id.rfind('/') + 1) + relative;
  }
  const auto document = documents_.find(document_id);
  if (document == documents_.end()) {
    return absl::InvalidArgumentError(
        strCat("$ref ", ref, " from ", base_id, ": unknown document"));
  }
  const std::string pointer = hash == std::string::npos ? "" : ref.substr(hash + 1);
  try {
    const json& target = document->second.at(json::json_pointer(pointer));
    return std::make_pair(&target, document_id);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(strCat("$ref ", ref, " from ", base_id, ": ", e.what()));
  }
}

absl::StatusOr<std::vector<SchemaError>> SchemaSet::validate(const std::string& id,
                                                             const json& instance) const {
  const auto document = documents_.find(id);
  if (document == documents_.end()) {
    return absl::NotFoundError(strCat("no schema with $id ", id));
  }
  std::vector<SchemaError> errors;
  Validator validator(*this);
  if (auto status = validator.validate(document->second, id, instance, "", errors); !status.ok()) {
    return status;
  }
  return errors;
}

} // namespace captf::contract::testing
