#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "contract/roles.h"

namespace captf::contract {
namespace {

std::vector<std::string> inputNames(Role role) {
  std::vector<std::string> names;
  for (const InputSpec& spec : roleSpec(role).inputs) {
    names.emplace_back(spec.name);
  }
  return names;
}

std::vector<std::string> outputNames(Role role) {
  std::vector<std::string> names;
  for (const OutputSpec& spec : roleSpec(role).outputs) {
    names.emplace_back(spec.name);
  }
  return names;
}

// The lists below are the (docs/behaviour/defaults.md "Contract inputs and
// required outputs per role", docs/behaviour/inputs.md re-exported outputs) written out as a
// test oracle; the code reads only contract/roles.cc.
TEST(RolesTest, InputsPerRoleAreTheSpecifiedOnes) {
  EXPECT_EQ(inputNames(Role::kCluster),
            (std::vector<std::string>{"captf_contract", "captf_cluster", "captf_object",
                                      "captf_tags", "control_plane_endpoint", "kubernetes_version",
                                      "control_plane_initialized", "cluster_network"}));
  EXPECT_EQ(inputNames(Role::kMachine),
            (std::vector<std::string>{"captf_contract", "captf_cluster", "captf_object",
                                      "captf_cluster_outputs", "captf_tags", "machine_name",
                                      "bootstrap_data", "bootstrap_format", "failure_domain",
                                      "kubernetes_version", "control_plane"}));
  EXPECT_EQ(inputNames(Role::kMachinePool),
            (std::vector<std::string>{"captf_contract", "captf_cluster", "captf_object",
                                      "captf_cluster_outputs", "captf_tags", "machinepool_name",
                                      "replicas", "bootstrap_data", "bootstrap_format",
                                      "failure_domains", "cluster_failure_domains",
                                      "kubernetes_version", "node_labels", "autoscaling"}));
}

TEST(RolesTest, OutputsPerRoleAreTheSpecifiedOnes) {
  EXPECT_EQ(
      outputNames(Role::kCluster),
      (std::vector<std::string>{"control_plane_endpoint", "failure_domains", "exports", "health"}));
  EXPECT_EQ(outputNames(Role::kMachine),
            (std::vector<std::string>{"provider_id", "addresses", "failure_domain", "interruptible",
                                      "health"}));
  EXPECT_EQ(outputNames(Role::kMachinePool),
            (std::vector<std::string>{"provider_id", "provider_id_list", "replicas", "instances",
                                      "health"}));
}

TEST(RolesTest, DeclaredTypesAreTheLintContractTypeStrings) {
  // docs/behaviour/defaults.md "Contract type strings used in messages" and docs/contract.md "Types
  // the lint and the generated root use".
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"captf_contract", "string"},
      {"captf_cluster", "any"},
      {"captf_object", "any"},
      {"captf_tags", "map(string)"},
      {"control_plane_endpoint", "object({host=string, port=number})"},
      {"kubernetes_version", "string"},
      {"control_plane_initialized", "bool"},
      {"cluster_network", "object({pods=list(string), services=list(string), "
                          "service_domain=string, api_server_port=number})"},
  };
  for (const auto& [name, type] : expected) {
    const InputSpec* spec = findInput(Role::kCluster, name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(terraformType(*spec->declared_type), type) << name;
  }
  EXPECT_EQ(terraformType(*findInput(Role::kMachine, "captf_cluster_outputs")->declared_type),
            "any");
  EXPECT_EQ(terraformType(*findInput(Role::kMachine, "control_plane")->declared_type), "bool");
  EXPECT_EQ(terraformType(*findInput(Role::kMachinePool, "replicas")->declared_type), "number");
  EXPECT_EQ(terraformType(*findInput(Role::kMachinePool, "failure_domains")->declared_type),
            "list(string)");
  EXPECT_EQ(terraformType(*findInput(Role::kMachinePool, "node_labels")->declared_type),
            "map(string)");
  EXPECT_EQ(terraformType(*findInput(Role::kMachinePool, "autoscaling")->declared_type),
            "object({enabled=bool, min=number, max=number})");
}

TEST(RolesTest, OutputTypesSpellOptionalAttributesWithTheirDefaults) {
  EXPECT_EQ(terraformType(*findOutput(Role::kCluster, "failure_domains")->type),
            "list(object({name=string, control_plane=optional(bool, true), "
            "attributes=optional(map(string), {})}))");
  EXPECT_EQ(terraformType(*findOutput(Role::kMachine, "addresses")->type),
            "list(object({type=string, address=string}))");
  EXPECT_EQ(terraformType(*findOutput(Role::kMachinePool, "instances")->type),
            "list(object({provider_id=string, instance_id=optional(string), "
            "addresses=optional(list(object({type=string, address=string})), []), "
            "failure_domain=optional(string), state=optional(string)}))");
}

TEST(RolesTest, NullableInputsAreExactlyTheInputDefaultExemptions) {
  // docs/behaviour/defaults.md input/default: the nullable contract inputs per role.
  const std::map<Role, std::set<std::string>> expected = {
      {Role::kCluster, {"control_plane_endpoint", "kubernetes_version", "cluster_network"}},
      {Role::kMachine, {"failure_domain", "kubernetes_version"}},
      {Role::kMachinePool, {"kubernetes_version"}},
  };
  for (const RoleSpec& spec : allRoles()) {
    std::set<std::string> nullable;
    for (const InputSpec& input_spec : spec.inputs) {
      if (input_spec.value_type->nullability == Nullability::kNullable) {
        nullable.emplace(input_spec.name);
      }
    }
    EXPECT_EQ(nullable, expected.at(spec.role)) << spec.name;
  }
}

TEST(RolesTest, OnlyBootstrapDataIsSensitive) {
  for (const RoleSpec& spec : allRoles()) {
    for (const InputSpec& input_spec : spec.inputs) {
      EXPECT_EQ(input_spec.sensitivity == Sensitivity::kSensitive,
                input_spec.name == input::kBootstrapData)
          << spec.name << "." << input_spec.name;
    }
  }
}

TEST(RolesTest, EveryRoleHasHealthAndTheCommonInputs) {
  for (const RoleSpec& spec : allRoles()) {
    EXPECT_NE(findOutput(spec.role, output::kHealth), nullptr) << spec.name;
    for (std::string_view name :
         {input::kCaptfContract, input::kCaptfCluster, input::kCaptfObject, input::kCaptfTags}) {
      EXPECT_NE(findInput(spec.role, name), nullptr) << spec.name << " " << name;
    }
    EXPECT_EQ(findInput(spec.role, input::kCaptfClusterOutputs) != nullptr,
              spec.role != Role::kCluster)
        << "captf_cluster_outputs is passed to machines and pools only";
  }
}

TEST(RolesTest, ContractNamesCarryTheReservedPrefixOnlyForCommonInputs) {
  for (const RoleSpec& spec : allRoles()) {
    for (const InputSpec& input_spec : spec.inputs) {
      const bool reserved = input_spec.name.starts_with(kReservedPrefix);
      const bool common =
          input_spec.name == input::kCaptfContract || input_spec.name == input::kCaptfCluster ||
          input_spec.name == input::kCaptfObject || input_spec.name == input::kCaptfTags ||
          input_spec.name == input::kCaptfClusterOutputs;
      EXPECT_EQ(reserved, common) << input_spec.name;
    }
    for (const OutputSpec& output_spec : spec.outputs) {
      EXPECT_FALSE(output_spec.name.starts_with(kReservedPrefix)) << output_spec.name;
    }
  }
}

TEST(RolesTest, NamesKindsAndShortKinds) {
  ASSERT_EQ(allRoles().size(), 3U);
  EXPECT_EQ(roleSpec(Role::kCluster).kind, "TerraformCluster");
  EXPECT_EQ(roleSpec(Role::kMachine).kind, "TerraformMachine");
  EXPECT_EQ(roleSpec(Role::kMachinePool).kind, "TerraformMachinePool");
  EXPECT_EQ(roleSpec(Role::kCluster).kind_short, "c");
  EXPECT_EQ(roleSpec(Role::kMachine).kind_short, "m");
  EXPECT_EQ(roleSpec(Role::kMachinePool).kind_short, "mp");
  for (const RoleSpec& spec : allRoles()) {
    EXPECT_EQ(parseRole(spec.name).value(), spec.role);
    EXPECT_EQ(roleForKind(spec.kind).value(), spec.role);
    EXPECT_EQ(&roleSpec(spec.role), &spec);
  }
  EXPECT_EQ(parseRole("Cluster").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parseRole("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(roleForKind("TerraformMachineTemplate").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RolesTest, TagKeysAreTheSixFixedKeys) {
  const std::vector<std::string> keys(captfTagKeys().begin(), captfTagKeys().end());
  EXPECT_EQ(keys, (std::vector<std::string>{"captf.io/cluster", "captf.io/namespace",
                                            "captf.io/kind", "captf.io/name", "captf.io/managed-by",
                                            "captf.io/template"}));
}

TEST(RolesTest, FindReturnsNullForUnknownNames) {
  EXPECT_EQ(findInput(Role::kCluster, "machine_name"), nullptr);
  EXPECT_EQ(findInput(Role::kMachine, "replicas"), nullptr);
  EXPECT_EQ(findOutput(Role::kMachine, "exports"), nullptr);
  EXPECT_NE(findOutput(Role::kMachinePool, "replicas"), nullptr);
}

struct NameCase {
  Role role;
  std::string name;
  bool valid;
};

class UserVariableNameTest : public ::testing::TestWithParam<NameCase> {};

TEST_P(UserVariableNameTest, FollowsTheRules) {
  const NameCase& c = GetParam();
  const absl::Status status = validateUserVariableName(c.role, c.name);
  EXPECT_EQ(status.ok(), c.valid) << c.name << ": " << status;
  if (!c.valid) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(c.name.empty() ? "\"\"" : c.name), std::string::npos)
        << "the error names the variable: " << status;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rules, UserVariableNameTest,
    ::testing::Values(
        NameCase{Role::kCluster, "region", true}, NameCase{Role::kCluster, "_private", true},
        NameCase{Role::kCluster, "instance-type2", true},
        NameCase{Role::kCluster, "Region_A", true},
        // A machine input is fine for a cluster, not for a machine.
        NameCase{Role::kCluster, "machine_name", true},
        NameCase{Role::kMachine, "machine_name", false},
        NameCase{Role::kMachinePool, "replicas", false}, NameCase{Role::kMachine, "replicas", true},
        NameCase{Role::kCluster, "cluster_network", false},
        NameCase{Role::kCluster, "captf_anything", false},
        NameCase{Role::kCluster, "captf_cluster_outputs", false},
        NameCase{Role::kCluster, "source", false}, NameCase{Role::kMachine, "version", false},
        NameCase{Role::kMachine, "providers", false}, NameCase{Role::kMachine, "count", false},
        NameCase{Role::kMachine, "for_each", false}, NameCase{Role::kMachine, "depends_on", false},
        NameCase{Role::kMachine, "lifecycle", false}, NameCase{Role::kMachine, "locals", false},
        NameCase{Role::kCluster, "", false}, NameCase{Role::kCluster, "1st", false},
        NameCase{Role::kCluster, "-dash", false}, NameCase{Role::kCluster, "has space", false},
        NameCase{Role::kCluster, "dotted.name", false},
        NameCase{Role::kCluster, "ünïcode", false}));

} // namespace
} // namespace captf::contract
