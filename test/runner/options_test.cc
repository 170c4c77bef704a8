#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/options.h"

namespace captf::runner {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ParsedCommandLine parse(std::vector<std::string> args) {
  return parseCommandLine(args);
}

// What the manager passes for a guarded TerraformCluster apply (docs/behaviour/jobs.md).
TEST(OptionsTest, ParsesTheManagersClusterApplyArguments) {
  const ParsedCommandLine parsed = parse({
      "run",
      "--op=apply",
      "--bin=/captf/runtime",
      "--image=registry.example/mod:v1",
      "--module=/captf/module",
      "--providers=/captf/providers",
      "--workdir=/captf/work",
      "--config=/captf/config",
      "--lock-timeout=300s",
      "--stop-timeout=570s",
      "--backend-config=secret_suffix=0123456789abcdef-c",
      "--backend-config=namespace=ns1",
      "--backend-config=in_cluster_config=true",
      R"(--backend-config=labels={"captf.io/managed" = "true"})",
      "--guard-deletes",
      "--inputs-hash",
      "h2:abc",
      "--allow-deletes-hash=h2:abc",
      "--force-unlock",
      "lock-1",
  });
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  const Invocation& inv = parsed.invocation;
  EXPECT_EQ(inv.command, Command::kRun);
  const RunOptions& run = inv.run;
  EXPECT_EQ(run.operation, pb::OPERATION_APPLY);
  EXPECT_THAT(run.bin, ElementsAre("/captf/runtime"));
  EXPECT_EQ(run.image, "registry.example/mod:v1");
  EXPECT_EQ(run.lock_timeout, absl::Seconds(300));
  EXPECT_EQ(run.stop_timeout, absl::Seconds(570));
  EXPECT_THAT(run.backend_config,
              ElementsAre("secret_suffix=0123456789abcdef-c", "namespace=ns1",
                          "in_cluster_config=true", R"(labels={"captf.io/managed" = "true"})"));
  EXPECT_TRUE(run.guard_deletes);
  EXPECT_EQ(run.inputs_hash, "h2:abc");
  EXPECT_EQ(run.allow_deletes_hash, "h2:abc");
  EXPECT_EQ(run.force_unlock, "lock-1");
  EXPECT_EQ(run.result, "/dev/termination-log");
  EXPECT_FALSE(run.restore_resources.has_value());
}

TEST(OptionsTest, DefaultsAreTheSpecifiedOnes) {
  const ParsedCommandLine parsed = parse({"run", "--op=destroy"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  const RunOptions& run = parsed.invocation.run;
  EXPECT_THAT(run.bin, ElementsAre("/captf/runtime"));
  EXPECT_EQ(run.module, "/captf/module");
  EXPECT_EQ(run.providers, "/captf/providers");
  EXPECT_EQ(run.workdir, "/captf/work");
  EXPECT_EQ(run.config, "/captf/config");
  EXPECT_EQ(run.result, "/dev/termination-log");
  EXPECT_EQ(run.lock_timeout, absl::Minutes(5));
  EXPECT_EQ(run.stop_timeout, absl::Minutes(1));
  EXPECT_EQ(run.restore_chunks, 0);
  EXPECT_FALSE(run.guard_deletes);
  const LoggingOptions& log = parsed.invocation.logging;
  EXPECT_EQ(log.format, LogFormat::kText);
  EXPECT_EQ(log.verbosity, 0);
  EXPECT_EQ(log.flush_frequency, absl::Seconds(5));
}

TEST(OptionsTest, RepeatedBinReplacesTheDefaultThenAppends) {
  const ParsedCommandLine parsed =
      parse({"run", "--op=plan", "--bin", "/usr/bin/env", "--bin=tofu"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_THAT(parsed.invocation.run.bin, ElementsAre("/usr/bin/env", "tofu"));
}

TEST(OptionsTest, RestoreCountsAndBoolForms) {
  const ParsedCommandLine parsed = parse({"run", "--op=restore", "--restore-chunks=3",
                                          "--restore-resources", "7", "--guard-deletes=false"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.invocation.run.restore_chunks, 3);
  EXPECT_EQ(parsed.invocation.run.restore_resources, 7);
  EXPECT_FALSE(parsed.invocation.run.guard_deletes);
}

TEST(OptionsTest, LoggingFlagsAreAcceptedAnywhere) {
  const ParsedCommandLine parsed = parse(
      {"--logging-format=json", "run", "-v", "3", "--op=drift", "--vmodule=run=2,state=4",
       "--feature-gates=ContextualLogging=true,LoggingBetaOptions=false",
       "--log-json-info-buffer-size=64Ki", "--log-json-split-stream", "--log-flush-frequency=1s"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  const LoggingOptions& log = parsed.invocation.logging;
  EXPECT_EQ(log.format, LogFormat::kJson);
  EXPECT_EQ(log.verbosity, 3);
  EXPECT_EQ(log.vmodule, "run=2,state=4");
  EXPECT_EQ(log.feature_gates.at("ContextualLogging"), true);
  EXPECT_EQ(log.json_info_buffer_bytes, 64 * 1024);
  EXPECT_TRUE(log.json_split_stream);
  EXPECT_TRUE(log.splitStream());
  EXPECT_EQ(log.flush_frequency, absl::Seconds(1));
  for (const auto& v : {"-v=2", "-v2", "--v=2"}) {
    const ParsedCommandLine short_form = parse({"run", "--op=drift", v});
    ASSERT_TRUE(short_form.status.ok()) << v << ": " << short_form.status;
    EXPECT_EQ(short_form.invocation.logging.verbosity, 2) << v;
  }
}

TEST(OptionsTest, CopyAndVersion) {
  ParsedCommandLine parsed = parse({"copy", "/captf/bin/runner"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.invocation.command, Command::kCopy);
  EXPECT_EQ(parsed.invocation.copy_destination, "/captf/bin/runner");

  parsed = parse({"version"});
  ASSERT_TRUE(parsed.status.ok());
  EXPECT_EQ(parsed.invocation.command, Command::kVersion);
  parsed = parse({"--version"});
  ASSERT_TRUE(parsed.status.ok());
  EXPECT_EQ(parsed.invocation.command, Command::kVersion);
  parsed = parse({"run", "--op=apply", "-h"});
  ASSERT_TRUE(parsed.status.ok());
  EXPECT_EQ(parsed.invocation.command, Command::kHelp);
}

struct UsageCase {
  std::vector<std::string> args;
  std::string message;
};

// NOLINTNEXTLINE(readability-identifier-naming): gtest finds its printer by this name.
void PrintTo(const UsageCase& c, std::ostream* os) {
  *os << c.message;
}

class OptionsUsageTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(OptionsUsageTest, IsAUsageError) {
  const ParsedCommandLine parsed = parse(GetParam().args);
  EXPECT_TRUE(absl::IsInvalidArgument(parsed.status)) << parsed.status;
  EXPECT_THAT(std::string(parsed.status.message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    All, OptionsUsageTest,
    ::testing::Values(
        UsageCase{{}, "missing command"}, UsageCase{{"launch"}, "unknown command"},
        UsageCase{{"run"}, "--op is required"},
        UsageCase{{"run", "--op=deploy"}, "want apply, destroy, drift, refresh, restore or plan"},
        UsageCase{{"run", "--op=apply", "extra"}, "unexpected argument \"extra\""},
        UsageCase{{"run", "--op=apply", "--frobnicate"}, "unknown flag: --frobnicate"},
        UsageCase{{"run", "--op=apply", "--lock-timeout=soon"}, "want a duration"},
        UsageCase{{"run", "--op=apply", "--lock-timeout=-5s"}, "negative"},
        UsageCase{{"run", "--op=apply", "--stop-timeout=inf"}, "want a duration"},
        UsageCase{{"run", "--op=apply", "--restore-chunks=-1"}, "non-negative integer"},
        UsageCase{{"run", "--op=apply", "--guard-deletes=maybe"}, "want true or false"},
        UsageCase{{"run", "--op=apply", "--guard-deletes"}, "--guard-deletes needs --inputs-hash"},
        UsageCase{{"run", "--op=apply", "--backend-config=/etc/passwd"}, "want key=value"},
        UsageCase{{"run", "--op=apply", "--bin=tofu"}, "absolute path"},
        UsageCase{{"run", "--op=apply", "--job-name=j"}, "go together"},
        UsageCase{{"run", "--op=apply", "--job-name=j", "--event-object=v1/Pod"},
                  "<apiVersion>/<kind>"},
        UsageCase{{"run", "--op"}, "flag needs an argument: --op"},
        UsageCase{{"run", "--op=apply", "--logging-format=yaml"}, "want text or json"},
        UsageCase{{"run", "--op=apply", "-v=-1"}, "non-negative"},
        UsageCase{{"run", "--op=apply", "--vmodule=run"}, "pattern=N"},
        UsageCase{{"run", "--op=apply", "--feature-gates=Bogus=true"}, "unrecognized feature gate"},
        UsageCase{{"run", "--op=apply", "--log-text-info-buffer-size=1.5Mi"}, "quantity"},
        UsageCase{{"copy"}, "exactly one argument"},
        UsageCase{{"copy", "a", "b"}, "exactly one argument"},
        UsageCase{{"copy", "/x", "--op=apply"}, "only run takes it"},
        UsageCase{{"version", "now"}, "unexpected argument"},
        UsageCase{{"run", "--op=apply", "-x"}, "unknown shorthand flag"},
        // Git module sources.
        UsageCase{{"run", "--op=apply", "--git-url=file:///srv/repo.git"},
                  "URL scheme \"file\" is not supported"},
        UsageCase{{"run", "--op=apply", "--git-url=https://user:pw@example.com/r.git"},
                  "credentials in the Secret"},
        UsageCase{{"run", "--op=apply", "--git-commit=" + std::string(40, 'a')}, "need --git-url"},
        UsageCase{{"run", "--op=apply", "--git-max-bytes=1Mi"}, "need --git-url"},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-checkout=/captf/src", "--module=/captf/src"},
                  "--git-url needs --git-commit"},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-commit=ABCDEF0123456789ABCDEF0123456789ABCDEF01",
                   "--git-checkout=/captf/src", "--module=/captf/src"},
                  "40-digit lower-case hex"},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-commit=" + std::string(40, 'a'), "--module=/captf/src"},
                  "--git-url needs --git-checkout"},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-commit=" + std::string(40, 'a'), "--git-checkout=/captf/src"},
                  "--module must be a directory inside --git-checkout /captf/src"},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-commit=" + std::string(40, 'a'), "--git-checkout=/captf/src",
                   "--module=/captf/src/../etc"},
                  "inside --git-checkout"},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-commit=" + std::string(40, 'a'), "--git-checkout=/captf/src",
                   "--module=/captf/srcx"},
                  "inside --git-checkout"},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-commit=" + std::string(40, 'a'), "--git-checkout=relative",
                   "--module=/captf/src"},
                  "absolute directory path"},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-commit=" + std::string(40, 'a'), "--git-checkout=/captf/src",
                   "--module=/captf/src", "--git-ref=main"},
                  "want refs/heads/<branch> or refs/tags/<tag>"},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-commit=" + std::string(40, 'a'), "--git-checkout=/captf/src",
                   "--module=/captf/src", "--git-ref=refs/heads/a..b"},
                  "invalid argument \"refs/heads/a..b\" for \"--git-ref\""},
        UsageCase{{"run", "--op=apply", "--git-url=https://example.com/r.git",
                   "--git-commit=" + std::string(40, 'a'), "--git-checkout=/captf/src",
                   "--module=/captf/src", "--git-max-bytes=0"},
                  "positive quantity"}));

