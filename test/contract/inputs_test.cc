#include <string>

#include <gtest/gtest.h>

#include "contract/inputs.h"

namespace captf::contract {
namespace {

using nlohmann::json;

CommonInputs common() {
  return {.cluster_name = "demo",
          .cluster_namespace = "team-a",
          .object_name = "demo-md-0-x1",
          .object_namespace = "team-a",
          .template_name = "demo-md-0"};
}

TEST(InputsTest, TagsCarryTheSixKeys) {
  EXPECT_EQ(captfTags(Role::kMachine, common()),
            json::parse(R"({"captf.io/cluster": "demo", "captf.io/namespace": "team-a",
                            "captf.io/kind": "TerraformMachine", "captf.io/name": "demo-md-0-x1",
                            "captf.io/managed-by": "captf", "captf.io/template": "demo-md-0"})"));
}

TEST(InputsTest, ClusterWithNothingSetRendersNulls) {
  const json inputs = toInputsJson(ClusterInputs{.common = common()});
  EXPECT_TRUE(inputs.at("control_plane_endpoint").is_null());
  EXPECT_TRUE(inputs.at("kubernetes_version").is_null());
  EXPECT_TRUE(inputs.at("cluster_network").is_null());
  EXPECT_EQ(inputs.at("control_plane_initialized"), false);
  EXPECT_FALSE(inputs.contains("captf_cluster_outputs"));
  EXPECT_EQ(inputs.at("captf_contract"), "v1alpha1");
  EXPECT_EQ(
      inputs.at("captf_object"),
      json::parse(R"({"kind":"TerraformCluster","name":"demo-md-0-x1","namespace":"team-a"})"));
  EXPECT_TRUE(validateInputs(Role::kCluster, inputs).ok());
}

TEST(InputsTest, ClusterNetworkEmitsEveryAttribute) {
  const json inputs = toInputsJson(ClusterInputs{
      .common = common(), .cluster_network = ClusterNetwork{.services = {"10.96.0.0/12"}}});
  EXPECT_EQ(inputs.at("cluster_network"),
            json::parse(R"({"pods": [], "services": ["10.96.0.0/12"], "service_domain": null,
                            "api_server_port": null})"));
  EXPECT_TRUE(validateInputs(Role::kCluster, inputs).ok());
}

TEST(InputsTest, MachineEncodesBootstrapDataAsPaddedBase64) {
  MachineInputs machine{.common = common(),
                        .cluster_outputs = nullptr,
                        .machine_name = "machine-1",
                        .bootstrap = {.value = std::string("\x1f\x8b\x00\xff", 4),
                                      .format = BootstrapFormat::kIgnition}};
  const json inputs = toInputsJson(machine);
  EXPECT_EQ(inputs.at("bootstrap_data"), "H4sA/w==");
  EXPECT_EQ(inputs.at("bootstrap_format"), "ignition");
  EXPECT_EQ(inputs.at("captf_cluster_outputs"), json::object()) << "null exports render as {}";
  EXPECT_TRUE(inputs.at("failure_domain").is_null());
  EXPECT_TRUE(validateInputs(Role::kMachine, inputs).ok());
}

TEST(InputsTest, PoolRendersEmptyCollectionsNotNull) {
  const json inputs = toInputsJson(MachinePoolInputs{.common = common(), .replicas = 3});
  EXPECT_EQ(inputs.at("failure_domains"), json::array());
  EXPECT_EQ(inputs.at("cluster_failure_domains"), json::array());
  EXPECT_EQ(inputs.at("node_labels"), json::object());
  EXPECT_EQ(inputs.at("autoscaling"), json::parse(R"({"enabled":false,"min":0,"max":0})"));
  EXPECT_EQ(inputs.at("replicas"), 3);
  EXPECT_EQ(inputs.at("bootstrap_data"), "");
  EXPECT_TRUE(validateInputs(Role::kMachinePool, inputs).ok());
}

TEST(InputsTest, BootstrapFormatDefaultsToCloudConfig) {
  EXPECT_EQ(parseBootstrapFormat(std::nullopt).value(), BootstrapFormat::kCloudConfig);
  EXPECT_EQ(parseBootstrapFormat("cloud-config").value(), BootstrapFormat::kCloudConfig);
  EXPECT_EQ(parseBootstrapFormat("ignition").value(), BootstrapFormat::kIgnition);
  const auto bad = parseBootstrapFormat("cloud-init");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cloud-init"), std::string::npos);
}

TEST(InputsTest, ValidationReportsEveryViolationAtOnce) {
  json inputs = toInputsJson(MachineInputs{.common = common(), .machine_name = "m"});
  inputs.erase("machine_name");
  inputs["control_plane"] = "yes";
  inputs["bootstrap_format"] = "cloud-init";
  inputs["failure_domain"] = 3;
  inputs["region"] = "eu-west-1";
  inputs["captf_cluster_outputs"] = json::parse(R"({"ratio": 0.5})");
  const absl::Status status = validateInputs(Role::kMachine, inputs);
  ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  const std::string message(status.message());
  for (const char* expected :
       {"machine_name: missing contract input", "control_plane: must be a bool, not a string",
        "bootstrap_format: must be one of cloud-config, ignition, not \"cloud-init\"",
        "failure_domain: must be a string, not an integer",
        "region: not a contract input of the machine role",
        "captf_cluster_outputs.ratio: fractional or exponent numbers are not allowed"}) {
    EXPECT_NE(message.find(expected), std::string::npos) << expected << "\nin: " << message;
  }
}

TEST(InputsTest, ValidationChecksNestedShapes) {
  json inputs =
      toInputsJson(ClusterInputs{.common = common(),
                                 .control_plane_endpoint = Endpoint{.host = "h", .port = 6443},
                                 .cluster_network = ClusterNetwork{}});
  inputs["control_plane_endpoint"]["extra"] = 1;
  inputs["control_plane_endpoint"]["port"] = 6443.5;
  inputs["cluster_network"].erase("pods");
  inputs["cluster_network"]["services"] = json::array({1});
  const std::string message(validateInputs(Role::kCluster, inputs).message());
  for (const char* expected : {"control_plane_endpoint: unknown attribute \"extra\"",
                               "control_plane_endpoint.port: must be an integer, not a fractional",
                               "cluster_network: missing attribute \"pods\"",
                               "cluster_network.services[0]: must be a string"}) {
    EXPECT_NE(message.find(expected), std::string::npos) << expected << "\nin: " << message;
  }
}

TEST(InputsTest, ValidationChecksIdentityConsistency) {
  json inputs = toInputsJson(MachinePoolInputs{.common = common()});
  inputs["captf_object"]["kind"] = "TerraformMachine";
  EXPECT_NE(validateInputs(Role::kMachinePool, inputs).message().find("captf_object.kind"),
            std::string::npos);

  inputs = toInputsJson(MachinePoolInputs{.common = common()});
  inputs["captf_tags"]["captf.io/name"] = "other";
  EXPECT_NE(validateInputs(Role::kMachinePool, inputs).message().find("captf.io/name"),
            std::string::npos);

  inputs = toInputsJson(MachinePoolInputs{.common = common()});
  inputs["captf_tags"]["captf.io/managed-by"] = "someone";
  EXPECT_FALSE(validateInputs(Role::kMachinePool, inputs).ok());

  inputs = toInputsJson(MachinePoolInputs{.common = common()});
  inputs["captf_tags"]["captf.io/extra"] = "x";
  EXPECT_NE(validateInputs(Role::kMachinePool, inputs).message().find("unknown key"),
            std::string::npos);

  inputs = toInputsJson(MachinePoolInputs{.common = common()});
  inputs["captf_contract"] = "v1alpha2";
  EXPECT_FALSE(validateInputs(Role::kMachinePool, inputs).ok());
}

TEST(InputsTest, ClusterRejectsClusterOutputsAndMachinesRequireThem) {
  json cluster = toInputsJson(ClusterInputs{.common = common()});
  cluster["captf_cluster_outputs"] = json::object();
  EXPECT_NE(validateInputs(Role::kCluster, cluster)
                .message()
                .find("captf_cluster_outputs: not a "
                      "contract input"),
            std::string::npos);
  json machine = toInputsJson(MachineInputs{.common = common()});
  machine.erase("captf_cluster_outputs");
  EXPECT_FALSE(validateInputs(Role::kMachine, machine).ok());
  EXPECT_FALSE(validateInputs(Role::kMachine, json::array()).ok());
}

TEST(InputsTest, ValidationNeverEchoesBootstrapData) {
  json inputs = toInputsJson(MachineInputs{.common = common(), .machine_name = "m"});
  inputs["bootstrap_data"] = json::array({"c2VjcmV0"});
  const absl::Status status = validateInputs(Role::kMachine, inputs);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().find("c2VjcmV0"), std::string::npos) << status;
}

} // namespace
} // namespace captf::contract
