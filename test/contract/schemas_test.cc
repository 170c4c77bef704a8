// The JSON Schemas under contract/schemas/ and the C++ table in
// contract/roles.cc describe the same contract: this test proves it, checks
// the schema examples, and validates the typed builders' output against the
// schemas with valijson (test/contract/schema_set.h), whose enforcement of
// every keyword the schemas may use is proven at the end.

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "contract/inputs.h"
#include "contract/json_adapter.h"
#include "contract/roles.h"
#include "test/contract/schema_set.h"
#include "test/contract/test_util.h"

namespace captf::contract {
namespace {

using nlohmann::json;
using testing::allowedKeywords;
using testing::isAnnotation;
using testing::SchemaSet;
using testing::unenforcedKeywords;

constexpr std::string_view kIdPrefix = "https://captf.io/schemas/v1alpha1/";

std::filesystem::path schemaDir() {
  return std::filesystem::path(testing::sourceDir()) / "contract" / "schemas";
}

std::string schemaId(std::string_view file) {
  return std::string(kIdPrefix) + std::string(file);
}

class SchemasTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(testing::sourceDir().empty()) << "CAPTF_SOURCE_DIR is not set";
    auto loaded = SchemaSet::load(schemaDir().string());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    schemas_ = *std::move(loaded);
  }

  // Replaces every {"$ref": r, ...} by the referenced schema merged with its
  // siblings, recursively, so the comparison sees one plain schema.
  json inlineRefs(const json& schema, const std::string& base_id) const {
    if (!schema.is_object()) {
      return schema;
    }
    json out = json::object();
    if (schema.contains("$ref")) {
      auto target = schemas_.resolve(base_id, schema.at("$ref").get<std::string>());
      EXPECT_TRUE(target.ok()) << target.status();
      if (target.ok()) {
        out = inlineRefs(*target->first, target->second);
      }
    }
    for (const auto& [key, value] : schema.items()) {
      if (key == "$ref") {
        continue;
      }
      json inlined;
      if (key == "properties" || key == "$defs") {
        inlined = json::object();
        for (const auto& [name, property] : value.items()) {
          inlined[name] = inlineRefs(property, base_id);
        }
      } else if (key == "items" || key == "additionalProperties" || key == "not") {
        inlined = inlineRefs(value, base_id);
      } else if (key == "anyOf" || key == "allOf") {
        inlined = json::array();
        for (const auto& branch : value) {
          inlined.push_back(inlineRefs(branch, base_id));
        }
      } else {
        inlined = value;
      }
      out = merge(out, key, inlined);
    }
    return out;
  }

  static json mergeSchemas(const json& base, const json& overlay) {
    if (overlay.is_boolean() && overlay.get<bool>()) {
      return base;
    }
    if (base.is_boolean() && base.get<bool>()) {
      return overlay;
    }
    json out = base;
    for (const auto& [key, value] : overlay.items()) {
      out = merge(out, key, value);
    }
    return out;
  }

  static json merge(json out, const std::string& key, const json& value) {
    if (key == "properties" && out.contains("properties")) {
      for (const auto& [name, property] : value.items()) {
        out["properties"][name] = out["properties"].contains(name)
                                      ? mergeSchemas(out["properties"][name], property)
                                      : property;
      }
    } else {
      out[key] = value;
    }
    return out;
  }

  SchemaSet schemas_;
};

struct Plain {
  bool nullable = false;
  json schema; // the non-null part
};

json mergeWithout(const json& schema, const std::string& drop, const json& branch) {
  json out = branch;
  for (const auto& [key, value] : schema.items()) {
    if (key != drop) {
      out[key] = value;
    }
  }
  return out;
}

