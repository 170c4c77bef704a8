// The shipped observability files, read without any tool: every alert of
// config/prometheus/rules.yaml links a runbook that exists, has a summary and
// a description, and is unit-tested in rules_test.yaml both firing and
// quiet; the dashboard is a Grafana model on a ${datasource} variable with
// the panels docs/runbooks/ refers to. promtool_test.cc runs the tools.
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/prometheus/support.h"

namespace captf::prometheus {
namespace {

using ::testing::HasSubstr;

constexpr char kRunbookBase[] =
    "https://github.com/captf-io/cluster-api-provider-terraform/blob/main/docs/runbooks/";

std::vector<YAML::Node> alertRules() {
  std::vector<YAML::Node> out;
  for (const YAML::Node& group : shippedRule()["spec"]["groups"]) {
    for (const YAML::Node& rule : group["rules"]) {
      out.push_back(rule);
    }
  }
  return out;
}

TEST(AlertsTest, EveryAlertLinksItsRunbookPage) {
  const std::string index = readFile(sourceDir() + "/docs/runbooks/README.md");
  const std::vector<YAML::Node> rules = alertRules();
  ASSERT_EQ(rules.size(), 11U);
  for (const YAML::Node& rule : rules) {
    const auto alert = rule["alert"].as<std::string>();
    SCOPED_TRACE(alert);
    const YAML::Node annotations = rule["annotations"];
    ASSERT_TRUE(annotations["runbook_url"]);
    EXPECT_EQ(annotations["runbook_url"].as<std::string>(), kRunbookBase + alert + ".md");
    const std::string page = sourceDir() + "/docs/runbooks/" + alert + ".md";
    ASSERT_TRUE(std::filesystem::is_regular_file(page)) << page;
    // The page is about this alert and quotes its expression.
    const std::string text = readFile(page);
    EXPECT_EQ(text.rfind("# " + alert + "\n", 0), 0U) << "first line of " << page;
    EXPECT_THAT(text, HasSubstr(rule["expr"].as<std::string>()));
    EXPECT_THAT(index, HasSubstr("(" + alert + ".md)"));
    EXPECT_FALSE(annotations["summary"].as<std::string>("").empty());
    EXPECT_FALSE(annotations["description"].as<std::string>("").empty());
  }
}

// promtool passes a test file whose cases expect nothing, so coverage is
// checked here: each alert has a case where it fires and one where it
// stays quiet, and no case names an alert that does not exist.
TEST(AlertsTest, EveryAlertHasAFiringAndAQuietUnitTest) {
  const YAML::Node tests = YAML::LoadFile(sourceDir() + "/test/prometheus/rules_test.yaml");
  std::map<std::string, std::pair<int, int>> cases; // alert -> (firing, quiet)
  for (const YAML::Node& rule : alertRules()) {
    cases[rule["alert"].as<std::string>()] = {0, 0};
  }
  for (const YAML::Node& test : tests["tests"]) {
    for (const YAML::Node& c : test["alert_rule_test"]) {
      const auto alert = c["alertname"].as<std::string>();
      ASSERT_TRUE(cases.contains(alert)) << "rules_test.yaml names unknown alert " << alert;
      if (c["exp_alerts"].size() > 0) {
        ++cases[alert].first;
      } else {
        ++cases[alert].second;
      }
    }
  }
  for (const auto& [alert, counts] : cases) {
    EXPECT_GE(counts.first, 1) << alert << " has no firing case";
    EXPECT_GE(counts.second, 1) << alert << " has no quiet case";
  }
}

// Every alert names only metrics the manager exports (its registry as it
// renders): a renamed metric cannot leave an alert that never fires.
TEST(AlertsTest, EveryAlertNamesAnExportedMetric) {
  const std::string exposition = managerExposition();
  const std::regex metric(R"(\b((?:captf|controller_runtime)_[a-z_]+))");
  std::set<std::string> alerts;
  for (const YAML::Node& rule : alertRules()) {
    const auto alert = rule["alert"].as<std::string>();
    const auto expr = rule["expr"].as<std::string>();
    alerts.insert(alert);
    EXPECT_TRUE(rule["labels"]["severity"]) << alert;
    int names = 0;
    for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it) {
      const std::string name =
          std::regex_replace(std::string((*it)[1]), std::regex("_bucket$"), "");
      EXPECT_THAT(exposition, HasSubstr("# HELP " + name + " ")) << alert << ": " << name;
      ++names;
    }
    EXPECT_GT(names, 0) << alert;
  }
  EXPECT_EQ(alerts.size(), 11U);
}

TEST(DashboardTest, IsAGrafanaModelOnADatasourceVariable) {
  const nlohmann::json d = dashboard();
  EXPECT_EQ(d.value("schemaVersion", 0), 39);
  EXPECT_EQ(d.value("uid", ""), "captf-overview");
  bool variable = false;
  for (const nlohmann::json& v : d["templating"]["list"]) {
    variable |= v.value("name", "") == "datasource" && v.value("type", "") == "datasource" &&
                v.value("query", "") == "prometheus";
  }
  EXPECT_TRUE(variable) << "no datasource variable of type prometheus";
  std::set<int> ids;
  for (const nlohmann::json& panel : d["panels"]) {
    SCOPED_TRACE(panel.value("title", ""));
    EXPECT_TRUE(ids.insert(panel.value("id", 0)).second) << "duplicate panel id";
    if (panel.value("type", "") == "row") {
      continue;
    }
    EXPECT_EQ(panel["datasource"].value("uid", ""), "${datasource}");
    ASSERT_FALSE(panel.value("targets", nlohmann::json::array()).empty());
    for (const nlohmann::json& target : panel["targets"]) {
      EXPECT_EQ(target["datasource"].value("uid", ""), "${datasource}");
    }
  }
}

// The series issue #17 asks the dashboard to show.
TEST(DashboardTest, ShowsJobsDriftStateAndTheControllerSeries) {
  std::string all;
  for (const PanelQuery& q : panelQueries(dashboard())) {
    all += q.expr + "\n";
  }
  for (const char* series :
       {"captf_jobs_total", "captf_job_queue_seconds_bucket", "captf_job_duration_seconds_bucket",
        "captf_job_errors_total", "captf_drift_detected", "captf_state_bytes",
        "controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_bucket", "workqueue_depth",
        "workqueue_adds_total", "workqueue_queue_duration_seconds_bucket"}) {
    EXPECT_THAT(all, HasSubstr(series));
  }
}

} // namespace
} // namespace captf::prometheus
