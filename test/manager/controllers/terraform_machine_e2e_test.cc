// TerraformMachine end to end on the rig's capi tier: Cluster API v1.14's
// core controllers (MachineDeployment, MachineSet, Machine), the `manager`
// executable with exactly the shipped RBAC, real Jobs, real OpenTofu.
//
//   a Cluster on a TerraformCluster (noop cluster module) and a
//   MachineDeployment of 3 on a TerraformMachineTemplate (noop machine
//   module, bootstrap data from a Secret the template names) → 3 Machines
//   with providerIDs in phase Provisioned, each TerraformMachine with its own
//   adopted state; scaling to 5 and to 1 creates and destroys exactly the
//   right machines and their state; a machine whose bootstrap Secret appears
//   late waits (WaitingForBootstrapData) and then provisions with one Job;
//   deleting the Cluster destroys every machine before the cluster's destroy
//   starts and leaves nothing behind.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "contract/roles.h"
#include "test/manager/controllers/manager_e2e.h"
#include "test/runner/e2e_support.h"

namespace captf::controllers {
namespace {

using e2e::apply;
using e2e::conditionOf;
using e2e::env;
using e2e::eventually;
using e2e::getJson;
using e2e::kubectl;
using e2e::readyTrue;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNamespace[] = "tm-e2e";
constexpr char kIdentity[] = "tm-e2e";
constexpr char kCluster[] = "c1";
constexpr char kBootstrapSecret[] = "c1-bootstrap";
// The bootstrap payload: sensitive, never in a log, an Event or a status.
constexpr char kBootstrapValue[] = "#cloud-config\nruncmd: [echo e2e-bootstrap-7c6b5a49]\n";
constexpr char kBootstrapMarker[] = "e2e-bootstrap-7c6b5a49";
constexpr char kOpLabel[] = "captf.infrastructure.cluster.x-k8s.io/op";

class TerraformMachineE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    auto& images = runner::e2e::Images::get();
    manager_.runner_image = images.runner();
    cluster_image_ = images.module("tm-e2e-cluster",
                                   runner::e2e::noopModule(contract::Role::kCluster), env().tofu);
    machine_image_ = images.module("tm-e2e-machine",
                                   runner::e2e::noopModule(contract::Role::kMachine), env().tofu);
    // Healthy for its first 30 seconds, then unhealthy for good.
    flaky_image_ = images.module(
        "tm-e2e-flaky",
        runner::e2e::timedHealthModule(
            "\"running\"",
            "timecmp(plantimestamp(), timeadd(terraform_data.born.output, \"30s\")) < 0"),
        env().tofu);
    e2e::createTenant(kNamespace, kIdentity, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    // The rig's registry is plain HTTP: the template controller may read it.
    manager_.start({"--insecure-registry=" + env().registry});
    ASSERT_FALSE(HasFatalFailure());
    e2e::createClusterPair(
        kNamespace, "tc1", kCluster,
        {{"source", {{"image", cluster_image_}}}, {"identityRef", {{"name", kIdentity}}}});
    createBootstrapSecret(kBootstrapSecret);
    apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
           {"kind", "TerraformMachineTemplate"},
           {"metadata", {{"name", "workers"}, {"namespace", kNamespace}}},
           {"spec", {{"template", {{"spec", {{"source", {{"image", machine_image_}}}}}}}}}});
    apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
           {"kind", "TerraformMachineTemplate"},
           {"metadata", {{"name", "flaky"}, {"namespace", kNamespace}}},
           {"spec",
            {{"template",
              {{"spec",
                {{"source", {{"image", flaky_image_}}},
                 {"remediation",
                  {{"annotateMachine", true},
                   {"unhealthyThreshold", 1},
                   {"healthCheckIntervalSeconds", 60}}}}}}}}}});
    ASSERT_TRUE(eventually([] {
      return getJson({"-n", kNamespace, "get", "clusters.v1beta2.cluster.x-k8s.io", kCluster})
          .value("status", json::object())
          .value("initialization", json::object())
          .value("infrastructureProvisioned", false);
    })) << manager_.logText();
  }

  static void TearDownTestSuite() { manager_.stopCleanly(); }

  static void createBootstrapSecret(const std::string& name) {
    e2e::createBootstrapSecret(kNamespace, name, kBootstrapValue);
  }

  static json list(const std::string& resource, const std::string& selector = "") {
    return e2e::items(kNamespace, resource, selector);
  }
  static json machines(const std::string& deployment) {
    return list("machines.v1beta2.cluster.x-k8s.io",
                "cluster.x-k8s.io/deployment-name=" + deployment);
  }
  static json terraformMachine(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "terraformmachine", name});
  }
  // The TerraformMachines the Machines of `deployment` name, provisioned.
  static bool provisioned(const std::string& deployment, size_t want) {
    const json items = machines(deployment);
    if (items.size() != want) {
      return false;
    }
    for (const json& machine : items) {
      if (machine.value("status", json::object()).value("phase", "") != "Provisioned" ||
          machine["spec"].value("providerID", "").empty()) {
        return false;
      }
    }
    return true;
  }
  static std::set<std::string> infraNames(const std::string& deployment) {
    std::set<std::string> names;
    for (const json& machine : machines(deployment)) {
      names.insert(machine["spec"]["infrastructureRef"].value("name", ""));
    }
    return names;
  }
  static std::vector<std::string> jobsOf(const std::string& machine, const std::string& op) {
    return e2e::runJobs(kNamespace, machine, op);
  }
  static std::string stateSuffix(const std::string& machine) {
    return runner::e2e::stateSuffix(kNamespace, contract::Role::kMachine, machine);
  }
  // Every Secret of the machine: state chunks, durable inputs.
  static size_t secretsOf(const std::string& machine) {
    size_t n = list("secrets", "tfstateSecretSuffix=" + stateSuffix(machine)).size();
    if (kubectl({"-n", kNamespace, "get", "secret", "captf-inputs-m-" + machine}).exit_code == 0) {
      ++n;
    }
    return n;
  }
  static void scale(const std::string& deployment, int replicas) {
    e2e::mergePatch(kNamespace, "machinedeployments.v1beta2.cluster.x-k8s.io", deployment,
                    {{"spec", {{"replicas", replicas}}}});
  }
  static void createDeployment(const std::string& name, int replicas,
                               const std::string& machine_template = "workers") {
    apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
           {"kind", "MachineDeployment"},
           {"metadata", {{"name", name}, {"namespace", kNamespace}}},
           {"spec",
            {{"clusterName", kCluster},
             {"replicas", replicas},
             {"selector", {{"matchLabels", {{"e2e.captf.io/pool", name}}}}},
             {"template",
              {{"metadata", {{"labels", {{"e2e.captf.io/pool", name}}}}},
               {"spec",
                {{"clusterName", kCluster},
                 {"version", "v1.34.0"},
                 {"bootstrap", {{"dataSecretName", kBootstrapSecret}}},
                 {"infrastructureRef",
                  {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
                   {"kind", "TerraformMachineTemplate"},
                   {"name", machine_template}}}}}}}}}});
  }
  // What the manager wrote and the API server recorded about the objects
  // (log and Events): never the bootstrap payload.
  static void expectNoBootstrapLeak() {
    EXPECT_THAT(manager_.logText(), Not(HasSubstr(kBootstrapMarker)));
    const auto events = kubectl({"-n", kNamespace, "get", "events.events.k8s.io", "-o", "json"});
    EXPECT_THAT(events.output, Not(HasSubstr(kBootstrapMarker)));
    EXPECT_THAT(kubectl({"-n", kNamespace, "get", "terraformmachines", "-o", "json"}).output,
                Not(HasSubstr(kBootstrapMarker)));
  }

  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static e2e::ManagerRig manager_;
  static std::string cluster_image_;
  static std::string machine_image_;
  static std::string flaky_image_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

// NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
e2e::ManagerRig TerraformMachineE2eTest::manager_;
std::string TerraformMachineE2eTest::cluster_image_;
std::string TerraformMachineE2eTest::machine_image_;
std::string TerraformMachineE2eTest::flaky_image_;
// NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)

TEST_F(TerraformMachineE2eTest, AMachineDeploymentScalesUpAndDown) {
  const e2e::MetricsSince since(manager_);
  createDeployment("md", 3);
  ASSERT_TRUE(eventually([] { return provisioned("md", 3); }, std::chrono::seconds(360)))
      << machines("md").dump(2) << list("terraformmachines").dump(2) << manager_.logText();

  std::set<std::string> provider_ids;
  for (const std::string& name : infraNames("md")) {
    const json tm = terraformMachine(name);
    SCOPED_TRACE(name);
    EXPECT_TRUE(readyTrue(tm)) << tm.dump(2);
    EXPECT_TRUE(tm["status"]["initialization"].value("provisioned", false));
    EXPECT_EQ(tm["status"].value("ready", false), true);
    const std::string provider_id = tm["spec"].value("providerID", "");
    EXPECT_THAT(provider_id, ::testing::StartsWith("noop://"));
    provider_ids.insert(provider_id);
    EXPECT_EQ(tm["status"]["addresses"][0]["address"], "10.0.0.10");
    // Exactly one apply, its state adopted by this object.
    EXPECT_EQ(jobsOf(name, "apply").size(), 1U);
    const json state =
        getJson({"-n", kNamespace, "get", "secret", "tfstate-default-" + stateSuffix(name)});
    ASSERT_TRUE(state.is_object());
    bool owned = false;
    for (const json& ref : state["metadata"].value("ownerReferences", json::array())) {
      owned = owned || ref.value("uid", "") == tm["metadata"].value("uid", "");
    }
    EXPECT_TRUE(owned) << state["metadata"].dump(2);
    EXPECT_THAT(state["metadata"]["annotations"].value("captf.io/inputs-hash", ""),
                ::testing::StartsWith("h2:"));
    // The durable inputs carry the digest the apply ran.
    const json durable = getJson({"-n", kNamespace, "get", "secret", "captf-inputs-m-" + name});
    EXPECT_THAT(durable["metadata"]["annotations"].value("captf.io/image-digest", ""),
                ::testing::StartsWith("sha256:"))
        << durable["metadata"].dump(2);
    EXPECT_THAT(tm["status"]["source"].value("imageDigest", ""), ::testing::StartsWith("sha256:"))
        << tm["status"].dump(2);
  }
  EXPECT_EQ(provider_ids.size(), 3U);
  expectNoBootstrapLeak();

  // Up to 5: two new machines, the first three untouched.
  const std::set<std::string> first = infraNames("md");
  scale("md", 5);
  ASSERT_TRUE(eventually([] { return provisioned("md", 5); }, std::chrono::seconds(360)))
      << machines("md").dump(2) << manager_.logText();
  const std::set<std::string> five = infraNames("md");
  EXPECT_TRUE(std::includes(five.begin(), five.end(), first.begin(), first.end()));
  for (const std::string& name : first) {
    EXPECT_EQ(jobsOf(name, "apply").size(), 1U) << name;
  }

  // Down to 1: four destroyed, their objects, state and inputs gone.
  scale("md", 1);
  ASSERT_TRUE(eventually(
      [&] {
        if (machines("md").size() != 1) {
          return false;
        }
        for (const std::string& name : five) {
          if (infraNames("md").contains(name)) {
            continue;
          }
          if (kubectl({"-n", kNamespace, "get", "terraformmachine", name}).exit_code == 0 ||
              secretsOf(name) != 0) {
            return false;
          }
        }
        return true;
      },
      std::chrono::seconds(360)))
      << machines("md").dump(2) << list("terraformmachines").dump(2) << manager_.logText();
  const std::set<std::string> one = infraNames("md");
  ASSERT_EQ(one.size(), 1U);
  EXPECT_TRUE(five.contains(*one.begin()));
  EXPECT_EQ(secretsOf(*one.begin()), 2U) << "state and durable inputs of the one left";
  EXPECT_TRUE(provisioned("md", 1));
  expectNoBootstrapLeak();
  // Five applies and four destroys, each counted once; the destroyed
  // machines' own series went with them, the one left keeps its own.
  EXPECT_TRUE(since.grows("captf_jobs_total",
                          {{"kind", "TerraformMachine"}, {"op", "apply"}, {"result", "succeeded"}},
                          5))
      << manager_.metrics();
  const std::map<std::string, std::string> destroys = {
      {"kind", "TerraformMachine"}, {"op", "destroy"}, {"result", "succeeded"}};
  EXPECT_TRUE(since.grows("captf_jobs_total", destroys, 4)) << manager_.metrics();
  EXPECT_EQ(since.delta("captf_jobs_total", destroys), 4) << manager_.metrics();
  EXPECT_EQ(since.delta("captf_job_duration_seconds_count", destroys), 4) << manager_.metrics();
  EXPECT_TRUE(eventually([&] {
    const std::string metrics = manager_.metrics();
    for (const std::string& name : five) {
      const bool kept = name == *one.begin();
      for (const char* family : {"captf_ready", "captf_state_bytes", "captf_inputs_bytes",
                                 "captf_last_success_timestamp_seconds"}) {
        const auto value = e2e::metricValue(
            metrics, family,
            {{"kind", "TerraformMachine"}, {"namespace", kNamespace}, {"name", name}});
        if (value.has_value() != kept) {
          return false;
        }
      }
      if (e2e::metricValue(metrics, "captf_unhealthy_samples",
                           {{"namespace", kNamespace}, {"name", name}})
              .has_value() != kept) {
        return false;
      }
    }
    return true;
  })) << manager_.metrics();
}

