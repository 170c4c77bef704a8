#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lint/report/output.h"

namespace captf::lint {
namespace {

Report sample() {
  Report r;
  r.module = "path/to/module";
  r.contract = "v1alpha1";
  r.role = "machine";
  r.file_set = "terraform";
  r.findings = {
      {"input/required", Severity::kError, "", 0, "contract input machine_name is not declared"},
      {"module/backend", Severity::kError, "backend.tf", 2,
       "terraform { backend } in the module: the generated root owns the backend, a module must "
       "not declare one"},
      {"input/type", Severity::kWarning, "vars.tf", 3, "declared as map(string) & <list>"},
      {"module/version", Severity::kInfo, "", 0, "no required_version"},
  };
  return r;
}

TEST(RenderText, LinesAndSummary) {
  EXPECT_EQ(renderText(sample()),
            "error input/required -:0 contract input machine_name is not declared\n"
            "error module/backend backend.tf:2 terraform { backend } in the module: the generated "
            "root owns the backend, a module must not declare one\n"
            "warning input/type vars.tf:3 declared as map(string) & <list>\n"
            "info module/version -:0 no required_version\n"
            "2 error(s), 1 warning(s), 1 info (read terraform files)\n");
  Report empty;
  empty.file_set = "no module";
  EXPECT_EQ(renderText(empty), "0 error(s), 0 warning(s), 0 info (read no module files)\n");
}

TEST(RenderJson, KeyOrderIndentationAndGoEscaping) {
  Report r = sample();
  r.findings.resize(1);
  r.findings.push_back(
      {"input/type", Severity::kWarning, "vars.tf", 3, "a <b> & c \xE2\x80\xA8 \"q\""});
  const auto json = renderJson(r);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(*json, R"({
  "module": "path/to/module",
  "contract": "v1alpha1",
  "role": "machine",
  "findings": [
    {
      "id": "input/required",
      "severity": "error",
      "file": "",
      "line": 0,
      "message": "contract input machine_name is not declared"
    },
    {
      "id": "input/type",
      "severity": "warning",
      "file": "vars.tf",
      "line": 3,
      "message": "a \u003cb\u003e \u0026 c \u2028 \"q\""
    }
  ],
  "summary": {
    "error": 1,
    "warning": 1,
    "info": 0
  }
}
)");
}

TEST(RenderJson, EmptyFindingsAreAnEmptyArray) {
  Report r;
  r.module = "m";
  r.contract = "v1alpha1";
  r.role = "cluster";
  const auto json = renderJson(r);
  ASSERT_TRUE(json.ok());
  EXPECT_THAT(*json, ::testing::HasSubstr("\"findings\": [],\n"));
}

TEST(RenderJson, InvalidUtf8FailsTheEncoding) {
  Report r = sample();
  r.findings[0].file = "bad\xFF.tf";
  EXPECT_THAT(renderJson(r).status().message(), ::testing::HasSubstr("the JSON encoding failed"));
}

TEST(RenderSarif, OneResultPerFinding) {
  const auto sarif = renderSarif(sample(), "0.1.0");
  ASSERT_TRUE(sarif.ok()) << sarif.status();
  const auto doc = nlohmann::json::parse(*sarif);
  EXPECT_EQ(doc["version"], "2.1.0");
  const auto& run = doc["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "tfcapi-lint");
  EXPECT_EQ(run["tool"]["driver"]["rules"].size(), 4u);
  ASSERT_EQ(run["results"].size(), 4u);
  EXPECT_EQ(run["results"][0]["level"], "error");
  EXPECT_EQ(run["results"][0]["locations"][0]["logicalLocations"][0]["name"], "path/to/module");
  EXPECT_EQ(run["results"][1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "backend.tf");
  EXPECT_EQ(run["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"], 2);
  EXPECT_EQ(run["results"][2]["level"], "warning");
  EXPECT_EQ(run["results"][3]["level"], "note");
}

TEST(Findings, SortAllowWarningAndExitCodes) {
  std::vector<Finding> f = {
      {"b/id", Severity::kWarning, "x.tf", 2, "m"}, {"a/id", Severity::kWarning, "x.tf", 2, "m"},
      {"z/id", Severity::kError, "", 0, "m"},       {"a/id", Severity::kWarning, "x.tf", 1, "z"},
      {"a/id", Severity::kError, "x.tf", 1, "e"},
  };
  sortFindings(f);
  EXPECT_EQ(f[0].id, "z/id");
  EXPECT_EQ(f[1].message, "e");
  EXPECT_EQ(f[2].message, "z");
  EXPECT_EQ(f[3].id, "a/id");
  EXPECT_EQ(f[4].id, "b/id");

  EXPECT_EQ(exitCodeFor(summarize(f), Strictness::kDefault), kExitFindings);
  allowWarnings(f, {"a/id"});
  EXPECT_EQ(f[1].severity, Severity::kError); // errors are never downgraded
  EXPECT_EQ(f[1].message, "e");
  EXPECT_EQ(f[2].severity, Severity::kInfo);
  EXPECT_EQ(f[2].message, "z (allowed by --allow-warning)");
  EXPECT_EQ(f[4].severity, Severity::kWarning);
  const Summary s = summarize(f);
  EXPECT_EQ(s.error, 2);
  EXPECT_EQ(s.warning, 1);
  EXPECT_EQ(s.info, 2);

  const Summary warnings_only{0, 1, 3};
  EXPECT_EQ(exitCodeFor(warnings_only, Strictness::kDefault), kExitOk);
  EXPECT_EQ(exitCodeFor(warnings_only, Strictness::kStrict), kExitFindings);
  EXPECT_EQ(exitCodeFor(Summary{0, 0, 5}, Strictness::kStrict), kExitOk);
}

} // namespace
} // namespace captf::lint
