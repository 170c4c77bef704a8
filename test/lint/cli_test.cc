#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lint/cli.h"
#include "lint/contract_source.h"
#include "lint/finding.h"
#include "test/lint/test_util.h"

namespace captf::lint {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

CliRun run(std::vector<std::string> args) {
  args.insert(args.begin(), "tfcapi-lint");
  std::ostringstream out;
  std::ostringstream err;
  const ContractTables contracts;
  const BuildInfo build{"1.2.3", "abc123", "2026-01-01"};
  CliRun r;
  r.code = runCli(args, out, err, contracts, build);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string fixture(std::string_view name) {
  return (testing::testdata() / name).string();
}

std::string golden(std::string_view name) {
  std::ifstream in(testing::testdata() / "golden" / name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The golden files print the module argument as "MODULE".
std::string withModule(std::string text, std::string_view module) {
  for (std::size_t at = text.find("MODULE"); at != std::string::npos;
       at = text.find("MODULE", at + module.size())) {
    text.replace(at, 6, module);
  }
  return text;
}

TEST(Cli, TextReportMatchesGolden) {
  const CliRun r = run({"module", fixture("machine-bad-inputs"), "--role", "machine"});
  EXPECT_EQ(r.code, kExitFindings);
  EXPECT_EQ(r.out, golden("machine-bad-inputs.txt"));
  EXPECT_EQ(r.err, "");
}

TEST(Cli, JsonReportMatchesGolden) {
  const std::string dir = fixture("machinepool-bad-shape");
  const CliRun r = run({"module", "--json", "--role=machinepool", dir});
  EXPECT_EQ(r.code, kExitFindings);
  EXPECT_EQ(r.out, withModule(golden("machinepool-bad-shape.json"), dir));
}

TEST(Cli, CleanModuleExitsZero) {
  const CliRun r = run({"module", fixture("cluster-aws"), "--role", "cluster"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out, "0 error(s), 0 warning(s), 0 info (read terraform files)\n");
}

TEST(Cli, StrictAndAllowWarning) {
  const std::string dir = fixture("cluster-endpoint-null");
  EXPECT_EQ(run({"module", dir, "--role", "cluster"}).code, kExitOk);
  EXPECT_EQ(run({"module", dir, "--role", "cluster", "--strict"}).code, kExitFindings);
  const CliRun allowed = run({"module", dir, "--role", "cluster", "--strict", "--allow-warning",
                              "input/type,output/endpoint-never-set"});
  EXPECT_EQ(allowed.code, kExitOk);
  EXPECT_THAT(allowed.out, HasSubstr("info output/endpoint-never-set main.tf:40 output "
                                     "control_plane_endpoint is always null: without a user-set "
                                     "endpoint the cluster never gets one (allowed by "
                                     "--allow-warning)\n0 error(s), 0 warning(s), 1 info"));
  const CliRun repeated = run({"module", dir, "--role", "cluster", "--strict", "--allow-warning",
                               "x/y", "--allow-warning", "output/endpoint-never-set"});
  EXPECT_EQ(repeated.code, kExitOk);
}

// Issue 40: pools that leave their capacity to the autoscaler pass --strict
// (docs/lint.md#capacity-attributes).
TEST(Cli, StrictPassesAutoscaledPoolsOfEachProvider) {
  for (std::string_view name :
       {"machinepool-aws", "machinepool-azure", "machinepool-gcp", "machinepool-oci"}) {
    const CliRun r = run({"module", "--role", "machinepool", "--strict", fixture(name)});
    EXPECT_EQ(r.code, kExitOk) << name << "\n" << r.out << r.err;
  }
}

TEST(Cli, UnparsableModuleExitsTwo) {
  const CliRun r = run({"module", fixture("parse-error"), "--role", "cluster"});
  EXPECT_EQ(r.code, kExitUnparsable);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tfcapi-lint module: main.tf:9:18: expected a newline or \",\" after the "
                   "object item, but found identifier \"Env\"\n");
  EXPECT_EQ(run({"module", "/does/not/exist", "--role", "cluster"}).code, kExitUnparsable);
}

TEST(Cli, UsageErrorsExitThree) {
  const std::string dir = fixture("cluster-aws");
  CliRun r = run({"module", dir});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("tfcapi-lint module: --role is required\n\n"));
  EXPECT_THAT(r.err, HasSubstr("--allow-warning"));

  r = run({"module", "--role", "cluster"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("tfcapi-lint module: exactly one module directory is required\n"));
  EXPECT_EQ(run({"module", "--role", "cluster", dir, dir}).code, kExitUsage);

  r = run({"module", "--role", "cluster", "--contract", "v9", dir});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("tfcapi-lint module: unknown contract \"v9\" (known: v1alpha1)\n"));

  r = run({"module", "--role", "worker", dir});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("tfcapi-lint module: unknown role \"worker\" (known: cluster, "
                                "machine, machinepool)\n"));

  r = run({"module", "--role", "cluster", "--bogus", dir});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("tfcapi-lint module: "));

  r = run({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("module"));
  EXPECT_EQ(r.out, "");

  EXPECT_EQ(run({"frobnicate"}).code, kExitUsage);
  r = run({"version", "extra"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("tfcapi-lint version: unexpected argument \"extra\"\n\n"));

  r = run({"image", "example.com/module:1.0"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, StartsWith("tfcapi-lint image: --role is required\n"));
}

TEST(Cli, Version) {
  CliRun r = run({"--version"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out, "tfcapi-lint 1.2.3\n");
  r = run({"--version=raw"});
  EXPECT_EQ(r.out, "{Version:1.2.3 Commit:abc123 Date:2026-01-01}\n");
  r = run({"version"});
  EXPECT_EQ(r.out, "tfcapi-lint 1.2.3\n");
  r = run({"version", "--json"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out, R"({
  "version": "1.2.3",
  "commit": "abc123",
  "date": "2026-01-01",
  "contract": [
    "v1alpha1"
  ]
}
)");
}

TEST(Cli, SarifOutput) {
  const CliRun r =
      run({"module", fixture("cluster-endpoint-null"), "--role", "cluster", "--sarif"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("\"ruleId\": \"output/endpoint-never-set\""));
  EXPECT_EQ(
      run({"module", fixture("cluster-endpoint-null"), "--role", "cluster", "--sarif", "--json"})
          .code,
      kExitUsage);
}

} // namespace
} // namespace captf::lint