TEST_F(TerraformMachineE2eTest, ALateBootstrapSecretIsWaitedForWithoutADuplicateJob) {
  const std::string name = "late";
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformMachine"},
         {"metadata",
          {{"name", name},
           {"namespace", kNamespace},
           {"labels", {{"cluster.x-k8s.io/cluster-name", kCluster}}}}},
         {"spec", {{"source", {{"image", machine_image_}}}}}});
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "Machine"},
         {"metadata", {{"name", name}, {"namespace", kNamespace}}},
         {"spec",
          {{"clusterName", kCluster},
           {"version", "v1.34.0"},
           {"bootstrap", {{"dataSecretName", "late-bootstrap"}}},
           {"infrastructureRef",
            {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
             {"kind", "TerraformMachine"},
             {"name", name}}}}}});
  ASSERT_TRUE(eventually([&] {
    return conditionOf(terraformMachine(name), "DependenciesReady", "reason") ==
           "WaitingForBootstrapData";
  })) << terraformMachine(name).dump(2)
      << manager_.logText();
  // A while later: still waiting, no Job.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(conditionOf(terraformMachine(name), "DependenciesReady", "status"), "Unknown");
  EXPECT_TRUE(jobsOf(name, "apply").empty());
  EXPECT_EQ(conditionOf(terraformMachine(name), "Ready", "status"), "Unknown")
      << terraformMachine(name).dump(2);

  createBootstrapSecret("late-bootstrap");
  ASSERT_TRUE(eventually([&] {
    const json tm = terraformMachine(name);
    return readyTrue(tm) && !tm["spec"].value("providerID", "").empty();
  })) << terraformMachine(name).dump(2)
      << manager_.logText();
  EXPECT_EQ(jobsOf(name, "apply").size(), 1U);
  EXPECT_FALSE(e2e::eventsFor(kNamespace, name, "WaitingForBootstrapData").empty());
  ASSERT_TRUE(eventually([&] {
    return getJson({"-n", kNamespace, "get", "machines.v1beta2.cluster.x-k8s.io", name})
               .value("status", json::object())
               .value("phase", "") == "Provisioned";
  }));
  expectNoBootstrapLeak();
}

TEST_F(TerraformMachineE2eTest, AnUnhealthyMachineIsReplacedThroughAMachineHealthCheck) {
  createDeployment("sick", 1, "flaky");
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "MachineHealthCheck"},
         {"metadata", {{"name", "sick"}, {"namespace", kNamespace}}},
         {"spec",
          {{"clusterName", kCluster},
           {"selector", {{"matchLabels", {{"e2e.captf.io/pool", "sick"}}}}},
           // No Nodes on the rig: only the remediation annotation counts.
           {"checks", {{"nodeStartupTimeoutSeconds", 0}}}}}});
  ASSERT_TRUE(eventually([] { return provisioned("sick", 1); }, std::chrono::seconds(360)))
      << machines("sick").dump(2) << manager_.logText();
  const std::string first = machines("sick")[0]["metadata"]["name"];
  const std::string first_infra = *infraNames("sick").begin();
  const e2e::MetricsSince since(manager_);
  const std::map<std::string, std::string> first_series = {{"namespace", kNamespace},
                                                           {"name", first_infra}};
  // captf_unhealthy_samples of the first machine: 0 while healthy.
  EXPECT_EQ(e2e::metricValue(since.before(), "captf_unhealthy_samples", first_series), 0)
      << since.before();
  double most_unhealthy = 0;

  // The module turns unhealthy; the next health refresh samples it, the
  // Machine is marked, the MachineHealthCheck has it replaced, and the new
  // Machine provisions.
  ASSERT_TRUE(eventually(
      [&] {
        most_unhealthy =
            std::max(most_unhealthy,
                     e2e::metricValue(manager_.metrics(), "captf_unhealthy_samples", first_series)
                         .value_or(0));
        const json items = machines("sick");
        return items.size() == 1 && items[0]["metadata"]["name"] != first && provisioned("sick", 1);
      },
      std::chrono::seconds(480)))
      << machines("sick").dump(2) << list("terraformmachines").dump(2) << manager_.logText();
  EXPECT_FALSE(e2e::eventsFor(kNamespace, first_infra, "RemediationRequested").empty());
  EXPECT_GE(e2e::metricValue(manager_.metrics(), "captf_remediation_requests_total",
                             {{"action", "requested"}})
                .value_or(0),
            1);
  // The unhealthy sample was exported before the Machine was replaced, and
  // the request counted (once per request, not per pass that still sees it).
  EXPECT_GE(most_unhealthy, 1) << "captf_unhealthy_samples never rose for " << first_infra;
  EXPECT_TRUE(since.grows("captf_remediation_requests_total", {{"action", "requested"}}))
      << manager_.metrics();
  // The replaced machine's object, state and inputs are gone.
  EXPECT_TRUE(eventually([&] {
    return kubectl({"-n", kNamespace, "get", "terraformmachine", first_infra}).exit_code != 0 &&
           secretsOf(first_infra) == 0;
  })) << list("terraformmachines").dump(2);
  EXPECT_TRUE(eventually([&] {
    return !e2e::metricValue(manager_.metrics(), "captf_unhealthy_samples", first_series);
  })) << "the replaced machine's series stayed\n"
      << manager_.metrics();

  // Stop the cycle: every replacement turns unhealthy in turn.
  ASSERT_EQ(
      kubectl({"-n", kNamespace, "delete", "machinehealthchecks.v1beta2.cluster.x-k8s.io", "sick"})
          .exit_code,
      0);
  scale("sick", 0);
  ASSERT_TRUE(eventually([] { return machines("sick").empty(); }, std::chrono::seconds(360)))
      << machines("sick").dump(2);
}

