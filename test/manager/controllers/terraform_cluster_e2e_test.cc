// The manager end to end on the rig's capi tier: Cluster API v1.14 core
// controllers, real Jobs run by the process kubelet, real OpenTofu against
// the kubernetes backend, and the `manager` executable as a local process
// authenticated as a user bound to exactly config/rbac's ClusterRole.
//
//   a Cluster whose infrastructureRef is a TerraformCluster (noop cluster
//   module image) → the manager creates the apply Job → the TerraformCluster
//   is Provisioned and Ready → the Cluster is InfrastructureReady → the state
//   Secret is adopted (ownerReference + inputs hash); changing a variable
//   re-applies with a new hash; a replacing change is blocked until approved;
//   deleting the Cluster destroys, removes state and finalizers, and leaves
//   nothing the manager created behind.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "contract/roles.h"
#include "manager/kube/object.h"
#include "test/contract/test_util.h"
#include "test/manager/controllers/manager_e2e.h"
#include "test/runner/e2e_support.h"
#include "webhooks/registrations.h"

namespace captf::controllers {
namespace {

using e2e::apply;
using e2e::conditionOf;
using e2e::env;
using e2e::eventually;
using e2e::getJson;
using e2e::kubectl;
using e2e::readyTrue;
using e2e::sourceDir;
using nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNamespace[] = "tc-e2e";
constexpr char kIdentity[] = "tc-e2e";

class TerraformClusterE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    // Images: the runner (init container) and the noop cluster module with
    // one user variable `size`.
    manager_.runner_image = runner::e2e::Images::get().runner();
    module_image_ = moduleImage("1");
    // The tenant namespace, the identity and its Secret.
    e2e::createTenant(kNamespace, kIdentity, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    startManager();
  }

  static void TearDownTestSuite() { manager_.stopCleanly(); }

  static std::string moduleImage(const std::string& revision) {
    const std::string main_tf = runner::e2e::sizedModule(contract::Role::kCluster, revision);
    return runner::e2e::Images::get().module("tc-e2e-" + revision, main_tf, env().tofu);
  }

  static void startManager() { manager_.start(); }

  static json tc(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "terraformcluster", name});
  }
  static json cluster(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "clusters.v1beta2.cluster.x-k8s.io", name});
  }
  static std::string stateSuffix(const std::string& name) {
    return runner::e2e::stateSuffix(kNamespace, contract::Role::kCluster, name);
  }
  static json stateSecret(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "secret", "tfstate-default-" + stateSuffix(name)});
  }
  static std::string managerLog() { return manager_.logText(); }
  // TerraformCluster `name` Ready and provisioned.
  static bool readyAndProvisioned(const std::string& name) {
    const json object = tc(name);
    return readyTrue(object) &&
           object["status"].value("initialization", json::object()).value("provisioned", false);
  }
  // A TerraformCluster `name` (the noop module) under the Cluster `cluster`.
  static void createCluster(const std::string& name, const std::string& cluster) {
    e2e::createClusterPair(
        kNamespace, name, cluster,
        {{"source", {{"image", module_image_}}}, {"identityRef", {{"name", kIdentity}}}});
  }
  // A TerraformCluster `name` under the Cluster `cluster` from `image`, which
  // cannot be pulled: waits (a minute at most) for its ImagePullFailed.
  static void createWaitingForItsImage(const std::string& name, const std::string& cluster,
                                       const std::string& image) {
    e2e::createClusterPair(
        kNamespace, name, cluster,
        {{"source", {{"image", image}}}, {"identityRef", {{"name", kIdentity}}}});
    ASSERT_TRUE(eventually(
        [&] { return conditionOf(tc(name), "ApplyJobSucceeded", "reason") == "ImagePullFailed"; },
        std::chrono::seconds(60)))
        << tc(name).dump(2) << managerLog();
  }
  // Deletes the Cluster and waits until its TerraformCluster is gone.
  static void deleteCluster(const std::string& name, const std::string& cluster) {
    ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io", cluster,
                       "--wait=false"})
                  .exit_code,
              0);
    EXPECT_TRUE(eventually([&] {
      return kubectl({"-n", kNamespace, "get", "terraformcluster", name}).exit_code != 0;
    })) << tc(name).dump(2)
        << managerLog();
  }
  // The leader Lease's holderIdentity ("" when released or absent).
  static std::string leaseHolder() {
    const json lease =
        getJson({"-n", "captf-system", "get", "lease", "controller-leader-election-captf"});
    return lease.is_object() ? lease.value("spec", json::object()).value("holderIdentity", "")
                             : std::string();
  }
  // Apply Jobs of `name` that succeeded.
  static int succeededApplies(const std::string& name) {
    int succeeded = 0;
    for (const std::string& job : jobs(name, "apply")) {
      succeeded += getJson({"-n", kNamespace, "get", "job", job})
                       .value("status", json::object())
                       .value("succeeded", 0);
    }
    return succeeded;
  }
  // Names of Jobs of the TerraformCluster `name` with `op`.
  static std::vector<std::string> jobs(const std::string& name, const std::string& op) {
    return e2e::runJobs(kNamespace, name, op);
  }

  // The metrics of the first apply of `name`, Ready now: the Job's count,
  // duration, queue time, steps, attempts and changes, the decision that
  // started it, and the object's own gauges.
  static void expectFirstApplyMetrics(const e2e::MetricsSince& since, const std::string& name) {
    const std::map<std::string, std::string> applies = {{"kind", "TerraformCluster"},
                                                        {"op", "apply"}};
    EXPECT_TRUE(since.grows("captf_jobs_total", kAppliesSucceeded)) << manager_.metrics();
    EXPECT_TRUE(since.grows("captf_job_duration_seconds_count", kAppliesSucceeded))
        << manager_.metrics();
    for (const char* family :
         {"captf_job_queue_seconds_count", "captf_job_attempts_count",
          "captf_job_step_duration_seconds_count", "captf_reconcile_op_decisions_total"}) {
      EXPECT_TRUE(since.grows(family, applies)) << family << "\n" << manager_.metrics();
    }
    EXPECT_TRUE(since.grows("captf_resources_changed_total",
                            {{"kind", "TerraformCluster"}, {"op", "apply"}, {"action", "add"}}))
        << manager_.metrics();
    const std::map<std::string, std::string> object = {
        {"kind", "TerraformCluster"}, {"namespace", kNamespace}, {"name", name}};
    const auto value = [&](const char* family) {
      return e2e::metricValue(manager_.metrics(), family, object);
    };
    EXPECT_TRUE(eventually([&] { return value("captf_ready") == 1.0; })) << manager_.metrics();
    EXPECT_TRUE(eventually([&] { return value("captf_state_bytes").value_or(0) > 0; }))
        << manager_.metrics();
    EXPECT_TRUE(eventually([&] { return value("captf_state_resources").value_or(0) >= 1; }))
        << manager_.metrics();
    EXPECT_GT(value("captf_inputs_bytes").value_or(0), 0) << manager_.metrics();
    EXPECT_GT(e2e::metricValue(manager_.metrics(), "captf_last_success_timestamp_seconds",
                               {{"kind", "TerraformCluster"},
                                {"namespace", kNamespace},
                                {"name", name},
                                {"op", "apply"}})
                  .value_or(0),
              0)
        << manager_.metrics();
  }

  static inline const std::map<std::string, std::string> kAppliesSucceeded = {
      {"kind", "TerraformCluster"}, {"op", "apply"}, {"result", "succeeded"}};
  // One rig and module image per suite (SetUpTestSuite), shared by its cases.
  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static inline std::string module_image_;
  static inline e2e::ManagerRig manager_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

