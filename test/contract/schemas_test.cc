// The JSON Schemas under contract/schemas/ and the C++ table in
// contract/roles.cc describe the same contract: this test proves it, checks
// the schema examples, and validates the typed builders' output against the
// schemas.

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "contract/inputs.h"
#include "contract/json_adapter.h"
#include "contract/roles.h"
#include "test/contract/json_schema_subset.h"
#include "test/contract/test_util.h"

namespace captf::contract {
namespace {

using nlohmann::json;
using testing::SchemaSet;

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
  const auto expectType = [&](std::string_view want) {
    ASSERT_TRUE(s.contains("type")) << path << ": schema has no type, table says " << want;
    EXPECT_EQ(s.at("type"), want) << path;
  };
  switch (type.kind) {
  case TypeKind::kAny:
    EXPECT_FALSE(s.contains("type")) << path << ": table says any, schema " << s.dump();
    return;
  case TypeKind::kString: {
    expectType("string");
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
    expectType("boolean");
    return;
  case TypeKind::kInteger:
    expectType("integer");
    return;
  case TypeKind::kList:
    expectType("array");
    ASSERT_TRUE(s.contains("items")) << path;
    expectAgrees(*type.element, s.at("items"), closure, path + "[]");
    return;
  case TypeKind::kMap:
    expectType("object");
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
    expectType("object");
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
      // §1.10: in cluster-inputs.json captf_cluster_outputs has type null
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
       {"/captf_object/kind", "/captf_tags/captf.io~1kind", "/control_plane_endpoint"}},
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
                        .bootstrap = {.value = std::string("\x1f\x8b\x08\x00binary", 10),
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

TEST(SchemaSubsetTest, RefusesKeywordsItDoesNotImplement) {
  // Guards the guard: a schema using an unimplemented keyword must fail
  // loudly, not pass silently.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("captf-schema-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "s.json") << R"({"$id": "https://captf.io/schemas/v1alpha1/s.json",
      "type": "array", "uniqueItems": true})";
  auto set = SchemaSet::load(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  auto errors = set->validate(schemaId("s.json"), json::array({1, 1}));
  ASSERT_FALSE(errors.ok());
  EXPECT_NE(std::string(errors.status().message()).find("uniqueItems"), std::string::npos);
}

TEST(SchemaSubsetTest, AppliesTheKeywordsItImplements) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("captf-schema-test2-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "s.json") << R"({"$id": "https://captf.io/schemas/v1alpha1/s.json",
      "type": "object", "required": ["a"], "additionalProperties": false,
      "properties": {"a": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^x"},
                     "n": {"type": "integer", "minimum": 1, "maximum": 2},
                     "l": {"type": "array", "maxItems": 1, "items": {"enum": ["p"]}}}})";
  auto set = SchemaSet::load(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  const auto paths = [&](const json& instance) {
    auto errors = set->validate(schemaId("s.json"), instance);
    EXPECT_TRUE(errors.ok());
    return errors.ok() ? errorPaths(*errors) : std::set<std::string>{"<error>"};
  };
  EXPECT_TRUE(paths(json{{"a", "xy"}, {"n", 2}, {"l", {"p"}}}).empty());
  // "é" is one code point: lengths count code points, not bytes.
  EXPECT_TRUE(paths(json{{"a", "x\u00e9"}}).empty());
  EXPECT_EQ(paths(json{{"a", "x"}}), std::set<std::string>{"/a"});
  EXPECT_EQ(paths(json{{"a", "xyzw"}}), std::set<std::string>{"/a"});
  EXPECT_EQ(paths(json{{"a", "yy"}}), std::set<std::string>{"/a"});
  EXPECT_EQ(paths(json{{"a", "xy"}, {"n", 3}}), std::set<std::string>{"/n"});
  EXPECT_EQ(paths(json{{"a", "xy"}, {"n", 1.5}}), std::set<std::string>{"/n"});
  EXPECT_EQ(paths(json{{"a", "xy"}, {"l", {"p", "p"}}}), std::set<std::string>{"/l"});
  EXPECT_EQ(paths(json{{"a", "xy"}, {"l", {"q"}}}), std::set<std::string>{"/l/0"});
  EXPECT_EQ(paths(json{{"a", "xy"}, {"z", 1}}), std::set<std::string>{"/z"});
  EXPECT_EQ(paths(json::object()), std::set<std::string>{""});
}

} // namespace
} // namespace captf::contract
