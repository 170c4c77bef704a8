#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/digest.h"
#include "contract/inputs_hash.h"
#include "manager/workspace/inputs.h"

namespace captf::workspace {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

api::TerraformCluster terraformCluster() {
  api::TerraformCluster object;
  object.metadata.name = "demo";
  object.metadata.namespace_ = "team-a";
  object.metadata.annotations["cluster.x-k8s.io/cloned-from-name"] = "demo-template";
  object.spec.source.image = "reg/cluster:v1";
  return object;
}

json capiCluster() {
  return json::parse(R"({
    "metadata": {"name": "demo", "namespace": "team-a"},
    "spec": {
      "controlPlaneEndpoint": {"host": "", "port": 0},
      "topology": {"version": "v1.31.4+rke2r1"},
      "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}, "apiServerPort": 6443}
    },
    "status": {"initialization": {"controlPlaneInitialized": false}}
  })");
}

TEST(ClusterInputsTest, FromTheClusterAndItsInfrastructure) {
  const contract::ClusterInputs inputs = clusterInputs(terraformCluster(), capiCluster(), false);
  const json rendered = contract::toInputsJson(inputs);
  ASSERT_TRUE(contract::validateInputs(contract::Role::kCluster, rendered).ok());
  EXPECT_EQ(rendered["captf_cluster"], (json{{"name", "demo"}, {"namespace", "team-a"}}));
  EXPECT_EQ(rendered["captf_tags"]["captf.io/template"], "demo-template");
  EXPECT_EQ(rendered["control_plane_endpoint"], nullptr); // the Cluster's is not valid
  EXPECT_EQ(rendered["kubernetes_version"], "v1.31.4+rke2r1");
  EXPECT_EQ(rendered["control_plane_initialized"], false);
  EXPECT_EQ(rendered["cluster_network"], (json{{"pods", {"192.168.0.0/16"}},
                                               {"services", json::array()},
                                               {"service_domain", nullptr},
                                               {"api_server_port", 6443}}));
}

TEST(ClusterInputsTest, LatchesAndEndpointRules) {
  json cluster = capiCluster();
  cluster["spec"].erase("clusterNetwork");
  cluster["spec"].erase("topology");
  cluster["spec"]["controlPlaneEndpoint"] = {{"host", "capi.example"}, {"port", 6443}};
  api::TerraformCluster object = terraformCluster();
  json rendered = contract::toInputsJson(clusterInputs(object, cluster, true));
  EXPECT_EQ(rendered["control_plane_initialized"], true); // latched by the durable inputs
  EXPECT_EQ(rendered["cluster_network"], nullptr);
  EXPECT_EQ(rendered["kubernetes_version"], nullptr);
  EXPECT_EQ(rendered["control_plane_endpoint"], (json{{"host", "capi.example"}, {"port", 6443}}));
  object.metadata.annotations["captf.io/endpoint-source"] = "module";
  rendered = contract::toInputsJson(clusterInputs(object, cluster, false));
  EXPECT_EQ(rendered["control_plane_endpoint"], nullptr);
}

json bootstrapSecret(std::string_view value, std::optional<std::string_view> format) {
  json secret = {{"metadata", {{"name", "boot"}}},
                 {"data", {{"value", contract::base64Encode(value)}}}};
  if (format) {
    secret["data"]["format"] = contract::base64Encode(*format);
  }
  return secret;
}

TEST(MachineInputsTest, FromTheMachineAndBootstrapSecret) {
  auto bootstrap = bootstrapData(bootstrapSecret(std::string("\x1f\x8b\x00gz", 5), "ignition"));
  ASSERT_TRUE(bootstrap.ok()) << bootstrap.status();
  EXPECT_EQ(bootstrap->format, contract::BootstrapFormat::kIgnition);
  api::TerraformMachine object;
  object.metadata.name = "demo-md-0-x";
  object.metadata.namespace_ = "team-a";
  const json machine = json::parse(R"({
    "metadata": {"name": "demo-md-0-abc", "labels": {"cluster.x-k8s.io/control-plane": ""}},
    "spec": {"failureDomain": "zone-a", "version": "v1.31.4",
             "bootstrap": {"dataSecretName": "boot"}}})");
  EXPECT_EQ(machineBootstrapSecretName(machine), "boot");
  const json rendered =
      contract::toInputsJson(machineInputs(object, "demo", machine, *bootstrap, nullptr));
  ASSERT_TRUE(contract::validateInputs(contract::Role::kMachine, rendered).ok());
  EXPECT_EQ(rendered["machine_name"], "demo-md-0-abc");
  EXPECT_EQ(rendered["bootstrap_data"], contract::base64Encode(std::string("\x1f\x8b\x00gz", 5)));
  EXPECT_EQ(rendered["bootstrap_format"], "ignition");
  EXPECT_EQ(rendered["failure_domain"], "zone-a");
  EXPECT_EQ(rendered["control_plane"], true);
  EXPECT_EQ(rendered["captf_cluster_outputs"], json::object()); // null exports are {}
}

