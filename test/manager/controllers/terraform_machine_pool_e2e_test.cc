// TerraformMachinePool end to end on the rig's capi tier: Cluster API
// v1.14's MachinePool controller (MachinePool feature gate on), the
// `manager` executable with exactly the shipped RBAC, real Jobs, real
// OpenTofu, a noop pool module whose members are `var.replicas` provider IDs.
//
//   a MachinePool of 3 → 3 provider IDs in spec.providerIDList,
//   status.replicas 3, provisioned, one apply; scaling to 5 and to 2
//   re-applies once each and the module's count follows; a pool with
//   another owner but no MachinePool waits (WaitingForOwnerMachinePool)
//   with no Job until its MachinePool appears, then applies; with the
//   autoscaler's min 2 / max 4 annotations a request for 6 gives 4,
//   AutoscalingActive, the claim on the MachinePool and one write-back of 4
//   to MachinePool.spec.replicas; deleting a pool destroys it and leaves no
//   state behind.
#include <chrono>
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

constexpr char kNamespace[] = "tmp-e2e";
constexpr char kIdentity[] = "tmp-e2e";
constexpr char kCluster[] = "c1";
constexpr char kBootstrapSecret[] = "c1-pool-bootstrap";
constexpr char kBootstrapMarker[] = "e2e-pool-bootstrap-41d2";
constexpr char kPools[] = "machinepools.v1beta2.cluster.x-k8s.io";

class TerraformMachinePoolE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    auto& images = runner::e2e::Images::get();
    manager_.runner_image = images.runner();
    cluster_image_ = images.module("tmp-e2e-cluster",
                                   runner::e2e::noopModule(contract::Role::kCluster), env().tofu);
    pool_image_ = images.module("tmp-e2e-pool",
                                runner::e2e::noopModule(contract::Role::kMachinePool), env().tofu);
    e2e::createTenant(kNamespace, kIdentity, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    manager_.start();
    ASSERT_FALSE(HasFatalFailure());
    e2e::createClusterPair(
        kNamespace, "tc1", kCluster,
        {{"source", {{"image", cluster_image_}}}, {"identityRef", {{"name", kIdentity}}}});
    e2e::createBootstrapSecret(kNamespace, kBootstrapSecret,
                               std::string("#cloud-config\nruncmd: [echo ") + kBootstrapMarker +
                                   "]\n");
    ASSERT_TRUE(eventually([] {
      return getJson({"-n", kNamespace, "get", "clusters.v1beta2.cluster.x-k8s.io", kCluster})
          .value("status", json::object())
          .value("initialization", json::object())
          .value("infrastructureProvisioned", false);
    })) << manager_.logText();
  }

  static void TearDownTestSuite() { manager_.stopCleanly(); }

  static json list(const std::string& resource, const std::string& selector = "") {
    return e2e::items(kNamespace, resource, selector);
  }
  static json pool(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "terraformmachinepool", name});
  }
  static json machinePool(const std::string& name) {
    return getJson({"-n", kNamespace, "get", kPools, name});
  }
  static size_t jobsOf(const std::string& name, const std::string& op) {
    return e2e::runJobs(kNamespace, name, op).size();
  }
  static std::string stateSuffix(const std::string& name) {
    return runner::e2e::stateSuffix(kNamespace, contract::Role::kMachinePool, name);
  }
  // A TerraformMachinePool and the MachinePool that owns it.
  static void createPool(const std::string& name, int replicas, const json& annotations = {}) {
    createTerraformMachinePool(name);
    createMachinePool(name, replicas, annotations);
  }
  // A TerraformMachinePool owned by `owners` ({apiVersion, kind, name, uid}
  // each; none when empty).
  static void createTerraformMachinePool(const std::string& name,
                                         const json& owners = json::array()) {
    json meta = {{"name", name}, {"namespace", kNamespace}};
    if (!owners.empty()) {
      meta["ownerReferences"] = owners;
    }
    apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
           {"kind", "TerraformMachinePool"},
           {"metadata", meta},
           {"spec", {{"source", {{"image", pool_image_}}}}}});
  }
  // A MachinePool of the cluster naming TerraformMachinePool `name`; Cluster
  // API makes it the pool's owner.
  static void createMachinePool(const std::string& name, int replicas,
                                const json& annotations = {}) {
    json meta = {{"name", name}, {"namespace", kNamespace}};
    if (annotations.is_object()) {
      meta["annotations"] = annotations;
    }
    apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
           {"kind", "MachinePool"},
           {"metadata", meta},
           {"spec",
            {{"clusterName", kCluster},
             {"replicas", replicas},
             {"template",
              {{"spec",
                {{"clusterName", kCluster},
                 {"version", "v1.34.0"},
                 {"bootstrap", {{"dataSecretName", kBootstrapSecret}}},
                 {"infrastructureRef",
                  {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
                   {"kind", "TerraformMachinePool"},
                   {"name", name}}}}}}}}}});
  }
  // The pool reports `want` members: status.replicas, spec.providerIDList
  // and the instances.
  static bool converged(const std::string& name, int want) {
    const json p = pool(name);
    if (!p.is_object() || !readyTrue(p)) {
      return false;
    }
    const json ids = p["spec"].value("providerIDList", json::array());
    return p["status"].value("replicas", -1) == want && ids.size() == static_cast<size_t>(want) &&
           p["status"].value("instances", json::array()).size() == static_cast<size_t>(want);
  }
  static void expectNoBootstrapLeak() {
    EXPECT_THAT(manager_.logText(), Not(HasSubstr(kBootstrapMarker)));
    EXPECT_THAT(kubectl({"-n", kNamespace, "get", "events.events.k8s.io", "-o", "json"}).output,
                Not(HasSubstr(kBootstrapMarker)));
    EXPECT_THAT(kubectl({"-n", kNamespace, "get", "terraformmachinepools", "-o", "json"}).output,
                Not(HasSubstr(kBootstrapMarker)));
  }

  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static e2e::ManagerRig manager_;
  static std::string cluster_image_;
  static std::string pool_image_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

// NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
e2e::ManagerRig TerraformMachinePoolE2eTest::manager_;
std::string TerraformMachinePoolE2eTest::cluster_image_;
std::string TerraformMachinePoolE2eTest::pool_image_;
// NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)

TEST_F(TerraformMachinePoolE2eTest, AMachinePoolScalesAndTheModuleFollows) {
  createPool("mp", 3);
  ASSERT_TRUE(eventually([] { return converged("mp", 3); }, std::chrono::seconds(300)))
      << pool("mp").dump(2) << machinePool("mp").dump(2) << manager_.logText();
  json p = pool("mp");
  EXPECT_TRUE(p["status"]["initialization"].value("provisioned", false)) << p.dump(2);
  EXPECT_EQ(p["status"].value("ready", false), true);
  EXPECT_THAT(p["spec"].value("providerID", ""), ::testing::StartsWith("noop-group://"));
  for (const json& id : p["spec"]["providerIDList"]) {
    EXPECT_THAT(id.get<std::string>(), ::testing::StartsWith("noop://"));
  }
  EXPECT_EQ(conditionOf(p, "AutoscalingActive", "reason"), "AutoscalingDisabled");
  EXPECT_EQ(jobsOf("mp", "apply"), 1U);
  // Cluster API reads the members back from the pool.
  EXPECT_TRUE(eventually([] {
    return machinePool("mp")
        .value("status", json::object())
        .value("initialization", json::object())
        .value("infrastructureProvisioned", false);
  })) << machinePool("mp").dump(2);
  // The pool's state, adopted by it.
  const json state =
      getJson({"-n", kNamespace, "get", "secret", "tfstate-default-" + stateSuffix("mp")});
  ASSERT_TRUE(state.is_object());
  EXPECT_THAT(state["metadata"]["annotations"].value("captf.io/inputs-hash", ""),
              ::testing::StartsWith("h2:"));

  // The MachinePool's replicas are an input: each change re-applies once,
  // and the module's members follow.
  e2e::mergePatch(kNamespace, kPools, "mp", {{"spec", {{"replicas", 5}}}});
  ASSERT_TRUE(eventually([] { return converged("mp", 5); }, std::chrono::seconds(300)))
      << pool("mp").dump(2) << manager_.logText();
  EXPECT_EQ(jobsOf("mp", "apply"), 2U);
  e2e::mergePatch(kNamespace, kPools, "mp", {{"spec", {{"replicas", 2}}}});
  ASSERT_TRUE(eventually([] { return converged("mp", 2); }, std::chrono::seconds(300)))
      << pool("mp").dump(2) << manager_.logText();
  EXPECT_EQ(jobsOf("mp", "apply"), 3U);
  // Without autoscaling nothing is written to the MachinePool.
  const json mp = machinePool("mp");
  EXPECT_EQ(mp["spec"].value("replicas", -1), 2);
  EXPECT_FALSE(mp["metadata"]
                   .value("annotations", json::object())
                   .contains("cluster.x-k8s.io/replicas-managed-by"))
      << mp["metadata"].dump(2);
  EXPECT_FALSE(e2e::eventsFor(kNamespace, "mp", "MembersChanged").empty());
  // The group's ID was written once (it did not change with the replicas).
  EXPECT_EQ(e2e::eventsFor(kNamespace, "mp", "ProviderIDSet").size(), 1U);
  expectNoBootstrapLeak();
}