TEST_F(TerraformClusterE2eTest, ManagerServesProbesMetricsAndWebhooks) {
  // Readiness includes the informer sync and the webhook server.
  ASSERT_TRUE(eventually([&] {
    return rig::run({"curl", "-sf",
                     "http://127.0.0.1:" + std::to_string(manager_.health_port) + "/readyz"})
               .exit_code == 0;
  })) << managerLog();
  const rig::CommandResult metrics = rig::run(
      {"curl", "-sf", "http://127.0.0.1:" + std::to_string(manager_.metrics_port) + "/metrics"});
  ASSERT_EQ(metrics.exit_code, 0) << metrics.output;
  EXPECT_THAT(metrics.output, HasSubstr("captf_build_info{"));
  EXPECT_THAT(metrics.output, HasSubstr("# HELP captf_jobs_total [ALPHA] "));
  // The manager's own registry serves every family of docs/reference/metrics.md, typed,
  // before any sample (test/manager/controllers/metrics_test.cc checks
  // the labels).
  for (const auto& [family, type] : std::vector<std::pair<std::string, std::string>>{
           {"captf_jobs_total", "counter"},
           {"captf_job_duration_seconds", "histogram"},
           {"captf_job_step_duration_seconds", "histogram"},
           {"captf_job_queue_seconds", "histogram"},
           {"captf_job_errors_total", "counter"},
           {"captf_jobs_active", "gauge"},
           {"captf_job_attempts", "histogram"},
           {"captf_resources_changed_total", "counter"},
           {"captf_drift_resources_total", "counter"},
           {"captf_reconcile_op_decisions_total", "counter"},
           {"captf_state_read_errors_total", "counter"},
           {"captf_outputs_invalid_total", "counter"},
           {"captf_drift_detected", "gauge"},
           {"captf_ready", "gauge"},
           {"captf_infrastructure_healthy", "gauge"},
           {"captf_state_resources", "gauge"},
           {"captf_state_bytes", "gauge"},
           {"captf_inputs_bytes", "gauge"},
           {"captf_last_success_timestamp_seconds", "gauge"},
           {"captf_unhealthy_samples", "gauge"},
           {"captf_lock_force_unlocks_total", "counter"},
           {"captf_identity_denied_total", "counter"},
           {"captf_image_inspect_errors_total", "counter"},
           {"captf_image_pull_failures_total", "counter"},
           {"captf_inputs_hash_changes_total", "counter"},
           {"captf_remediation_requests_total", "counter"},
           {"captf_destructive_plan_approvals_consumed_total", "counter"},
           {"captf_lease_waits_total", "counter"},
           {"captf_state_backups_total", "counter"},
           {"captf_state_restores_total", "counter"},
           {"captf_plan_approvals_total", "counter"},
           {"captf_build_info", "gauge"}}) {
    EXPECT_THAT(metrics.output, HasSubstr(absl::StrCat("# TYPE ", family, " ", type, "\n")))
        << family;
  }
  // Beside them, what a controller-runtime manager serves: the process
  // collector, read at the scrape, and the feature gates
  // (docs/decisions/manager-binary.md#metrics).
  EXPECT_GT(e2e::metricValue(metrics.output, "process_resident_memory_bytes", {}).value_or(0), 0)
      << metrics.output;
  EXPECT_EQ(e2e::metricValue(metrics.output, "kubernetes_feature_enabled",
                             {{"name", "ContextualLogging"}, {"stage", "BETA"}}),
            1.0)
      << metrics.output;
  // Leader election on the fixed Lease.
  ASSERT_TRUE(eventually([] {
    const json lease =
        getJson({"-n", "captf-system", "get", "lease", "controller-leader-election-captf"});
    return !lease.value("spec", json::object()).value("holderIdentity", "").empty();
  })) << managerLog();
  // The webhooks answer the API server from the same process: register them
  // by URL and see an invalid object refused.
  std::ifstream cert_in(manager_.dir + "/certs/tls.crt");
  const std::string ca((std::istreambuf_iterator<char>(cert_in)), {});
  json config = webhooks::validatingWebhookConfiguration(
      webhooks::UrlClientConfig{"https://127.0.0.1:" + std::to_string(manager_.webhook_port), ca},
      "captf-e2e-webhooks");
  apply(config);
  const json invalid = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                        {"kind", "TerraformCluster"},
                        {"metadata", {{"name", "invalid"}, {"namespace", kNamespace}}},
                        {"spec",
                         {{"source", {{"image", module_image_}}},
                          {"identityRef", {{"name", kIdentity}}},
                          {"variables", {{"captf_reserved", "x"}}}}}};
  bool refused = eventually([&] {
    const rig::CommandResult r = kubectl({"create", "--dry-run=server", "-f", "-"}, invalid.dump());
    return r.exit_code != 0 && r.output.find("captf_") != std::string::npos;
  });
  EXPECT_TRUE(refused);
  kubectl({"delete", "validatingwebhookconfiguration", "captf-e2e-webhooks"});
}

