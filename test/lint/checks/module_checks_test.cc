#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/strings.h"
#include "lint/checks/module_checks.h"
#include "lint/contract_source.h"
#include "lint/hcl/parser.h"
#include "test/lint/test_util.h"

namespace captf::lint {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::TempModule;

RoleContract contractFor(std::string_view role) {
  auto contract = ContractTables().role("v1alpha1", role);
  EXPECT_TRUE(contract.ok()) << contract.status();
  return *contract;
}

// "<severity> <id> <file>:<line>" per finding, sorted as the report sorts them.
std::vector<std::string> summary(std::vector<Finding> findings) {
  sortFindings(findings);
  std::vector<std::string> out;
  out.reserve(findings.size());
  for (const Finding& f : findings) {
    out.push_back(contract::strCat(severityName(f.severity), " ", f.id, " ", f.file, ":", f.line));
  }
  return out;
}

std::vector<Finding> lint(const std::filesystem::path& dir, std::string_view role) {
  auto tree = loadModuleTree(dir);
  EXPECT_TRUE(tree.ok()) << tree.status();
  return tree.ok() ? runModuleChecks(*tree, contractFor(role)) : std::vector<Finding>{};
}

std::vector<Finding> withId(const std::vector<Finding>& findings, std::string_view id) {
  std::vector<Finding> out;
  std::copy_if(findings.begin(), findings.end(), std::back_inserter(out),
               [&](const Finding& f) { return f.id == id; });
  return out;
}

TEST(ModuleChecks, RealisticModulesPass) {
  EXPECT_THAT(lint(testing::testdata() / "cluster-aws", "cluster"), IsEmpty());
  EXPECT_THAT(lint(testing::testdata() / "machinepool-aws", "machinepool"), IsEmpty());
  EXPECT_THAT(lint(testing::testdata() / "machine-gcp", "machine"), IsEmpty());
}

TEST(ModuleChecks, InputMistakes) {
  const auto findings = lint(testing::testdata() / "machine-bad-inputs", "machine");
  EXPECT_THAT(summary(findings),
              ElementsAre("error input/required :0", "error input/tags-declared :0",
                          "info module/version :0", "error output/health :0",
                          "error output/required :0", "error output/required :0",
                          "error input/reserved main.tf:18", "warning input/sensitive main.tf:23",
                          "warning input/default main.tf:27", "warning input/type main.tf:32",
                          "warning input/type main.tf:36", "error input/type main.tf:41",
                          "warning input/user-variable-default main.tf:45",
                          "warning output/reserved main.tf:64"));
  const auto types = withId(findings, "input/type");
  ASSERT_EQ(types.size(), 3u);
  EXPECT_EQ(types[0].message, "variable failure_domain has no type; the contract passes string");
  EXPECT_EQ(types[1].message,
            "variable kubernetes_version: cannot check type \"string\" against string: a type "
            "must be a keyword such as string, or a type constructor such as list(string)");
  EXPECT_EQ(types[2].message, "variable control_plane is declared as string, which does not "
                              "accept the contract's bool");
  EXPECT_EQ(withId(findings, "input/required")[0].message,
            "contract input machine_name is not declared as a variable");
}

TEST(ModuleChecks, PoolShapeStateBlocksAndCredentials) {
  const auto findings = lint(testing::testdata() / "machinepool-bad-shape", "machinepool");
  EXPECT_THAT(summary(findings), ElementsAre("warning pool/autoscaling-ignore-changes :0",
                                             "error module/backend main.tf:4",
                                             "warning module/provider-config main.tf:13",
                                             "warning module/provider-config main.tf:17",
                                             "warning output/provider-id-list-shape main.tf:46",
                                             "warning output/provider-id-list-shape main.tf:46",
                                             "error module/cloud modules/asg/main.tf:2",
                                             "warning input/tags-unused variables.tf:4"));
  const auto creds = withId(findings, "module/provider-config");
  EXPECT_EQ(creds[0].message, "provider argument client_secret is a literal: credentials come "
                              "from the identity, never from the module");
  EXPECT_EQ(creds[1].message, "provider argument password is a literal: credentials come from "
                              "the identity, never from the module");
}

TEST(ModuleChecks, ClusterEndpointAlwaysNull) {
  const auto findings = lint(testing::testdata() / "cluster-endpoint-null", "cluster");
  EXPECT_THAT(summary(findings), ElementsAre("warning output/endpoint-never-set main.tf:40"));
}

TEST(ModuleChecks, TofuShadow) {
  const auto findings =
      withId(lint(testing::testdata() / "tofu-shadow", "cluster"), "module/tofu-shadow");
  ASSERT_EQ(findings.size(), 3u);
  EXPECT_EQ(findings[0].message,
            "resource.terraform_data.only_tofu is declared only in a .tofu file: Terraform does "
            "not see it; the contract checks read Terraform's files");
  EXPECT_EQ(findings[0].file, "main.tofu");
  EXPECT_EQ(findings[1].message,
            "variable.size differs between OpenTofu's files and Terraform's; the contract checks "
            "read Terraform's files");
  EXPECT_EQ(findings[2].message,
            "output.note is declared for Terraform, but a .tofu file shadows it and OpenTofu does "
            "not see it; the contract checks read Terraform's files");
  EXPECT_EQ(findings[2].file, "main.tf");
}

TEST(ModuleChecks, SourceEscapeMessages) {
  const auto findings =
      withId(lint(testing::testdata() / "source-escape", "cluster"), "module/source-escape");
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].message, "module \"outside\" source \"../elsewhere\" escapes the module "
                                 "directory; it is never linted and would not ship with the "
                                 "module");
  EXPECT_EQ(findings[1].message,
            "module \"missing\" source \"./modules/missing\" cannot be resolved: No such file or "
            "directory");
}