// docs/behaviour/drift-and-health.md "Machine remediation": a machine that
// reads unhealthy is marked for remediation; when it reads healthy again
// before anything replaced it (no MachineHealthCheck here), both
// annotations go, with a Normal Event, counted, and the Machine stays.
TEST_F(TerraformMachineE2eTest, ARemediationRequestIsWithdrawnWhenTheMachineRecovers) {
  // Unhealthy from 30 s to 150 s after its apply, healthy before and after:
  // the samples a minute apart see both.
  const std::string image = runner::e2e::Images::get().module(
      "tm-e2e-relapse",
      runner::e2e::timedHealthModule(
          "\"running\"",
          "(timecmp(plantimestamp(), timeadd(terraform_data.born.output, \"30s\")) < 0 || "
          "timecmp(plantimestamp(), timeadd(terraform_data.born.output, \"150s\")) >= 0)"),
      env().tofu);
  // By tag: the apply pins the digest it ran (checked below).
  const std::string tagged = image.substr(0, image.find('@')) + ":e2e";
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformMachineTemplate"},
         {"metadata", {{"name", "relapse"}, {"namespace", kNamespace}}},
         {"spec",
          {{"template",
            {{"spec",
              {{"source", {{"image", tagged}}},
               {"remediation",
                {{"annotateMachine", true},
                 {"unhealthyThreshold", 1},
                 {"healthCheckIntervalSeconds", 60}}}}}}}}}});
  createDeployment("relapse", 1, "relapse");
  ASSERT_TRUE(eventually([] { return provisioned("relapse", 1); }, std::chrono::seconds(360)))
      << machines("relapse").dump(2) << manager_.logText();
  const std::string machine = machines("relapse")[0]["metadata"]["name"];
  const std::string infra = *infraNames("relapse").begin();
  const auto annotations = [&] {
    return getJson({"-n", kNamespace, "get", "machines.v1beta2.cluster.x-k8s.io", machine})
        .value("metadata", json::object())
        .value("annotations", json::object());
  };
  const e2e::MetricsSince since(manager_);
  ASSERT_TRUE(eventually([&] { return annotations().contains("captf.io/remediation-requested"); },
                         std::chrono::seconds(300)))
      << annotations().dump(2) << manager_.logText();
  EXPECT_TRUE(annotations().contains("cluster.x-k8s.io/remediate-machine"));
  EXPECT_FALSE(e2e::eventsFor(kNamespace, infra, "RemediationRequested").empty());
  ASSERT_TRUE(eventually([&] { return !annotations().contains("captf.io/remediation-requested"); },
                         std::chrono::seconds(300)))
      << annotations().dump(2) << manager_.logText();
  EXPECT_FALSE(annotations().contains("cluster.x-k8s.io/remediate-machine"));
  const std::vector<json> withdrawn = e2e::eventsFor(kNamespace, infra, "RemediationWithdrawn");
  ASSERT_EQ(withdrawn.size(), 1U);
  EXPECT_EQ(withdrawn.front().value("type", ""), "Normal");
  EXPECT_TRUE(since.grows("captf_remediation_requests_total", {{"action", "withdrawn"}}))
      << manager_.metrics();
  // The same Machine, still provisioned.
  EXPECT_EQ(machines("relapse")[0]["metadata"].value("name", ""), machine);
  EXPECT_TRUE(provisioned("relapse", 1));
  // Its apply ran the tag; its health refreshes ran the digest that apply
  // pinned (docs/behaviour/inputs.md, immutable inputs).
  EXPECT_EQ(getJson({"-n", kNamespace, "get", "secret", "captf-inputs-m-" + infra})["metadata"]
                .value("annotations", json::object())
                .value("captf.io/image-digest", ""),
            image.substr(image.find('@') + 1));
  const auto image_of = [](const std::string& job) {
    const json containers =
        getJson({"-n", kNamespace, "get", "job", job})["spec"]["template"]["spec"].value(
            "containers", json::array());
    return containers.empty() ? std::string() : containers[0].value("image", "");
  };
  for (const std::string& job : e2e::runJobs(kNamespace, infra, "apply")) {
    EXPECT_EQ(image_of(job), tagged) << job;
  }
  const std::vector<std::string> refreshes = e2e::runJobs(kNamespace, infra, "refresh");
  ASSERT_FALSE(refreshes.empty());
  for (const std::string& job : refreshes) {
    EXPECT_EQ(image_of(job), image) << job;
  }
  scale("relapse", 0);
  ASSERT_TRUE(eventually([] { return machines("relapse").empty(); }, std::chrono::seconds(360)))
      << machines("relapse").dump(2);
}