TEST_F(TerraformClusterE2eTest, ClusterBecomesReadyReappliesAndIsDestroyed) {
  const std::string name = "tc1";
  // Every captf_* metric this object's life moves, as differences from now.
  const e2e::MetricsSince since(manager_);
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformCluster"},
         {"metadata", {{"name", name}, {"namespace", kNamespace}}},
         {"spec",
          {{"source", {{"image", module_image_}}},
           {"identityRef", {{"name", kIdentity}}},
           {"variables", {{"size", "small"}}}}}});
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "Cluster"},
         {"metadata", {{"name", "c1"}, {"namespace", kNamespace}}},
         {"spec",
          {{"clusterNetwork", {{"pods", {{"cidrBlocks", {"192.168.0.0/16"}}}}}},
           {"infrastructureRef",
            {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
             {"kind", "TerraformCluster"},
             {"name", name}}}}}});

  // Provisioned and Ready; the Cluster sees its infrastructure.
  ASSERT_TRUE(eventually([&] { return readyAndProvisioned(name); })) << tc(name).dump(2) << "\n"
                                                                     << managerLog();
  ASSERT_TRUE(eventually([&] {
    const json c = cluster("c1");
    return c.value("status", json::object())
               .value("initialization", json::object())
               .value("infrastructureProvisioned", false) &&
           conditionOf(c, "InfrastructureReady", "status") == "True";
  })) << cluster("c1").dump(2);
  json object = tc(name);
  EXPECT_THAT(object["metadata"]["finalizers"],
              Contains("terraformcluster.infrastructure.cluster.x-k8s.io"));
  // The endpoint output was written back once, and the Cluster copied it.
  EXPECT_EQ(object["spec"]["controlPlaneEndpoint"]["host"], "lb.tc1.example");
  EXPECT_EQ(object["spec"]["controlPlaneEndpoint"]["port"], 6443);
  EXPECT_EQ(object["status"]["failureDomains"][0]["name"], "fd-a");
  // The v1beta1 contract's ready mirrors the latch for older cores.
  EXPECT_EQ(object["status"]["ready"], true);
  // A status patch that lost a race with a newer write (often the
  // controller's own previous one, not yet in the cache) runs the pass again
  // without a reconcile error.
  {
    std::istringstream log(managerLog());
    for (std::string line; std::getline(log, line);) {
      EXPECT_FALSE(line.find("reconciler error") != std::string::npos &&
                   line.find("has been modified") != std::string::npos)
          << line;
    }
  }

  // The state Secret is adopted: owned by the object, annotated with the hash.
  json state = stateSecret(name);
  const std::string uid = object["metadata"]["uid"];
  bool owned = false;
  for (const json& ref : state["metadata"].value("ownerReferences", json::array())) {
    owned = owned || ref.value("uid", "") == uid;
  }
  EXPECT_TRUE(owned) << state["metadata"].dump(2);
  const std::string hash1 =
      state["metadata"]["annotations"].value("captf.io/inputs-hash", std::string());
  EXPECT_THAT(hash1, ::testing::StartsWith("h2:"));
  EXPECT_EQ(jobs(name, "apply").size(), 1U);
  expectFirstApplyMetrics(since, name);

  // Changing a variable re-applies: a new inputs hash on the state.
  ASSERT_EQ(kubectl({"-n", kNamespace, "patch", "terraformcluster", name, "--type=merge", "-p",
                     R"({"spec":{"variables":{"size":"large"}}})"})
                .exit_code,
            0);
  std::string hash2;
  ASSERT_TRUE(eventually([&] {
    hash2 =
        stateSecret(name)["metadata"]["annotations"].value("captf.io/inputs-hash", std::string());
    return !hash2.empty() && hash2 != hash1 && readyTrue(tc(name));
  })) << tc(name).dump(2);
  EXPECT_EQ(jobs(name, "apply").size(), 2U);
  EXPECT_TRUE(since.grows("captf_inputs_hash_changes_total", {{"kind", "TerraformCluster"}}))
      << manager_.metrics();
  EXPECT_TRUE(since.grows("captf_jobs_total", kAppliesSucceeded, 2)) << manager_.metrics();

  // A change that replaces a resource is blocked until approved.
  const std::string image2 = moduleImage("2");
  ASSERT_EQ(kubectl({"-n", kNamespace, "patch", "terraformcluster", name, "--type=merge", "-p",
                     json{{"spec", {{"source", {{"image", image2}}}}}}.dump()})
                .exit_code,
            0);
  ASSERT_TRUE(eventually([&] {
    return conditionOf(tc(name), "ApplyJobSucceeded", "reason") == "DestructivePlanBlocked";
  })) << tc(name).dump(2);
  // Nothing changed: the state keeps the previous hash.
  EXPECT_EQ(stateSecret(name)["metadata"]["annotations"].value("captf.io/inputs-hash", ""), hash2);
  // The blocked Job names the hash to approve.
  std::string blocked_hash;
  for (const std::string& job : jobs(name, "apply")) {
    const json j = getJson({"-n", kNamespace, "get", "job", job});
    if (j["metadata"]["annotations"].contains("captf.io/destructive-plan-blocked")) {
      blocked_hash = j["metadata"]["annotations"].value("captf.io/inputs-hash", "");
    }
  }
  ASSERT_FALSE(blocked_hash.empty());
  EXPECT_TRUE(since.grows("captf_jobs_total",
                          {{"kind", "TerraformCluster"}, {"op", "apply"}, {"result", "blocked"}}))
      << manager_.metrics();
  EXPECT_TRUE(
      since.grows("captf_job_errors_total", {{"kind", "TerraformCluster"}, {"op", "apply"}}))
      << manager_.metrics();
  ASSERT_EQ(kubectl({"-n", kNamespace, "annotate", "terraformcluster", name,
                     "captf.io/approve-destructive-plan=" + blocked_hash})
                .exit_code,
            0);
  ASSERT_TRUE(eventually([&] {
    const json approved = tc(name);
    return stateSecret(name)["metadata"]["annotations"].value("captf.io/inputs-hash", "") ==
               blocked_hash &&
           !approved["metadata"]
                .value("annotations", json::object())
                .contains("captf.io/approve-destructive-plan") &&
           readyTrue(approved);
  })) << tc(name).dump(2);
  EXPECT_TRUE(since.grows("captf_destructive_plan_approvals_consumed_total",
                          {{"kind", "TerraformCluster"}}))
      << manager_.metrics();
  EXPECT_TRUE(since.grows("captf_jobs_total", kAppliesSucceeded, 3)) << manager_.metrics();

  // Deleting the Cluster destroys, removes the state and the finalizers.
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io", "c1",
                     "--wait=false"})
                .exit_code,
            0);
  ASSERT_TRUE(eventually([&] {
    return kubectl({"-n", kNamespace, "get", "terraformcluster", name}).exit_code != 0 &&
           kubectl({"-n", kNamespace, "get", "clusters.v1beta2.cluster.x-k8s.io", "c1"})
                   .exit_code != 0;
  })) << tc(name).dump(2)
      << managerLog();
  // Nothing the manager created for it is left: state, inputs, leases,
  // mirror, Jobs (garbage-collected with their owner).
  ASSERT_TRUE(eventually([&] {
    const json secrets =
        getJson({"-n", kNamespace, "get", "secrets", "-l", "captf.io/managed=true"});
    const json leases = getJson({"-n", kNamespace, "get", "leases"});
    const json jobs_left =
        getJson({"-n", kNamespace, "get", "jobs", "-l", "captf.io/managed=true"});
    // The runner's ServiceAccount and RoleBinding go with the orphan sweep
    // (every --sync-period, 30s here).
    const json rbac = getJson(
        {"-n", kNamespace, "get", "serviceaccounts,rolebindings", "-l", "captf.io/managed=true"});
    return secrets.value("items", json::array()).empty() &&
           leases.value("items", json::array()).empty() &&
           jobs_left.value("items", json::array()).empty() &&
           rbac.value("items", json::array()).empty();
  })) << getJson({"-n", kNamespace, "get", "secrets,leases,jobs,serviceaccounts,rolebindings"})
             .dump(2);
  EXPECT_THAT(managerLog(), Not(HasSubstr(runner::e2e::kCredentialValue)));
  // One deletion, one destroy counted: not again from a pass over a cached
  // copy that still showed the finalizer, nor from the Job's removal.
  const std::map<std::string, std::string> destroys = {
      {"kind", "TerraformCluster"}, {"op", "destroy"}, {"result", "succeeded"}};
  EXPECT_TRUE(since.grows("captf_jobs_total", destroys)) << manager_.metrics();
  EXPECT_EQ(since.delta("captf_jobs_total", destroys), 1) << manager_.metrics();
  EXPECT_EQ(since.delta("captf_job_duration_seconds_count", destroys), 1) << manager_.metrics();
  // The object's own series went with it.
  EXPECT_TRUE(eventually([&] {
    const std::string metrics = manager_.metrics();
    for (const char* family : {"captf_ready", "captf_infrastructure_healthy",
                               "captf_drift_detected", "captf_state_resources", "captf_state_bytes",
                               "captf_inputs_bytes", "captf_last_success_timestamp_seconds"}) {
      if (e2e::metricValue(metrics, family, {{"namespace", kNamespace}, {"name", name}})) {
        return false;
      }
    }
    return true;
  })) << manager_.metrics();
}

// docs/behaviour/security.md "Limits": one tenant's Secrets labelled as
// managed, 300 of 900 KiB, are cached without their data, so the manager's
// memory does not follow them and another tenant's cluster still becomes
// Ready. (Before, the cache held every byte: about 270 MiB more.)
TEST_F(TerraformClusterE2eTest, OneTenantsManagedSecretsDoNotGrowTheManager) {
  const auto status_kib = [&](const char* field) {
    std::ifstream status("/proc/" + std::to_string(manager_.process.pid()) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with(field)) {
        return std::stol(line.substr(std::string_view(field).size()));
      }
    }
    return 0L;
  };
  const auto secret_cache_bytes = [&] {
    return e2e::metricValue(manager_.metrics(), "captf_cache_bytes", {{"kind", "Secret"}})
        .value_or(0);
  };
  // AddressSanitizer keeps up to 256 MiB of freed memory aside (its
  // quarantine), which would hide what the cache keeps: this manager runs
  // with 8 MiB of it, and the next one as before.
  const auto restart_with = [&](const std::string& asan_options) {
    manager_.stopCleanly();
    const char* saved = std::getenv("ASAN_OPTIONS");
    const std::string before = saved != nullptr ? saved : "";
    setenv("ASAN_OPTIONS", asan_options.c_str(), 1);
    startManager();
    setenv("ASAN_OPTIONS", before.c_str(), 1);
  };
  restart_with("quarantine_size_mb=8");
  ASSERT_TRUE(eventually([&] { return !manager_.metrics().empty(); })) << managerLog();
  const long hwm_before = status_kib("VmHWM:");
  const double cache_before = secret_cache_bytes();
  constexpr int kSecrets = 300;
  constexpr int kPerCall = 25;
  const std::string flood = "tc-e2e-flood";
  ASSERT_EQ(kubectl({"create", "namespace", flood}).exit_code, 0);
  const std::string blob(std::size_t{900} * 1024, 'A'); // base64
  for (int first = 0; first < kSecrets; first += kPerCall) {
    json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
    for (int i = first; i < first + kPerCall; ++i) {
      list["items"].push_back({{"apiVersion", "v1"},
                               {"kind", "Secret"},
                               {"metadata",
                                {{"name", "flood-" + std::to_string(i)},
                                 {"namespace", flood},
                                 {"labels", {{"captf.io/managed", "true"}}}}},
                               {"data", {{"blob", blob}}}});
    }
    const rig::CommandResult created = kubectl({"create", "-f", "-"}, list.dump());
    ASSERT_EQ(created.exit_code, 0) << created.output.substr(0, 2000);
  }
  // The manager has seen all of them.
  ASSERT_TRUE(eventually([&] {
    return e2e::metricValue(manager_.metrics(), "captf_cache_objects", {{"kind", "Secret"}})
               .value_or(0) >= kSecrets;
  })) << manager_.metrics();
  const double cache_growth = secret_cache_bytes() - cache_before;
  // Metadata only: well under 4 KiB a Secret, against 900 KiB of data.
  EXPECT_LT(cache_growth, kSecrets * 4096.0);

  // Another tenant's cluster still becomes Ready.
  createCluster("tc-flood", "c-flood");
  EXPECT_TRUE(eventually([&] { return readyTrue(tc("tc-flood")); }))
      << tc("tc-flood").dump(2) << "\n"
      << managerLog();
  const long hwm = status_kib("VmHWM:");
  std::cout << "Secret cache growth " << cache_growth / 1024 << " KiB for " << kSecrets
            << " Secrets of 900 KiB; manager VmHWM before " << hwm_before / 1024 << " MiB, after "
            << hwm / 1024 << " MiB (AddressSanitizer build)\n";
  RecordProperty("secret_cache_growth_bytes", std::to_string(static_cast<long>(cache_growth)));
  RecordProperty("manager_hwm_mib", std::to_string(hwm / 1024));
  // Cached with their data, the 270 MiB of Secrets would be held at once.
  EXPECT_LT(hwm - hwm_before, 128L * 1024);
  // A manager started while they exist syncs from a metadata-only list and
  // watch: a list with the data would be one response of 270 MiB.
  restart_with("quarantine_size_mb=8");
  ASSERT_TRUE(eventually([&] {
    return e2e::metricValue(manager_.metrics(), "captf_cache_objects", {{"kind", "Secret"}})
               .value_or(0) >= kSecrets;
  })) << manager_.metrics();
  const long hwm_restarted = status_kib("VmHWM:");
  std::cout << "restarted beside them: VmHWM " << hwm_restarted / 1024 << " MiB\n";
  RecordProperty("manager_restarted_hwm_mib", std::to_string(hwm_restarted / 1024));
  EXPECT_LT(hwm_restarted - hwm_before, 128L * 1024);
  EXPECT_EQ(kubectl({"delete", "namespace", flood, "--wait=false"}).exit_code, 0);
  deleteCluster("tc-flood", "c-flood");
  restart_with(std::getenv("ASAN_OPTIONS") != nullptr ? std::getenv("ASAN_OPTIONS") : "");
}

