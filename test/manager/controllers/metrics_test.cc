#include <cstdlib>
#include <regex>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "manager/controllers/metrics.h"
#include "manager/kube/clock.h"
#include "manager/kube/controller.h"
#include "test/manager/kube/fakes.h"

namespace captf::controllers {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CaptfMetricsTest, RegistersEveryFamilyOfSection8AsAlpha) {
  kube::MetricsRegistry registry;
  CaptfMetrics metrics(registry, "1.2.3", "abc");
  metrics.jobs_total.withLabels({"TerraformCluster", "apply", "succeeded"}).inc();
  metrics.job_duration_seconds.withLabels({"TerraformCluster", "apply", "succeeded"}).observe(3);
  metrics.ready.withLabels({"TerraformCluster", "ns", "a"}).set(1);
  const std::string text = registry.render();
  for (const char* name :
       {"captf_jobs_total", "captf_job_duration_seconds", "captf_ready", "captf_build_info"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# HELP ") + name + " [ALPHA] ")) << name;
  }
  EXPECT_THAT(text, HasSubstr("captf_build_info{version=\"1.2.3\",commit=\"abc\","
                              "contract=\"v1alpha1\"} 1"));
  EXPECT_THAT(
      text,
      HasSubstr("captf_jobs_total{kind=\"TerraformCluster\",op=\"apply\",result=\"succeeded\"} 1"));
}

TEST(CaptfMetricsTest, ForgetObjectDropsPerObjectGauges) {
  kube::MetricsRegistry registry;
  CaptfMetrics metrics(registry, "v", "c");
  metrics.ready.withLabels({"TerraformCluster", "ns", "gone"}).set(1);
  metrics.state_bytes.withLabels({"TerraformCluster", "ns", "gone"}).set(10);
  metrics.last_success_timestamp_seconds.withLabels({"TerraformCluster", "ns", "gone", "apply"})
      .set(5);
  metrics.ready.withLabels({"TerraformCluster", "ns", "kept"}).set(0);
  metrics.forgetObject("TerraformCluster", "ns", "gone");
  const std::string text = registry.render();
  EXPECT_THAT(text, Not(HasSubstr("name=\"gone\"")));
  EXPECT_THAT(text, HasSubstr("name=\"kept\""));
}

TEST(CaptfMetricsTest, ConditionValues) {
  EXPECT_EQ(CaptfMetrics::conditionValue("True"), 1);
  EXPECT_EQ(CaptfMetrics::conditionValue("False"), 0);
  EXPECT_EQ(CaptfMetrics::conditionValue("Unknown"), -1);
  EXPECT_EQ(CaptfMetrics::conditionValue(""), -1);
}

// The shipped alerts (config/prometheus/rules.yaml) name only metrics the
// manager exports, with labels those families have: a renamed metric
// cannot leave an alert that never fires.
TEST(PrometheusRulesTest, EveryAlertNamesAnExportedMetric) {
  const char* source = std::getenv("CAPTF_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  const YAML::Node rules = YAML::LoadFile(std::string(source) + "/config/prometheus/rules.yaml");
  kube::MetricsRegistry registry;
  CaptfMetrics metrics(registry, "v", "c");
  // The controller families (controller_runtime_*) exist once a controller does.
  class Nothing final : public kube::Reconciler {
  public:
    absl::StatusOr<kube::Result> reconcile(const kube::ReconcileContext&,
                                           const kube::Request&) override {
      return kube::Result{};
    }
  } nothing;
  kube::FakeClock clock;
  kube::Controller controller("terraformcluster", nothing, {}, clock, &registry,
                              kube::testing::quietLogger());
  const std::string exposition = registry.render();
  const std::regex metric(R"(\b((?:captf|controller_runtime)_[a-z_]+))");
  std::set<std::string> alerts;
  for (const YAML::Node& group : rules["spec"]["groups"]) {
    EXPECT_EQ(group["name"].as<std::string>(), "captf");
    for (const YAML::Node& rule : group["rules"]) {
      const std::string alert = rule["alert"].as<std::string>();
      const std::string expr = rule["expr"].as<std::string>();
      alerts.insert(alert);
      EXPECT_TRUE(rule["labels"]["severity"]) << alert;
      int names = 0;
      for (std::sregex_iterator it(expr.begin(), expr.end(), metric), end; it != end; ++it) {
        std::string name = (*it)[1];
        name = std::regex_replace(name, std::regex("_bucket$"), "");
        EXPECT_THAT(exposition, ::testing::HasSubstr("# HELP " + name + " "))
            << alert << ": " << name;
        ++names;
      }
      EXPECT_GT(names, 0) << alert;
    }
  }
  EXPECT_EQ(alerts.size(), 11U);
}

} // namespace
} // namespace captf::controllers
