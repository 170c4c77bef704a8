#include "test/contract/schema_set.h"

#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "absl/status/status.h"
#include "contract/json_adapter.h"
#include "contract/status_macros.h"
#include "contract/strings.h"

namespace captf::contract::testing {
namespace {

using nlohmann::json;

// What a keyword's value holds, for walking a schema through its subschemas.
enum class Holds { kSchema, kSchemaMap, kSchemaArray };

const std::map<std::string, Holds, std::less<>>& subschemaKeywords() {
  static const std::map<std::string, Holds, std::less<>> kKeywords = {
      {"items", Holds::kSchema},      {"additionalProperties", Holds::kSchema},
      {"not", Holds::kSchema},        {"properties", Holds::kSchemaMap},
      {"$defs", Holds::kSchemaMap},   {"anyOf", Holds::kSchemaArray},
      {"allOf", Holds::kSchemaArray},
  };
  return kKeywords;
}

const std::set<std::string, std::less<>>& annotations() {
  static const std::set<std::string, std::less<>> kAnnotations = {
      "$schema", "$id", "$defs", "$comment", "title", "description", "default"};
  return kAnnotations;
}

// Applies `visit(subschema, pointer)` to each direct subschema of `schema`.
template <typename Visit>
void forEachSubschema(const json& schema, const json::json_pointer& pointer, Visit&& visit) {
  for (const auto& [key, value] : schema.items()) {
    const auto holds = subschemaKeywords().find(key);
    if (holds == subschemaKeywords().end()) {
      continue;
    }
    const json::json_pointer at = pointer / key;
    if (holds->second == Holds::kSchema) {
      visit(value, at);
    } else if (holds->second == Holds::kSchemaMap && value.is_object()) {
      for (const auto& [name, child] : value.items()) {
        visit(child, at / name);
      }
    } else if (holds->second == Holds::kSchemaArray && value.is_array()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        visit(value[i], at / i);
      }
    }
  }
}

void collectUnenforced(const json& schema, const json::json_pointer& pointer,
                       std::vector<std::string>& out) {
  if (!schema.is_object()) {
    return; // true and false are schemas too
  }
  for (const auto& [key, value] : schema.items()) {
    if (!allowedKeywords().contains(key)) {
      out.push_back(strCat(pointer.to_string(), ": ", key));
    } else if (key == "items" && !value.is_object() && !value.is_boolean()) {
      // Draft 7's tuple form; 2020-12 spells it prefixItems.
      out.push_back(strCat(pointer.to_string(), ": items (not a schema)"));
    }
  }
  forEachSubschema(schema, pointer, [&](const json& child, const json::json_pointer& at) {
    collectUnenforced(child, at, out);
  });
}

// The schema as valijson's draft 7 reads the 2020-12 meaning: siblings of
// "$ref" move beside it into an allOf.
json forValijson(const json& schema) {
  if (!schema.is_object()) {
    return schema;
  }
  json out = schema;
  for (auto& [key, value] : out.items()) {
    const auto holds = subschemaKeywords().find(key);
    if (holds == subschemaKeywords().end()) {
      continue;
    }
    if (holds->second == Holds::kSchema) {
      value = forValijson(value);
    } else {
      for (auto& child : value) {
        child = forValijson(child);
      }
    }
  }
  if (out.contains("$ref") && out.size() > 1) {
    json all_of = json::array({{{"$ref", out.at("$ref")}}});
    if (out.contains("allOf")) {
      for (const json& branch : out.at("allOf")) {
        all_of.push_back(branch);
      }
    }
    out.erase("$ref");
    out["allOf"] = std::move(all_of);
  }
  return out;
}

// valijson's context ("<root>", "[name]", "[0]") as a JSON pointer.
std::string instancePointer(const std::vector<std::string>& context) {
  json::json_pointer pointer;
  for (const std::string& part : context) {
    if (part.size() >= 2 && part.front() == '[' && part.back() == ']') {
      pointer /= part.substr(1, part.size() - 2);
    }
  }
  return pointer.to_string();
}

// valijson restates a child's failure at its parent with these; the child's
// own error says where and what.
bool restatesAChild(std::string_view description) {
  for (std::string_view prefix :
       {"Failed to validate item #", "Failed to validate against schema associated with property",
        "Failed to validate against schema associated with pattern",
        "Failed to validate against additional properties schema",
        "Failed to validate against child schema #"}) {
    if (description.starts_with(prefix)) {
      return true;
    }
  }
  return false;
}

} // namespace