// Live run reports (docs/decisions/run-reports.md): the runner, whose
// ServiceAccount may not create Events, reports over gRPC; the manager posts
// the runner Events on the object and keeps the run in its history
// ConfigMap, readable after the pod is gone; the identity's credential (a
// canary) appears in none of it.
TEST_F(TerraformClusterE2eTest, RunReportsBecomeEventsAndARunHistory) {
  const std::string name = "tc-reports";
  // Canaries: a sensitive variable (from a Secret), the identity's
  // credential and a module output (the exports' token; root outputs are
  // sensitive).
  const std::string variable_canary = "canary-variable-7f3e91c2";
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata",
          {{"name", "reports-vars"},
           {"namespace", kNamespace},
           {"labels", {{"captf.io/variables", "true"}}}}},
         {"stringData", {{"size", variable_canary}}}});
  e2e::createClusterPair(
      kNamespace, name, "c-reports",
      {{"source", {{"image", module_image_}}},
       {"identityRef", {{"name", kIdentity}}},
       {"variablesFrom", json::array({{{"secretRef", {{"name", "reports-vars"}}}}})}});
  // captf_jobs_active counts the apply while it runs (a run takes seconds
  // on the rig; the check polls every 500 ms) and drops it afterwards.
  const std::string active = "captf_jobs_active{kind=\"TerraformCluster\",op=\"apply\"} 1\n";
  bool seen_active = false;
  ASSERT_TRUE(eventually([&] {
    seen_active = seen_active || manager_.metrics().find(active) != std::string::npos;
    return readyTrue(tc(name));
  })) << tc(name).dump(2)
      << managerLog();
  EXPECT_TRUE(seen_active);
  EXPECT_TRUE(eventually([&] { return manager_.metrics().find(active) == std::string::npos; }));
  EXPECT_THAT(manager_.metrics(), HasSubstr("# TYPE captf_jobs_active gauge"));

  // The runner's ServiceAccount holds no events permission.
  for (const char* resource : {"events", "events.events.k8s.io"}) {
    const rig::CommandResult can =
        kubectl({"auth", "can-i", "create", resource, "-n", kNamespace,
                 std::string("--as=system:serviceaccount:") + kNamespace + ":captf-runner"});
    EXPECT_THAT(can.output, HasSubstr("no")) << resource;
  }
  // The runner Events, posted by the manager as captf.io/runner.
  std::set<std::string> reasons;
  json events;
  ASSERT_TRUE(eventually([&] {
    events = getJson({"-n", kNamespace, "get", "events.events.k8s.io", "--field-selector",
                      "regarding.name=" + name});
    reasons.clear();
    for (const json& event : events.value("items", json::array())) {
      if (event.value("reportingController", "") == "captf.io/runner") {
        reasons.insert(event.value("reason", ""));
      }
    }
    return reasons.count("RunFinished") > 0;
  })) << events.dump(2)
      << managerLog();
  for (const char* reason :
       {"RunStarted", "StepStarted", "StepSucceeded", "ResourcesChanged", "RunFinished"}) {
    EXPECT_EQ(reasons.count(reason), 1U) << reason << "\n" << events.dump(2);
  }

  // The run history outlives the pod.
  const std::vector<std::string> applies = jobs(name, "apply");
  ASSERT_EQ(applies.size(), 1U);
  kubectl({"-n", kNamespace, "delete", "pods", "-l", "job-name=" + applies[0], "--wait=true"});
  const json history = getJson({"-n", kNamespace, "get", "configmap", "captf-runs-c-" + name});
  ASSERT_TRUE(history.is_object()) << managerLog();
  const json runs =
      json::parse(history["data"].value("runs.json", std::string("[]")), nullptr, false);
  ASSERT_TRUE(runs.is_array() && !runs.empty()) << history.dump(2);
  const json& run = runs[0];
  EXPECT_EQ(run.value("job", ""), applies[0]);
  EXPECT_EQ(run.value("operation", ""), "apply");
  EXPECT_EQ(run.value("result", ""), "succeeded");
  EXPECT_TRUE(run.contains("durationSeconds")) << run.dump(2);
  EXPECT_FALSE(run.value("steps", json::array()).empty()) << run.dump(2);
  EXPECT_EQ(run["changes"].value("add", -1), 2) << run.dump(2);
  EXPECT_EQ(run.value("logTailSource", ""), "reports") << run.dump(2);
  EXPECT_FALSE(run.value("logTail", json::array()).empty()) << run.dump(2);

  // No report was refused, and the canary is nowhere.
  const std::string metrics = manager_.metrics();
  EXPECT_THAT(metrics, HasSubstr("captf_run_report_rejections_total{reason=\"bad_token\"} 0"));
  EXPECT_THAT(metrics, Not(HasSubstr("captf_run_report_events_total 0\n")));
  // The sensitive variable reached the run (its rendered tfvars).
  const json inputs = getJson({"-n", kNamespace, "get", "secret", "captf-inputs-c-" + name});
  std::string tfvars;
  ASSERT_TRUE(
      absl::Base64Unescape(inputs["data"].value("terraform.tfvars.json", std::string()), &tfvars))
      << inputs.dump(2);
  EXPECT_THAT(tfvars, HasSubstr(variable_canary));
  const json all_events = getJson({"-n", kNamespace, "get", "events.events.k8s.io"});
  for (const std::string& canary : {std::string(runner::e2e::kCredentialValue),
                                    std::string(runner::e2e::kExportSecret), variable_canary}) {
    EXPECT_THAT(all_events.dump(), Not(HasSubstr(canary)));
    EXPECT_THAT(history.dump(), Not(HasSubstr(canary)));
    EXPECT_THAT(tc(name).dump(), Not(HasSubstr(canary)));
    EXPECT_THAT(managerLog(), Not(HasSubstr(canary)));
  }
  deleteCluster(name, "c-reports");
}