// A cluster module that satisfies everything but what a test adds.
std::string clusterBase() {
  return R"(terraform {
  required_version = ">= 1.6"
}
variable "captf_contract" { type = string }
variable "captf_cluster" { type = any }
variable "captf_object" { type = any }
variable "captf_tags" { type = map(string) }
variable "control_plane_initialized" { type = bool }
variable "control_plane_endpoint" {
  type    = object({ host = string, port = number })
  default = null
}
variable "kubernetes_version" {
  type    = string
  default = null
}
variable "cluster_network" {
  type    = any
  default = null
}
output "failure_domains" { value = [] }
output "exports" { value = {} }
output "health" { value = { state = "running", healthy = true } }
)";
}

TEST(ModuleChecks, TagsForwardedToAChildCountOnlyIfTheChildUsesThem) {
  TempModule used;
  used.write("main.tf", clusterBase() + R"(
output "control_plane_endpoint" { value = var.control_plane_endpoint }
module "net" {
  source = "./net"
  labels = var.captf_tags
}
)");
  used.write("net/main.tf", "variable \"labels\" { type = map(string) }\n"
                            "module \"deeper\" {\n  source = \"../deeper\"\n  t = var.labels\n}\n");
  used.write("deeper/main.tf", "variable \"t\" { type = any }\n"
                               "resource \"terraform_data\" \"x\" { input = var.t }\n");
  EXPECT_THAT(lint(used.path(), "cluster"), IsEmpty());

  used.write("deeper/main.tf", "variable \"t\" { type = any }\n");
  EXPECT_THAT(summary(lint(used.path(), "cluster")),
              ElementsAre("warning input/tags-unused main.tf:7"));
}

