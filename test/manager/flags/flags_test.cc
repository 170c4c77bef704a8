// The manager's command line: what it refuses at start (docs/reference/flags.md).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/flags/flags.h"

namespace captf::flags {
namespace {

using ::testing::HasSubstr;

// Parses `args` as the manager does; the error CLI11 gives, "" when none.
std::string parseError(std::vector<std::string> args) {
  CLI::App app(kManagerDescription);
  ManagerFlags values;
  defineManagerFlags(app, values, "manager (test)");
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(FeatureGatesTest, TheLoggingGatesAreTakenWithGosBoolSpellings) {
  EXPECT_EQ(checkFeatureGates(""), "");
  EXPECT_EQ(checkFeatureGates("ContextualLogging=true"), "");
  EXPECT_EQ(checkFeatureGates("AllAlpha=false, AllBeta=F,LoggingAlphaOptions=1,"
                              "LoggingBetaOptions=True"),
            "");
  EXPECT_EQ(parseError({"--feature-gates=ContextualLogging=false,AllBeta=true"}), "");
}

// "name=stage:enabled" per gate, the shape of the kubernetes_feature_enabled series.
std::vector<std::string> gateStates(std::string_view value) {
  std::vector<std::string> out;
  for (const kube::FeatureGate& gate : featureGates(value)) {
    out.push_back(gate.name + "=" + gate.stage + ":" + (gate.enabled ? "1" : "0"));
  }
  return out;
}

TEST(FeatureGatesTest, EveryGateIsReportedWithItsStageAndComponentBasesDefault) {
  EXPECT_THAT(gateStates(""), ::testing::ElementsAre(
                                  "AllAlpha=ALPHA:0", "AllBeta=BETA:0", "ContextualLogging=BETA:1",
                                  "LoggingAlphaOptions=ALPHA:0", "LoggingBetaOptions=BETA:1"));
  EXPECT_THAT(gateStates(" ContextualLogging=false, LoggingAlphaOptions=T"),
              ::testing::ElementsAre("AllAlpha=ALPHA:0", "AllBeta=BETA:0",
                                     "ContextualLogging=BETA:0", "LoggingAlphaOptions=ALPHA:1",
                                     "LoggingBetaOptions=BETA:1"));
  // A later entry wins.
  EXPECT_THAT(gateStates("ContextualLogging=false,ContextualLogging=true"),
              ::testing::Contains("ContextualLogging=BETA:1"));
}

TEST(FeatureGatesTest, AllAlphaAndAllBetaSetTheGatesOfTheirStageLeftUnset) {
  EXPECT_THAT(gateStates("AllAlpha=true"),
              ::testing::ElementsAre("AllAlpha=ALPHA:1", "AllBeta=BETA:0",
                                     "ContextualLogging=BETA:1", "LoggingAlphaOptions=ALPHA:1",
                                     "LoggingBetaOptions=BETA:1"));
  EXPECT_THAT(gateStates("AllBeta=false,LoggingBetaOptions=true"),
              ::testing::ElementsAre("AllAlpha=ALPHA:0", "AllBeta=BETA:0",
                                     "ContextualLogging=BETA:0", "LoggingAlphaOptions=ALPHA:0",
                                     "LoggingBetaOptions=BETA:1"));
}

TEST(FeatureGatesTest, AnUnknownGateOrValueStopsTheManagerNamingIt) {
  EXPECT_EQ(checkFeatureGates("MachinePool=true"), "unrecognized feature gate: MachinePool");
  EXPECT_EQ(checkFeatureGates("ContextualLogging"), "missing bool value for ContextualLogging");
  EXPECT_THAT(checkFeatureGates("AllAlpha=yes"), HasSubstr("AllAlpha=yes"));
  EXPECT_THAT(parseError({"--feature-gates", "ContextualLogging=true,Bogus=false"}),
              HasSubstr("unrecognized feature gate: Bogus"));
  EXPECT_THAT(parseError({"--feature-gates", "ContextualLogging=true,Bogus=false"}),
              HasSubstr("--feature-gates"));
}

} // namespace
} // namespace captf::flags