// Splits a schema into "may be null" and the rest.
Plain splitNull(const json& schema) {
  Plain plain{false, schema};
  if (schema.is_boolean()) {
    plain.nullable = true;
    plain.schema = json::object();
    return plain;
  }
  if (schema.contains("anyOf")) {
    const json& branches = schema.at("anyOf");
    if (branches.size() == 2 && branches[1] == json{{"type", "null"}}) {
      plain.nullable = true;
      plain.schema = mergeWithout(schema, "anyOf", branches[0]);
      return plain;
    }
  }
  if (schema.contains("type") && schema.at("type").is_array()) {
    json types = json::array();
    for (const auto& type : schema.at("type")) {
      if (type == "null") {
        plain.nullable = true;
      } else {
        types.push_back(type);
      }
    }
    plain.schema["type"] = types.size() == 1 ? types[0] : types;
  }
  if (!schema.contains("type") && !schema.contains("anyOf")) {
    // No type: any value, null included unless excluded with not.
    plain.nullable = !(schema.contains("not") && schema.at("not") == json{{"type", "null"}});
  }
  if (plain.schema.contains("enum")) {
    json values = json::array();
    for (const auto& value : plain.schema.at("enum")) {
      if (value.is_null()) {
        plain.nullable = true;
      } else {
        values.push_back(value);
      }
    }
    plain.schema["enum"] = values;
  }
  return plain;
}

std::set<std::string> stringSet(const json& values) {
  std::set<std::string> out;
  for (const auto& value : values) {
    out.insert(value.get<std::string>());
  }
  return out;
}

void expectAgrees(const TypeSpec& type, const json& schema, Closure closure,
                  const std::string& path) {
  SCOPED_TRACE(path);
  const Plain plain = splitNull(schema);
  EXPECT_EQ(plain.nullable, type.nullability == Nullability::kNullable)
      << path << ": nullability differs; schema " << schema.dump();
  const json& s = plain.schema;
  const auto expect_type = [&](std::string_view want) {
    ASSERT_TRUE(s.contains("type")) << path << ": schema has no type, table says " << want;
    EXPECT_EQ(s.at("type"), want) << path;
  };
  switch (type.kind) {
  case TypeKind::kAny:
    EXPECT_FALSE(s.contains("type")) << path << ": table says any, schema " << s.dump();
    return;
  case TypeKind::kString: {
    expect_type("string");
    std::set<std::string> schema_values;
    if (s.contains("const")) {
      schema_values.insert(s.at("const").get<std::string>());
    } else if (s.contains("enum")) {
      schema_values = stringSet(s.at("enum"));
    }
    const std::set<std::string> table_values(type.enum_values.begin(), type.enum_values.end());
    EXPECT_EQ(schema_values, table_values) << path << ": allowed values differ";
    return;
  }
  case TypeKind::kBool:
    expect_type("boolean");
    return;
  case TypeKind::kInteger:
    expect_type("integer");
    return;
  case TypeKind::kList:
    expect_type("array");
    ASSERT_TRUE(s.contains("items")) << path;
    expectAgrees(*type.element, s.at("items"), closure, path + "[]");
    return;
  case TypeKind::kMap:
    expect_type("object");
    if (!type.required_keys.empty()) {
      // A map with fixed keys: a closed object with exactly those, required.
      const std::set<std::string> keys(type.required_keys.begin(), type.required_keys.end());
      EXPECT_EQ(s.value("additionalProperties", json(true)), json(false)) << path;
      EXPECT_EQ(stringSet(s.value("required", json::array())), keys) << path;
      std::set<std::string> properties;
      const json tag_properties = s.value("properties", json::object());
      for (const auto& [name, property] : tag_properties.items()) {
        properties.insert(name);
        // Per-key constants are checked by the caller: the table's map type
        // cannot hold them (validateInputs enforces them instead).
        json without_const = property;
        without_const.erase("const");
        expectAgrees(*type.element, without_const, closure, path + "[\"" + name + "\"]");
      }
      EXPECT_EQ(properties, keys) << path;
      return;
    }
    EXPECT_FALSE(s.contains("properties")) << path;
    ASSERT_TRUE(s.contains("additionalProperties") && s.at("additionalProperties").is_object())
        << path << ": a map needs an additionalProperties schema";
    expectAgrees(*type.element, s.at("additionalProperties"), closure, path + "[*]");
    return;
  case TypeKind::kObject: {
    expect_type("object");
    const json properties = s.value("properties", json::object());
    std::set<std::string> schema_names;
    for (const auto& item : properties.items()) {
      schema_names.insert(item.key());
    }
    std::set<std::string> table_names;
    std::set<std::string> table_required;
    for (const Attribute& attribute : type.attributes) {
      table_names.emplace(attribute.name);
      if (attribute.optionality == Optionality::kRequired) {
        table_required.emplace(attribute.name);
      }
      const std::string name(attribute.name);
      if (!properties.contains(name)) {
        continue;
      }
      const json& property = properties.at(name);
      expectAgrees(*attribute.type, property, closure, path + "." + name);
      if (attribute.optionality == Optionality::kOptional) {
        ASSERT_TRUE(property.contains("default")) << path << "." << name << " has no default";
        EXPECT_EQ(property.at("default"), json::parse(attribute.default_json))
            << path << "." << name << ": defaults differ";
      } else {
        EXPECT_FALSE(property.contains("default")) << path << "." << name;
      }
    }
    EXPECT_EQ(schema_names, table_names) << path << ": attributes differ";
    EXPECT_EQ(stringSet(s.value("required", json::array())), table_required)
        << path << ": required attributes differ";
    const bool closed = s.value("additionalProperties", json(true)) == json(false);
    EXPECT_EQ(closed, closure == Closure::kClosed) << path << ": closure differs";
    return;
  }
  }
}