// A pool whose only owner is not a MachinePool (as a topology's, before its
// MachinePool exists) runs nothing, False/WaitingForOwnerMachinePool
// (docs/behaviour/lifecycle.md#the-reconcile-pass); once its MachinePool
// appears and Cluster API adopts it, it applies once.
TEST_F(TerraformMachinePoolE2eTest, APoolRunsNothingUntilItsMachinePoolOwnsIt) {
  apply({{"apiVersion", "v1"},
         {"kind", "ConfigMap"},
         {"metadata", {{"name", "pool-owner-stand-in"}, {"namespace", kNamespace}}}});
  const std::string uid = getJson({"-n", kNamespace, "get", "configmap", "pool-owner-stand-in"})
                              .value("metadata", json::object())
                              .value("uid", "");
  createTerraformMachinePool("early", json::array({{{"apiVersion", "v1"},
                                                    {"kind", "ConfigMap"},
                                                    {"name", "pool-owner-stand-in"},
                                                    {"uid", uid}}}));
  ASSERT_TRUE(eventually(
      [] {
        const json p = pool("early");
        return conditionOf(p, "DependenciesReady", "status") == "False" &&
               conditionOf(p, "DependenciesReady", "reason") == "WaitingForOwnerMachinePool";
      },
      std::chrono::seconds(120)))
      << pool("early").dump(2) << manager_.processLog();
  EXPECT_THAT(conditionOf(pool("early"), "DependenciesReady", "message"),
              HasSubstr("waiting for a MachinePool to own this TerraformMachinePool"));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(jobsOf("early", "apply"), 0U);
  EXPECT_TRUE(list("secrets", "tfstateSecretSuffix=" + stateSuffix("early")).empty());
  EXPECT_NE(conditionOf(pool("early"), "Ready", "status"), "True");

  createMachinePool("early", 1);
  ASSERT_TRUE(eventually([] { return converged("early", 1); }, std::chrono::seconds(300)))
      << pool("early").dump(2) << machinePool("early").dump(2) << manager_.processLog();
  EXPECT_EQ(jobsOf("early", "apply"), 1U);
}

