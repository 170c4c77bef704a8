#pragma once

// What the tests of config/prometheus share: the repository's files, a
// temporary directory, the shipped PrometheusRule as a plain rule file, the
// dashboard's queries, and the manager's metrics registry as it renders.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace captf::prometheus {

// CAPTF_SOURCE_DIR (set by ctest); "." when unset.
std::string sourceDir();
std::string readFile(const std::string& path);
void writeFile(const std::string& path, const std::string& bytes);

// A directory under the system temporary directory, removed with the object.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

// config/prometheus/rules.yaml (a PrometheusRule).
YAML::Node shippedRule();
// The PrometheusRule's spec (its `groups`) as the rule file promtool and
// prometheus read.
std::string ruleFile(const YAML::Node& prometheus_rule);

// One query of a dashboard panel.
struct PanelQuery {
  std::string panel;  // the panel's title
  std::string ref_id; // the target's refId
  std::string expr;   // as written, with Grafana's variables
};
// config/prometheus/dashboard.json.
nlohmann::json dashboard();
// Every target's expr of every panel (rows' nested panels included).
std::vector<PanelQuery> panelQueries(const nlohmann::json& dashboard);
// `expr` with Grafana's interval variables replaced by a duration, as Grafana
// does before it sends a query.
std::string expandGrafanaVariables(const std::string& expr);

// The manager's registry rendered in the text exposition format: the
// captf_* families (manager/controllers/metrics.h) and the controller-runtime
// families of one controller per reconciler the manager runs (each with its
// work queue), each series observed once so histograms have buckets.
std::string managerExposition();
// The metric names an exposition declares (`# TYPE <name> <type>`), with a
// histogram's _bucket, _sum and _count series.
std::vector<std::string> exposedSeriesNames(const std::string& exposition);

} // namespace captf::prometheus