TEST(MachineInputsTest, BootstrapSecretProblems) {
  EXPECT_EQ(bootstrapData(nullptr).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bootstrapData(json{{"metadata", {{"name", "b"}}}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const auto bad = bootstrapData(bootstrapSecret("secret-payload", "yaml"));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::Not(HasSubstr("secret-payload")));
  EXPECT_EQ(bootstrapData(bootstrapSecret("x", std::nullopt))->format,
            contract::BootstrapFormat::kCloudConfig);
  EXPECT_FALSE(machineBootstrapSecretName(json{{"spec", {{"bootstrap", {{"dataSecretName", ""}}}}}})
                   .has_value());
}

json machinePool(std::optional<std::string> min, std::optional<std::string> max) {
  json pool = json::parse(R"({
    "metadata": {"name": "demo-mp-0"},
    "spec": {"replicas": 5, "failureDomains": ["a"],
             "template": {"metadata": {"labels": {"role": "worker"}},
                          "spec": {"version": "v1.31.4",
                                   "bootstrap": {"dataSecretName": "pool-boot"}}}}})");
  if (min) {
    pool["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"] =
        *min;
  }
  if (max) {
    pool["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"] =
        *max;
  }
  return pool;
}

TEST(MachinePoolInputsTest, AutoscalingAnnotations) {
  struct Case {
    std::optional<std::string> min, max;
    AutoscalingState state;
  };
  const Case cases[] = {
      {std::nullopt, std::nullopt, AutoscalingState::kDisabled},
      {"1", "3", AutoscalingState::kEnabled},
      {"0", "0", AutoscalingState::kEnabled},
      {"1", std::nullopt, AutoscalingState::kInvalid},
      {"3", "1", AutoscalingState::kInvalid},
      {"-1", "3", AutoscalingState::kInvalid},
      {"one", "3", AutoscalingState::kInvalid},
  };
  for (const Case& c : cases) {
    const AutoscalingReading reading = readAutoscaling(machinePool(c.min, c.max));
    EXPECT_EQ(reading.state, c.state) << c.min.value_or("-") << " " << c.max.value_or("-");
    EXPECT_EQ(reading.autoscaling.enabled, c.state == AutoscalingState::kEnabled);
    EXPECT_EQ(reading.message.empty(), c.state != AutoscalingState::kInvalid);
  }
}

TEST(MachinePoolInputsTest, ReplicasAndRendering) {
  const contract::Autoscaling off{};
  const contract::Autoscaling on{true, 1, 3};
  EXPECT_EQ(poolReplicasInput(machinePool(std::nullopt, std::nullopt), 9, off), 5);
  EXPECT_EQ(poolReplicasInput(json::object(), std::nullopt, off), 1);
  EXPECT_EQ(poolReplicasInput(machinePool("1", "3"), 2, on), 2);
  EXPECT_EQ(poolReplicasInput(machinePool("1", "3"), 9, on), 3);            // clamped
  EXPECT_EQ(poolReplicasInput(machinePool("1", "3"), std::nullopt, on), 3); // spec 5, clamped

  api::TerraformMachinePool object;
  object.metadata.name = "demo-mp-0";
  object.metadata.namespace_ = "team-a";
  object.status.emplace();
  // Before the first apply status.replicas is the 0 written for Cluster
  // API, not an observation: the MachinePool's request (5) is clamped.
  object.status->replicas = 0;
  EXPECT_EQ(
      machinePoolInputs(object, "demo", machinePool("1", "3"), {}, json::object(), {}).replicas, 3);
  object.status->initialization = api::Initialization{true};
  object.status->replicas = 2;
  const json rendered = contract::toInputsJson(machinePoolInputs(
      object, "demo", machinePool("1", "3"), {"boot", contract::BootstrapFormat::kCloudConfig},
      json{{"vpc", "v"}}, {"zone-a"}));
  ASSERT_TRUE(contract::validateInputs(contract::Role::kMachinePool, rendered).ok());
  EXPECT_EQ(rendered["replicas"], 2);
  EXPECT_EQ(rendered["autoscaling"], (json{{"enabled", true}, {"min", 1}, {"max", 3}}));
  EXPECT_EQ(rendered["node_labels"], (json{{"role", "worker"}}));
  EXPECT_EQ(rendered["failure_domains"], json::array({"a"}));
  EXPECT_EQ(rendered["cluster_failure_domains"], json::array({"zone-a"}));
  EXPECT_EQ(rendered["captf_cluster_outputs"], (json{{"vpc", "v"}}));
}

TEST(UserVariablesTest, MergesInOrderWithSensitivityOfTheWinner) {
  api::VariablesSource config_ref;
  config_ref.config_map_ref = api::VariablesSourceReference{"vars"};
  const json config_map = {
      {"metadata", {{"name", "vars"}, {"labels", {{"captf.io/variables", "true"}}}}},
      {"data", {{"region", "eu-1"}, {"size", "small"}}},
      {"binaryData", {{"blob", contract::base64Encode("b")}}}};
  api::VariablesSource secret_ref;
  secret_ref.secret_ref = api::VariablesSourceReference{"creds"};
  secret_ref.format = api::VariablesFormat::kJson;
  const json secret = {
      {"metadata", {{"name", "creds"}, {"labels", {{"captf.io/variables", "true"}}}}},
      {"data",
       {{"size", contract::base64Encode(R"({"cpu":2})")},
        {"token", contract::base64Encode("\"t\"")}}}};
  auto from_config = readVariablesSource(config_ref, config_map);
  auto from_secret = readVariablesSource(secret_ref, secret);
  ASSERT_TRUE(from_config.ok()) << from_config.status();
  ASSERT_TRUE(from_secret.ok()) << from_secret.status();
  const auto merged = mergeUserVariables(contract::Role::kMachine, json{{"token", "inline"}},
                                         {*from_config, *from_secret});
  ASSERT_TRUE(merged.ok()) << merged.status();
  ASSERT_EQ(merged->size(), 4U);
  EXPECT_EQ((*merged)[0].name, "blob");
  EXPECT_EQ((*merged)[2].name, "size");
  EXPECT_EQ((*merged)[2].value, (json{{"cpu", 2}}));
  EXPECT_EQ((*merged)[2].sensitivity, contract::Sensitivity::kSensitive);
  EXPECT_EQ((*merged)[3].name, "token");
  EXPECT_EQ((*merged)[3].value, "inline"); // inline wins, and is not sensitive
  EXPECT_EQ((*merged)[3].sensitivity, contract::Sensitivity::kNotSensitive);
}

TEST(UserVariablesTest, ReportsSourcesAndKeysNeverValues) {
  api::VariablesSource ref;
  ref.secret_ref = api::VariablesSourceReference{"creds"};
  EXPECT_EQ(readVariablesSource(ref, nullptr).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(readVariablesSource(ref, json{{"metadata", {{"name", "creds"}}}}).status().message(),
              HasSubstr("not labeled captf.io/variables=true"));
  ref.optional = true;
  EXPECT_TRUE(readVariablesSource(ref, nullptr)->data.empty());

  VariablesSourceData bad{VariablesSourceData::Kind::kSecret,
                          "creds",
                          api::VariablesFormat::kJson,
                          {{"machine_name", "\"x\""}, {"ok", "{hidden-value"}, {"bin", "\xff"}}};
  const auto merged = mergeUserVariables(contract::Role::kMachine, nullptr, {bad});
  ASSERT_EQ(merged.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(merged.status().message());
  EXPECT_THAT(message, HasSubstr("Secret creds"));
  EXPECT_THAT(message, HasSubstr("machine_name"));
  EXPECT_THAT(message, HasSubstr("key ok is not valid JSON"));
  EXPECT_THAT(message, HasSubstr("key bin is not UTF-8"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("hidden-value")));
}

TEST(RenderInputsTest, RendersHashesAndCapsTheSize) {
  contract::RenderRequest request;
  request.role = contract::Role::kCluster;
  request.inputs = contract::toInputsJson(clusterInputs(terraformCluster(), capiCluster(), false));
  auto rendered = renderInputs(request, "reg/cluster:v1");
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  EXPECT_EQ(rendered->inputs_hash, *contract::inputsHash(request, "reg/cluster:v1"));
  EXPECT_EQ(rendered->approval_hash, rendered->inputs_hash);
  EXPECT_EQ(rendered->bytes, rendered->root.totalBytes());
  EXPECT_NE(rendered->inputs_hash, renderInputs(request, "reg/cluster:v2")->inputs_hash);

  request.variables.push_back(
      {"huge", std::string(1'000'001, 'x'), contract::Sensitivity::kNotSensitive});
  const auto too_large = renderInputs(request, "reg/cluster:v1");
  EXPECT_EQ(too_large.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_GT(contract::renderedBytesOverLimit(too_large.status()).value_or(0), 1'000'000U);
}

} // namespace
} // namespace captf::workspace