TEST(ModuleChecks, AutoscalingIgnoreChangesForms) {
  const auto pool = [](std::string_view lifecycle) {
    return contract::strCat(R"(variable "autoscaling" { type = any }
resource "aws_autoscaling_group" "g" {
  min_size = var.autoscaling.min
)",
                            lifecycle, "}\n");
  };
  const auto warnings = [](const std::filesystem::path& dir) {
    auto tree = loadModuleTree(dir);
    EXPECT_TRUE(tree.ok()) << tree.status();
    std::vector<Finding> out;
    checkAutoscalingIgnoreChanges(*tree, out);
    return out.size();
  };
  for (std::string_view ok :
       {"  lifecycle {\n    ignore_changes = all\n  }\n",
        "  lifecycle {\n    ignore_changes = [desired_capacity]\n  }\n",
        "  lifecycle {\n    ignore_changes = [sku[0].capacity, tags]\n  }\n",
        "  lifecycle {\n    ignore_changes = [scaling_config[0].desired_size]\n  }\n"}) {
    TempModule m;
    m.write("main.tf", pool(ok));
    EXPECT_EQ(warnings(m.path()), 0u) << ok;
  }
  for (std::string_view bad : {"", "  lifecycle {\n    ignore_changes = [tags]\n  }\n",
                               "  lifecycle {\n    ignore_changes = [desired_capacity_x]\n  }\n"}) {
    TempModule m;
    m.write("main.tf", pool(bad));
    EXPECT_EQ(warnings(m.path()), 1u) << bad;
  }
  {
    // A JSON resource is accepted; a module that never reads var.autoscaling is not checked.
    TempModule m;
    m.write(
        "main.tf.json",
        R"({"resource": {"aws_autoscaling_group": {"g": {"min_size": "${var.autoscaling.min}"}}}})");
    EXPECT_EQ(warnings(m.path()), 0u);
    TempModule n;
    n.write("main.tf", "resource \"aws_autoscaling_group\" \"g\" {\n  min_size = 1\n}\n");
    EXPECT_EQ(warnings(n.path()), 0u);
  }
  {
    // Tree check: a nested module is reported with its path.
    TempModule m;
    m.write("main.tf",
            "module \"pool\" {\n  source = \"./pool\"\n  autoscaling = var.autoscaling\n}\n");
    m.write("pool/main.tf", pool(""));
    auto tree = loadModuleTree(m.path());
    ASSERT_TRUE(tree.ok());
    std::vector<Finding> out;
    checkAutoscalingIgnoreChanges(*tree, out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].file, "pool");
    EXPECT_EQ(out[0].line, 0u);
  }
}

TEST(ModuleChecks, DesiredCapacityPattern) {
  for (std::string_view yes :
       {"[desired_capacity]", "desired_size", "[tags, target_size]", "instance_count",
        "[sku[0].capacity]", "sku.capacity", "x.sku[12].capacity", "[\"desired_capacity\"]"}) {
    EXPECT_TRUE(matchesDesiredCapacity(yes)) << yes;
  }
  for (std::string_view no :
       {"", "[tags]", "desired_capacity_x", "my_desired_size", "sku[].capacity", "sku[0]capacity",
        "sku.capacity_x", "mysku.capacity", "sku[a].capacity"}) {
    EXPECT_FALSE(matchesDesiredCapacity(no)) << no;
  }
  // Linear in the input: a long list is fine.
  std::string big = "[";
  for (int i = 0; i < 200000; ++i) {
    big += "tags, ";
  }
  EXPECT_FALSE(matchesDesiredCapacity(big));
  EXPECT_TRUE(matchesDesiredCapacity(big + "sku[1].capacity]"));
}

TEST(ModuleChecks, SortedRule) {
  const auto sorted = [](std::string_view src) {
    auto e = hcl::parseExpression(src, "t");
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() && isSorted(**e);
  };
  EXPECT_TRUE(sorted("sort(x)"));
  EXPECT_TRUE(sorted("(sort(x))"));
  EXPECT_TRUE(sorted("tolist(sort(x))"));
  EXPECT_TRUE(sorted("distinct(sort(x))"));
  EXPECT_TRUE(sorted("concat(sort(a), (sort(b)))"));
  EXPECT_TRUE(sorted("var.on ? sort(a) : sort(b)"));
  EXPECT_FALSE(sorted("distinct(x)"));
  EXPECT_FALSE(sorted("tolist(x)"));
  EXPECT_FALSE(sorted("concat()"));
  EXPECT_FALSE(sorted("concat(sort(a), b)"));
  EXPECT_FALSE(sorted("var.on ? sort(a) : []"));
  EXPECT_FALSE(sorted("local.sorted_ids"));
  EXPECT_FALSE(sorted("[for x in sort(a) : x]"));
}