TEST_F(SchemasTest, EverySchemaFileIsPresentWithItsId) {
  std::vector<std::string> files = {"definitions.json"};
  for (const RoleSpec& spec : allRoles()) {
    files.push_back(std::string(spec.name) + "-inputs.json");
    files.push_back(std::string(spec.name) + "-outputs.json");
  }
  for (const std::string& file : files) {
    const auto found = schemas_.documents().find(schemaId(file));
    ASSERT_NE(found, schemas_.documents().end()) << file;
    EXPECT_EQ(found->second.at("$schema"), "https://json-schema.org/draft/2020-12/schema") << file;
  }
  EXPECT_EQ(schemas_.documents().size(), files.size()) << "an unexpected schema file";
}

TEST_F(SchemasTest, InputSchemasAgreeWithTheTable) {
  for (const RoleSpec& spec : allRoles()) {
    SCOPED_TRACE(spec.name);
    const std::string id = schemaId(std::string(spec.name) + "-inputs.json");
    const json schema = inlineRefs(schemas_.documents().at(id), id);
    EXPECT_EQ(schema.at("additionalProperties"), json(false)) << "inputs are closed";
    std::set<std::string> table_names;
    for (const InputSpec& input_spec : spec.inputs) {
      const std::string name(input_spec.name);
      table_names.insert(name);
      ASSERT_TRUE(schema.at("properties").contains(name)) << name << " missing from " << id;
      expectAgrees(*input_spec.value_type, schema.at("properties").at(name), Closure::kClosed,
                   name);
    }
    EXPECT_EQ(stringSet(schema.at("required")), table_names) << "every input is required";
    // The tag constants validateInputs enforces (kind and managed-by).
    std::map<std::string, json> tag_consts;
    for (const auto& [key, property] :
         schema.at("properties").at(std::string(input::kCaptfTags)).at("properties").items()) {
      if (property.contains("const")) {
        tag_consts[key] = property.at("const");
      }
    }
    EXPECT_EQ(tag_consts,
              (std::map<std::string, json>{{std::string(tag::kKind), spec.kind},
                                           {std::string(tag::kManagedBy), tag::kManagedByValue}}));
    std::set<std::string> schema_names;
    for (const auto& item : schema.at("properties").items()) {
      schema_names.insert(item.key());
    }
    if (spec.role == Role::kCluster) {
      // docs/contract.md#json-schemas: in cluster-inputs.json captf_cluster_outputs has type null
      // (never rendered for clusters; the key is absent).
      ASSERT_EQ(schema_names.erase(std::string(input::kCaptfClusterOutputs)), 1U);
      EXPECT_EQ(schema.at("properties").at(std::string(input::kCaptfClusterOutputs)).at("type"),
                "null");
    }
    EXPECT_EQ(schema_names, table_names);
  }
}

TEST_F(SchemasTest, OutputSchemasAgreeWithTheTable) {
  for (const RoleSpec& spec : allRoles()) {
    SCOPED_TRACE(spec.name);
    const std::string id = schemaId(std::string(spec.name) + "-outputs.json");
    const json schema = inlineRefs(schemas_.documents().at(id), id);
    EXPECT_FALSE(schema.contains("additionalProperties")) << "outputs are open";
    std::set<std::string> table_names;
    for (const OutputSpec& output_spec : spec.outputs) {
      const std::string name(output_spec.name);
      table_names.insert(name);
      ASSERT_TRUE(schema.at("properties").contains(name)) << name << " missing from " << id;
      expectAgrees(*output_spec.type, schema.at("properties").at(name), Closure::kOpen, name);
    }
    EXPECT_EQ(stringSet(schema.at("required")), table_names) << "every output is required";
    std::set<std::string> schema_names;
    for (const auto& item : schema.at("properties").items()) {
      schema_names.insert(item.key());
    }
    EXPECT_EQ(schema_names, table_names);
  }
}

