// The captf_* families of docs/reference/metrics.md (docs/reference/metrics.md): the registry
// CaptfMetrics fills holds exactly the specified families, each with its type,
// its label names in order and an [ALPHA] HELP; captf_jobs_active counts the
// running run Jobs of the Job cache at scrape time; the per-object gauges go
// with their object. A wired manager serves the process collector's families
// and kubernetes_feature_enabled beside them.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "manager/api/keys.h"
#include "manager/controllers/metrics.h"
#include "manager/kube/manager.h"
#include "manager/kube/metrics.h"
#include "test/manager/kube/fake_client.h"
#include "test/manager/kube/fakes.h"

namespace captf::controllers {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;
using ::testing::StartsWith;

struct Family {
  std::string name;
  kube::MetricType type;
  std::vector<std::string> labels;
};

constexpr kube::MetricType kCounter = kube::MetricType::kCounter;
constexpr kube::MetricType kGauge = kube::MetricType::kGauge;
constexpr kube::MetricType kHistogram = kube::MetricType::kHistogram;

// Spec docs/reference/metrics.md, row by row, written out here rather than read from the code so
// that a family dropped, renamed, retyped or relabelled there fails.
const std::vector<Family>& specifiedFamilies() {
  static const auto* families = new std::vector<Family>{
      {"captf_jobs_total", kCounter, {"kind", "op", "result"}},
      {"captf_job_duration_seconds", kHistogram, {"kind", "op", "result"}},
      {"captf_job_step_duration_seconds", kHistogram, {"kind", "op", "step"}},
      {"captf_job_queue_seconds", kHistogram, {"kind", "op"}},
      {"captf_job_errors_total", kCounter, {"kind", "op", "error_kind", "step"}},
      {"captf_jobs_active", kGauge, {"kind", "op"}},
      {"captf_job_attempts", kHistogram, {"kind", "op"}},
      {"captf_resources_changed_total", kCounter, {"kind", "op", "action"}},
      {"captf_drift_resources_total", kCounter, {"kind", "action"}},
      {"captf_reconcile_op_decisions_total", kCounter, {"kind", "op", "reason"}},
      {"captf_state_read_errors_total", kCounter, {"kind", "reason"}},
      {"captf_outputs_invalid_total", kCounter, {"kind", "reason"}},
      {"captf_drift_detected", kGauge, {"kind", "namespace", "name"}},
      {"captf_ready", kGauge, {"kind", "namespace", "name"}},
      {"captf_infrastructure_healthy", kGauge, {"kind", "namespace", "name"}},
      {"captf_state_resources", kGauge, {"kind", "namespace", "name"}},
      {"captf_state_bytes", kGauge, {"kind", "namespace", "name"}},
      {"captf_inputs_bytes", kGauge, {"kind", "namespace", "name"}},
      {"captf_last_success_timestamp_seconds", kGauge, {"kind", "namespace", "name", "op"}},
      {"captf_unhealthy_samples", kGauge, {"namespace", "name"}},
      {"captf_lock_force_unlocks_total", kCounter, {"kind"}},
      {"captf_identity_denied_total", kCounter, {"reason"}},
      {"captf_image_inspect_errors_total", kCounter, {"reason"}},
      {"captf_inputs_hash_changes_total", kCounter, {"kind"}},
      {"captf_remediation_requests_total", kCounter, {"action"}},
      {"captf_destructive_plan_approvals_consumed_total", kCounter, {"kind"}},
      {"captf_lease_waits_total", kCounter, {"kind", "reason"}},
      {"captf_state_backups_total", kCounter, {"kind", "result"}},
      {"captf_state_restores_total", kCounter, {"kind", "result"}},
      {"captf_plan_approvals_total", kCounter, {"kind", "result"}},
      {"captf_build_info", kGauge, {"version", "commit", "contract"}},
      // Beyond docs/reference/metrics.md: the ref watcher's listings
      // (docs/decisions/git-sources.md).
      {"captf_git_ls_remote_total", kCounter, {"result"}},
      // Pods that cannot pull an image (docs/behaviour/jobs.md#image-pulls).
      {"captf_image_pull_failures_total", kCounter, {"kind", "op"}},
  };
  return *families;
}

using Registered = std::map<std::string, kube::MetricDescription>;

// The registered family `name`, checked for its type and labels; null (the
// failure recorded) when it is not registered.
const kube::MetricDescription* expectFamily(const Registered& registered, const std::string& name,
                                            kube::MetricType type,
                                            const std::vector<std::string>& labels) {
  auto it = registered.find(name);
  if (it == registered.end()) {
    ADD_FAILURE() << name << " is not registered";
    return nullptr;
  }
  EXPECT_EQ(kube::metricTypeName(it->second.type), std::string(kube::metricTypeName(type))) << name;
  EXPECT_EQ(it->second.labels, labels) << name;
  return &it->second;
}

TEST(CaptfMetricsTest, RegistersExactlyTheSpecifiedFamiliesWithTheirTypesAndLabels) {
  kube::MetricsRegistry registry;
  CaptfMetrics metrics(registry, "1.2.3", "abc");
  Registered registered;
  for (kube::MetricDescription& d : registry.describe()) {
    registered.emplace(d.name, std::move(d));
  }
  std::set<std::string> specified;
  for (const Family& want : specifiedFamilies()) {
    specified.insert(want.name);
    if (const auto* found = expectFamily(registered, want.name, want.type, want.labels)) {
      EXPECT_THAT(found->help, StartsWith("[ALPHA] ")) << want.name;
    }
  }
  // Nothing else under the captf_ prefix: a new family is specified (and
  // added above) first.
  for (const auto& [name, description] : registered) {
    EXPECT_TRUE(specified.contains(name)) << name << " is registered but not specified";
  }
  EXPECT_EQ(specifiedFamilies().size(), 33U)
      << "31 of docs/reference/metrics.md, the ref watcher's and the image pulls'";
}

TEST(CaptfMetricsTest, EveryFamilyIsExposedWithItsTypeEvenBeforeASample) {
  kube::MetricsRegistry registry;
  CaptfMetrics metrics(registry, "1.2.3", "abc");
  const std::string text = registry.render();
  for (const Family& family : specifiedFamilies()) {
    EXPECT_THAT(text, HasSubstr("# HELP " + family.name + " [ALPHA] ")) << family.name;
    EXPECT_THAT(text,
                HasSubstr("# TYPE " + family.name + " " + kube::metricTypeName(family.type) + "\n"))
        << family.name;
  }
  EXPECT_THAT(text, HasSubstr("captf_build_info{version=\"1.2.3\",commit=\"abc\","
                              "contract=\"v1alpha1\"} 1\n"));
  // captf_jobs_active has no source yet: no sample, and no made-up zero.
  EXPECT_THAT(text, Not(HasSubstr("captf_jobs_active{")));
}

// What a wired manager serves beside the captf_ families
// (manager/kube/standard_metrics.h), written out with the help texts of the
// libraries that define them: client_golang's process collector and
// component-base's kubernetes_feature_enabled.
struct StandardFamily {
  std::string name;
  kube::MetricType type;
  std::vector<std::string> labels;
  std::string help;
};

const std::vector<StandardFamily>& standardFamilies() {
  static const auto* families = new std::vector<StandardFamily>{
      {"process_cpu_seconds_total",
       kCounter,
       {},
       "Total user and system CPU time spent in seconds."},
      {"process_resident_memory_bytes", kGauge, {}, "Resident memory size in bytes."},
      {"process_virtual_memory_bytes", kGauge, {}, "Virtual memory size in bytes."},
      {"process_virtual_memory_max_bytes",
       kGauge,
       {},
       "Maximum amount of virtual memory available in bytes."},
      {"process_open_fds", kGauge, {}, "Number of open file descriptors."},
      {"process_max_fds", kGauge, {}, "Maximum number of open file descriptors."},
      {"process_start_time_seconds",
       kGauge,
       {},
       "Start time of the process since unix epoch in seconds."},
      {"kubernetes_feature_enabled",
       kGauge,
       {"name", "stage"},
       "[BETA] This metric records the data about the stage and enablement of a k8s feature."},
  };
  return *families;
}

TEST(CaptfMetricsTest, AWiredManagerAlsoServesTheProcessAndFeatureGateFamilies) {
  // Against an address nothing listens on: creating a manager connects to
  // nothing.
  kube::RestConfig config;
  config.server = "https://127.0.0.1:1";
  kube::ManagerOptions options;
  options.health_probe_address = "";
  options.feature_gates = {{"ContextualLogging", "BETA", true},
                           {"LoggingAlphaOptions", "ALPHA", false}};
  auto manager = kube::Manager::create(config, std::move(options), kube::testing::quietLogger());
  ASSERT_TRUE(manager.ok()) << manager.status();
  Registered registered;
  for (kube::MetricDescription& d : (*manager)->metrics().describe()) {
    registered.emplace(d.name, std::move(d));
  }
  for (const StandardFamily& want : standardFamilies()) {
    if (const auto* found = expectFamily(registered, want.name, want.type, want.labels)) {
      EXPECT_EQ(found->help, want.help) << want.name;
    }
  }
  // Nothing of the Go runtime: the manager is not a Go program
  // (docs/decisions/manager-binary.md#metrics).
  for (const auto& [name, description] : registered) {
    EXPECT_FALSE(name.starts_with("go_")) << name;
  }
  const std::string text = (*manager)->metrics().render();
  EXPECT_THAT(text, HasSubstr("kubernetes_feature_enabled{name=\"ContextualLogging\","
                              "stage=\"BETA\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kubernetes_feature_enabled{name=\"LoggingAlphaOptions\","
                              "stage=\"ALPHA\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("\nprocess_resident_memory_bytes "));
}

json runJob(const std::string& name, const std::string& owner_kind, const std::string& op,
            const json& status) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", name},
            {"namespace", "t1"},
            {"resourceVersion", "1"},
            {"labels",
             {{std::string(api::kLabelManaged), "true"},
              {std::string(api::kLabelOwnerKind), owner_kind},
              {std::string(api::kLabelOp), op},
              {std::string(api::kLabelAttempt), "1"}}}}},
          {"status", status}};
}

