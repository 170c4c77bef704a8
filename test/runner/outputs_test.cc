#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/outputs.h"

namespace captf::runner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using json = nlohmann::json;

// `output -json` prints {name: {sensitive, type, value}}.
json outputJson(const json& values) {
  json out = json::object();
  for (const auto& [name, value] : values.items()) {
    out[name] = {{"sensitive", true}, {"type", "dynamic"}, {"value", value}};
  }
  return out;
}

const json kHealth = {
    {"state", "running"}, {"healthy", true}, {"message", nullptr}, {"reasons", json::array()}};

TEST(OutputsTest, ValidMachineOutputs) {
  const json outputs =
      outputJson({{"provider_id", "noop://m1"},
                  {"addresses", {{{"type", "InternalIP"}, {"address", "10.0.0.1"}}}},
                  {"failure_domain", nullptr},
                  {"interruptible", false},
                  {"health", kHealth},
                  {"extra", "ignored"}});
  const OutputsReport report = checkOutputs(contract::Role::kMachine, outputs);
  EXPECT_EQ(report.state, OutputsState::kValid);
  EXPECT_THAT(report.errors, IsEmpty());
  EXPECT_EQ(report.values["provider_id"], "noop://m1");
  EXPECT_EQ(report.values["addresses"][0]["address"], "10.0.0.1");
  EXPECT_FALSE(report.values.contains("extra"));
}

TEST(OutputsTest, ClusterExportsAreCheckedButWithheld) {
  const json outputs =
      outputJson({{"control_plane_endpoint", {{"host", "lb.example"}, {"port", 6443}}},
                  {"failure_domains", json::array()},
                  {"exports", {{"token", "secret-token-value"}}},
                  {"health", kHealth}});
  const OutputsReport report = checkOutputs(contract::Role::kCluster, outputs);
  EXPECT_EQ(report.state, OutputsState::kValid);
  EXPECT_FALSE(report.values.contains("exports"));
  EXPECT_THAT(report.withheld, ElementsAre("exports"));
  EXPECT_THAT(outputsJson(report, OutputsDetail::kFull).dump(),
              ::testing::Not(HasSubstr("secret-token-value")));

  const OutputsReport fractional =
      checkOutputs(contract::Role::kCluster, outputJson({{"control_plane_endpoint", nullptr},
                                                         {"failure_domains", nullptr},
                                                         {"exports", {{"ratio", 0.5}}},
                                                         {"health", kHealth}}));
  EXPECT_EQ(fractional.state, OutputsState::kInvalid);
  EXPECT_THAT(fractional.errors, ElementsAre(HasSubstr("exports.ratio")));
}

TEST(OutputsTest, InvalidBeatsPending) {
  OutputsReport report =
      checkOutputs(contract::Role::kMachinePool, outputJson({{"provider_id", nullptr},
                                                             {"provider_id_list", json::array()},
                                                             {"replicas", nullptr},
                                                             {"instances", json::array()},
                                                             {"health", kHealth}}));
  EXPECT_EQ(report.state, OutputsState::kPending);
  EXPECT_THAT(report.pending, ElementsAre("replicas"));

  report =
      checkOutputs(contract::Role::kMachinePool, outputJson({{"provider_id", nullptr},
                                                             {"provider_id_list", json::array()},
                                                             {"replicas", "three"},
                                                             {"instances", json::array()},
                                                             {"health", nullptr}}));
  EXPECT_EQ(report.state, OutputsState::kInvalid);
  EXPECT_THAT(report.pending, ElementsAre("health"));
  EXPECT_THAT(report.errors, ElementsAre(HasSubstr("replicas: must be an integer")));
}

// The runtimes leave null outputs out of state, so `output -json` omits
// them: absent means null.
TEST(OutputsTest, AbsentOutputsAreNull) {
  const OutputsReport report =
      checkOutputs(contract::Role::kMachinePool, outputJson({{"replicas", 2}}));
  EXPECT_EQ(report.state, OutputsState::kPending);
  EXPECT_THAT(report.pending, ElementsAre("provider_id_list", "instances", "health"));
  EXPECT_TRUE(report.values["provider_id"].is_null());

  const OutputsReport machine =
      checkOutputs(contract::Role::kMachine, outputJson({{"provider_id", "p"},
                                                         {"addresses", json::array()},
                                                         {"interruptible", false},
                                                         {"health", kHealth}}));
  EXPECT_EQ(machine.state, OutputsState::kValid);
  EXPECT_TRUE(machine.values["failure_domain"].is_null());
}

TEST(OutputsTest, EmptyProviderIdIsNull) {
  const OutputsReport report =
      checkOutputs(contract::Role::kMachine, outputJson({{"provider_id", ""},
                                                         {"addresses", json::array()},
                                                         {"failure_domain", nullptr},
                                                         {"interruptible", nullptr},
                                                         {"health", kHealth}}));
  EXPECT_EQ(report.state, OutputsState::kValid);
  EXPECT_TRUE(report.values["provider_id"].is_null());
}

TEST(OutputsTest, HealthStateIsAClosedEnum) {
  json health = kHealth;
  health["state"] = "exploded";
  const OutputsReport report =
      checkOutputs(contract::Role::kMachine, outputJson({{"provider_id", "p"},
                                                         {"addresses", json::array()},
                                                         {"failure_domain", nullptr},
                                                         {"interruptible", false},
                                                         {"health", health}}));
  EXPECT_EQ(report.state, OutputsState::kInvalid);
  EXPECT_THAT(report.errors, ElementsAre(HasSubstr("health.state: must be one of")));
}

TEST(OutputsTest, JsonDetailLevels) {
  OutputsReport report = unreadableOutputs("output -json exited 1");
  EXPECT_EQ(outputsJson(report, OutputsDetail::kFull),
            json({{"state", "unreadable"}, {"errors", {"output -json exited 1"}}}));
  report = checkOutputs(contract::Role::kMachine, outputJson({{"provider_id", "p"}}));
  EXPECT_TRUE(outputsJson(report, OutputsDetail::kFull).contains("values"));
  EXPECT_FALSE(outputsJson(report, OutputsDetail::kNoValues).contains("values"));
  EXPECT_TRUE(outputsJson(report, OutputsDetail::kNoValues).contains("pending"));
  EXPECT_EQ(outputsJson(report, OutputsDetail::kStateOnly), json({{"state", "pending"}}));
  EXPECT_EQ(checkOutputs(contract::Role::kMachine, json::array()).state, OutputsState::kUnreadable);
}

} // namespace
} // namespace captf::runner