// docs/behaviour/drift-and-health.md "Unhealthy samples": a machine whose health
// reads `pending` is refreshed again soon (30 s, then 1 m, ...), with drift
// off too, and provisions once the reading turns `running`. (Before,
// status.pendingRefreshes was never written: after the post-apply refresh
// the machine waited for a drift check that, with drift off, never came.)
TEST_F(TerraformMachineE2eTest, APendingMachineIsRefreshedSoonAndProvisionsWithDriftOff) {
  // Pending for 40 s from its apply's plan: the apply's reading and the
  // post-apply refresh's are both `pending`.
  const std::string booting_image = runner::e2e::Images::get().module(
      "tm-e2e-booting",
      runner::e2e::timedHealthModule("timecmp(plantimestamp(), timeadd(terraform_data.born.output, "
                                     "\"40s\")) < 0 ? \"pending\" : \"running\"",
                                     "true"),
      env().tofu);
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformMachineTemplate"},
         {"metadata", {{"name", "booting"}, {"namespace", kNamespace}}},
         {"spec",
          {{"template",
            {{"spec",
              {{"source", {{"image", booting_image}}}, {"drift", {{"intervalSeconds", 0}}}}}}}}}});
  createDeployment("boot", 1, "booting");
  ASSERT_TRUE(eventually(
      [] { return infraNames("boot").size() == 1 && !infraNames("boot").begin()->empty(); },
      std::chrono::seconds(120)))
      << machines("boot").dump(2);
  const std::string infra = *infraNames("boot").begin();
  ASSERT_TRUE(
      eventually([&] { return !jobsOf(infra, "apply").empty(); }, std::chrono::seconds(120)))
      << terraformMachine(infra).dump(2);
  // While pending, the count of pending samples is in the status.
  bool counted = false;
  EXPECT_TRUE(eventually(
      [&] {
        const json status = terraformMachine(infra).value("status", json::object());
        counted = counted || status.value("pendingRefreshes", 0) >= 1;
        return provisioned("boot", 1);
      },
      std::chrono::seconds(240)))
      << terraformMachine(infra).dump(2) << "\n"
      << manager_.logText();
  EXPECT_TRUE(counted) << terraformMachine(infra).dump(2);
  EXPECT_FALSE(terraformMachine(infra).value("status", json::object()).contains("pendingRefreshes"))
      << terraformMachine(infra).dump(2);
  // The post-apply refresh and at least one more.
  EXPECT_GE(jobsOf(infra, "refresh").size(), 2U);
  scale("boot", 0);
  ASSERT_TRUE(eventually([] { return machines("boot").empty(); }, std::chrono::seconds(360)))
      << machines("boot").dump(2);
}

// docs/runbooks/CAPTFNoRecentSuccess.md: the drift and refresh timestamps
// exist only while the object is scheduled for them. A machine with health
// checks (a refresh every 60 s) exports its refresh series; paused, it
// withdraws the series (before, the series stayed and the alert fired 6 h
// later for every paused object); resumed, it exports it again from
// status.lastRefresh.
TEST_F(TerraformMachineE2eTest, ReadingTimestampsExistOnlyWhileTheReadingIsScheduled) {
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformMachineTemplate"},
         {"metadata", {{"name", "checked"}, {"namespace", kNamespace}}},
         {"spec",
          {{"template",
            {{"spec",
              {{"source", {{"image", machine_image_}}},
               {"remediation",
                {{"annotateMachine", true}, {"healthCheckIntervalSeconds", 60}}}}}}}}}});
  createDeployment("checked", 1, "checked");
  ASSERT_TRUE(eventually([] { return provisioned("checked", 1); }, std::chrono::seconds(360)))
      << machines("checked").dump(2) << manager_.logText();
  const std::string name = *infraNames("checked").begin();
  const auto series = [&](const char* op) {
    return e2e::metricValue(
        manager_.metrics(), "captf_last_success_timestamp_seconds",
        {{"kind", "TerraformMachine"}, {"namespace", kNamespace}, {"name", name}, {"op", op}});
  };
  ASSERT_TRUE(eventually([&] { return series("refresh").value_or(0) > 0; }))
      << terraformMachine(name).dump(2) << manager_.metrics();
  ASSERT_TRUE(series("apply").has_value()) << manager_.metrics();

  // Paused: no reading is due, the series goes; the apply's stays (no alert
  // reads it).
  ASSERT_EQ(kubectl({"-n", kNamespace, "annotate", "terraformmachine", name,
                     "cluster.x-k8s.io/paused=true"})
                .exit_code,
            0);
  ASSERT_TRUE(eventually([&] {
    return conditionOf(terraformMachine(name), "Paused", "status") == "True";
  })) << terraformMachine(name).dump(2);
  EXPECT_TRUE(eventually([&] { return !series("refresh").has_value(); })) << manager_.metrics();
  EXPECT_FALSE(series("drift").has_value()) << manager_.metrics();
  EXPECT_TRUE(series("apply").has_value()) << manager_.metrics();

  // Resumed: due again, the series is back with the last refresh's time.
  ASSERT_EQ(
      kubectl({"-n", kNamespace, "annotate", "terraformmachine", name, "cluster.x-k8s.io/paused-"})
          .exit_code,
      0);
  EXPECT_TRUE(eventually([&] { return series("refresh").value_or(0) > 0; })) << manager_.metrics();

  scale("checked", 0);
  ASSERT_TRUE(eventually([] { return machines("checked").empty(); }, std::chrono::seconds(360)))
      << machines("checked").dump(2);
  EXPECT_TRUE(eventually([&] { return !series("refresh").has_value(); })) << manager_.metrics();
}