json loadExample(const std::string& name) {
  auto parsed = parseJson(testing::readFile(schemaDir() / "examples" / name), name);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *parsed : json();
}

std::set<std::string> errorPaths(const std::vector<testing::SchemaError>& errors) {
  std::set<std::string> paths;
  for (const auto& error : errors) {
    paths.insert(error.instance_path);
  }
  return paths;
}

TEST_F(SchemasTest, ValidExamplesPassTheSchemasAndTheTable) {
  for (const RoleSpec& spec : allRoles()) {
    for (std::string_view direction : {"inputs", "outputs"}) {
      const std::string base = std::string(spec.name) + "-" + std::string(direction);
      SCOPED_TRACE(base);
      const json example = loadExample(base + ".valid.json");
      auto errors = schemas_.validate(schemaId(base + ".json"), example);
      ASSERT_TRUE(errors.ok()) << errors.status();
      for (const auto& error : *errors) {
        ADD_FAILURE() << error.instance_path << ": " << error.message;
      }
      if (direction == "inputs") {
        EXPECT_TRUE(validateInputs(spec.role, example).ok()) << validateInputs(spec.role, example);
      } else {
        for (const OutputSpec& output_spec : spec.outputs) {
          std::vector<std::string> problems;
          checkValue(*output_spec.type, example.at(std::string(output_spec.name)), Closure::kOpen,
                     std::string(output_spec.name), problems);
          EXPECT_TRUE(problems.empty()) << problems.front();
        }
      }
    }
  }
}

TEST_F(SchemasTest, InvalidExamplesFailWhereExpected) {
  // Each invalid example breaks specific rules; the paths are where.
  const std::map<std::string, std::set<std::string>> expected = {
      {"cluster-inputs",
       {"/captf_object/kind", "/captf_tags/captf.io~1kind", "/control_plane_endpoint",
        "/control_plane_endpoint/port"}},
      {"machine-inputs", {"/bootstrap_data", "/bootstrap_format"}},
      {"machinepool-inputs", {"/region", "/replicas", "/autoscaling/step"}},
      {"cluster-outputs", {"", "/control_plane_endpoint"}},
      {"machine-outputs", {"/addresses/0/type", "/interruptible"}},
      {"machinepool-outputs",
       {"/provider_id_list/1", "/replicas", "/instances/0", "/health/state"}},
  };
  for (const auto& [base, paths] : expected) {
    SCOPED_TRACE(base);
    auto errors = schemas_.validate(schemaId(base + ".json"), loadExample(base + ".invalid.json"));
    ASSERT_TRUE(errors.ok()) << errors.status();
    EXPECT_EQ(errorPaths(*errors), paths);
  }
}

TEST_F(SchemasTest, InvalidInputExamplesAreAlsoRejectedByTheTableWhereTheTableCanTell) {
  // Kinds, enums, closure and consistency are the table's business too;
  // lengths, patterns and ranges only the schema's.
  EXPECT_FALSE(validateInputs(Role::kCluster, loadExample("cluster-inputs.invalid.json")).ok());
  EXPECT_FALSE(validateInputs(Role::kMachine, loadExample("machine-inputs.invalid.json")).ok());
  EXPECT_FALSE(
      validateInputs(Role::kMachinePool, loadExample("machinepool-inputs.invalid.json")).ok());
}

CommonInputs common() {
  return {.cluster_name = "demo",
          .cluster_namespace = "team-a",
          .object_name = "demo-obj",
          .object_namespace = "team-a",
          .template_name = ""};
}