TEST(OptionsTest, ParsesAGitModuleSource) {
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  const ParsedCommandLine parsed = parse({
      "run",
      "--op=apply",
      "--git-url=git@github.com:org/modules.git",
      "--git-commit=" + commit,
      "--git-ref=refs/tags/v1.2.0",
      "--git-checkout=/captf/src/",
      "--module=/captf/src//modules/vpc/",
      "--git-credentials=/var/run/captf/git",
      "--git-max-bytes=64Mi",
  });
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  const RunOptions& run = parsed.invocation.run;
  ASSERT_TRUE(run.git_url.has_value());
  EXPECT_EQ(run.git_url->canonical, "ssh://git@github.com/org/modules.git");
  EXPECT_EQ(run.git_commit, commit);
  EXPECT_EQ(run.git_ref, "refs/tags/v1.2.0");
  // Normalised: the fetch and the --module check compare these.
  EXPECT_EQ(run.git_checkout, "/captf/src");
  EXPECT_EQ(run.module, "/captf/src/modules/vpc");
  EXPECT_EQ(run.git_credentials, "/var/run/captf/git");
  EXPECT_EQ(run.git_max_bytes, 64u << 20);

  const ParsedCommandLine root =
      parse({"run", "--op=plan", "--git-url=https://example.com/r.git", "--git-commit=" + commit,
             "--git-checkout=/captf/src", "--module=/captf/src"});
  ASSERT_TRUE(root.status.ok()) << root.status;
  EXPECT_EQ(root.invocation.run.git_max_bytes, 256u << 20);
  EXPECT_TRUE(root.invocation.run.git_ref.empty());
}