// The cluster operation gate with real Jobs, both ways: a cluster apply
// waits for a machine apply in flight (keeping the cluster write Lease), and
// a machine apply that comes meanwhile waits for the cluster's.
TEST_F(TerraformMachineE2eTest, ClusterAndMachineOperationsWaitForEachOther) {
  auto& images = runner::e2e::Images::get();
  const std::string cluster_image = images.module(
      "tm-e2e-gate-cluster", runner::e2e::sizedModule(contract::Role::kCluster), env().tofu);
  // A machine whose apply takes 40 seconds (the test child sleeps: no shell).
  const std::string slow_image =
      images.module("tm-e2e-gate-slow", runner::e2e::slowMachineModule(40), env().tofu);
  e2e::createClusterPair(
      kNamespace, "tc-gate", "c-gate",
      {{"source", {{"image", cluster_image}}}, {"identityRef", {{"name", kIdentity}}}});
  ASSERT_TRUE(eventually([] {
    return getJson({"-n", kNamespace, "get", "clusters.v1beta2.cluster.x-k8s.io", "c-gate"})
        .value("status", json::object())
        .value("initialization", json::object())
        .value("infrastructureProvisioned", false);
  })) << manager_.processLog();
  const auto machine = [](const std::string& name, const std::string& image) {
    apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
           {"kind", "TerraformMachine"},
           {"metadata",
            {{"name", name},
             {"namespace", kNamespace},
             {"labels", {{"cluster.x-k8s.io/cluster-name", "c-gate"}}}}},
           {"spec", {{"source", {{"image", image}}}}}});
    apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
           {"kind", "Machine"},
           {"metadata", {{"name", name}, {"namespace", kNamespace}}},
           {"spec",
            {{"clusterName", "c-gate"},
             {"version", "v1.34.0"},
             {"bootstrap", {{"dataSecretName", kBootstrapSecret}}},
             {"infrastructureRef",
              {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
               {"kind", "TerraformMachine"},
               {"name", name}}}}}});
  };
  const auto cluster_applies = [] {
    return list("jobs", "captf.infrastructure.cluster.x-k8s.io/owner-name=tc-gate," +
                            std::string(kOpLabel) + "=apply");
  };
  const auto active_of = [](const json& jobs) {
    size_t n = 0;
    for (const json& job : jobs) {
      const json st = job.value("status", json::object());
      if (st.value("succeeded", 0) == 0 && st.value("failed", 0) == 0) {
        ++n;
      }
    }
    return n;
  };
  const size_t cluster_applies_before = cluster_applies().size();

  // A machine apply in flight...
  machine("gate-slow", slow_image);
  ASSERT_TRUE(eventually([&] {
    return active_of(list("jobs", "captf.infrastructure.cluster.x-k8s.io/owner-name=gate-slow," +
                                      std::string(kOpLabel) + "=apply")) == 1;
  })) << terraformMachine("gate-slow").dump(2);
  // ...holds back the cluster's re-apply, which keeps the cluster write
  // Lease...
  e2e::mergePatch(kNamespace, "terraformcluster", "tc-gate",
                  {{"spec", {{"variables", {{"size", "large"}}}}}});
  ASSERT_TRUE(eventually([] {
    return conditionOf(getJson({"-n", kNamespace, "get", "terraformcluster", "tc-gate"}),
                       "ApplyJobSucceeded", "reason") == "WaitingForMachineOperations";
  })) << getJson({"-n", kNamespace, "get", "terraformcluster", "tc-gate"}).dump(2);
  EXPECT_EQ(cluster_applies().size(), cluster_applies_before);
  // ...so a machine that comes now waits for the cluster.
  machine("gate-late", machine_image_);
  ASSERT_TRUE(eventually([] {
    return conditionOf(terraformMachine("gate-late"), "ApplyJobSucceeded", "reason") ==
           "WaitingForClusterOperation";
  })) << terraformMachine("gate-late").dump(2)
      << manager_.processLog();
  EXPECT_TRUE(jobsOf("gate-late", "apply").empty());

  // In order: the slow machine, then the cluster, then the late machine.
  ASSERT_TRUE(eventually(
      [] {
        const json tm = terraformMachine("gate-late");
        return readyTrue(tm) && readyTrue(terraformMachine("gate-slow"));
      },
      std::chrono::seconds(360)))
      << terraformMachine("gate-late").dump(2) << manager_.processLog();
  const auto created = [](const std::string& owner) {
    std::string at;
    for (const json& job : list("jobs", "captf.infrastructure.cluster.x-k8s.io/owner-name=" +
                                            owner + "," + std::string(kOpLabel) + "=apply")) {
      at = std::max(at, job["metadata"].value("creationTimestamp", std::string()));
    }
    return at;
  };
  const auto completed = [](const std::string& owner) {
    std::string at;
    for (const json& job : list("jobs", "captf.infrastructure.cluster.x-k8s.io/owner-name=" +
                                            owner + "," + std::string(kOpLabel) + "=apply")) {
      at = std::max(at, job.value("status", json::object()).value("completionTime", std::string()));
    }
    return at;
  };
  EXPECT_EQ(cluster_applies().size(), cluster_applies_before + 1);
  EXPECT_LE(completed("gate-slow"), created("tc-gate"));
  EXPECT_LE(completed("tc-gate"), created("gate-late"));
  EXPECT_FALSE(e2e::eventsFor(kNamespace, "tc-gate", "WaitingForMachineOperations").empty());
  EXPECT_FALSE(e2e::eventsFor(kNamespace, "gate-late", "WaitingForClusterOperation").empty());
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io", "c-gate",
                     "--wait=false"})
                .exit_code,
            0);
  EXPECT_TRUE(eventually(
      [] {
        return kubectl({"-n", kNamespace, "get", "terraformcluster", "tc-gate"}).exit_code != 0;
      },
      std::chrono::seconds(360)));
}

