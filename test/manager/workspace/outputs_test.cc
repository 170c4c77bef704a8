#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/json_adapter.h"
#include "manager/workspace/outputs.h"
#include "test/manager/workspace/testing.h"

namespace captf::workspace {
namespace {

using ::captf::workspace::testing::testdata;
using ::testing::HasSubstr;
using json = nlohmann::json;

json stateOutputs(std::string_view file) {
  auto state = contract::parseJson(testdata(file), file);
  return (*state)["outputs"];
}

// {name: {value}} from {name: value}, as state stores outputs.
json outputs(const json& values) {
  json out = json::object();
  for (const auto& [name, value] : values.items()) {
    out[name] = {{"value", value}, {"type", "dynamic"}, {"sensitive", true}};
  }
  return out;
}

json runningHealth() {
  return {{"state", "running"}, {"healthy", true}};
}

TEST(ClusterOutputsTest, DecodesWhatOpenTofuWrote) {
  const ClusterOutputs out = decodeClusterOutputs(stateOutputs("tofu-cluster.tfstate"));
  ASSERT_EQ(out.verdict, OutputsVerdict::kValid) << out.message;
  ASSERT_TRUE(out.endpoint.has_value());
  EXPECT_EQ(out.endpoint->host, "lb.example.test");
  EXPECT_EQ(out.endpoint->port, 6443);
  ASSERT_EQ(out.failure_domains.size(), 3U);
  EXPECT_EQ(out.failure_domains[0].name, "zone-0");
  EXPECT_EQ(out.failure_domains[0].control_plane, true);
  EXPECT_EQ(out.failure_domains[0].attributes.at("region"), "r1");
  EXPECT_EQ(out.exports["network_id"], "net-1");
  ASSERT_TRUE(out.health.has_value());
  EXPECT_EQ(out.health->state, api::HealthState::kRunning);
  EXPECT_TRUE(clusterProvisioned(true, out));
  EXPECT_FALSE(clusterProvisioned(false, out));
  EXPECT_EQ(clusterFailureDomainNames(stateOutputs("tofu-cluster.tfstate")),
            (std::vector<std::string>{"zone-0", "zone-1", "zone-2"}));
}

TEST(ClusterOutputsTest, NullsDefaultsAndPending) {
  // Everything null (absent from state): exports {} and failure domains
  // cleared, health pending.
  ClusterOutputs out = decodeClusterOutputs(json::object());
  EXPECT_EQ(out.verdict, OutputsVerdict::kPending);
  EXPECT_THAT(out.message, HasSubstr("health"));
  EXPECT_EQ(out.exports, json::object());
  EXPECT_TRUE(out.failure_domains.empty());
  EXPECT_FALSE(out.endpoint.has_value());
  out = decodeClusterOutputs(
      outputs({{"health", runningHealth()}, {"failure_domains", json::array({{{"name", "a"}}})}}));
  EXPECT_EQ(out.verdict, OutputsVerdict::kValid) << out.message;
  EXPECT_EQ(out.failure_domains[0].control_plane, true); // optional(bool, true)
  out = decodeClusterOutputs(outputs({{"health", {{"state", "pending"}, {"healthy", false}}}}));
  EXPECT_EQ(out.verdict, OutputsVerdict::kValid);
  EXPECT_FALSE(clusterProvisioned(true, out));
}

TEST(ClusterOutputsTest, RejectsContractAndMarkerViolations) {
  const json many = [] {
    json list = json::array();
    for (int i = 0; i < 101; ++i) {
      list.push_back({{"name", "z" + std::to_string(i)}});
    }
    return list;
  }();
  struct Case {
    const char* name;
    json values;
    const char* part;
  };
  const Case cases[] = {
      {"health state outside the enum",
       {{"health", {{"state", "booting"}, {"healthy", true}}}},
       "health.state"},
      {"half-set endpoint",
       {{"health", runningHealth()}, {"control_plane_endpoint", {{"host", "h"}}}},
       "control_plane_endpoint"},
      {"port out of range",
       {{"health", runningHealth()}, {"control_plane_endpoint", {{"host", "h"}, {"port", 70000}}}},
       "port 1-65535"},
      {"empty host",
       {{"health", runningHealth()}, {"control_plane_endpoint", {{"host", ""}, {"port", 443}}}},
       "host must be"},
      {"duplicate domain",
       {{"health", runningHealth()},
        {"failure_domains", json::array({{{"name", "a"}}, {{"name", "a"}}})}},
       "appears twice"},
      {"too many domains", {{"health", runningHealth()}, {"failure_domains", many}}, "at most 100"},
      {"fractional export",
       {{"health", runningHealth()}, {"exports", {{"ratio", 0.5}}}},
       "integers only"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ClusterOutputs out = decodeClusterOutputs(outputs(c.values));
    EXPECT_EQ(out.verdict, OutputsVerdict::kInvalid);
    EXPECT_EQ(outputsReason(out.verdict), "OutputsInvalid");
    EXPECT_THAT(out.message, HasSubstr(c.part));
    EXPECT_FALSE(clusterProvisioned(true, out));
  }
}

TEST(HealthTest, MapsEveryReading) {
  struct Case {
    const char* state;
    bool healthy;
    api::ConditionStatus status;
    const char* reason;
  };
  const Case cases[] = {
      {"pending", true, api::ConditionStatus::kFalse, "InstancePending"},
      {"running", true, api::ConditionStatus::kTrue, "Healthy"},
      {"running", false, api::ConditionStatus::kFalse, "InstanceUnhealthy"},
      {"degraded", true, api::ConditionStatus::kFalse, "InstanceDegraded"},
      {"stopped", false, api::ConditionStatus::kFalse, "InstanceStopped"},
      {"terminated", true, api::ConditionStatus::kFalse, "InstanceTerminated"},
      {"unknown", true, api::ConditionStatus::kUnknown, "HealthUnknown"},
  };
  for (const Case& c : cases) {
    Health health{*api::parseEnum<api::HealthState>(c.state), c.healthy, std::nullopt, {}};
    const HealthCondition condition = healthCondition(health);
    EXPECT_EQ(condition.status, c.status) << c.state;
    EXPECT_EQ(condition.reason, c.reason) << c.state;
  }
  EXPECT_EQ(healthCondition(std::nullopt).reason, "HealthUnknown");
  Health with_text{api::HealthState::kRunning, false, "kubelet down", {"A", "B"}};
  EXPECT_EQ(healthCondition(with_text).message, "kubelet down: A; B");
}

TEST(EndpointTest, InputSourceAndWriteBack) {
  const std::optional<api::ApiEndpoint> none;
  const std::optional<api::ApiEndpoint> cluster = api::ApiEndpoint{"capi.example", 6443};
  const std::optional<api::ApiEndpoint> object = api::ApiEndpoint{"tc.example", 443};
  const std::optional<api::ApiEndpoint> half = api::ApiEndpoint{"h", 0};

  EXPECT_FALSE(endpointInput(EndpointSource::kModule, cluster, object).has_value());
  EXPECT_EQ(endpointInput(EndpointSource::kNone, cluster, object)->host, "capi.example");
  EXPECT_EQ(endpointInput(EndpointSource::kUser, half, object)->host, "tc.example");
  EXPECT_FALSE(endpointInput(EndpointSource::kNone, half, none).has_value());

  EXPECT_TRUE(shouldMarkUserEndpoint(EndpointSource::kNone, none, object));
  EXPECT_FALSE(shouldMarkUserEndpoint(EndpointSource::kNone, half, none));
  EXPECT_FALSE(shouldMarkUserEndpoint(EndpointSource::kModule, cluster, object));

  const ClusterOutputs out = decodeClusterOutputs(stateOutputs("tofu-cluster.tfstate"));
  auto write = decideEndpointWriteBack(EndpointSource::kNone, out, none, true);
  ASSERT_TRUE(write.has_value());
  EXPECT_EQ(write->endpoint.host, "lb.example.test");
  EXPECT_TRUE(write->mark_module);
  // At most once: never over a set spec, never from an apply with a user input.
  EXPECT_FALSE(decideEndpointWriteBack(EndpointSource::kModule, out, object, true).has_value());
  EXPECT_FALSE(decideEndpointWriteBack(EndpointSource::kNone, out, none, false).has_value());
  EXPECT_FALSE(decideEndpointWriteBack(EndpointSource::kUser, out, none, true).has_value());
  write = decideEndpointWriteBack(EndpointSource::kModule, out, none, true);
  ASSERT_TRUE(write.has_value());
  EXPECT_FALSE(write->mark_module);

  const ClusterOutputs empty = decodeClusterOutputs(outputs({{"health", runningHealth()}}));
  EXPECT_EQ(endpointAvailable(true, empty, none).reason, "WaitingForEndpoint");
  EXPECT_EQ(endpointAvailable(true, empty, cluster).reason, "EndpointAvailable");
  EXPECT_EQ(endpointAvailable(false, empty, none).reason, "EndpointAvailable");
  EXPECT_EQ(endpointAvailable(true, out, none).status, api::ConditionStatus::kTrue);

  api::ObjectMeta meta;
  EXPECT_EQ(readEndpointSource(meta), EndpointSource::kNone);
  meta.annotations["captf.io/endpoint-source"] = "module";
  EXPECT_EQ(readEndpointSource(meta), EndpointSource::kModule);
  EXPECT_EQ(
      clusterEndpoint(json{{"spec", {{"controlPlaneEndpoint", {{"host", "a"}, {"port", 1}}}}}})
          ->host,
      "a");
  EXPECT_FALSE(clusterEndpoint(json{{"spec", json::object()}}).has_value());
}

TEST(MachineOutputsTest, DecodesWhatOpenTofuWrote) {
  const MachineOutputs out =
      decodeMachineOutputs(stateOutputs("tofu-machine.tfstate"), "zone-a", std::nullopt, false);
  ASSERT_EQ(out.verdict, OutputsVerdict::kValid) << out.message;
  EXPECT_EQ(out.provider_id, "aws:///zone-a/i-0abc");
  ASSERT_EQ(out.addresses.size(), 4U);
  // InternalIP, InternalDNS, ExternalIP, ExternalDNS, Hostname.
  EXPECT_EQ(out.addresses[0].type, api::MachineAddressType::kInternalIP);
  EXPECT_EQ(out.addresses[1].type, api::MachineAddressType::kInternalDNS);
  EXPECT_EQ(out.addresses[2].type, api::MachineAddressType::kExternalIP);
  EXPECT_EQ(out.addresses[3].type, api::MachineAddressType::kHostname);
  EXPECT_EQ(out.failure_domain, "zone-a");
  EXPECT_FALSE(out.interruptible); // null (absent from state) is false
  EXPECT_EQ(healthCondition(out.health).reason, "InstanceUnhealthy");
  EXPECT_EQ(healthCondition(out.health).message, "kubelet not ready: NodeNotReady; DiskPressure");
  EXPECT_TRUE(machineProvisioned(true, out));
}

TEST(MachineOutputsTest, ProviderIdAndFailureDomainRules) {
  const json state = stateOutputs("tofu-machine.tfstate");
  EXPECT_EQ(decodeMachineOutputs(state, "zone-b", std::nullopt, false).verdict,
            OutputsVerdict::kFailureDomainMismatch);
  EXPECT_EQ(decodeMachineOutputs(state, std::nullopt, std::nullopt, false).verdict,
            OutputsVerdict::kValid);
  EXPECT_EQ(decodeMachineOutputs(state, "zone-a", "aws:///zone-a/i-0abc", true).verdict,
            OutputsVerdict::kValid);
  const MachineOutputs changed = decodeMachineOutputs(state, "zone-a", "aws:///other", true);
  EXPECT_EQ(changed.verdict, OutputsVerdict::kProviderIdChanged);
  EXPECT_EQ(outputsReason(changed.verdict), "ProviderIDChanged");

  const json empty_id =
      outputs({{"provider_id", ""}, {"addresses", json::array()}, {"health", runningHealth()}});
  MachineOutputs out = decodeMachineOutputs(empty_id, std::nullopt, std::nullopt, false);
  EXPECT_EQ(out.verdict, OutputsVerdict::kPending); // "" is null: not yet known
  EXPECT_FALSE(machineProvisioned(true, out));
  out = decodeMachineOutputs(empty_id, std::nullopt, "aws:///x", true);
  EXPECT_EQ(out.verdict, OutputsVerdict::kValid); // after provisioning: a terminated reading
  EXPECT_FALSE(out.provider_id.has_value());
  EXPECT_EQ(machineHealthCondition(out, true).reason, "InstanceTerminated");
  EXPECT_EQ(machineHealthCondition(out, false).reason, "Healthy");

  const json bad = outputs({{"provider_id", "p"},
                            {"addresses", json::array({{{"type", "Public"}, {"address", "x"}}})},
                            {"health", runningHealth()}});
  EXPECT_EQ(decodeMachineOutputs(bad, std::nullopt, std::nullopt, false).verdict,
            OutputsVerdict::kInvalid);
}

TEST(MachinePoolOutputsTest, SortsDeduplicatesAndCapsInstances) {
  json instances = json::array();
  for (int i = 0; i < 1001; ++i) {
    instances.push_back({{"provider_id", "p" + std::to_string(i)}, {"state", "running"}});
  }
  const MachinePoolOutputs out =
      decodeMachinePoolOutputs(outputs({{"provider_id", "asg-1"},
                                        {"provider_id_list", json::array({"b", "a", "b"})},
                                        {"replicas", 0},
                                        {"instances", instances},
                                        {"health", runningHealth()}}));
  EXPECT_EQ(out.verdict, OutputsVerdict::kInstancesTruncated) << out.message;
  EXPECT_EQ(outputsReason(out.verdict), "InstancesTruncated");
  EXPECT_TRUE(outputsUsable(out.verdict));
  EXPECT_EQ(out.provider_id_list, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(out.replicas, 0);
  EXPECT_EQ(out.instances.size(), kMaxPoolInstances);
  EXPECT_EQ(out.instances[0].state, api::HealthState::kRunning);
  EXPECT_TRUE(machinePoolProvisioned(true, out));

  EXPECT_EQ(decodeMachinePoolOutputs(outputs({{"provider_id_list", json::array()},
                                              {"replicas", -1},
                                              {"instances", json::array()},
                                              {"health", runningHealth()}}))
                .verdict,
            OutputsVerdict::kInvalid);
  // Scale to zero: empty list, no provider_id, provisioned.
  const MachinePoolOutputs zero =
      decodeMachinePoolOutputs(outputs({{"provider_id_list", json::array()},
                                        {"replicas", 0},
                                        {"instances", json::array()},
                                        {"health", runningHealth()}}));
  EXPECT_EQ(zero.verdict, OutputsVerdict::kValid) << zero.message;
  EXPECT_TRUE(machinePoolProvisioned(true, zero));
}

} // namespace
} // namespace captf::workspace
