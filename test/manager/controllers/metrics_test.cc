#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

} // namespace
} // namespace captf::controllers