TEST_F(SchemasTest, BuilderOutputValidatesAgainstTheInputSchemas) {
  ClusterInputs cluster{.common = common()};
  MachineInputs machine{.common = common(),
                        .machine_name = "m-1",
                        .bootstrap = {.value = std::string("\x1f\x8b\x08\x00"
                                                           "binary",
                                                           10),
                                      .format = BootstrapFormat::kIgnition}};
  MachinePoolInputs pool{.common = common(), .machinepool_name = "mp-1", .replicas = 2};
  ClusterInputs full_cluster{.common = common(),
                             .control_plane_endpoint = Endpoint{.host = "10.0.0.1", .port = 6443},
                             .kubernetes_version = "v1.31.0",
                             .control_plane_initialized = true,
                             .cluster_network = ClusterNetwork{.pods = {"192.168.0.0/16"}}};
  const std::vector<std::pair<Role, json>> cases = {
      {Role::kCluster, toInputsJson(cluster)},
      {Role::kCluster, toInputsJson(full_cluster)},
      {Role::kMachine, toInputsJson(machine)},
      {Role::kMachinePool, toInputsJson(pool)},
  };
  for (const auto& [role, inputs] : cases) {
    SCOPED_TRACE(inputs.dump());
    auto errors =
        schemas_.validate(schemaId(std::string(roleSpec(role).name) + "-inputs.json"), inputs);
    ASSERT_TRUE(errors.ok()) << errors.status();
    for (const auto& error : *errors) {
      ADD_FAILURE() << error.instance_path << ": " << error.message;
    }
  }
}

// valijson itself, as the schemas would meet it without the adapter.
bool valijsonAlone(const json& schema, const json& instance) {
  valijson::Schema parsed;
  valijson::SchemaParser(valijson::SchemaParser::kDraft7)
      .populateSchema(valijson::adapters::NlohmannJsonAdapter(schema), parsed);
  return valijson::Validator().validate(parsed, valijson::adapters::NlohmannJsonAdapter(instance),
                                        nullptr);
}

json withId(json schema) {
  schema["$id"] = schemaId("s.json");
  return schema;
}

std::set<std::string> pathsUnder(const json& schema, const json& instance) {
  auto set = SchemaSet::fromDocuments({withId(schema)});
  EXPECT_TRUE(set.ok()) << set.status();
  if (!set.ok()) {
    return {"<error>"};
  }
  auto errors = set->validate(schemaId("s.json"), instance);
  EXPECT_TRUE(errors.ok()) << errors.status();
  return errors.ok() ? errorPaths(*errors) : std::set<std::string>{"<error>"};
}

TEST_F(SchemasTest, TheShippedSchemasUseOnlyKeywordsValijsonEnforces) {
  ASSERT_FALSE(schemas_.documents().empty());
  for (const auto& [id, document] : schemas_.documents()) {
    EXPECT_THAT(unenforcedKeywords(document), ::testing::IsEmpty()) << id;
  }
}

TEST(SchemaSetTest, RefusesKeywordsValijsonWouldIgnore) {
  // Guards the guard: valijson 1.0 passes what these 2020-12 keywords forbid,
  // so a schema using one must fail loudly, not pass silently.
  const json dependent = {{"type", "object"}, {"dependentRequired", {{"a", json::array({"b"})}}}};
  EXPECT_TRUE(valijsonAlone(dependent, json{{"a", 1}}));
  const json prefix = {{"type", "array"}, {"prefixItems", json::array({json{{"type", "string"}}})}};
  EXPECT_TRUE(valijsonAlone(prefix, json::array({1})));
  const json nested = {{"properties", {{"l", {{"items", {{"minContains", 1}}}}}}}};
  // "<schema pointer>: <keyword>"; the root's pointer is empty.
  for (const auto& [schema, where] :
       std::vector<std::pair<json, std::string>>{{dependent, ": dependentRequired"},
                                                 {prefix, ": prefixItems"},
                                                 {nested, "/properties/l/items: minContains"}}) {
    auto set = SchemaSet::fromDocuments({withId(schema)});
    ASSERT_FALSE(set.ok()) << where;
    EXPECT_THAT(std::string(set.status().message()), ::testing::HasSubstr(where));
  }
  EXPECT_THAT(unenforcedKeywords(json{{"items", json::array({json::object()})}}),
              ::testing::ElementsAre(": items (not a schema)"));
}

