// config/prometheus checked by the tools of the Prometheus version the rig
// builds (test/rig/build/prometheus.sh; no rig is started):
// - `promtool check rules` accepts the shipped alerts and `promtool test
//   rules` passes rules_test.yaml; a unit test that cannot fail proves
//   nothing, so each alert is also replaced by one that never fires and one
//   that always fires, and promtool must then fail;
// - every dashboard query parses (Prometheus's parser, and promtool on the
//   queries as recording rules) and names only series the manager's
//   registry exports;
// - `promtool check metrics` on the manager's exposition.
// What each alert means: docs/runbooks/.
#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/prometheus/support.h"
#include "test/rig/fixture.h"

namespace captf::prometheus {
namespace {

using ::testing::HasSubstr;

class PromtoolTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    // rig::tools() exits the binary when the build fails: a missing promtool
    // is a failure, never a skip.
    ASSERT_TRUE(std::filesystem::is_regular_file(rig::tools().promtool)) << rig::tools().promtool;
  }

  // Writes `prometheus_rule`'s groups as captf-rules.yaml next to a copy of
  // rules_test.yaml (which names that file) and runs `promtool test rules`.
  rig::CommandResult testRules(const YAML::Node& prometheus_rule) {
    writeFile(dir_.path() + "/captf-rules.yaml", ruleFile(prometheus_rule));
    writeFile(dir_.path() + "/rules_test.yaml",
              readFile(sourceDir() + "/test/prometheus/rules_test.yaml"));
    return rig::run({rig::tools().promtool, "test", "rules", dir_.path() + "/rules_test.yaml"});
  }

  rig::CommandResult checkRules(const std::string& rule_file) {
    const std::string path = dir_.path() + "/check.yaml";
    writeFile(path, rule_file);
    return rig::run({rig::tools().promtool, "check", "rules", path});
  }

  TempDir dir_;
};

TEST_F(PromtoolTest, CheckRulesAcceptsTheShippedAlerts) {
  const rig::CommandResult r = checkRules(ruleFile(shippedRule()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("SUCCESS: 11 rules found"));
}

TEST_F(PromtoolTest, CheckRulesRefusesABrokenExpression) {
  YAML::Node rule = shippedRule();
  YAML::Node first = rule["spec"]["groups"][0]["rules"][0];
  first["expr"] = first["expr"].as<std::string>() + ")";
  const rig::CommandResult r = checkRules(ruleFile(rule));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("parse error"));
}

TEST_F(PromtoolTest, UnitTestsOfEveryAlertPass) {
  const rig::CommandResult r = testRules(shippedRule());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("SUCCESS"));
}

TEST_F(PromtoolTest, UnitTestsFailWhenAnAlertNeverOrAlwaysFires) {
  const size_t alerts = shippedRule()["spec"]["groups"][0]["rules"].size();
  ASSERT_EQ(alerts, 11U);
  for (size_t i = 0; i < alerts; ++i) {
    for (const char* broken : {"vector(1) < 0", "vector(1)"}) {
      YAML::Node rule = shippedRule();
      YAML::Node alert = rule["spec"]["groups"][0]["rules"][i];
      SCOPED_TRACE(alert["alert"].as<std::string>() + " as " + broken);
      alert["expr"] = broken;
      const rig::CommandResult r = testRules(rule);
      EXPECT_NE(r.exit_code, 0) << r.output;
      EXPECT_THAT(r.output, HasSubstr(alert["alert"].as<std::string>()));
    }
  }
}

TEST_F(PromtoolTest, EveryDashboardQueryParsesAndNamesOnlyExportedSeries) {
  const std::vector<PanelQuery> queries = panelQueries(dashboard());
  ASSERT_GE(queries.size(), 12U);
  const std::vector<std::string> exported = exposedSeriesNames(managerExposition());
  ASSERT_THAT(exported, ::testing::Contains("controller_runtime_reconcile_total"));
  const std::set<std::string> known(exported.begin(), exported.end());

  // Prometheus's own parser (test/rig/promql) lists the selected names.
  std::string lines;
  std::string recording = "groups:\n- name: dashboard\n  rules:\n";
  for (size_t i = 0; i < queries.size(); ++i) {
    const std::string expr = expandGrafanaVariables(queries[i].expr);
    EXPECT_EQ(expr.find('$'), std::string::npos)
        << queries[i].panel << ": a Grafana variable the test does not expand: " << expr;
    lines += nlohmann::json(expr).dump() + "\n";
    recording += "  - record: dashboard:query_" + std::to_string(i) +
                 "\n    expr: " + nlohmann::json(expr).dump() + "\n";
  }
  const rig::CommandResult parsed = rig::run({rig::tools().promql_names}, lines);
  ASSERT_EQ(parsed.exit_code, 0) << parsed.output;
  std::istringstream results(parsed.output);
  std::string line;
  size_t i = 0;
  std::set<std::string> used;
  for (; std::getline(results, line) && i < queries.size(); ++i) {
    SCOPED_TRACE(queries[i].panel + " " + queries[i].ref_id + ": " + queries[i].expr);
    const nlohmann::json result = nlohmann::json::parse(line);
    EXPECT_FALSE(result.contains("error")) << result.value("error", "");
    ASSERT_TRUE(result.contains("names"));
    for (const nlohmann::json& name_json : result["names"]) {
      const std::string name = name_json.get<std::string>();
      EXPECT_TRUE(known.contains(name)) << name << " is not a series the manager exports";
      used.insert(name);
    }
  }
  EXPECT_EQ(i, queries.size()) << "promql-names answered fewer lines than it was given";
  EXPECT_GE(used.size(), 12U);

  // And promtool, on the queries as recording rules.
  const rig::CommandResult checked = checkRules(recording);
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_THAT(checked.output,
              HasSubstr("SUCCESS: " + std::to_string(queries.size()) + " rules found"));
}

// The parser filter itself reports what a hand-made query names and
// refuses one that does not parse.
TEST_F(PromtoolTest, PromqlNamesReportsNamesAndParseErrors) {
  const rig::CommandResult r =
      rig::run({rig::tools().promql_names},
               "\"sum by (le) (rate(a_bucket[5m])) / on() group_left {__name__=\\\"b\\\"}\"\n"
               "\"rate(a[5m]\"\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream out(r.output);
  std::string first;
  std::string second;
  std::getline(out, first);
  std::getline(out, second);
  EXPECT_EQ(nlohmann::json::parse(first)["names"], nlohmann::json({"a_bucket", "b"}));
  EXPECT_THAT(nlohmann::json::parse(second).value("error", ""), HasSubstr("parse error"));
}

// `promtool check metrics` lints an exposition (names, HELP, units, types);
// it reads the exposition on stdin and exits non-zero on any problem.
TEST_F(PromtoolTest, CheckMetricsOnTheManagersExposition) {
  const rig::CommandResult r =
      rig::run({rig::tools().promtool, "check", "metrics"}, managerExposition());
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

} // namespace
} // namespace captf::prometheus