TEST_F(TerraformMachineE2eTest, TemplatesReportTheCapacityOfTheirImage) {
  // An image whose labels declare its node's capacity (never run).
  const std::filesystem::path dir = std::filesystem::path(env().dir) / "tm-e2e-sized";
  std::filesystem::create_directories(dir / "etc");
  const std::string sized = rig::pushImage(
      env(), dir.string(), "captf/module-tm-e2e-sized", "v1",
      {{"io.captf.capacity", R"({"cpu":"4","memory":"16Gi","nvidia.com/gpu":"1"})"},
       {"io.captf.node-info", R"({"architecture":"amd64","operatingSystem":"linux"})"}});
  ASSERT_FALSE(sized.empty());
  const auto machine_template = [](const std::string& name, const std::string& image) {
    apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
           {"kind", "TerraformMachineTemplate"},
           {"metadata", {{"name", name}, {"namespace", kNamespace}}},
           {"spec", {{"template", {{"spec", {{"source", {{"image", image}}}}}}}}}});
  };
  const auto get = [](const std::string& name) {
    return getJson({"-n", kNamespace, "get", "terraformmachinetemplate", name});
  };
  machine_template("sized", sized);
  ASSERT_TRUE(eventually([&] {
    return conditionOf(get("sized"), "CapacityResolved", "status") == "True";
  })) << get("sized").dump(2)
      << manager_.processLog();
  const json status = get("sized")["status"];
  EXPECT_EQ(status["capacity"]["cpu"], "4");
  EXPECT_EQ(status["capacity"]["memory"], "16Gi");
  EXPECT_EQ(status["capacity"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(status["nodeInfo"]["architecture"], "amd64");
  EXPECT_EQ(status["nodeInfo"]["operatingSystem"], "linux");
  EXPECT_EQ(status["capacitySource"]["image"], sized);
  EXPECT_FALSE(e2e::eventsFor(kNamespace, "sized", "CapacityResolved").empty());

  // The noop module declares no capacity: said so, not an error.
  EXPECT_TRUE(eventually([&] {
    return conditionOf(get("workers"), "CapacityResolved", "reason") == "CapacityNotDeclared";
  })) << get("workers").dump(2);

  // A registry nobody serves: a condition naming it, an Event, the metric,
  // and retries.
  const e2e::MetricsSince since(manager_);
  const std::string gone = "127.0.0.1:" + std::to_string(e2e::freePort()) + "/captf/none:v1";
  machine_template("unreachable", gone);

  // A Git-sourced template has no image: it is not inspected (no Event, no
  // count, no retries), and says it has no capacity
  // (docs/decisions/manager-machine-template.md).
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformMachineTemplate"},
         {"metadata", {{"name", "from-git"}, {"namespace", kNamespace}}},
         {"spec",
          {{"template",
            {{"spec",
              {{"source",
                {{"git",
                  {{"url", "https://localhost:" + std::to_string(e2e::freePort()) + "/modules.git"},
                   {"ref", {{"branch", "main"}}},
                   {"path", "machine"},
                   {"runtimeImage", machine_image_}}}}}}}}}}}});
  ASSERT_TRUE(eventually([&] {
    return conditionOf(get("from-git"), "CapacityResolved", "reason") == "CapacityNotDeclared";
  })) << get("from-git").dump(2)
      << manager_.processLog();
  EXPECT_THAT(conditionOf(get("from-git"), "CapacityResolved", "message"), HasSubstr("Git"));
  EXPECT_FALSE(get("from-git")["status"].contains("capacity")) << get("from-git").dump(2);
  ASSERT_TRUE(eventually([&] {
    return conditionOf(get("unreachable"), "CapacityResolved", "reason") == "ImageInspectFailed";
  })) << get("unreachable").dump(2);
  EXPECT_THAT(conditionOf(get("unreachable"), "CapacityResolved", "message"),
              HasSubstr(gone.substr(0, gone.find('/'))));
  EXPECT_FALSE(e2e::eventsFor(kNamespace, "unreachable", "ImageInspectFailed").empty());
  EXPECT_GE(
      e2e::metricValue(manager_.metrics(), "captf_image_inspect_errors_total", {}).value_or(0), 1);
  // Counted once for the failure, not once per retry: the retries (with
  // backoff, the only failing template) go on and the count stays.
  EXPECT_TRUE(since.grows("captf_image_inspect_errors_total", {{"reason", "registry"}}))
      << manager_.metrics();
  EXPECT_TRUE(since.grows("workqueue_retries_total", {{"name", "terraformmachinetemplate"}}, 3))
      << manager_.metrics();
  EXPECT_EQ(since.delta("captf_image_inspect_errors_total", {{"reason", "registry"}}), 1)
      << manager_.metrics();
  // Said once, not on every retry: one Event, no repeat counted on it. The
  // recorder counts repeats on the Event it flushes every 10 s, so wait
  // past a flush of the retries above.
  std::this_thread::sleep_for(std::chrono::seconds(15));
  const std::vector<json> failed = e2e::eventsFor(kNamespace, "unreachable", "ImageInspectFailed");
  ASSERT_EQ(failed.size(), 1U) << json(failed).dump(2);
  EXPECT_FALSE(failed[0].contains("series")) << failed[0].dump(2);
  EXPECT_TRUE(e2e::eventsFor(kNamespace, "from-git", "ImageInspectFailed").empty());
  EXPECT_TRUE(e2e::eventsFor(kNamespace, "from-git", "").empty())
      << json(e2e::eventsFor(kNamespace, "from-git", "")).dump(2);
}