TEST(ModuleChecks, ProviderIdListHealthFilters) {
  const auto lint_pool = [](std::string_view value) {
    TempModule m;
    m.write("main.tf",
            contract::strCat("output \"provider_id_list\" {\n  value = ", value, "\n}\n"));
    auto tree = loadModuleTree(m.path());
    EXPECT_TRUE(tree.ok()) << tree.status();
    std::vector<Finding> out;
    checkOutputs(tree->root(), contractFor("machinepool"), out);
    std::vector<std::string> messages;
    for (const Finding& f : withId(out, "output/provider-id-list-shape")) {
      messages.push_back(f.message.substr(0, f.message.find(':')));
    }
    return messages;
  };
  EXPECT_THAT(lint_pool("sort([for i in x : i.id])"), IsEmpty());
  EXPECT_THAT(lint_pool("sort([for i in x : i.id if i.state != \"terminated\"])"), IsEmpty());
  EXPECT_THAT(lint_pool("sort([for i in x : i.id if i.Status == \"RUNNING\"])"),
              ElementsAre("output provider_id_list filters on health or state"));
  EXPECT_THAT(lint_pool("sort([for i in x : i.id if i[\"is_healthy\"]])"),
              ElementsAre("output provider_id_list filters on health or state"));
  EXPECT_THAT(lint_pool("[for i in x : i.id]"),
              ElementsAre("output provider_id_list is not sorted with sort()"));
}

TEST(ModuleChecks, EndpointNeverSetNeedsALiteralNullWithoutVariables) {
  const auto endpoint = [](std::string_view value) {
    TempModule m;
    m.write("main.tf",
            contract::strCat("output \"control_plane_endpoint\" {\n  value = ", value, "\n}\n"));
    auto tree = loadModuleTree(m.path());
    EXPECT_TRUE(tree.ok()) << tree.status();
    std::vector<Finding> out;
    checkOutputs(tree->root(), contractFor("cluster"), out);
    return withId(out, "output/endpoint-never-set").size();
  };
  EXPECT_EQ(endpoint("null"), 1u);
  EXPECT_EQ(endpoint("local.on ? null : (null)"), 1u);
  EXPECT_EQ(endpoint("var.control_plane_endpoint"), 0u);
  EXPECT_EQ(endpoint("var.x == null ? null : null"), 0u);
  EXPECT_EQ(endpoint("aws_lb.api.dns_name"), 0u);
}

TEST(ModuleChecks, ProviderCredentialsInJsonAndNestedValues) {
  TempModule m;
  m.write("providers.tf.json", R"({"provider": {"vsphere": [{
    "user": "admin",
    "password": "literal",
    "api_token": "${var.token}",
    "settings": {"nested": {"Private_Key": "-----BEGIN"}, "list": [{"secret": "x"}]},
    "token": ""
  }]}})");
  auto tree = loadModuleTree(m.path());
  ASSERT_TRUE(tree.ok()) << tree.status();
  std::vector<Finding> out;
  checkProviderConfig(*tree, out);
  std::vector<std::string> messages;
  messages.reserve(out.size());
  for (const Finding& f : out) {
    messages.push_back(f.message.substr(0, f.message.find(" is a literal")));
  }
  EXPECT_THAT(messages, ElementsAre("provider argument password", "provider argument Private_Key",
                                    "provider argument secret"));
}

TEST(ModuleChecks, ReservedAndDefaultExemptions) {
  TempModule m;
  m.write("main.tf", clusterBase() + R"(
output "control_plane_endpoint" { value = var.control_plane_endpoint }
resource "terraform_data" "tags" { input = var.captf_tags }
variable "captf_cluster_outputs" {
  default = null
}
)");
  EXPECT_THAT(lint(m.path(), "cluster"), IsEmpty());
  m.write("main.tf", clusterBase() + R"(
output "control_plane_endpoint" { value = var.control_plane_endpoint }
resource "terraform_data" "tags" { input = var.captf_tags }
variable "captf_cluster_outputs" { type = any }
)");
  EXPECT_THAT(summary(lint(m.path(), "cluster")), ElementsAre("error input/reserved main.tf:27"));
}

} // namespace
} // namespace captf::lint