const json kRunning = {{"active", 1}};
const json kSucceeded = {{"succeeded", 1},
                         {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
const json kFailed = {{"failed", 1}, {"conditions", {{{"type", "Failed"}, {"status", "True"}}}}};

TEST(CaptfMetricsTest, ActiveJobsCountsRunningRunJobsByKindAndOperation) {
  const std::vector<json> jobs = {
      runJob("a", "TerraformCluster", "apply", kRunning),
      runJob("b", "TerraformCluster", "apply", kRunning),
      runJob("c", "TerraformCluster", "apply", kSucceeded),
      runJob("d", "TerraformMachine", "destroy", kRunning),
      runJob("e", "TerraformMachine", "destroy", kFailed),
      runJob("f", "TerraformMachinePool", "not-an-op", kRunning),
  };
  EXPECT_THAT(CaptfMetrics::activeJobs(jobs),
              ElementsAre(Pair(ElementsAre("TerraformCluster", "apply"), 2.0),
                          Pair(ElementsAre("TerraformMachine", "destroy"), 1.0)));
  EXPECT_THAT(CaptfMetrics::activeJobs({}), IsEmpty());
}

TEST(CaptfMetricsTest, JobsActiveFollowsTheJobCacheAtEveryScrape) {
  kube::testing::FakeClient jobs;
  kube::MetricsRegistry registry;
  CaptfMetrics metrics(registry, "v", "c");
  metrics.countActiveJobsFrom(jobs);
  jobs.put(runJob("a", "TerraformCluster", "apply", kRunning));
  json unmanaged = runJob("x", "TerraformCluster", "apply", kRunning);
  unmanaged["metadata"]["labels"].erase(std::string(api::kLabelManaged));
  jobs.put(unmanaged);
  const std::string running = "captf_jobs_active{kind=\"TerraformCluster\",op=\"apply\"} 1\n";
  EXPECT_THAT(registry.render(), HasSubstr(running));
  // The Job finishes: the next scrape drops the series.
  jobs.put(runJob("a", "TerraformCluster", "apply", kSucceeded));
  EXPECT_THAT(registry.render(), Not(HasSubstr("captf_jobs_active{")));
  EXPECT_THAT(registry.render(), HasSubstr("# TYPE captf_jobs_active gauge\n"));
}

TEST(CaptfMetricsTest, ForgetObjectDropsEveryPerObjectSeriesOfThatObjectOnly) {
  kube::MetricsRegistry registry;
  CaptfMetrics metrics(registry, "v", "c");
  const auto touch = [&](const std::string& kind, const std::string& name) {
    const std::vector<std::string> object = {kind, "ns", name};
    for (kube::GaugeFamily* family :
         {&metrics.drift_detected, &metrics.ready, &metrics.infrastructure_healthy,
          &metrics.state_resources, &metrics.state_bytes, &metrics.inputs_bytes}) {
      family->withLabels(object).set(1);
    }
    for (const char* op : {"apply", "destroy", "drift", "refresh", "restore", "plan"}) {
      metrics.last_success_timestamp_seconds.withLabels({kind, "ns", name, op}).set(5);
    }
    if (kind == "TerraformMachine") {
      metrics.unhealthy_samples.withLabels({"ns", name}).set(2);
    }
  };
  touch("TerraformMachine", "gone");
  touch("TerraformMachine", "kept");
  touch("TerraformCluster", "gone"); // same name, another kind
  metrics.forgetObject("TerraformMachine", "ns", "gone");
  const std::string text = registry.render();
  for (const Family& family : specifiedFamilies()) {
    if (std::find(family.labels.begin(), family.labels.end(), "name") == family.labels.end()) {
      continue;
    }
    const bool has_kind = family.labels.front() == "kind";
    EXPECT_THAT(text, Not(HasSubstr(family.name + (has_kind ? "{kind=\"TerraformMachine\"," : "{") +
                                    "namespace=\"ns\",name=\"gone\"")))
        << family.name;
    EXPECT_THAT(text, HasSubstr(family.name + (has_kind ? "{kind=\"TerraformMachine\"," : "{") +
                                "namespace=\"ns\",name=\"kept\""))
        << family.name;
    if (has_kind) {
      EXPECT_THAT(text, HasSubstr(family.name +
                                  "{kind=\"TerraformCluster\",namespace=\"ns\",name=\"gone\""))
          << family.name;
    }
  }
}

TEST(CaptfMetricsTest, ConditionValues) {
  EXPECT_EQ(CaptfMetrics::conditionValue("True"), 1);
  EXPECT_EQ(CaptfMetrics::conditionValue("False"), 0);
  EXPECT_EQ(CaptfMetrics::conditionValue("Unknown"), -1);
  EXPECT_EQ(CaptfMetrics::conditionValue(""), -1);
}

} // namespace
} // namespace captf::controllers
