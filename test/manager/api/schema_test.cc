#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "manager/api/codec.h"
#include "manager/api/crd.h"
#include "manager/api/templates.h"
#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_cluster_identity.h"
#include "manager/api/terraform_machine.h"
#include "manager/api/terraform_machine_pool.h"
#include "test/manager/api/fixtures.h"
#include "test/manager/api/yaml_json.h"

namespace captf::api {
namespace {

using captf::api::testing::yamlToJson;
using nlohmann::json;

// Checks a JSON value against a structural schema the way the API server
// would (types, enums, ranges, lengths, patterns, required, counts; not CEL)
// and records which schema properties the value exercised.
class SchemaChecker {
public:
  void check(const json& v, const Schema& s, const std::string& path) {
    if (s.int_or_string) {
      expect(v.is_string() || v.is_number_integer() || v.is_number_unsigned(), path,
             "int-or-string");
      return;
    }
    switch (s.type) {
    case Schema::Type::kObject:
      checkObject(v, s, path);
      break;
    case Schema::Type::kArray:
      if (expect(v.is_array(), path, "array")) {
        expectRange(static_cast<std::int64_t>(v.size()), s.min_items, s.max_items, path, "items");
        for (const json& item : v) {
          check(item, *s.items, path + "[]");
        }
      }
      break;
    case Schema::Type::kString:
      if (expect(v.is_string(), path, "string")) {
        const auto& str = v.get_ref<const std::string&>();
        expectRange(static_cast<std::int64_t>(str.size()), s.min_length, s.max_length, path,
                    "length");
        if (!s.enum_values.empty()) {
          expect(std::find(s.enum_values.begin(), s.enum_values.end(), str) != s.enum_values.end(),
                 path, "enum value");
        }
        if (!s.pattern.empty()) {
          expect(std::regex_search(str, std::regex(s.pattern)), path, "match " + s.pattern);
        }
        if (s.format == "date-time") {
          expect(parseTime(str).ok(), path, "date-time");
        }
      }
      break;
    case Schema::Type::kInteger:
      if (expect(v.is_number_integer() || v.is_number_unsigned(), path, "integer")) {
        expectRange(v.get<std::int64_t>(), s.minimum, s.maximum, path, "value");
      }
      break;
    case Schema::Type::kBoolean:
      expect(v.is_boolean(), path, "boolean");
      break;
    case Schema::Type::kNumber:
    case Schema::Type::kUnset:
      problems.push_back(path + ": schema without a type");
      break;
    }
  }

  std::vector<std::string> problems;
  std::set<std::string> covered;

private:
  void checkObject(const json& v, const Schema& s, const std::string& path) {
    if (!expect(v.is_object(), path, "object")) {
      return;
    }
    expectRange(static_cast<std::int64_t>(v.size()), s.min_properties, s.max_properties, path,
                "properties");
    if (s.preserve_unknown_fields) {
      return;
    }
    if (s.additional_properties) {
      for (const auto& [k, item] : v.items()) {
        check(item, *s.additional_properties, path + "{}");
      }
      return;
    }
    for (const auto& [k, item] : v.items()) {
      const Schema* ps = s.property(k);
      const std::string child = path.empty() ? k : path + "." + k;
      if (ps == nullptr) {
        problems.push_back(child + ": encoded but not in the schema");
        continue;
      }
      covered.insert(child);
      // The top-level metadata is a bare object in a CRD.
      if (ps->type == Schema::Type::kObject && ps->properties.empty() &&
          !ps->additional_properties && !ps->preserve_unknown_fields) {
        continue;
      }
      check(item, *ps, child);
    }
    for (const std::string& r : s.required) {
      expect(v.contains(r), path + "." + r, "required field present");
    }
  }

  bool expect(bool ok, const std::string& path, const std::string& what) {
    if (!ok) {
      problems.push_back(path + ": expected " + what);
    }
    return ok;
  }