// Last (the suite's cluster goes): deletion order and nothing left behind.
// docs/behaviour/state.md#state-on-deletion: a provisioned machine whose
// state Secret was deleted by hand is not forgotten when its Machine goes.
// No destroy can run without state, and leaving without one would orphan
// the instance: the object stays, with its finalizer and backups, and a
// Warning Event names the two ways out, until a person accepts the orphan.
TEST_F(TerraformMachineE2eTest, AMachineWhoseStateWasDeletedIsNotForgottenOnDeletion) {
  createDeployment("lost", 1);
  ASSERT_TRUE(eventually([] { return provisioned("lost", 1); }, std::chrono::seconds(360)))
      << machines("lost").dump(2) << manager_.logText();
  const std::string name = *infraNames("lost").begin();
  ASSERT_TRUE(eventually([&] {
    return !list("secrets", "captf.io/state-backup-suffix=" + stateSuffix(name)).empty();
  })) << "the apply's state is backed up";
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "secret", "tfstate-default-" + stateSuffix(name)})
                .exit_code,
            0);
  ASSERT_TRUE(eventually([&] {
    return conditionOf(terraformMachine(name), "StateReadable", "reason") == "StateLost";
  })) << terraformMachine(name).dump(2);

  scale("lost", 0);
  ASSERT_TRUE(
      eventually([&] { return !e2e::eventsFor(kNamespace, name, "DestroyBlocked").empty(); },
                 std::chrono::seconds(180)))
      << terraformMachine(name).dump(2) << manager_.logText();
  const json held = terraformMachine(name);
  ASSERT_TRUE(held.is_object()) << "the object must stay while its state is lost";
  EXPECT_TRUE(held["metadata"].contains("deletionTimestamp")) << held["metadata"].dump(2);
  EXPECT_THAT(held["metadata"].value("finalizers", json::array()).dump(),
              HasSubstr("terraformmachine"));
  EXPECT_TRUE(jobsOf(name, "destroy").empty()) << "no destroy can run without state";
  EXPECT_FALSE(list("secrets", "captf.io/state-backup-suffix=" + stateSuffix(name)).empty())
      << "the backups stay with the object";
  const std::string message =
      e2e::eventsFor(kNamespace, name, "DestroyBlocked").front().value("note", "");
  EXPECT_THAT(message, HasSubstr("captf.io/restore-state"));
  EXPECT_THAT(message, HasSubstr("captf.io/orphan-on-delete"));

  // A person accepts the orphan: the object goes, said so, without a destroy.
  ASSERT_EQ(kubectl({"-n", kNamespace, "annotate", "terraformmachine", name,
                     "captf.io/orphan-on-delete=true"})
                .exit_code,
            0);
  ASSERT_TRUE(eventually(
      [&] {
        return kubectl({"-n", kNamespace, "get", "terraformmachine", name}).exit_code != 0;
      },
      std::chrono::seconds(120)))
      << manager_.logText();
  EXPECT_TRUE(jobsOf(name, "destroy").empty());
  EXPECT_FALSE(e2e::eventsFor(kNamespace, name, "ResourcesOrphaned").empty());
}

TEST_F(TerraformMachineE2eTest, ZDeletingTheClusterDestroysMachinesFirstAndLeavesNothing) {
  // Every Job seen while the deletion runs: name → {op, owner kind, start}. Jobs of deleted objects
  // are garbage-collected, so the record is kept here.
  struct Seen {
    std::string op, kind, created;
  };
  std::map<std::string, Seen> seen;
  // When the cluster's destroy Job was first seen: the TerraformMachines and
  // the machine Jobs that still existed (both must be none).
  std::optional<size_t> machines_at_cluster_destroy;
  std::optional<size_t> machine_jobs_at_cluster_destroy;
  const auto observe = [&] {
    const json all = list("jobs");
    size_t machine_jobs = 0;
    bool cluster_destroying = false;
    for (const json& job : all) {
      const json labels = job["metadata"].value("labels", json::object());
      if (labels.value("captf.infrastructure.cluster.x-k8s.io/owner-kind", "") ==
          "TerraformMachine") {
        ++machine_jobs;
      }
      cluster_destroying = cluster_destroying ||
                           (labels.value("captf.infrastructure.cluster.x-k8s.io/owner-kind", "") ==
                                "TerraformCluster" &&
                            labels.value(kOpLabel, "") == "destroy");
    }
    if (cluster_destroying && !machines_at_cluster_destroy) {
      machines_at_cluster_destroy = list("terraformmachines").size();
      machine_jobs_at_cluster_destroy = machine_jobs;
    }
    for (const json& job : all) {
      Seen& s = seen[job["metadata"]["name"]];
      const json labels = job["metadata"].value("labels", json::object());
      s.op = labels.value(kOpLabel, "");
      s.kind = labels.value("captf.infrastructure.cluster.x-k8s.io/owner-kind", "");
      s.created = job["metadata"].value("creationTimestamp", "");
    }
  };
  const size_t machines_before = list("terraformmachines").size();
  ASSERT_GT(machines_before, 0U);
  // The destroys counted by the manager: a machine's Job can come and go
  // between two polls of `observe`, its count cannot.
  const e2e::MetricsSince since(manager_);
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io", kCluster,
                     "--wait=false"})
                .exit_code,
            0);
  ASSERT_TRUE(eventually(
      [&] {
        observe();
        return kubectl({"-n", kNamespace, "get", "terraformcluster", "tc1"}).exit_code != 0;
      },
      std::chrono::seconds(480)))
      << list("terraformmachines").dump(2) << manager_.logText();
  EXPECT_TRUE(list("terraformmachines").empty());
  // Every machine destroyed before the cluster's destroy started: when its
  // Job appeared no machine and no machine Job was left (a machine's Jobs
  // go with it), and every machine destroy Job was created before it (RFC
  // 3339 in UTC compares as text).
  ASSERT_TRUE(machines_at_cluster_destroy.has_value()) << "no destroy Job of the cluster was seen";
  EXPECT_EQ(*machines_at_cluster_destroy, 0U);
  EXPECT_EQ(*machine_jobs_at_cluster_destroy, 0U);
  std::string cluster_destroy;
  size_t machine_destroys = 0;
  for (const auto& [name, s] : seen) {
    if (s.kind == "TerraformCluster" && s.op == "destroy") {
      cluster_destroy = s.created;
    }
  }
  ASSERT_FALSE(cluster_destroy.empty()) << "no destroy Job of the cluster was seen";
  for (const auto& [name, s] : seen) {
    if (s.kind == "TerraformMachine" && s.op == "destroy") {
      ++machine_destroys;
      EXPECT_LE(s.created, cluster_destroy) << name;
    }
  }
  // Every destroy Job the polls saw came before the cluster's; the manager
  // counted one succeeded destroy per machine.
  EXPECT_LE(machine_destroys, machines_before);
  EXPECT_EQ(since.delta("captf_jobs_total",
                        {{"kind", "TerraformMachine"}, {"op", "destroy"}, {"result", "succeeded"}}),
            static_cast<double>(machines_before))
      << manager_.metrics();
  // Nothing the manager created is left: no managed Secret, Lease or Job.
  EXPECT_TRUE(eventually([&] {
    return list("secrets", "captf.io/managed=true").empty() &&
           list("leases", "captf.io/managed=true").empty() &&
           list("secrets", "tfstateSecretSuffix").empty();
  })) << list("secrets").dump(2)
      << list("leases").dump(2);
  expectNoBootstrapLeak();
}

} // namespace
} // namespace captf::controllers