const std::set<std::string, std::less<>>& allowedKeywords() {
  static const std::set<std::string, std::less<>> kKeywords = [] {
    std::set<std::string, std::less<>> keywords = annotations();
    keywords.insert({"$ref", "type", "enum", "const", "properties", "required",
                     "additionalProperties", "items", "minItems", "maxItems", "minLength",
                     "maxLength", "pattern", "minimum", "maximum", "anyOf", "allOf", "not"});
    return keywords;
  }();
  return kKeywords;
}

bool isAnnotation(std::string_view keyword) {
  return annotations().contains(keyword);
}

std::vector<std::string> unenforcedKeywords(const json& schema) {
  std::vector<std::string> out;
  collectUnenforced(schema, json::json_pointer(), out);
  return out;
}

absl::StatusOr<SchemaSet> SchemaSet::load(const std::string& directory) {
  std::vector<json> documents;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") {
      continue;
    }
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    CAPTF_ASSIGN_OR_RETURN(json document, parseJson(text.str(), entry.path().string()));
    documents.push_back(std::move(document));
  }
  if (error) {
    return absl::NotFoundError(strCat("cannot read ", directory, ": ", error.message()));
  }
  return fromDocuments(std::move(documents));
}

absl::StatusOr<SchemaSet> SchemaSet::fromDocuments(std::vector<json> documents) {
  SchemaSet set;
  for (json& document : documents) {
    if (!document.is_object() || !document.contains("$id") || !document.at("$id").is_string()) {
      return absl::InvalidArgumentError("a schema document has no $id");
    }
    const std::string id = document.at("$id").get<std::string>();
    if (const auto unenforced = unenforcedKeywords(document); !unenforced.empty()) {
      return absl::InvalidArgumentError(
          strCat(id, " uses keywords valijson does not enforce: ", strJoin(unenforced, ", ")));
    }
    set.documents_[id] = std::move(document);
  }
  return set;
}

absl::StatusOr<std::pair<const json*, std::string>>
SchemaSet::resolve(const std::string& base_id, const std::string& ref) const {
  const auto hash = ref.find('#');
  std::string document_id = base_id;
  if (hash != 0) {
    document_id = strCat(base_id.substr(0, base_id.rfind('/') + 1), ref.substr(0, hash));
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
  // valijson 1.0 reads draft 7's "id", not "$id", so a relative $ref
  // ("definitions.json#/...") reaches fetch as it is written: it is relative
  // to the directory of the document validated against.
  const std::string base = id.substr(0, id.rfind('/') + 1);
  const auto fetch = [&](const std::string& uri) -> const json* {
    const auto found = documents_.find(uri.find("://") == std::string::npos ? base + uri : uri);
    return found == documents_.end() ? nullptr : new json(forValijson(found->second));
  };
  const auto release = [](const json* fetched) { delete fetched; };

  const json root = forValijson(document->second);
  valijson::Schema schema;
  valijson::ValidationResults results;
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(root), schema, fetch, release);
    valijson::Validator validator;
    validator.validate(schema, valijson::adapters::NlohmannJsonAdapter(instance), &results);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(strCat("valijson on ", id, ": ", e.what()));
  }
  std::vector<SchemaError> errors;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    if (restatesAChild(error.description)) {
      continue;
    }
    // A property a closed object does not allow is reported at the object,
    // naming the property: locate it at the property, as the old checks did.
    std::vector<std::string> context = error.context;
    constexpr std::string_view kUnwanted = "Object contains a property that could not be validated";
    if (const auto quote = error.description.rfind(": '");
        error.description.starts_with(kUnwanted) && quote != std::string::npos &&
        error.description.ends_with("'.")) {
      context.push_back(strCat(
          "[", error.description.substr(quote + 3, error.description.size() - quote - 5), "]"));
    }
    errors.push_back({instancePointer(context), error.description});
  }
  return errors;
}

} // namespace captf::contract::testing