// Logs (docs/reference/logs.md): with --logging-format=json every line the
// manager writes is one JSON object, and the reconcile lines of a
// TerraformCluster carry controller-runtime's fields, the object and its
// Cluster as {"name","namespace"} members, their key/values as members, and
// a message that names neither (no key=value inside "msg").
TEST_F(TerraformClusterE2eTest, ReconcileLogLinesAreJsonWithTheObjectAndItsClusterAsFields) {
  const std::string name = "tc-logs";
  const std::string cluster_name = "c-logs";
  manager_.stopCleanly();
  manager_.start({"--logging-format=json"});
  createCluster(name, cluster_name);
  const json object = {{"name", name}, {"namespace", kNamespace}};
  const json owner = {{"name", cluster_name}, {"namespace", kNamespace}};
  // The reconcile lines of the object, each parsed; empty until one names
  // its Cluster.
  const auto reconcile_lines = [&] {
    std::vector<json> found;
    std::istringstream in(manager_.processLog());
    for (std::string line; std::getline(in, line);) {
      const json parsed = json::parse(line, nullptr, false);
      if (parsed.is_object() && parsed.value("TerraformCluster", json()) == object) {
        found.push_back(parsed);
      }
    }
    return found;
  };
  const auto created = [&] {
    for (const json& line : reconcile_lines()) {
      if (line.value("msg", "") == "run Job created") {
        return line;
      }
    }
    return json();
  };
  ASSERT_TRUE(eventually([&] { return created().is_object(); }))
      << tc(name).dump(2) << manager_.processLog();
  json line = created(); // not const: a missing member reads as null
  EXPECT_EQ(line["Cluster"], owner) << line.dump();
  EXPECT_EQ(line["controllerKind"], "TerraformCluster") << line.dump();
  EXPECT_EQ(line["controllerGroup"], "infrastructure.cluster.x-k8s.io") << line.dump();
  EXPECT_THAT(line.value("controller", ""), Not(::testing::IsEmpty())) << line.dump();
  EXPECT_EQ(line["namespace"], kNamespace);
  EXPECT_EQ(line["name"], name);
  EXPECT_THAT(line.value("reconcileID", ""), ::testing::MatchesRegex("[0-9a-f-]{36}"));
  EXPECT_EQ(line["operation"], "apply") << line.dump();
  EXPECT_THAT(jobs(name, "apply"), Contains(line["Job"].value("name", ""))) << line.dump();
  EXPECT_EQ(line["v"], 0);
  EXPECT_TRUE(line["ts"].is_number()) << line.dump();
  // Every reconcile line: the owner once resolved, nothing inside msg.
  const std::vector<json> lines = reconcile_lines();
  bool decided = false;
  for (json each : lines) {
    const std::string msg = each.value("msg", "");
    EXPECT_THAT(msg, Not(HasSubstr(name))) << each.dump();
    EXPECT_THAT(msg, Not(HasSubstr("="))) << each.dump();
    if (msg == "next operation decided") {
      decided = true;
      EXPECT_EQ(each["Cluster"], owner) << each.dump();
      EXPECT_TRUE(each.contains("reason")) << each.dump();
    }
  }
  EXPECT_TRUE(decided) << "the -v=4 decision lines of the object";
  // The process wrote nothing but JSON lines, and no credential.
  std::istringstream in(manager_.processLog());
  for (std::string text; std::getline(in, text);) {
    EXPECT_TRUE(json::accept(text)) << text;
  }
  EXPECT_THAT(manager_.processLog(), Not(HasSubstr(runner::e2e::kCredentialValue)));

  ASSERT_TRUE(eventually([&] { return readyTrue(tc(name)); })) << tc(name).dump(2);
  deleteCluster(name, cluster_name);
  // The next tests read the default (text) log.
  manager_.stopCleanly();
  startManager();
}

// Faults: the manager is killed (SIGKILL) while its apply Job runs, the
// runner pod is deleted mid-apply, and the API server restarts while
// nothing reconciles. (The manager is killed once the runner runs, not
// right after the Job's create: a kill between the Job and its per-run
// Secret leaves a pod that cannot start, a fault of its own.) A new manager process recovers to
// Ready with the state adopted, and never runs two apply Jobs at once (one success, every Job a
// distinct attempt).
TEST_F(TerraformClusterE2eTest, RecoversFromManagerRunnerAndApiServerFaults) {
  const std::string name = "tc2";
  // An apply that takes 20 seconds (a local-exec of the test child), so the
  // runner pod is surely killed mid-apply.
  const std::string slow_image =
      runner::e2e::Images::get().module("tc-e2e-slow",
                                        runner::e2e::noopModule(contract::Role::kCluster) +
                                            "resource \"terraform_data\" \"slow\" {\n"
                                            "  input = var.captf_object.name\n"
                                            "  provisioner \"local-exec\" {\n"
                                            "    command     = \"sleep:20\"\n"
                                            "    interpreter = [\"/captf/module/child\"]\n"
                                            "  }\n"
                                            "}\n",
                                        env().tofu);
  e2e::createClusterPair(
      kNamespace, name, "c2",
      {{"source", {{"image", slow_image}}}, {"identityRef", {{"name", kIdentity}}}});
  std::string job;
  ASSERT_TRUE(eventually([&] {
    const auto names = jobs(name, "apply");
    if (!names.empty()) {
      job = names.front();
    }
    return !job.empty();
  })) << managerLog();
  // The runner pod, killed mid-apply: once its source container runs.
  std::string pod;
  ASSERT_TRUE(eventually(
      [&] {
        const json pods = getJson({"-n", kNamespace, "get", "pods", "-l", "job-name=" + job});
        for (const json& p : pods.value("items", json::array())) {
          const json statuses =
              p.value("status", json::object()).value("containerStatuses", json::array());
          for (const json& c : statuses) {
            if (c.value("name", "") == "source" &&
                c.value("state", json::object()).contains("running")) {
              pod = p["metadata"]["name"];
            }
          }
        }
        return !pod.empty();
      },
      std::chrono::seconds(120)))
      << managerLog();
  manager_.process.stop(SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(5)); // into the apply step
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "pod", pod, "--wait=false"}).exit_code, 0);
  const rig::CommandResult restarted =
      rig::run({sourceDir() + "/test/rig/rig", "restart", "apiserver", "--dir", env().dir});
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
  startManager();
  // A runtime stopped while the API server was away could not let go of the
  // lock, and its pod is gone without a terminal phase anyone read: no
  // proof that it ended, so the lock holds until its Job's deadline
  // (docs/behaviour/state.md#locks) or the runbook's unlock, the person's
  // step once the pod's node is known to have stopped it.
  ASSERT_TRUE(eventually([&] {
    const json object = tc(name);
    return readyTrue(object) ||
           absl::StrContains(conditionOf(object, "StateReadable", "message"), "no longer exists");
  })) << tc(name).dump(2)
      << "\n"
      << managerLog();
  if (!readyTrue(tc(name))) {
    std::printf("the interrupted runtime left the lock; unlocked by hand\n");
    e2e::mergePatch(kNamespace, "lease", "lock-tfstate-default-" + stateSuffix(name),
                    {{"metadata", {{"annotations", {{"app.terraform.io/lock-info", nullptr}}}}},
                     {"spec", {{"holderIdentity", nullptr}}}});
  }
  ASSERT_TRUE(eventually([&] {
    const json object = tc(name);
    return readyTrue(object) && stateSecret(name)["metadata"]
                                    .value("annotations", json::object())
                                    .contains("captf.io/inputs-hash");
  })) << tc(name).dump(2)
      << "\n"
      << managerLog();
  const json list = getJson({"-n", kNamespace, "get", "jobs", "-l",
                             "captf.infrastructure.cluster.x-k8s.io/owner-name=" + name +
                                 ",captf.infrastructure.cluster.x-k8s.io/op=apply"});
  int succeeded = 0;
  std::set<std::string> attempts;
  for (const json& j : list.value("items", json::array())) {
    succeeded += j.value("status", json::object()).value("succeeded", 0);
    attempts.insert(
        j["metadata"]["labels"].value("captf.infrastructure.cluster.x-k8s.io/attempt", ""));
  }
  EXPECT_EQ(succeeded, 1) << list.dump(2);
  // The killed run was recognized as stopped from outside.
  int interrupted = 0;
  for (const json& j : list.value("items", json::array())) {
    if (j["metadata"].value("annotations", json::object()).contains("captf.io/interrupted")) {
      ++interrupted;
    }
  }
  EXPECT_GE(interrupted, 1) << list.dump(2);
  EXPECT_EQ(attempts.size(), list.value("items", json::array()).size()) << list.dump(2);
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io", "c2",
                     "--wait=false"})
                .exit_code,
            0);
  EXPECT_TRUE(eventually([&] {
    return kubectl({"-n", kNamespace, "get", "terraformcluster", name}).exit_code != 0;
  })) << tc(name).dump(2);
}

