#include <algorithm>
#include <array>
#include <string>
#include <utility>
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
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
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
  const auto pool = [](std::string_view type, std::string_view lifecycle) {
    return contract::strCat(R"(variable "autoscaling" { type = any }
resource ")",
                            type, R"(" "g" {
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
  for (const auto& [type, ok] : std::to_array<std::pair<std::string_view, std::string_view>>(
           {{"aws_autoscaling_group", "  lifecycle {\n    ignore_changes = all\n  }\n"},
            {"aws_autoscaling_group",
             "  lifecycle {\n    ignore_changes = [desired_capacity]\n  }\n"},
            {"azurerm_virtual_machine_scale_set",
             "  lifecycle {\n    ignore_changes = [sku[0].capacity, tags]\n  }\n"},
            {"aws_eks_node_group",
             "  lifecycle {\n    ignore_changes = [scaling_config[0].desired_size]\n  }\n"},
            // A type outside the capacity table may ignore any attribute of the table.
            {"custom_scaling_group",
             "  lifecycle {\n    ignore_changes = [instance_count]\n  }\n"}})) {
    TempModule m;
    m.write("main.tf", pool(type, ok));
    EXPECT_EQ(warnings(m.path()), 0u) << type << ok;
  }
  for (const auto& [type, bad] : std::to_array<std::pair<std::string_view, std::string_view>>(
           {{"aws_autoscaling_group", ""},
            {"aws_autoscaling_group", "  lifecycle {\n    ignore_changes = [tags]\n  }\n"},
            {"aws_autoscaling_group",
             "  lifecycle {\n    ignore_changes = [desired_capacity_x]\n  }\n"},
            // In the table, only the type's own capacity attribute counts.
            {"aws_autoscaling_group", "  lifecycle {\n    ignore_changes = [target_size]\n  }\n"},
            {"custom_scaling_group", "  lifecycle {\n    ignore_changes = [tags]\n  }\n"}})) {
    TempModule m;
    m.write("main.tf", pool(type, bad));
    EXPECT_EQ(warnings(m.path()), 1u) << type << bad;
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
    m.write("pool/main.tf", pool("aws_autoscaling_group", ""));
    auto tree = loadModuleTree(m.path());
    ASSERT_TRUE(tree.ok());
    std::vector<Finding> out;
    checkAutoscalingIgnoreChanges(*tree, out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].file, "pool");
    EXPECT_EQ(out[0].line, 0u);
  }
}

TEST(ModuleChecks, IgnoresCapacityAttribute) {
  const auto ignores = [](std::string_view ignore_changes, std::string_view attribute) {
    auto e = hcl::parseExpression(ignore_changes, "t");
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() && ignoresAttribute(**e, attribute);
  };
  EXPECT_TRUE(ignores("all", "instances"));
  EXPECT_TRUE(ignores("[instances]", "instances"));
  EXPECT_TRUE(ignores("[tags, target_size]", "target_size"));
  EXPECT_TRUE(ignores("[\"desired_capacity\"]", "desired_capacity"));
  EXPECT_TRUE(ignores("[sku[0].capacity]", "sku[0].capacity"));
  EXPECT_TRUE(ignores("[sku.capacity]", "sku[0].capacity"));
  EXPECT_TRUE(ignores("[\"sku.0.capacity\"]", "sku[0].capacity"));
  EXPECT_TRUE(ignores("[scaling_config]", "scaling_config[0].desired_size"));
  EXPECT_FALSE(ignores("[]", "instances"));
  EXPECT_FALSE(ignores("[tags]", "instances"));
  EXPECT_FALSE(ignores("[instances_x]", "instances"));
  EXPECT_FALSE(ignores("[desired_size]", "scaling_config[0].desired_size"));
  EXPECT_FALSE(ignores("[sku[0].capacity_x]", "sku[0].capacity"));
  EXPECT_FALSE(ignores("[sku[0].capacity.x]", "sku[0].capacity"));
  EXPECT_FALSE(ignores("[sku[a].capacity]", "sku[0].capacity"));
  EXPECT_FALSE(ignores("instances", "instances"));
  // Every row of the table is found by its type, with a non-empty attribute.
  for (const CapacityAttribute& row : capacityAttributes()) {
    EXPECT_EQ(capacityAttribute(row.resource_type), &row);
    EXPECT_TRUE(ignores(contract::strCat("[", row.attribute, "]"), row.attribute))
        << row.resource_type;
  }
  EXPECT_EQ(capacityAttribute("aws_instance"), nullptr);
}

// The messages of pool/autoscaling-ignore-changes for a module of one main.tf.
std::vector<std::string> autoscalingMessages(std::string_view main_tf) {
  TempModule m;
  m.write("main.tf", contract::strCat("variable \"autoscaling\" { type = any }\n"
                                      "variable \"replicas\" { type = number }\n",
                                      main_tf));
  auto tree = loadModuleTree(m.path());
  EXPECT_TRUE(tree.ok()) << tree.status();
  std::vector<Finding> out;
  if (tree.ok()) {
    checkAutoscalingIgnoreChanges(*tree, out);
  }
  std::vector<std::string> messages;
  for (const Finding& f : out) {
    EXPECT_EQ(f.id, "pool/autoscaling-ignore-changes");
    messages.push_back(f.message);
  }
  return messages;
}

TEST(ModuleChecks, AutoscalingCapacityAttributeOfEachProvider) {
  struct Pool {
    std::string_view type;
    std::string_view capacity; // how the resource sets it
    std::string_view ignored;  // the ignore_changes entry
  };
  for (const Pool& p : std::to_array<Pool>({
           {"aws_autoscaling_group", "desired_capacity = var.replicas", "desired_capacity"},
           {"azurerm_linux_virtual_machine_scale_set", "instances = var.replicas", "instances"},
           {"azurerm_windows_virtual_machine_scale_set", "instances = var.replicas", "instances"},
           {"azurerm_orchestrated_virtual_machine_scale_set", "instances = var.replicas",
            "instances"},
           {"google_compute_region_instance_group_manager", "target_size = var.replicas",
            "target_size"},
           {"oci_core_instance_pool", "size = var.replicas", "size"},
           {"openstack_containerinfra_nodegroup_v1", "node_count = var.replicas", "node_count"},
       })) {
    const auto module = [&](std::string_view lifecycle) {
      return contract::strCat("resource \"", p.type, "\" \"pool\" {\n  ", p.capacity,
                              "\n  tags = { autoscaled = var.autoscaling.enabled }\n", lifecycle,
                              "}\n");
    };
    EXPECT_THAT(autoscalingMessages(module(contract::strCat("  lifecycle {\n    ignore_changes = [",
                                                            p.ignored, "]\n  }\n"))),
                IsEmpty())
        << p.type;
    EXPECT_THAT(autoscalingMessages(module("")),
                ElementsAre(contract::strCat("the module uses var.autoscaling, but resource ",
                                             p.type, ".pool manages its desired capacity ",
                                             p.ignored, ": every apply resets the autoscaler")))
        << p.type;
  }
  // The Azure scale set's capacity is `instances`, not another provider's attribute.
  EXPECT_THAT(autoscalingMessages(R"(
resource "azurerm_linux_virtual_machine_scale_set" "pool" {
  instances = var.replicas
  tags      = { autoscaled = var.autoscaling.enabled }
  lifecycle {
    ignore_changes = [desired_capacity]
  }
}
)"),
              ElementsAre(HasSubstr("azurerm_linux_virtual_machine_scale_set.pool")));
}

TEST(ModuleChecks, AutoscalingCapacitySetFromReplicasStillWarns) {
  // AWS: min and max follow the autoscaler, but desired_capacity is reset to replicas.
  EXPECT_THAT(autoscalingMessages(R"(
resource "aws_autoscaling_group" "pool" {
  min_size         = var.autoscaling.enabled ? var.autoscaling.min : var.replicas
  max_size         = var.autoscaling.enabled ? var.autoscaling.max : var.replicas
  desired_capacity = var.replicas
}
)"),
              ElementsAre("the module uses var.autoscaling, but resource "
                          "aws_autoscaling_group.pool manages its desired capacity "
                          "desired_capacity: every apply resets the autoscaler"));
  // GCP: an autoscaler targets the manager, whose target_size is always replicas.
  EXPECT_THAT(autoscalingMessages(R"(
resource "google_compute_region_instance_group_manager" "pool" {
  target_size = var.replicas
}
resource "google_compute_region_autoscaler" "pool" {
  count  = var.autoscaling.enabled ? 1 : 0
  target = google_compute_region_instance_group_manager.pool.id
  autoscaling_policy {
    min_replicas = var.autoscaling.min
    max_replicas = var.autoscaling.max
  }
}
)"),
              ElementsAre("the module uses var.autoscaling, but resource "
                          "google_compute_region_instance_group_manager.pool manages its desired "
                          "capacity target_size: every apply resets the autoscaler"));
}

TEST(ModuleChecks, AutoscalingCapacityNullWhileAnAutoscalerTargetsIt) {
  const auto gcp = [](std::string_view manager, std::string_view target_size,
                      std::string_view autoscaler, std::string_view target) {
    return autoscalingMessages(contract::strCat(
        "resource \"", manager, "\" \"pool\" {\n  ", target_size, "\n}\nresource \"", autoscaler,
        "\" \"pool\" {\n  count  = var.autoscaling.enabled ? 1 : 0\n  target = ", target, "\n}\n"));
  };
  constexpr std::string_view kRegional = "google_compute_region_instance_group_manager";
  constexpr std::string_view kRegionalAutoscaler = "google_compute_region_autoscaler";
  constexpr std::string_view kZonal = "google_compute_instance_group_manager";
  constexpr std::string_view kZonalAutoscaler = "google_compute_autoscaler";
  const std::string regional_target = contract::strCat(kRegional, ".pool.id");
  const std::string zonal_target = contract::strCat(kZonal, ".pool.self_link");
  for (std::string_view ok : {
           "target_size = var.autoscaling.enabled ? null : var.replicas",
           "target_size = (var.autoscaling.enabled ? (null) : var.replicas)",
           "target_size = !var.autoscaling.enabled ? var.replicas : null",
           "target_size = var.autoscaling.enabled == false ? var.replicas : null",
           "target_size = var.autoscaling[\"enabled\"] || var.pinned ? null : var.replicas",
           "target_size = null",
           "# target_size omitted",
       }) {
    EXPECT_THAT(gcp(kRegional, ok, kRegionalAutoscaler, regional_target), IsEmpty()) << ok;
    EXPECT_THAT(gcp(kZonal, ok, kZonalAutoscaler, zonal_target), IsEmpty()) << ok;
  }
  // Set while autoscaling is on, or on a condition the check cannot decide.
  for (std::string_view bad : {
           "target_size = var.replicas",
           "target_size = var.autoscaling.enabled ? var.replicas : null",
           "target_size = var.autoscaling.enabled && var.pinned ? null : var.replicas",
           "target_size = local.autoscaled ? null : var.replicas",
       }) {
    EXPECT_THAT(gcp(kRegional, bad, kRegionalAutoscaler, regional_target), SizeIs(1)) << bad;
  }
  // Null needs an autoscaler of the manager's kind that targets this manager.
  const std::string_view null_on = "target_size = var.autoscaling.enabled ? null : var.replicas";
  EXPECT_THAT(gcp(kRegional, null_on, kRegionalAutoscaler, "var.other_manager"), SizeIs(1));
  EXPECT_THAT(gcp(kZonal, null_on, kRegionalAutoscaler, zonal_target), SizeIs(1));
  EXPECT_THAT(autoscalingMessages(contract::strCat("resource \"", kRegional, "\" \"pool\" {\n  ",
                                                   null_on, "\n}\n")),
              SizeIs(1));
  // Only for a row with an autoscaler: an Azure scale set's null instances is not left alone.
  EXPECT_THAT(autoscalingMessages(R"(
resource "azurerm_linux_virtual_machine_scale_set" "pool" {
  instances = var.autoscaling.enabled ? null : var.replicas
}
resource "azurerm_monitor_autoscale_setting" "pool" {
  target_resource_id = azurerm_linux_virtual_machine_scale_set.pool.id
}
)"),
              SizeIs(1));
}

TEST(ModuleChecks, AutoscalingFixedPoolOnlyWhileAutoscalingIsOff) {
  const auto oci = [](std::string_view autoscaled_lifecycle, std::string_view fixed_count) {
    return autoscalingMessages(contract::strCat(R"(
resource "oci_core_instance_pool" "autoscaled" {
  count = var.autoscaling.enabled ? 1 : 0
  size  = var.replicas
)",
                                                autoscaled_lifecycle, R"(}
resource "oci_core_instance_pool" "fixed" {
  )",
                                                fixed_count, R"(
  size = var.replicas
}
)"));
  };
  const std::string_view ignore_size = "  lifecycle {\n    ignore_changes = [size]\n  }\n";
  for (std::string_view ok : {
           "count = var.autoscaling.enabled ? 0 : 1",
           "count = !var.autoscaling.enabled ? 1 : 0",
           "for_each = var.autoscaling.enabled ? toset([]) : toset([\"fixed\"])",
           "for_each = var.autoscaling.enabled ? {} : { fixed = true }",
       }) {
    EXPECT_THAT(oci(ignore_size, ok), IsEmpty()) << ok;
  }
  for (std::string_view bad : {
           "count = var.autoscaling.enabled ? 1 : 0",
           "count = 1",
           "count = local.fixed ? 1 : 0",
           "for_each = var.autoscaling.enabled ? toset([\"fixed\"]) : toset([])",
       }) {
    EXPECT_THAT(oci(ignore_size, bad),
                ElementsAre(HasSubstr("oci_core_instance_pool.fixed manages its desired "
                                      "capacity size")))
        << bad;
  }
  // The fixed pool does not excuse the autoscaled one.
  EXPECT_THAT(oci("", "count = var.autoscaling.enabled ? 0 : 1"),
              ElementsAre(HasSubstr("oci_core_instance_pool.autoscaled manages")));
}

TEST(ModuleChecks, AutoscaledPoolsOfEachProviderPass) {
  for (std::string_view dir :
       {"machinepool-aws", "machinepool-azure", "machinepool-gcp", "machinepool-oci"}) {
    EXPECT_THAT(summary(lint(testing::testdata() / dir, "machinepool")), IsEmpty()) << dir;
  }
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