TEST(SchemaSetTest, SiblingsOfRefApplyAsDraft2020Says) {
  // Draft 7 (valijson's newest) ignores the siblings of $ref; the schemas'
  // 2020-12 applies them (captf_tags' per-role constants are such siblings).
  const json schema = {{"$defs", {{"tags", {{"type", "object"}}}}},
                       {"$ref", "#/$defs/tags"},
                       {"properties", {{"kind", {{"const", "TerraformCluster"}}}}}};
  const json wrong_kind = {{"kind", "TerraformMachine"}};
  EXPECT_TRUE(valijsonAlone(schema, wrong_kind)) << "valijson learned 2020-12: simplify";
  EXPECT_EQ(pathsUnder(schema, wrong_kind), std::set<std::string>{"/kind"});
  EXPECT_EQ(pathsUnder(schema, json::array()), std::set<std::string>{""});
  EXPECT_TRUE(pathsUnder(schema, json{{"kind", "TerraformCluster"}}).empty());
}

TEST(SchemaSetTest, ValijsonEnforcesEveryAllowedKeyword) {
  struct Case {
    std::string keyword;
    json schema;
    json valid;
    json invalid;
    std::string invalid_at;
  };
  const json object = {{"type", "object"}};
  const std::vector<Case> cases = {
      {"type", {{"type", json::array({"string", "null"})}}, nullptr, 1, ""},
      {"enum", {{"enum", json::array({"a", 1})}}, 1, "b", ""},
      {"const", {{"const", "v1alpha1"}}, "v1alpha1", "v1", ""},
      {"properties",
       {{"properties", {{"a", {{"type", "string"}}}}}},
       json{{"a", "x"}},
       json{{"a", 1}},
       "/a"},
      {"required", {{"required", json::array({"a"})}}, json{{"a", 1}}, json::object(), ""},
      {"additionalProperties",
       {{"properties", {{"a", object}}}, {"additionalProperties", {{"type", "string"}}}},
       json{{"a", json::object()}, {"b", "x"}},
       json{{"b", 1}},
       "/b"},
      {"items",
       {{"items", {{"type", "integer"}}}},
       json::array({1, 2}),
       json::array({1, "x"}),
       "/1"},
      {"minItems", {{"minItems", 1}}, json::array({1}), json::array(), ""},
      {"maxItems", {{"maxItems", 1}}, json::array({1}), json::array({1, 2}), ""},
      // Lengths count code points: "é" is one, in two bytes.
      {"minLength", {{"minLength", 2}}, "x\u00e9", "\u00e9", ""},
      {"maxLength", {{"maxLength", 2}}, "x\u00e9", "xyz", ""},
      // Unanchored, as JSON Schema's regular expressions are.
      {"pattern", {{"pattern", "^v[0-9]"}}, "v1.31.0", "1.31", ""},
      {"minimum", {{"minimum", 1}}, 1, 0, ""},
      {"maximum", {{"maximum", 65535}}, 65535, 65536, ""},
      {"anyOf",
       {{"anyOf", json::array({json{{"type", "string"}}, json{{"type", "null"}}})}},
       nullptr,
       1,
       ""},
      {"allOf", {{"allOf", json::array({json{{"minimum", 1}}, json{{"maximum", 2}}})}}, 2, 3, ""},
      {"not", {{"not", {{"type", "null"}}}}, 0, nullptr, ""},
      {"$ref",
       {{"$defs", {{"port", {{"type", "integer"}}}}},
        {"properties", {{"p", {{"$ref", "#/$defs/port"}}}}}},
       json{{"p", 1}},
       json{{"p", "1"}},
       "/p"},
  };
  std::set<std::string> proven;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.keyword);
    proven.insert(c.keyword);
    EXPECT_TRUE(pathsUnder(c.schema, c.valid).empty()) << c.valid.dump();
    EXPECT_EQ(pathsUnder(c.schema, c.invalid), std::set<std::string>{c.invalid_at})
        << c.invalid.dump();
  }
  // A closed object: additionalProperties false.
  EXPECT_EQ(pathsUnder({{"properties", {{"a", object}}}, {"additionalProperties", false}},
                       json{{"a", json::object()}, {"z", 1}}),
            std::set<std::string>{"/z"});
  for (const std::string& keyword : allowedKeywords()) {
    EXPECT_TRUE(isAnnotation(keyword) || proven.contains(keyword))
        << keyword << " is allowed but no case proves valijson enforces it";
  }
}

} // namespace
} // namespace captf::contract