// SIGTERM, as Kubernetes sends on every rollout, with every controller
// running and objects in the caches: the manager exits 0 with no sanitizer
// report and releases the leader Lease; nothing is half-written, so the next
// manager re-applies nothing.
TEST_F(TerraformClusterE2eTest, SigtermStopsTheManagerCleanly) {
  const std::string name = "tc3";
  createCluster(name, "c3");
  ASSERT_TRUE(eventually([&] { return readyTrue(tc(name)); })) << tc(name).dump(2) << managerLog();
  ASSERT_TRUE(eventually([] { return !leaseHolder().empty(); }));
  const std::string state_version = stateSecret(name)["metadata"]["resourceVersion"];
  ASSERT_EQ(jobs(name, "apply").size(), 1U);

  manager_.stopCleanly();
  EXPECT_EQ(leaseHolder(), "") << "the Lease is released on a clean stop";

  startManager();
  // The new manager leads and passes over every TerraformCluster once.
  const size_t objects =
      getJson({"-n", kNamespace, "get", "terraformclusters"}).value("items", json::array()).size();
  ASSERT_TRUE(eventually([&] {
    const auto passes = e2e::metricValue(manager_.metrics(), "controller_runtime_reconcile_total",
                                         {{"controller", "terraformcluster"}});
    return passes && *passes >= static_cast<double>(objects);
  })) << manager_.processLog();
  EXPECT_TRUE(readyTrue(tc(name)));
  EXPECT_EQ(jobs(name, "apply").size(), 1U) << "nothing re-applied after the clean stop";
  EXPECT_EQ(stateSecret(name)["metadata"]["resourceVersion"], state_version);
  deleteCluster(name, "c3");
}

// Holds the API server's first Job CREATE for TerraformCluster `owner`
// open until the test releases it: a pass of the manager stays in flight
// inside its Job create.
e2e::WriteMatch jobCreateOf(const std::string& owner) {
  return {.group = "batch",
          .version = "v1",
          .resource = "jobs",
          .operations = {"CREATE"},
          .ns = kNamespace,
          .when = [owner](const json& request) {
            return kube::meta::labels(request.value("object", json::object()))
                       .value("captf.infrastructure.cluster.x-k8s.io/owner-name", "") == owner;
          }};
}

// SIGTERM while a pass is in flight (its Job create held open by the API
// server). Within the grace period the pass finishes and the manager exits
// 0; past it the manager exits 1 at once, says so, and keeps the Lease (the
// abandoned pass might still write). Either way the next manager finishes
// the work with exactly one apply Job per object.
TEST_F(TerraformClusterE2eTest, APassCutShortBySigtermIsFinishedByTheNextManager) {
  {
    e2e::WriteHold hold("tc4", jobCreateOf("tc4"));
    manager_.stopCleanly();
    manager_.start({"--graceful-shutdown-timeout=60s"});
    createCluster("tc4", "c4");
    ASSERT_TRUE(hold.awaitHeld(std::chrono::seconds(240))) << manager_.processLog();
    manager_.process.signal(SIGTERM);
    // Draining: the pass is waiting for its Job create, and the manager too.
    EXPECT_FALSE(manager_.process.wait(std::chrono::seconds(3)).has_value())
        << manager_.processLog();
    hold.release();
    const std::optional<int> code = manager_.process.wait(std::chrono::seconds(60));
    ASSERT_TRUE(code.has_value()) << manager_.processLog();
    EXPECT_EQ(*code, 0) << manager_.processLog();
    EXPECT_EQ(e2e::sanitizerReport(manager_.processLog()), "");
    EXPECT_THAT(manager_.processLog(), HasSubstr("manager stopped"));
    EXPECT_EQ(jobs("tc4", "apply").size(), 1U) << "the finished pass created its Job";
    EXPECT_EQ(leaseHolder(), "");
  }
  {
    e2e::WriteHold hold("tc5", jobCreateOf("tc5"));
    manager_.start({"--graceful-shutdown-timeout=2s"});
    createCluster("tc5", "c5");
    ASSERT_TRUE(hold.awaitHeld(std::chrono::seconds(240))) << manager_.processLog();
    const std::string holder = leaseHolder();
    EXPECT_FALSE(holder.empty());
    manager_.process.signal(SIGTERM);
    const std::optional<int> code = manager_.process.wait(std::chrono::seconds(60));
    ASSERT_TRUE(code.has_value()) << manager_.processLog();
    EXPECT_EQ(*code, 1) << manager_.processLog();
    EXPECT_THAT(manager_.processLog(), HasSubstr("graceful shutdown timed out"));
    EXPECT_EQ(e2e::sanitizerReport(manager_.processLog()), "");
    EXPECT_EQ(leaseHolder(), holder) << "the Lease is kept while abandoned work may run";
  }
  startManager();
  for (const char* name : {"tc4", "tc5"}) {
    EXPECT_TRUE(eventually([&] { return readyTrue(tc(name)); }))
        << tc(name).dump(2) << manager_.processLog();
    EXPECT_EQ(jobs(name, "apply").size(), 1U) << name;
    EXPECT_EQ(succeededApplies(name), 1) << name;
  }
  deleteCluster("tc4", "c4");
  deleteCluster("tc5", "c5");
}

// docs/behaviour/security.md "Secrets out of status, events and logs", on the failure paths:
// the forms in which `text` carries `canary`: raw, as a JSON string (escaped once,
// ASCII-escaped, or escaped twice as a text log line quotes a JSON message) or in base64 at
// any alignment (the encoding's inner characters). (test/contract/test_util.h's
// expectNoSecret checks one error message and also a canary's first half, which a whole log
// carries legitimately when the canary starts like a resource name.)
std::vector<std::string> canaryFormsIn(std::string_view text, const std::string& canary) {
  const auto unquoted = [](const std::string& quoted) {
    return quoted.substr(1, quoted.size() - 2);
  };
  const std::string escaped = unquoted(json(canary).dump());
  std::vector<std::string> forms = {canary, escaped,
                                    unquoted(json(canary).dump(-1, ' ', /*ensure_ascii=*/true)),
                                    unquoted(json(escaped).dump())};
  for (std::size_t shift = 0; shift < 3; ++shift) {
    const std::string encoded = absl::Base64Escape(std::string(shift, '\0') + canary);
    forms.push_back(encoded.substr(4, encoded.size() - 8));
  }
  std::vector<std::string> found;
  for (const std::string& form : forms) {
    if (text.find(form) != std::string_view::npos) {
      found.push_back(form);
    }
  }
  return found;
}

// Whether the manager answers /readyz (it handles SIGTERM by then).
bool managerReady(const e2e::ManagerRig& manager) {
  return eventually([&] {
    return rig::run({"curl", "-sf",
                     "http://127.0.0.1:" + std::to_string(manager.health_port) + "/readyz"})
               .exit_code == 0;
  });
}

// Runs the manager at the highest -v it has (5 and above: every level, trace), or back at
// the suite's default; returns once it is ready.
void restartManagerAt(e2e::ManagerRig& manager, int verbosity) {
  EXPECT_TRUE(managerReady(manager)) << manager.processLog();
  manager.stopCleanly();
  manager.verbosity = verbosity;
  manager.start();
  EXPECT_TRUE(managerReady(manager)) << manager.processLog();
}
constexpr int kMostVerbose = 10;

// Everything the manager writes about the TerraformClusters `names` that a canary must stay
// out of: each object (status and conditions), every Event of the namespace, each run-history
// ConfigMap, the termination messages of the objects' Job pods (except the Jobs of `hostile`,
// whose message the module itself wrote), the manager's log and its /metrics.
std::vector<std::pair<std::string, std::string>>
canarySurfaces(const e2e::ManagerRig& manager, const std::vector<std::string>& names,
               const std::string& hostile = "") {
  std::vector<std::pair<std::string, std::string>> surfaces;
  for (const std::string& name : names) {
    surfaces.emplace_back("TerraformCluster " + name,
                          getJson({"-n", kNamespace, "get", "terraformcluster", name}).dump());
    surfaces.emplace_back(
        "run history of " + name,
        getJson({"-n", kNamespace, "get", "configmap", "captf-runs-c-" + name}).dump());
    if (name == hostile) {
      continue;
    }
    for (const json& job : e2e::items(kNamespace, "jobs",
                                      "captf.infrastructure.cluster.x-k8s.io/owner-name=" + name)) {
      const std::string job_name = job["metadata"].value("name", "");
      for (const json& pod : e2e::items(kNamespace, "pods", "job-name=" + job_name)) {
        const json status = pod.value("status", json::object());
        for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
          for (const json& container : status.value(list, json::array())) {
            surfaces.emplace_back("termination message of Job " + job_name,
                                  container.value("state", json::object())
                                      .value("terminated", json::object())
                                      .value("message", ""));
          }
        }
      }
    }
  }
  surfaces.emplace_back("Events of " + std::string(kNamespace),
                        getJson({"-n", kNamespace, "get", "events.events.k8s.io"}).dump() +
                            getJson({"-n", kNamespace, "get", "events"}).dump());
  surfaces.emplace_back("the manager's log", manager.logText());
  surfaces.emplace_back("the manager's /metrics", manager.metrics());
  return surfaces;
}