  void expectRange(std::int64_t n, std::optional<std::int64_t> lo, std::optional<std::int64_t> hi,
                   const std::string& path, const std::string& what) {
    expect(!lo || n >= *lo, path, what + " >= " + std::to_string(lo.value_or(0)));
    expect(!hi || n <= *hi, path, what + " <= " + std::to_string(hi.value_or(0)));
  }
};

// Every property path of a schema ("spec.jobs.env[].name").
void allProperties(const Schema& s, const std::string& path, std::set<std::string>& out) {
  if (s.preserve_unknown_fields) {
    return;
  }
  if (s.items) {
    allProperties(*s.items, path + "[]", out);
  }
  if (s.additional_properties) {
    allProperties(*s.additional_properties, path + "{}", out);
  }
  for (const Property& p : s.properties) {
    const std::string child = path.empty() ? p.name : path + "." + p.name;
    out.insert(child);
    allProperties(p.schema, child, out);
  }
}

template <class T> void expectSchemaAgrees(const T& full) {
  const Schema schema = schemaOf<T>();
  SchemaChecker checker;
  checker.check(toJson(full), schema, "");
  EXPECT_TRUE(checker.problems.empty()) << ::testing::PrintToString(checker.problems);
  std::set<std::string> all;
  allProperties(schema, "", all);
  std::vector<std::string> unexercised;
  for (const std::string& p : all) {
    if (!checker.covered.contains(p)) {
      unexercised.push_back(p);
    }
  }
  // Every schema field is produced by the encoder from a fully set object,
  // and every encoded key is in the schema (checked above).
  EXPECT_TRUE(unexercised.empty()) << ::testing::PrintToString(unexercised);
}

TEST(SchemaTest, EncodedObjectsConformToTheSchemaAndCoverIt) {
  expectSchemaAgrees(testing::fullTerraformCluster());
  expectSchemaAgrees(testing::fullTerraformMachine());
  expectSchemaAgrees(testing::fullTerraformMachinePool());
  expectSchemaAgrees(testing::fullTerraformClusterTemplate());
  expectSchemaAgrees(testing::fullTerraformMachineTemplate());
  expectSchemaAgrees(testing::fullTerraformMachinePoolTemplate());
  expectSchemaAgrees(testing::fullTerraformClusterIdentity());
}

TEST(SchemaTest, CheckerCatchesDrift) {
  // The agreement test above must be able to fail: an unknown key, a wrong
  // type and a broken constraint are each reported.
  json doc = toJson(testing::minimalTerraformCluster());
  doc["spec"]["bogus"] = 1;
  doc["spec"]["source"]["image"] = 7;
  doc["spec"]["jobs"] = {{"activeDeadlineSeconds", 0}};
  SchemaChecker checker;
  checker.check(doc, schemaOf<TerraformCluster>(), "");
  EXPECT_EQ(checker.problems,
            (std::vector<std::string>{"spec.bogus: encoded but not in the schema",
                                      "spec.jobs.activeDeadlineSeconds: expected value >= 1",
                                      "spec.source.image: expected string"}));
}

TEST(SchemaTest, EveryFieldIsDescribed) {
  // kubectl explain shows these; an undocumented field is a bug.
  for (const CrdInfo& crd : allCrds()) {
    std::vector<std::string> missing;
    std::function<void(const Schema&, const std::string&)> walk = [&](const Schema& s,
                                                                      const std::string& path) {
      if (s.items) {
        walk(*s.items, path + "[]");
      }
      for (const Property& p : s.properties) {
        const std::string child = path + "." + p.name;
        if (p.schema.description.empty() && p.name != "metadata") {
          missing.push_back(child);
        }
        walk(p.schema, child);
      }
    };
    walk(crd.schema, crd.kind);
    EXPECT_TRUE(missing.empty()) << ::testing::PrintToString(missing);
  }
}

TEST(SchemaTest, SpecRulesLiveInTheSchema) {
  const Schema s = schemaOf<TerraformCluster>();
  EXPECT_TRUE(s.isRequired("spec"));
  const Schema& spec = *s.property("spec");
  EXPECT_EQ(spec.min_properties, 1);
  EXPECT_TRUE(spec.isRequired("source"));
  EXPECT_TRUE(spec.isRequired("identityRef"));
  EXPECT_EQ(spec.property("source")->property("image")->max_length, 512);
  const Schema& vars = *spec.property("variables");
  EXPECT_TRUE(vars.preserve_unknown_fields);
  EXPECT_EQ(vars.min_properties, 1);
  EXPECT_EQ(vars.max_properties, 256);
  const Schema& from = *spec.property("variablesFrom");
  EXPECT_EQ(from.max_items, 16);
  ASSERT_EQ(from.items->validations.size(), 1U);
  EXPECT_EQ(from.items->validations[0].rule, "has(self.configMapRef) != has(self.secretRef)");
  const Schema& lock = *spec.property("jobs")->property("lockTimeoutSeconds");
  EXPECT_EQ(lock.minimum, 0);
  EXPECT_EQ(lock.maximum, 3600);

  const Schema pool = *schemaOf<TerraformMachinePool>().property("spec");
  EXPECT_EQ(pool.property("membershipRefreshIntervalSeconds")->minimum, 15);
  EXPECT_EQ(pool.property("drift")->property("intervalSeconds")->minimum, 1);
  EXPECT_EQ(pool.property("providerIDList")->max_items, 10000);
  EXPECT_FALSE(pool.isRequired("identityRef"));
  // A ClusterClass's patches may supply the identity: the template leaves
  // it optional, the TerraformCluster it becomes requires it.
  const Schema cluster_template = *schemaOf<TerraformClusterTemplate>()
                                       .property("spec")
                                       ->property("template")
                                       ->property("spec");
  EXPECT_FALSE(cluster_template.isRequired("identityRef"));
  EXPECT_TRUE(cluster_template.isRequired("source"));

  const Schema identity = *schemaOf<TerraformClusterIdentity>().property("spec");
  ASSERT_EQ(identity.property("allowedNamespaces")->validations.size(), 1U);
  EXPECT_EQ(identity.property("allowedNamespaces")->validations[0].rule,
            "has(self.list) || has(self.selector)");
}

std::string sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(CrdTest, CommittedFilesEqualTheGeneratorOutput) {
  for (const CrdInfo& crd : allCrds()) {
    const std::string path = sourceDir() + "/config/crd/bases/" + crdFileName(crd);
    EXPECT_EQ(readFile(path), renderCrdYaml(crd))
        << path << " is stale: run crdgen . and commit the result";
  }
  EXPECT_EQ(readFile(sourceDir() + "/config/crd/kustomization.yaml"),
            renderKustomization(allCrds()));
  EXPECT_EQ(readFile(sourceDir() + "/docs/reference/api.md"), renderApiReference(allCrds()))
      << "docs/reference/api.md is stale: run crdgen and commit the result";
}

TEST(CrdTest, YamlReadsBackAsTheSameDocument) {
  for (const CrdInfo& crd : allCrds()) {
    const YAML::Node doc = YAML::Load(renderCrdYaml(crd));
    EXPECT_EQ(yamlToJson(doc), crdToJson(crd)) << crd.kind;
  }
}

TEST(CrdTest, CarriesClusterApiContractLabelsAndNames) {
  for (const CrdInfo& crd : allCrds()) {
    const json j = crdToJson(crd);
    const json& labels = j["metadata"]["labels"];
    EXPECT_EQ(labels["cluster.x-k8s.io/v1beta2"], "v1alpha1") << crd.kind;
    EXPECT_EQ(labels["cluster.x-k8s.io/v1beta1"], "v1alpha1") << crd.kind;
    EXPECT_EQ(labels["cluster.x-k8s.io/provider"], "infrastructure-terraform") << crd.kind;
    // CAPI's contract.CalculateCRDName: <lowercase plural of kind>.<group>.
    std::string lower = crd.kind;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::string plural =
        lower.back() == 'y' ? lower.substr(0, lower.size() - 1) + "ies" : lower + "s";
    EXPECT_EQ(j["metadata"]["name"], plural + ".infrastructure.cluster.x-k8s.io");
    EXPECT_EQ(j["spec"]["names"]["categories"], json({"cluster-api", "captf"}));
    const json& version = j["spec"]["versions"][0];
    EXPECT_EQ(version["name"], "v1alpha1");
    EXPECT_TRUE(version["storage"].get<bool>());
    EXPECT_EQ(version["additionalPrinterColumns"].back()["name"], "Age");
    const bool has_status = crd.schema.property("status") != nullptr;
    EXPECT_EQ(version.contains("subresources"), has_status) << crd.kind;
  }
  const json identity = crdToJson(allCrds().back());
  EXPECT_EQ(identity["spec"]["scope"], "Cluster");
  EXPECT_EQ(identity["metadata"]["labels"]["clusterctl.cluster.x-k8s.io/move-hierarchy"], "true");
}

} // namespace
} // namespace captf::api
