#include <functional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "contract/inputs_hash.h"
#include "test/contract/fixtures.h"
#include "test/contract/test_util.h"

namespace captf::contract {
namespace {

using nlohmann::json;

constexpr std::string_view kImage = "registry.example.com/modules/aws-machine:v1.2.3";

std::string hashOf(const RenderRequest& request, std::string_view image = kImage,
                   HashView view = HashView::kApply) {
  auto hash = inputsHash(request, image, view);
  EXPECT_TRUE(hash.ok()) << hash.status();
  return hash.ok() ? *hash : std::string();
}

TEST(InputsHashTest, HasTheSchemePrefixAndSha256Hex) {
  const std::regex format("^h2:[0-9a-f]{64}$");
  for (const RenderRequest& request :
       {testing::clusterRequest(), testing::machineRequest(), testing::machinePoolRequest()}) {
    EXPECT_TRUE(std::regex_match(hashOf(request), format)) << hashOf(request);
  }
}

TEST(InputsHashTest, GoldenValuesArePinned) {
  // A change here re-applies every provisioned mutable object: it needs a
  // new scheme identifier, not a new golden.
  const std::string text = "cluster " + hashOf(testing::clusterRequest()) + "\nmachine " +
                           hashOf(testing::machineRequest()) + "\nmachinepool " +
                           hashOf(testing::machinePoolRequest()) + "\n";
  testing::expectGolden("inputs-hashes.txt", text);
}

TEST(InputsHashTest, KeyOrderOfTheSourceJsonDoesNotMatter) {
  RenderRequest a = testing::machineRequest();
  RenderRequest b = a;
  a.inputs["captf_cluster_outputs"] =
      json::parse(R"({"z": 1, "a": {"y": [1, 2], "b": "c"}, "m": null})");
  b.inputs["captf_cluster_outputs"] =
      json::parse(R"({"m": null, "a": {"b": "c", "y": [1, 2]}, "z": 1})");
  EXPECT_EQ(hashOf(a), hashOf(b));
}

TEST(InputsHashTest, VariableOrderDoesNotMatter) {
  RenderRequest a = testing::clusterRequest();
  RenderRequest b = a;
  std::swap(b.variables[0], b.variables[1]);
  EXPECT_EQ(hashOf(a), hashOf(b));
}

TEST(InputsHashTest, ListOrderMatters) {
  RenderRequest a = testing::machinePoolRequest();
  RenderRequest b = a;
  b.inputs["cluster_failure_domains"] = json::array({"zone-b", "zone-a"});
  EXPECT_NE(hashOf(a), hashOf(b));
}

TEST(InputsHashTest, EveryInputChangeGivesANewHash) {
  using testing::fixtureCommon;
  const auto base_pool = [] {
    return MachinePoolInputs{.common = fixtureCommon("mp", "tmpl"),
                             .cluster_outputs =
                                 json::parse(R"({"network_id": "net-1", "ids": [1, 2]})"),
                             .machinepool_name = "mp",
                             .replicas = 3,
                             .bootstrap = {.value = "#cloud-config\n"},
                             .failure_domains = {"a"},
                             .cluster_failure_domains = {"a", "b"},
                             .kubernetes_version = "v1.31.0",
                             .node_labels = {{"k", "v"}},
                             .autoscaling = {}};
  };
  const std::vector<std::function<void(MachinePoolInputs&)>> mutations = {
      [](MachinePoolInputs& p) { p.common.cluster_name = "other"; },
      [](MachinePoolInputs& p) { p.common.cluster_namespace = "other"; },
      [](MachinePoolInputs& p) { p.common.object_name = "other"; },
      [](MachinePoolInputs& p) { p.common.object_namespace = "other"; },
      [](MachinePoolInputs& p) { p.common.template_name = "other"; },
      [](MachinePoolInputs& p) { p.cluster_outputs["network_id"] = "net-2"; },
      [](MachinePoolInputs& p) { p.cluster_outputs["ids"][1] = 3; },
      [](MachinePoolInputs& p) { p.cluster_outputs["new"] = nullptr; },
      [](MachinePoolInputs& p) { p.machinepool_name = "other"; },
      [](MachinePoolInputs& p) { p.replicas = 4; },
      [](MachinePoolInputs& p) { p.bootstrap.value += ' '; },
      [](MachinePoolInputs& p) { p.bootstrap.format = BootstrapFormat::kIgnition; },
      [](MachinePoolInputs& p) { p.failure_domains.clear(); },
      [](MachinePoolInputs& p) { p.cluster_failure_domains.pop_back(); },
      [](MachinePoolInputs& p) { p.kubernetes_version = std::nullopt; },
      [](MachinePoolInputs& p) { p.kubernetes_version = "v1.31.0+rke2r1"; },
      [](MachinePoolInputs& p) { p.node_labels["k"] = "w"; },
      [](MachinePoolInputs& p) { p.node_labels["k2"] = "v"; },
      [](MachinePoolInputs& p) { p.autoscaling = {.enabled = true, .min = 3, .max = 3}; },
  };
  std::set<std::string> hashes = {
      hashOf({.role = Role::kMachinePool, .inputs = toInputsJson(base_pool())})};
  for (std::size_t i = 0; i < mutations.size(); ++i) {
    MachinePoolInputs pool = base_pool();
    mutations[i](pool);
    const std::string hash = hashOf({.role = Role::kMachinePool, .inputs = toInputsJson(pool)});
    EXPECT_TRUE(hashes.insert(hash).second) << "mutation " << i << " did not change the hash";
  }

  const auto base_cluster = [] {
    return ClusterInputs{
        .common = fixtureCommon("c", ""),
        .control_plane_endpoint = Endpoint{.host = "h", .port = 6443},
        .kubernetes_version = "v1.31.0",
        .control_plane_initialized = false,
        .cluster_network = ClusterNetwork{
            .pods = {"p"}, .services = {"s"}, .service_domain = "d", .api_server_port = 6443}};
  };
  const std::vector<std::function<void(ClusterInputs&)>> cluster_mutations = {
      [](ClusterInputs& c) { c.control_plane_endpoint->host = "h2"; },
      [](ClusterInputs& c) { c.control_plane_endpoint->port = 443; },
      [](ClusterInputs& c) { c.control_plane_endpoint.reset(); },
      [](ClusterInputs& c) { c.kubernetes_version.reset(); },
      [](ClusterInputs& c) { c.control_plane_initialized = true; },
      [](ClusterInputs& c) { c.cluster_network->pods.clear(); },
      [](ClusterInputs& c) { c.cluster_network->services.emplace_back("t"); },
      [](ClusterInputs& c) { c.cluster_network->service_domain.reset(); },
      [](ClusterInputs& c) { c.cluster_network->api_server_port = 8443; },
      [](ClusterInputs& c) { c.cluster_network.reset(); },
  };
  hashes = {hashOf({.role = Role::kCluster, .inputs = toInputsJson(base_cluster())})};
  for (std::size_t i = 0; i < cluster_mutations.size(); ++i) {
    ClusterInputs cluster = base_cluster();
    cluster_mutations[i](cluster);
    EXPECT_TRUE(
        hashes.insert(hashOf({.role = Role::kCluster, .inputs = toInputsJson(cluster)})).second)
        << "cluster mutation " << i << " did not change the hash";
  }

  const auto base_machine = [] {
    return MachineInputs{.common = fixtureCommon("m", ""),
                         .machine_name = "m",
                         .bootstrap = {.value = "x"},
                         .failure_domain = "a",
                         .control_plane = false};
  };
  const std::vector<std::function<void(MachineInputs&)>> machine_mutations = {
      [](MachineInputs& m) { m.machine_name = "n"; },
      [](MachineInputs& m) { m.bootstrap.value = "y"; },
      [](MachineInputs& m) { m.failure_domain.reset(); },
      [](MachineInputs& m) { m.kubernetes_version = "v1"; },
      [](MachineInputs& m) { m.control_plane = true; },
      [](MachineInputs& m) { m.cluster_outputs = json::array(); },
  };
  hashes = {hashOf({.role = Role::kMachine, .inputs = toInputsJson(base_machine())})};
  for (std::size_t i = 0; i < machine_mutations.size(); ++i) {
    MachineInputs machine = base_machine();
    machine_mutations[i](machine);
    EXPECT_TRUE(
        hashes.insert(hashOf({.role = Role::kMachine, .inputs = toInputsJson(machine)})).second)
        << "machine mutation " << i << " did not change the hash";
  }
}

TEST(InputsHashTest, ImageAsWrittenIsHashed) {
  const RenderRequest request = testing::machineRequest();
  EXPECT_NE(hashOf(request, "registry.example.com/m:v1"),
            hashOf(request, "registry.example.com/m:v2"));
  EXPECT_NE(hashOf(request, "registry.example.com/m:v1"),
            hashOf(request, "registry.example.com/m@sha256:" + std::string(64, 'a')));
  EXPECT_EQ(inputsHash(request, "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(InputsHashTest, UserVariablesEnterOnlyWhenSet) {
  RenderRequest with = testing::clusterRequest();
  RenderRequest without = with;
  without.variables.clear();
  EXPECT_NE(hashOf(with), hashOf(without));

  RenderRequest changed_value = with;
  changed_value.variables[0].value = "us-east-1";
  EXPECT_NE(hashOf(with), hashOf(changed_value));

  RenderRequest changed_sensitivity = with;
  changed_sensitivity.variables[0].sensitivity = Sensitivity::kSensitive;
  EXPECT_NE(hashOf(with), hashOf(changed_sensitivity));

  // A string "1" and a JSON 1 (format String vs JSON) differ.
  RenderRequest string_one = without;
  string_one.variables = {{.name = "n", .value = "1"}};
  RenderRequest number_one = without;
  number_one.variables = {{.name = "n", .value = 1}};
  EXPECT_NE(hashOf(string_one), hashOf(number_one));
}

TEST(InputsHashTest, AutoscaledPoolHashesReplicasAsZero) {
  RenderRequest autoscaled = testing::machinePoolRequest();
  ASSERT_TRUE(autoscaled.inputs.at("autoscaling").at("enabled").get<bool>());
  RenderRequest more = autoscaled;
  more.inputs["replicas"] = 5;
  EXPECT_EQ(hashOf(autoscaled), hashOf(more));

  RenderRequest fixed = autoscaled;
  fixed.inputs["autoscaling"] = json::parse(R"({"enabled": false, "min": 0, "max": 0})");
  RenderRequest fixed_more = fixed;
  fixed_more.inputs["replicas"] = 5;
  EXPECT_NE(hashOf(fixed), hashOf(fixed_more));
  // Turning autoscaling on or off is itself a change.
  EXPECT_NE(hashOf(fixed), hashOf(autoscaled));
}

TEST(InputsHashTest, ApprovalViewIgnoresRotatingPoolBootstrapData) {
  RenderRequest pool = testing::machinePoolRequest();
  RenderRequest rotated = pool;
  rotated.inputs["bootstrap_data"] = "cm90YXRlZA==";
  EXPECT_NE(hashOf(pool), hashOf(rotated));
  EXPECT_EQ(hashOf(pool, kImage, HashView::kApproval),
            hashOf(rotated, kImage, HashView::kApproval));
  EXPECT_NE(hashOf(pool, kImage, HashView::kApproval), hashOf(pool));

  // Other roles: the approval view is the apply view.
  const RenderRequest cluster = testing::clusterRequest();
  EXPECT_EQ(hashOf(cluster, kImage, HashView::kApproval), hashOf(cluster));
  const RenderRequest machine = testing::machineRequest();
  EXPECT_EQ(hashOf(machine, kImage, HashView::kApproval), hashOf(machine));
}

TEST(InputsHashTest, FractionalNumbersAreUnhashable) {
  RenderRequest request = testing::machineRequest();
  request.inputs["captf_cluster_outputs"]["ratio"] = 0.5;
  const auto hash = inputsHash(request, kImage);
  ASSERT_EQ(hash.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(hash.status().message().find("captf_cluster_outputs.ratio"), std::string::npos)
      << hash.status();

  RenderRequest variable = testing::machineRequest();
  variable.variables = {{.name = "weight", .value = json::parse("[1, 2.5]")}};
  EXPECT_EQ(inputsHash(variable, kImage).status().code(), absl::StatusCode::kInvalidArgument);
}

} // namespace
} // namespace captf::contract