void expectCanariesAbsent(const std::vector<std::pair<std::string, std::string>>& surfaces,
                          const std::vector<std::string>& canaries) {
  for (const auto& [where, text] : surfaces) {
    for (const std::string& canary : canaries) {
      EXPECT_THAT(canaryFormsIn(text, canary), ::testing::IsEmpty())
          << where << " carries the canary " << canary;
    }
  }
}

// (a) a state Secret of a provisioned object garbled (gzip of a JSON document cut inside a
// string holding a canary) and (c) a labelled variablesFrom Secret whose format-JSON value is
// invalid JSON holding another: the object says StateCorrupt and VariablesInvalid, with an
// Event, a metric and log lines at the manager's highest -v, and neither canary is in any of
// them.
TEST_F(TerraformClusterE2eTest, UnreadableStateAndVariablesKeepTheirContentOutOfEverything) {
  restartManagerAt(manager_, kMostVerbose);
  // A quote in it: JSON writes it escaped, so a parser quoting its input would show the
  // escaped form.
  const std::string state_canary = "statecanary-\"4e1f9a7c2d0b";
  const std::string vars_canary = "varscanary-8d2c5b3a1e6f";
  const std::string stated = "tc-leak-state";
  const std::string varied = "tc-leak-vars";
  createCluster(stated, "c-leak-state");
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata",
          {{"name", "leak-vars"},
           {"namespace", kNamespace},
           {"labels", {{"captf.io/variables", "true"}}}}},
         {"stringData", {{"size", R"({"token": ")" + vars_canary + R"(", "zones": [1, 2)"}}}});
  e2e::createClusterPair(kNamespace, varied, "c-leak-vars",
                         {{"source", {{"image", module_image_}}},
                          {"identityRef", {{"name", kIdentity}}},
                          {"variablesFrom", json::array({{{"secretRef", {{"name", "leak-vars"}}},
                                                          {"format", "JSON"}}})}});
  ASSERT_TRUE(eventually([&] { return readyTrue(tc(stated)); }))
      << tc(stated).dump(2) << managerLog();

  // (a) The state cut inside the output that holds the canary: valid gzip, invalid JSON.
  const std::string original = stateSecret(stated)["data"].value("tfstate", "");
  ASSERT_FALSE(original.empty());
  const std::string garbled =
      R"({"version":4,"terraform_version":"1.8.0","serial":7,"lineage":"leak","outputs":)"
      R"({"token":{"type":"string","sensitive":true,"value":)" +
      json(state_canary + "-and-the-rest").dump().substr(0, 30);
  e2e::mergePatch(kNamespace, "secret", "tfstate-default-" + stateSuffix(stated),
                  {{"data", {{"tfstate", absl::Base64Escape(contract::testing::gzip(garbled))}}}});
  kubectl({"-n", kNamespace, "annotate", "terraformcluster", stated, "e2e.captf.io/poke=1"});
  ASSERT_TRUE(eventually([&] {
    return conditionOf(tc(stated), "StateReadable", "reason") == "StateCorrupt" &&
           !e2e::eventsFor(kNamespace, stated, "StateUnreadable").empty();
  })) << tc(stated).dump(2)
      << managerLog();
  EXPECT_THAT(conditionOf(tc(stated), "StateReadable", "message"),
              HasSubstr("invalid JSON at byte"));

  // (c) The variables source refused, naming the source and key only.
  ASSERT_TRUE(eventually([&] {
    return conditionOf(tc(varied), "DependenciesReady", "reason") == "VariablesInvalid";
  })) << tc(varied).dump(2)
      << managerLog();
  EXPECT_THAT(conditionOf(tc(varied), "DependenciesReady", "message"),
              HasSubstr("Secret leak-vars: key size is not valid JSON"));
  EXPECT_TRUE(
      e2e::metricValue(manager_.metrics(), "captf_state_read_errors_total", {{"reason", "corrupt"}})
          .value_or(0) >= 1)
      << manager_.metrics();

  // The helper finds a canary where it is: base64 in the Secret's data.
  EXPECT_THAT(
      canaryFormsIn(getJson({"-n", kNamespace, "get", "secret", "leak-vars"}).dump(), vars_canary),
      Not(::testing::IsEmpty()));
  expectCanariesAbsent(canarySurfaces(manager_, {stated, varied}), {state_canary, vars_canary});

  // The state restored, both go.
  e2e::mergePatch(kNamespace, "secret", "tfstate-default-" + stateSuffix(stated),
                  {{"data", {{"tfstate", original}}}});
  ASSERT_TRUE(eventually([&] {
    return conditionOf(tc(stated), "StateReadable", "reason") == "StateRead";
  })) << tc(stated).dump(2);
  deleteCluster(varied, "c-leak-vars");
  deleteCluster(stated, "c-leak-state");
  kubectl({"-n", kNamespace, "delete", "secret", "leak-vars"});
  restartManagerAt(manager_, 4);
}

// (b) a module that leaves a malformed result document holding a canary in its
// termination message (it writes the file, then kills the runner before the runner's own
// document replaces it: the message is the module's to write, which is why the manager treats
// it as untrusted) and (d) a provider whose apply fails echoing the identity's credential and
// a sensitive variable (a local-exec printing both before it fails, so they reach the
// runtime's error): the objects' status, Events, run history, the other Jobs' termination
// messages, the manager's log at its highest -v and /metrics carry none of them.
TEST_F(TerraformClusterE2eTest, FailingRunsKeepModuleAndProviderSecretsOutOfEverything) {
  restartManagerAt(manager_, kMostVerbose);
  const std::string result_canary = "resultcanary-6a0f3e9b71c4";
  const std::string provider_canary = "providercanary-2b7e4d19f05a";
  const std::string hostile = "tc-leak-result";
  const std::string failing = "tc-leak-provider";
  const std::string hostile_image = runner::e2e::Images::get().module(
      "tc-leak-result",
      runner::e2e::noopModule(contract::Role::kCluster) +
          "resource \"terraform_data\" \"hostile\" {\n"
          "  input = var.captf_object.name\n"
          "  provisioner \"local-exec\" {\n"
          "    command     = \"killancestor:runner\"\n"
          "    interpreter = [\"/captf/module/child\",\n"
          "      \"write:/dev/termination-log:{\\\"operation\\\":\\\"OPERATION_APPLY\\\","
          "\\\"error\\\":{\\\"summary\\\":\\\"token " +
          result_canary +
          " refused\"]\n"
          "  }\n"
          "}\n",
      env().tofu);
  const std::string failing_image = runner::e2e::Images::get().module(
      "tc-leak-provider",
      runner::e2e::noopModule(contract::Role::kCluster) +
          "variable \"token\" {\n"
          "  type = string\n"
          "}\n"
          "resource \"terraform_data\" \"leaky\" {\n"
          "  input = var.captf_object.name\n"
          "  provisioner \"local-exec\" {\n"
          "    command     = \"exit:1\"\n"
          "    interpreter = [\"/captf/module/child\", \"env:NOOP_API_TOKEN\", \"env:LEAK\",\n"
          "                   \"err:the provider refused the credential\"]\n"
          "    environment = { LEAK = var.token }\n"
          "  }\n"
          "}\n",
      env().tofu);
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata",
          {{"name", "leak-provider-vars"},
           {"namespace", kNamespace},
           {"labels", {{"captf.io/variables", "true"}}}}},
         {"stringData", {{"token", provider_canary}}}});
  e2e::createClusterPair(
      kNamespace, hostile, "c-leak-result",
      {{"source", {{"image", hostile_image}}}, {"identityRef", {{"name", kIdentity}}}});
  e2e::createClusterPair(
      kNamespace, failing, "c-leak-provider",
      {{"source", {{"image", failing_image}}},
       {"identityRef", {{"name", kIdentity}}},
       {"variablesFrom", json::array({{{"secretRef", {{"name", "leak-provider-vars"}}}}})}});
  const auto failed = [&](const std::string& name) {
    return eventually([&] {
      return !e2e::eventsFor(kNamespace, name, "JobFailed").empty() &&
             getJson({"-n", kNamespace, "get", "configmap", "captf-runs-c-" + name}).is_object();
    });
  };
  ASSERT_TRUE(failed(failing)) << tc(failing).dump(2) << managerLog();
  ASSERT_TRUE(failed(hostile)) << tc(hostile).dump(2) << managerLog();

  // (d) The provider did echo both, and the runner caught them in its own log.
  const std::vector<std::string> failing_jobs = jobs(failing, "apply");
  ASSERT_FALSE(failing_jobs.empty());
  std::string pod_log;
  for (const json& pod : e2e::items(kNamespace, "pods", "job-name=" + failing_jobs.front())) {
    pod_log += rig::podLog(env(), kNamespace, pod["metadata"].value("name", ""), "source");
  }
  EXPECT_THAT(pod_log, HasSubstr("NOOP_API_TOKEN=[redacted]")) << pod_log;
  EXPECT_THAT(pod_log, HasSubstr("LEAK=[redacted]")) << pod_log;
  // The runtime's error, curated, is what the JobFailed Event says.
  EXPECT_THAT(e2e::eventsFor(kNamespace, failing, "JobFailed").front().value("note", ""),
              HasSubstr("local-exec"));
  // (b) The hostile message is what the pod ended with; the manager kept none of it.
  bool hostile_message = false;
  for (const std::string& job : jobs(hostile, "apply")) {
    for (const json& pod : e2e::items(kNamespace, "pods", "job-name=" + job)) {
      hostile_message =
          hostile_message ||
          pod.value("status", json::object()).dump().find(result_canary) != std::string::npos;
    }
  }
  EXPECT_TRUE(hostile_message) << "the module never left its document";

  expectCanariesAbsent(canarySurfaces(manager_, {hostile, failing}, hostile),
                       {result_canary, provider_canary, runner::e2e::kCredentialValue});

  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io",
                     "c-leak-result", "c-leak-provider", "--wait=false"})
                .exit_code,
            0);
  EXPECT_TRUE(eventually([&] {
    return kubectl({"-n", kNamespace, "get", "terraformcluster", hostile}).exit_code != 0 &&
           kubectl({"-n", kNamespace, "get", "terraformcluster", failing}).exit_code != 0;
  })) << tc(hostile).dump(2)
      << tc(failing).dump(2) << managerLog();
  kubectl({"-n", kNamespace, "delete", "secret", "leak-provider-vars"});
  restartManagerAt(manager_, 4);
}

