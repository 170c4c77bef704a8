#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/environment.h"

namespace captf::runner {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

// The worked example of docs/behaviour/jobs.md#environment-shaping, verbatim.
TEST(EnvironmentTest, SpecWorkedExample) {
  const Environment container = {
      {"TF_IN_AUTOMATION", "1"},
      {"TF_INPUT", "0"},
      {"KUBE_NAMESPACE", "default"},
      {"CHECKPOINT_DISABLE", "1"},
      {"TF_LOG", "DEBUG"},
      {"TF_VAR_region", "us-east-1"},
      {"TF_WORKSPACE", "default"},
      {"TF_CLI_ARGS_apply", "-parallelism=1"},
      {"KUBE_CONFIG_PATH", "/tmp/kubeconfig"},
      {"HOME", "/root"},
      {"TMPDIR", "/tmp"},
      {"AWS_ACCESS_KEY_ID", "AKIA..."},
  };
  const ShapedEnvironment shaped = shapeEnvironment(
      container, EnvironmentPlan{.workdir = "/captf/work", .provider_mirror = false});
  EXPECT_THAT(shaped.env,
              ElementsAre(Pair("AWS_ACCESS_KEY_ID", "AKIA..."), Pair("CHECKPOINT_DISABLE", "1"),
                          Pair("HOME", "/captf/work"), Pair("KUBE_NAMESPACE", "default"),
                          Pair("TF_DATA_DIR", "/captf/work/.terraform"), Pair("TF_INPUT", "0"),
                          Pair("TF_IN_AUTOMATION", "1"), Pair("TMPDIR", "/tmp")));
  EXPECT_THAT(shaped.dropped, ElementsAre("KUBE_CONFIG_PATH", "TF_CLI_ARGS_apply", "TF_LOG",
                                          "TF_VAR_region", "TF_WORKSPACE"));
  EXPECT_FALSE(shaped.tmpdir_defaulted);
}

TEST(EnvironmentTest, MirrorSetsTheCliConfigAndTheRunnerOwnsTfVariables) {
  const Environment container = {{"TF_CLI_CONFIG_FILE", "/evil.tfrc"},
                                 {"TF_DATA_DIR", "/elsewhere"},
                                 {"TF_PLUGIN_CACHE_DIR", "/cache"},
                                 {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                 {"TMPDIR", ""}};
  const ShapedEnvironment shaped =
      shapeEnvironment(container, EnvironmentPlan{.workdir = "/w", .provider_mirror = true});
  EXPECT_EQ(shaped.env.at("TF_CLI_CONFIG_FILE"), "/w/cli.tfrc");
  EXPECT_EQ(shaped.env.at("TF_DATA_DIR"), "/w/.terraform");
  EXPECT_EQ(shaped.env.count("TF_PLUGIN_CACHE_DIR"), 0U);
  // KUBERNETES_* is not KUBE_*: in-cluster configuration needs it.
  EXPECT_EQ(shaped.env.at("KUBERNETES_SERVICE_HOST"), "10.0.0.1");
  // An empty TMPDIR counts as unset.
  EXPECT_EQ(shaped.env.at("TMPDIR"), "/w/tmp");
  EXPECT_TRUE(shaped.tmpdir_defaulted);
  EXPECT_THAT(shaped.dropped,
              ElementsAre("TF_CLI_CONFIG_FILE", "TF_DATA_DIR", "TF_PLUGIN_CACHE_DIR"));
}

TEST(EnvironmentTest, NoMirrorNoCliConfig) {
  const ShapedEnvironment shaped =
      shapeEnvironment({}, EnvironmentPlan{.workdir = "/captf/work", .provider_mirror = false});
  EXPECT_EQ(shaped.env.count("TF_CLI_CONFIG_FILE"), 0U);
  EXPECT_THAT(shaped.dropped, IsEmpty());
  EXPECT_EQ(shaped.env.at("HOME"), "/captf/work");
}

TEST(EnvironmentTest, CliConfigIsTheSpecifiedMirrorOnlyInstallation) {
  EXPECT_EQ(providerMirrorCliConfig("/captf/providers"), "provider_installation {\n"
                                                         "  filesystem_mirror {\n"
                                                         "    path    = \"/captf/providers\"\n"
                                                         "    include = [\"*/*/*\"]\n"
                                                         "  }\n"
                                                         "  direct {\n"
                                                         "    exclude = [\"*/*/*\"]\n"
                                                         "  }\n"
                                                         "}\n");
  EXPECT_EQ(cliConfigPath("/captf/work"), "/captf/work/cli.tfrc");
}

TEST(EnvironmentTest, ParseEnvironKeepsTheFirstOfDuplicatesAndSkipsJunk) {
  const char* envp[] = {"A=1", "B==x", "A=2", "NOEQUALS", "=novalue", "C=", nullptr};
  const Environment env = parseEnviron(envp);
  EXPECT_THAT(env, ElementsAre(Pair("A", "1"), Pair("B", "=x"), Pair("C", "")));
  EXPECT_THAT(toEnvStrings(env), ElementsAre("A=1", "B==x", "C="));
}

} // namespace
} // namespace captf::runner