TEST(OptionsTest, UsageErrorStillFindsTheResultPath) {
  const ParsedCommandLine parsed =
      parse({"run", "--op=bogus", "--result", "/tmp/result", "--image=x"});
  EXPECT_FALSE(parsed.status.ok());
  EXPECT_EQ(parsed.invocation.run.result, "/tmp/result");
}

TEST(OptionsTest, EventObjectAcceptsGroupAndCoreApiVersions) {
  for (const std::string object :
       {"infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/ns/c1/uid-1",
        "v1/ConfigMap/ns/c1/uid-1"}) {
    const ParsedCommandLine parsed =
        parse({"run", "--op=apply", "--event-object=" + object, "--job-name=job-1"});
    EXPECT_TRUE(parsed.status.ok()) << object << ": " << parsed.status;
  }
}

TEST(OptionsTest, DoubleDashEndsFlags) {
  const ParsedCommandLine parsed = parse({"copy", "--", "--odd-name"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.invocation.copy_destination, "--odd-name");
}

// pflag's rules that CLI11 does not share, kept on CLI11 (runner/options.cc).

TEST(OptionsTest, UnderscoresInFlagNamesAreDashes) {
  const ParsedCommandLine parsed = parse(
      {"run", "--op=apply", "--lock_timeout=10s", "--log_flush_frequency", "2s",
       "--git_max-bytes=1Mi", "--git-url=https://example.com/r.git",
       "--git-commit=" + std::string(40, 'a'), "--git-checkout=/captf/src", "--module=/captf/src"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.invocation.run.lock_timeout, absl::Seconds(10));
  EXPECT_EQ(parsed.invocation.logging.flush_frequency, absl::Seconds(2));
  EXPECT_EQ(parsed.invocation.run.git_max_bytes, 1u << 20);
  // Only names: a value keeps its underscores.
  const ParsedCommandLine value = parse({"run", "--op=apply", "--inputs_hash", "a_b"});
  ASSERT_TRUE(value.status.ok()) << value.status;
  EXPECT_EQ(value.invocation.run.inputs_hash, "a_b");
  // An unknown flag is named as it was spelled.
  EXPECT_THAT(std::string(parse({"run", "--op=apply", "--no_such"}).status.message()),
              HasSubstr("unknown flag: --no_such"));
}

TEST(OptionsTest, AFlagsValueIsTheNextArgumentWhateverItIs) {
  const ParsedCommandLine parsed =
      parse({"run", "--op", "apply", "--image", "--", "--inputs-hash", "-x", "--expect-plan", "run",
             "--force-unlock=", "--backend-config", "labels=[a,b]"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  const RunOptions& run = parsed.invocation.run;
  EXPECT_EQ(run.operation, pb::OPERATION_APPLY);
  EXPECT_EQ(run.image, "--");
  EXPECT_EQ(run.inputs_hash, "-x");
  EXPECT_EQ(run.expect_plan, "run");
  EXPECT_EQ(run.force_unlock, "");
  // Not split at commas or brackets (pflag's stringArray).
  EXPECT_THAT(run.backend_config, ElementsAre("labels=[a,b]"));
}

TEST(OptionsTest, ALaterUseOfAFlagWins) {
  const ParsedCommandLine parsed =
      parse({"run", "--op=apply", "--op=plan", "--image=a", "--image", "b", "-v", "1", "-v3"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.invocation.run.operation, pb::OPERATION_PLAN);
  EXPECT_EQ(parsed.invocation.run.image, "b");
  EXPECT_EQ(parsed.invocation.logging.verbosity, 3);
}

TEST(OptionsTest, BoolFlagsTakeGoBoolsInlineOnly) {
  for (const auto& [arg, want] :
       std::vector<std::pair<std::string, bool>>{{"--guard-deletes", true},
                                                 {"--guard-deletes=true", true},
                                                 {"--guard-deletes=T", true},
                                                 {"--guard-deletes=1", true},
                                                 {"--guard-deletes=false", false},
                                                 {"--guard-deletes=F", false},
                                                 {"--guard-deletes=0", false}}) {
    const ParsedCommandLine parsed = parse({"run", "--op=apply", "--inputs-hash=h", arg});
    ASSERT_TRUE(parsed.status.ok()) << arg << ": " << parsed.status;
    EXPECT_EQ(parsed.invocation.run.guard_deletes, want) << arg;
  }
  // CLI11 would take these; Go's strconv.ParseBool does not.
  for (const std::string arg : {"--guard-deletes=yes", "--guard-deletes=on", "--guard-deletes="}) {
    EXPECT_THAT(std::string(parse({"run", "--op=apply", arg}).status.message()),
                HasSubstr("for \"--guard-deletes\" flag: want true or false"))
        << arg;
  }
  // A bool never takes the next argument.
  EXPECT_THAT(
      std::string(parse({"run", "--op=apply", "--inputs-hash=h", "--guard-deletes", "false"})
                      .status.message()),
      HasSubstr("run: unexpected argument \"false\""));
}

TEST(OptionsTest, ShorthandsAsPflagReadsThem) {
  EXPECT_THAT(std::string(parse({"run", "--op=apply", "-v"}).status.message()),
              HasSubstr("flag needs an argument: 'v' in -v"));
  EXPECT_THAT(std::string(parse({"run", "--op=apply", "-xv"}).status.message()),
              HasSubstr("unknown shorthand flag: 'x' in -xv"));
  // -h is a bool, so -hv reads -h, then -v with the next argument.
  EXPECT_EQ(parse({"run", "-hv", "2"}).invocation.command, Command::kHelp);
  EXPECT_EQ(parse({"-h=false", "version"}).invocation.command, Command::kVersion);
  EXPECT_THAT(std::string(parse({"run", "---op=apply"}).status.message()),
              HasSubstr("bad flag syntax: ---op=apply"));
}

TEST(OptionsTest, ErrorsComeInCommandLineOrder) {
  EXPECT_THAT(std::string(parse({"run", "--op=bogus", "--frobnicate"}).status.message()),
              HasSubstr("for \"--op\" flag"));
  EXPECT_THAT(std::string(parse({"run", "--frobnicate", "--op=bogus"}).status.message()),
              HasSubstr("unknown flag: --frobnicate"));
  EXPECT_THAT(std::string(parse({"run", "--lock-timeout=soon", "--op"}).status.message()),
              HasSubstr("want a duration"));
  // Help stops the parse where it is read.
  EXPECT_EQ(parse({"run", "-h", "--frobnicate", "--op=bogus"}).invocation.command, Command::kHelp);
  EXPECT_THAT(std::string(parse({"run", "--op=bogus", "--help"}).status.message()),
              HasSubstr("for \"--op\" flag"));
}

TEST(OptionsTest, TheFirstArgumentIsTheCommand) {
  // Flags may come before the command, run flags too.
  ParsedCommandLine parsed = parse({"--op=plan", "-v=2", "run"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.invocation.command, Command::kRun);
  EXPECT_EQ(parsed.invocation.run.operation, pb::OPERATION_PLAN);
  EXPECT_EQ(parsed.invocation.logging.verbosity, 2);
  // A later argument naming a command is an argument.
  parsed = parse({"copy", "run"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.invocation.copy_destination, "run");
  EXPECT_THAT(std::string(parse({"launch", "run", "--op=apply"}).status.message()),
              HasSubstr("only run takes it"));
  EXPECT_THAT(std::string(parse({"launch", "run"}).status.message()),
              HasSubstr("unknown command \"launch\""));
  EXPECT_THAT(std::string(parse({"--op=apply", "copy", "/x"}).status.message()),
              HasSubstr("unknown flag: --op (only run takes it)"));
  EXPECT_THAT(std::string(parse({"run", "--op=apply", "--", "--image=x"}).status.message()),
              HasSubstr("run: unexpected argument \"--image=x\""));
}

TEST(OptionsTest, UsageTextIsCli11sHelpOfEveryFlag) {
  const std::string text = usageText();
  for (const std::string want :
       {"Usage: runner", "copy", "run", "version", "run flags:", "global flags:", "--op",
        "--bin stringArray=/captf/runtime", "--lock-timeout duration=5m", "--git-max-bytes",
        "256Mi", "--restore-resources int", "--guard-deletes", "-v,--v int", "--vmodule",
        "--feature-gates", "--log-json-info-buffer-size quantity", "-h,--help", "--version"}) {
    EXPECT_THAT(text, HasSubstr(want));
  }
}

} // namespace
} // namespace captf::runner