// docs/behaviour/jobs.md#image-pulls: a module image that does not exist yet
// is reported within a minute as ImagePullFailed naming it, with one Warning
// Event and one count, while its Job waits; once the image is pushed, the
// same Job pulls it and the TerraformCluster provisions.
TEST_F(TerraformClusterE2eTest, AMissingModuleImageIsReportedAndPulledOnceItIsPushed) {
  const std::string name = "tc-late-image";
  const std::string image = env().registry + "/captf/module-" + name + ":e2e";
  ASSERT_TRUE(eventually([&] { return !manager_.metrics().empty(); })) << managerLog();
  const e2e::MetricsSince since(manager_);
  ASSERT_NO_FATAL_FAILURE(createWaitingForItsImage(name, "c-late-image", image));
  const json failing = tc(name);
  EXPECT_EQ(conditionOf(failing, "ApplyJobSucceeded", "status"), "False");
  const std::string message = conditionOf(failing, "ApplyJobSucceeded", "message");
  EXPECT_THAT(message, HasSubstr("image " + image + " of container source cannot be pulled"));
  EXPECT_THAT(message, HasSubstr("ErrImagePull"));
  EXPECT_EQ(conditionOf(failing, "Ready", "status"), "False");
  ASSERT_TRUE(eventually([&] {
    return !e2e::eventsFor(kNamespace, name, "ImagePullFailed").empty();
  })) << managerLog();
  EXPECT_EQ(e2e::eventsFor(kNamespace, name, "ImagePullFailed").front().value("type", ""),
            "Warning");
  EXPECT_THAT(e2e::eventsFor(kNamespace, name, "ImagePullFailed").front().value("note", ""),
              HasSubstr(image));
  const std::map<std::string, std::string> applies = {{"kind", "TerraformCluster"},
                                                      {"op", "apply"}};
  EXPECT_TRUE(since.grows("captf_image_pull_failures_total", applies)) << manager_.metrics();
  const std::vector<std::string> waiting = jobs(name, "apply");
  ASSERT_EQ(waiting.size(), 1U);

  // The image appears under the name the object gives.
  const std::string pushed = runner::e2e::Images::get().module(
      name, runner::e2e::noopModule(contract::Role::kCluster), env().tofu);
  ASSERT_TRUE(pushed.starts_with(env().registry + "/captf/module-" + name + "@")) << pushed;
  ASSERT_TRUE(eventually([&] { return readyAndProvisioned(name); }))
      << tc(name).dump(2) << managerLog();
  EXPECT_EQ(conditionOf(tc(name), "ApplyJobSucceeded", "reason"), "ApplySucceeded");
  // The Job that waited is the one that ran: no retry, no second failure.
  EXPECT_EQ(jobs(name, "apply"), waiting);
  EXPECT_EQ(succeededApplies(name), 1);
  EXPECT_EQ(e2e::eventsFor(kNamespace, name, "ImagePullFailed").size(), 1U);
  EXPECT_EQ(since.delta("captf_image_pull_failures_total", applies), 1.0) << manager_.metrics();
  EXPECT_EQ(since.delta("captf_jobs_total",
                        {{"kind", "TerraformCluster"}, {"op", "apply"}, {"result", "failed"}}),
            0.0);
  deleteCluster(name, "c-late-image");
}

// docs/behaviour/jobs.md#image-pulls: correcting spec.source.image while its
// apply Job waits to pull the wrong one replaces that Job at once: the
// waiting Job is deleted with one Normal Event naming both images, a Job
// with the corrected image provisions the object, and no failed run is
// counted (the Job that waited never ran).
TEST_F(TerraformClusterE2eTest, ACorrectedImageReplacesTheJobWaitingForTheWrongOne) {
  const std::string name = "tc-typo-image";
  const std::string good = runner::e2e::Images::get().module(
      name, runner::e2e::noopModule(contract::Role::kCluster), env().tofu);
  const std::string typo = env().registry + "/captf/module-" + name + "-typo:e2e";
  ASSERT_TRUE(eventually([&] { return !manager_.metrics().empty(); })) << managerLog();
  const e2e::MetricsSince since(manager_);
  ASSERT_NO_FATAL_FAILURE(createWaitingForItsImage(name, "c-typo-image", typo));
  const std::vector<std::string> waiting = jobs(name, "apply");
  ASSERT_EQ(waiting.size(), 1U);

  e2e::mergePatch(kNamespace, "terraformcluster", name,
                  {{"spec", {{"source", {{"image", good}}}}}});
  ASSERT_TRUE(eventually([&] { return readyAndProvisioned(name); }))
      << tc(name).dump(2) << managerLog();
  const std::vector<json> replaced = e2e::eventsFor(kNamespace, name, "OutdatedImageJobDeleted");
  ASSERT_EQ(replaced.size(), 1U);
  EXPECT_EQ(replaced.front().value("type", ""), "Normal");
  const std::string note = replaced.front().value("note", "");
  EXPECT_THAT(note, HasSubstr(waiting.front()));
  EXPECT_THAT(note, HasSubstr(typo));
  EXPECT_THAT(note, HasSubstr(good));
  const std::vector<std::string> ran = jobs(name, "apply");
  EXPECT_THAT(ran, ::testing::Not(::testing::Contains(waiting.front())))
      << "the waiting Job is gone";
  EXPECT_EQ(succeededApplies(name), 1);
  EXPECT_EQ(since.delta("captf_jobs_total",
                        {{"kind", "TerraformCluster"}, {"op", "apply"}, {"result", "failed"}}),
            0.0);
  deleteCluster(name, "c-typo-image");
}

} // namespace
} // namespace captf::controllers