TEST_F(TerraformMachinePoolE2eTest, AutoscalerBoundsGiveTheModuleTheCountAndItIsWrittenBack) {
  createPool("auto", 6,
             {{"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size", "2"},
              {"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size", "4"}});
  ASSERT_TRUE(eventually([] { return converged("auto", 4); }, std::chrono::seconds(300)))
      << pool("auto").dump(2) << machinePool("auto").dump(2) << manager_.logText();
  const json p = pool("auto");
  EXPECT_EQ(conditionOf(p, "AutoscalingActive", "status"), "True") << p.dump(2);
  EXPECT_EQ(conditionOf(p, "AutoscalingActive", "reason"), "ReplicasManagedByModule");
  ASSERT_TRUE(eventually([] {
    const json mp = machinePool("auto");
    return mp["spec"].value("replicas", -1) == 4 &&
           mp["metadata"]
                   .value("annotations", json::object())
                   .value("cluster.x-k8s.io/replicas-managed-by", "") == "captf";
  })) << machinePool("auto").dump(2);
  // Written back once; the count is the module's, so nothing re-applies.
  EXPECT_EQ(e2e::eventsFor(kNamespace, "auto", "ReplicasWrittenBack").size(), 1U);
  EXPECT_EQ(jobsOf("auto", "apply"), 1U);
}

// docs/behaviour/pools.md "Autoscaling": bounds with min > max are invalid:
// AutoscalingActive False/AutoscalingAnnotationsInvalid with one Warning
// Event (not one per pass), and the pool applies spec.replicas without
// autoscaling; once the bounds are fixed the module owns the count.
TEST_F(TerraformMachinePoolE2eTest, InvalidAutoscalerBoundsApplyWithoutAutoscaling) {
  createPool("badauto", 2,
             {{"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size", "5"},
              {"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size", "3"}});
  ASSERT_TRUE(eventually([] { return converged("badauto", 2); }, std::chrono::seconds(300)))
      << pool("badauto").dump(2) << manager_.logText();
  json p = pool("badauto");
  EXPECT_EQ(conditionOf(p, "AutoscalingActive", "status"), "False") << p.dump(2);
  EXPECT_EQ(conditionOf(p, "AutoscalingActive", "reason"), "AutoscalingAnnotationsInvalid");
  EXPECT_THAT(conditionOf(p, "AutoscalingActive", "message"), HasSubstr("5"));
  // Passes go on (the pool converged); the Warning was sent once.
  const std::vector<json> warned =
      e2e::eventsFor(kNamespace, "badauto", "AutoscalingAnnotationsInvalid");
  ASSERT_EQ(warned.size(), 1U);
  EXPECT_EQ(warned.front().value("type", ""), "Warning");
  EXPECT_FALSE(warned.front().contains("series")) << warned.front().dump(2);
  EXPECT_FALSE(machinePool("badauto")["metadata"]
                   .value("annotations", json::object())
                   .contains("cluster.x-k8s.io/replicas-managed-by"));
  // Fixed: the module owns the count, bounded to [1, 3].
  ASSERT_EQ(kubectl({"-n", kNamespace, "annotate", "--overwrite", kPools, "badauto",
                     "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size=1"})
                .exit_code,
            0);
  EXPECT_TRUE(eventually([] {
    return conditionOf(pool("badauto"), "AutoscalingActive", "reason") == "ReplicasManagedByModule";
  })) << pool("badauto").dump(2);
}

TEST_F(TerraformMachinePoolE2eTest, ZDeletingAPoolDestroysItAndLeavesNoState) {
  createPool("gone", 1);
  ASSERT_TRUE(eventually([] { return converged("gone", 1); }, std::chrono::seconds(300)))
      << pool("gone").dump(2) << manager_.logText();
  kubectl({"-n", kNamespace, "delete", kPools, "gone", "--wait=false"});
  // Never blocked: a destroy Job runs (its Jobs go with the object).
  EXPECT_TRUE(eventually([] { return jobsOf("gone", "destroy") == 1U; })) << manager_.logText();
  ASSERT_TRUE(eventually(
      [] {
        return kubectl({"-n", kNamespace, "get", "terraformmachinepool", "gone"}).exit_code != 0 &&
               list("secrets", "tfstateSecretSuffix=" + stateSuffix("gone")).empty() &&
               kubectl({"-n", kNamespace, "get", "secret", "captf-inputs-mp-gone"}).exit_code != 0;
      },
      std::chrono::seconds(300)))
      << pool("gone").dump(2) << manager_.logText();
}

} // namespace
} // namespace captf::controllers
