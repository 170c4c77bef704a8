#include "test/prometheus/support.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <absl/status/statusor.h>

#include "manager/controllers/metrics.h"
#include "manager/kube/clock.h"
#include "manager/kube/controller.h"
#include "manager/kube/metrics.h"
#include "test/manager/kube/fakes.h"

namespace captf::prometheus {

std::string sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "captf-prometheus-XXXXXX").string();
  if (mkdtemp(tmpl.data()) != nullptr) {
    path_ = tmpl;
  }
}

TempDir::~TempDir() {
  if (!path_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
}

YAML::Node shippedRule() {
  return YAML::LoadFile(sourceDir() + "/config/prometheus/rules.yaml");
}

std::string ruleFile(const YAML::Node& prometheus_rule) {
  YAML::Node file;
  file["groups"] = prometheus_rule["spec"]["groups"];
  YAML::Emitter out;
  out << file;
  return std::string(out.c_str()) + "\n";
}

nlohmann::json dashboard() {
  return nlohmann::json::parse(readFile(sourceDir() + "/config/prometheus/dashboard.json"));
}

namespace {

void collect(const nlohmann::json& panels, std::vector<PanelQuery>& out) {
  for (const nlohmann::json& panel : panels) {
    for (const nlohmann::json& target : panel.value("targets", nlohmann::json::array())) {
      out.push_back(
          {panel.value("title", ""), target.value("refId", ""), target.value("expr", "")});
    }
    collect(panel.value("panels", nlohmann::json::array()), out);
  }
}

} // namespace

std::vector<PanelQuery> panelQueries(const nlohmann::json& dashboard) {
  std::vector<PanelQuery> out;
  collect(dashboard.value("panels", nlohmann::json::array()), out);
  return out;
}

std::string expandGrafanaVariables(const std::string& expr) {
  std::string out = expr;
  for (const std::string variable : {"$__rate_interval", "$__interval", "$__range"}) {
    for (size_t at = out.find(variable); at != std::string::npos; at = out.find(variable, at)) {
      out.replace(at, variable.size(), "5m");
    }
  }
  return out;
}

std::string managerExposition() {
  kube::MetricsRegistry registry;
  controllers::CaptfMetrics metrics(registry, "v0.0.0-test", "0000000");
  // The families a Controller registers exist once one does
  // (manager/kube/controller.cc, manager/kube/workqueue.cc).
  class Nothing final : public kube::Reconciler {
  public:
    absl::StatusOr<kube::Result> reconcile(const kube::ReconcileContext&,
                                           const kube::Request&) override {
      return kube::Result{};
    }
  } nothing;
  kube::FakeClock clock;
  std::vector<std::unique_ptr<kube::Controller>> running;
  for (const char* name : {"terraformcluster", "terraformmachine", "terraformmachinepool",
                           "terraformmachinetemplate", "terraformclusteridentity"}) {
    running.push_back(std::make_unique<kube::Controller>(
        name, nothing, kube::ControllerOptions{}, clock, &registry, kube::testing::quietLogger()));
  }
  // A child of each captf_* family, so every family renders samples.
  metrics.jobs_total.withLabels({"TerraformCluster", "apply", "succeeded"}).inc();
  metrics.job_duration_seconds.withLabels({"TerraformCluster", "apply", "succeeded"}).observe(42);
  metrics.job_queue_seconds.withLabels({"TerraformCluster", "apply"}).observe(3);
  metrics.job_errors_total.withLabels({"TerraformCluster", "apply", "step", "apply"}).inc();
  metrics.drift_detected.withLabels({"TerraformCluster", "ns", "a"}).set(0);
  metrics.state_bytes.withLabels({"TerraformCluster", "ns", "a"}).set(1024);
  metrics.inputs_bytes.withLabels({"TerraformCluster", "ns", "a"}).set(2048);
  metrics.reconcile_op_decisions_total.withLabels({"TerraformCluster", "none", "not_due"}).inc();
  return registry.render();
}

std::vector<std::string> exposedSeriesNames(const std::string& exposition) {
  std::vector<std::string> names;
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string hash;
    std::string keyword;
    std::string name;
    std::string type;
    if (!(words >> hash >> keyword >> name >> type) || hash != "#" || keyword != "TYPE") {
      continue;
    }
    names.push_back(name);
    if (type == "histogram") {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        names.push_back(name + suffix);
      }
    }
  }
  return names;
}

} // namespace captf::prometheus
