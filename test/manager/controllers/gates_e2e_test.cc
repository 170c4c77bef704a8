// The gates of the reconcile pass, each set up for real on the rig's capi
// tier (Cluster API v1.14's core controllers, the `manager` executable with
// exactly the shipped RBAC, real Jobs where a gate opens): for each, the
// condition and reason, the Event, and what happens next
// (docs/behaviour/lifecycle.md, "Owner back-references" and "Dependency
// gates"; docs/reference/conditions.md).
//
//   owners: none (WaitingForOwner), only others' (WaitingForOwnerMachine),
//   a Machine that names another object (OwnerMismatch), a Cluster that does
//   not exist (OwnerNotFound); a TerraformCluster whose Cluster does not
//   exist yet (OwnerNotFound) or names another object (OwnerMismatch), each
//   applied once fixed;
//   the member's cluster gates in order: a Cluster not on a TerraformCluster
//   (ClusterNotTerraform), a TerraformCluster not provisioned yet
//   (WaitingForClusterInfrastructure, then provisioned: the machine runs its
//   one apply), a cluster deletion held by its machines (DependentsExist),
//   a cluster whose state cannot be read (WaitingForClusterExports);
//   a variables source that does not exist yet (VariablesSourceNotFound);
//   a runner account that has not opted in (ServiceAccountNotOptedIn) and a
//   captf-runner RoleBinding CAPTF does not own (RBACFailed);
//   pause and resume, each announced once;
//   a Secret and a ConfigMap of names CAPTF uses, made by someone else,
//   never overwritten (InputsSecretConflict, RunHistoryNotRecorded);
//   two managers with --watch-filter=a and =b, each reconciling only its
//   own objects;
//   a manager with --namespace and --cluster-operation-gate=false.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "contract/roles.h"
#include "manager/workspace/names.h"
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

constexpr char kNamespace[] = "gates-e2e";
constexpr char kIdentity[] = "gates-e2e";
constexpr char kBootstrapSecret[] = "gates-bootstrap";
constexpr char kGroup[] = "infrastructure.cluster.x-k8s.io";
constexpr char kMachines[] = "machines.v1beta2.cluster.x-k8s.io";
constexpr char kClusters[] = "clusters.v1beta2.cluster.x-k8s.io";

class GatesE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    auto& images = runner::e2e::Images::get();
    manager_.runner_image = images.runner();
    cluster_image_ = images.module("gates-cluster",
                                   runner::e2e::noopModule(contract::Role::kCluster), env().tofu);
    machine_image_ = images.module("gates-machine",
                                   runner::e2e::noopModule(contract::Role::kMachine), env().tofu);
    e2e::createTenant(kNamespace, kIdentity, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    e2e::createBootstrapSecret(kNamespace, kBootstrapSecret);
    manager_.start();
    ASSERT_FALSE(HasFatalFailure());
  }

  static void TearDownTestSuite() { manager_.stopCleanly(); }

  static json get(const std::string& resource, const std::string& name,
                  const std::string& ns = kNamespace) {
    return getJson({"-n", ns, "get", resource, name});
  }
  static std::string reason(const std::string& resource, const std::string& name,
                            const std::string& type, const std::string& ns = kNamespace) {
    return conditionOf(get(resource, name, ns), type, "reason");
  }
  // Waits until condition `type` of `name` has `status` and `why`.
  static void expectCondition(const std::string& resource, const std::string& name,
                              const std::string& type, const std::string& status,
                              const std::string& why, const std::string& ns = kNamespace) {
    EXPECT_TRUE(eventually(
        [&] {
          const json object = get(resource, name, ns);
          return conditionOf(object, type, "status") == status &&
                 conditionOf(object, type, "reason") == why;
        },
        std::chrono::seconds(120)))
        << resource << " " << name << ": want " << type << "=" << status << "/" << why << "\n"
        << get(resource, name, ns).dump(2) << manager_.processLog();
  }
  static size_t events(const std::string& name, const std::string& why,
                       const std::string& ns = kNamespace) {
    return e2e::eventsFor(ns, name, why).size();
  }
  static std::string uidOf(const std::string& resource, const std::string& name) {
    return get(resource, name).value("metadata", json::object()).value("uid", "");
  }
  // A Machine of `cluster` naming TerraformMachine `infra`.
  static void createMachine(const std::string& name, const std::string& cluster,
                            const std::string& infra) {
    apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
           {"kind", "Machine"},
           {"metadata", {{"name", name}, {"namespace", kNamespace}}},
           {"spec",
            {{"clusterName", cluster},
             {"version", "v1.34.0"},
             {"bootstrap", {{"dataSecretName", kBootstrapSecret}}},
             {"infrastructureRef",
              {{"apiGroup", kGroup}, {"kind", "TerraformMachine"}, {"name", infra}}}}}});
  }
  // A TerraformMachine labelled with `cluster` ("" for none) and owned by
  // the objects `owners` ({apiVersion, kind, name, uid} each).
  static void createTerraformMachine(const std::string& name, const std::string& cluster,
                                     const json& owners) {
    json metadata = {{"name", name}, {"namespace", kNamespace}};
    if (!cluster.empty()) {
      metadata["labels"] = {{"cluster.x-k8s.io/cluster-name", cluster}};
    }
    if (!owners.empty()) {
      metadata["ownerReferences"] = owners;
    }
    apply({{"apiVersion", std::string(kGroup) + "/v1alpha1"},
           {"kind", "TerraformMachine"},
           {"metadata", metadata},
           {"spec", {{"source", {{"image", machine_image_}}}}}});
  }
  static json machineOwner(const std::string& machine) {
    return json::array({{{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                         {"kind", "Machine"},
                         {"name", machine},
                         {"uid", uidOf(kMachines, machine)}}});
  }
  // A Machine `machine` and its TerraformMachine `infra` (owned by it,
  // labelled with the Machine's cluster), as Cluster API would adopt it.
  static void createMemberPair(const std::string& machine, const std::string& cluster,
                               const std::string& infra) {
    createMachine(machine, cluster, infra);
    createTerraformMachine(infra, cluster, machineOwner(machine));
  }
  // A Cluster naming TerraformCluster `infra`.
  static void createCluster(const std::string& name, const std::string& infra) {
    apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
           {"kind", "Cluster"},
           {"metadata", {{"name", name}, {"namespace", kNamespace}}},
           {"spec",
            {{"infrastructureRef",
              {{"apiGroup", kGroup}, {"kind", "TerraformCluster"}, {"name", infra}}}}}});
  }
  // An owner reference to Cluster `name` with `uid`.
  static json clusterOwner(const std::string& name, const std::string& uid) {
    return json::array({{{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                         {"kind", "Cluster"},
                         {"name", name},
                         {"uid", uid}}});
  }
  // A TerraformCluster of the tenant's identity owned by `owners`.
  static void createTerraformCluster(const std::string& name, const json& owners) {
    apply({{"apiVersion", std::string(kGroup) + "/v1alpha1"},
           {"kind", "TerraformCluster"},
           {"metadata", {{"name", name}, {"namespace", kNamespace}, {"ownerReferences", owners}}},
           {"spec",
            {{"source", {{"image", cluster_image_}}}, {"identityRef", {{"name", kIdentity}}}}}});
  }
  // No Job of `owners` with operation `op`, a few seconds after their gates.
  static void expectNoJobs(const std::vector<std::string>& owners,
                           const std::string& op = "apply") {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    for (const std::string& owner : owners) {
      EXPECT_TRUE(e2e::runJobs(kNamespace, owner, op).empty()) << owner;
    }
  }
  static void expectNoJob(const std::string& owner, const std::string& op = "apply") {
    expectNoJobs({owner}, op);
  }
  // No state Secret of TerraformCluster `name`.
  static bool noClusterState(const std::string& name) {
    return e2e::items(kNamespace, "secrets",
                      "tfstateSecretSuffix=" +
                          runner::e2e::stateSuffix(kNamespace, contract::Role::kCluster, name))
        .empty();
  }

  static e2e::ManagerRig manager_;
  static std::string cluster_image_;
  static std::string machine_image_;
};

e2e::ManagerRig GatesE2eTest::manager_;
std::string GatesE2eTest::cluster_image_;
std::string GatesE2eTest::machine_image_;

TEST_F(GatesE2eTest, AMachineRunsNothingUntilItsOwnersPointBack) {
  // No owner at all: Unknown/WaitingForOwner.
  createTerraformMachine("tm-alone", "", json::array());
  expectCondition("terraformmachine", "tm-alone", "DependenciesReady", "Unknown",
                  "WaitingForOwner");

  // Only another object's (non-controller) owner reference, as a control
  // plane sets before its Machine exists: False/WaitingForOwnerMachine.
  apply({{"apiVersion", "v1"},
         {"kind", "ConfigMap"},
         {"metadata", {{"name", "control-plane-stand-in"}, {"namespace", kNamespace}}}});
  createTerraformMachine("tm-cp", "c-none",
                         json::array({{{"apiVersion", "v1"},
                                       {"kind", "ConfigMap"},
                                       {"name", "control-plane-stand-in"},
                                       {"uid", uidOf("configmap", "control-plane-stand-in")}}}));
  expectCondition("terraformmachine", "tm-cp", "DependenciesReady", "False",
                  "WaitingForOwnerMachine");

  // A Machine that names another TerraformMachine: OwnerMismatch, and the
  // message says which back-reference fails.
  createMachine("m-other", "c-none", "tm-someone-else");
  createTerraformMachine("tm-mismatch", "c-none", machineOwner("m-other"));
  expectCondition("terraformmachine", "tm-mismatch", "DependenciesReady", "False", "OwnerMismatch");
  EXPECT_THAT(conditionOf(get("terraformmachine", "tm-mismatch"), "DependenciesReady", "message"),
              HasSubstr("does not name this object"));

  // The Machine points back but its Cluster does not exist: OwnerNotFound.
  createMemberPair("m-lost", "c-missing", "tm-lost");
  expectCondition("terraformmachine", "tm-lost", "DependenciesReady", "False", "OwnerNotFound");
  EXPECT_THAT(conditionOf(get("terraformmachine", "tm-lost"), "DependenciesReady", "message"),
              HasSubstr("Cluster c-missing does not exist"));

  expectNoJobs({"tm-alone", "tm-cp", "tm-mismatch", "tm-lost"});
  for (const char* name : {"tm-alone", "tm-cp", "tm-mismatch", "tm-lost"}) {
    EXPECT_NE(conditionOf(get("terraformmachine", name), "Ready", "status"), "True") << name;
  }
}

// A TerraformCluster runs nothing until the Cluster of its owner reference
// exists and names it back; once it does, the Cluster's write wakes it and
// it applies once. Two objects at once: a Cluster that does not exist yet
// (OwnerNotFound) and one whose infrastructureRef names another object
// (OwnerMismatch).
TEST_F(GatesE2eTest, AClusterRunsNothingUntilItsClusterPointsBack) {
  // Kubernetes' garbage collector deletes an object whose owner is gone
  // within seconds (docs/behaviour/lifecycle.md#owner-back-references),
  // but leaves alone a reference it cannot resolve, such as one of an
  // apiVersion the API server does not serve: that keeps tc-early until
  // its Cluster exists, and Cluster API then rewrites the reference.
  json early_owner = clusterOwner("c-early", "5b0c1e2f-7a31-4c55-9d60-0e1a2b3c4d5e");
  early_owner[0]["apiVersion"] = "cluster.x-k8s.io/v1alpha4";
  createTerraformCluster("tc-early", early_owner);
  createCluster("c-wrong", "tc-someone-else");
  createTerraformCluster("tc-wrong", clusterOwner("c-wrong", uidOf(kClusters, "c-wrong")));
  expectCondition("terraformcluster", "tc-early", "DependenciesReady", "False", "OwnerNotFound");
  expectCondition("terraformcluster", "tc-wrong", "DependenciesReady", "False", "OwnerMismatch");
  EXPECT_THAT(conditionOf(get("terraformcluster", "tc-early"), "DependenciesReady", "message"),
              HasSubstr("Cluster c-early does not exist"));
  EXPECT_THAT(conditionOf(get("terraformcluster", "tc-wrong"), "DependenciesReady", "message"),
              HasSubstr("Cluster c-wrong spec.infrastructureRef does not name this object"));
  expectNoJobs({"tc-early", "tc-wrong"});
  for (const char* name : {"tc-early", "tc-wrong"}) {
    EXPECT_TRUE(noClusterState(name)) << name;
    EXPECT_NE(conditionOf(get("terraformcluster", name), "Ready", "status"), "True") << name;
  }

  // Fixed: the Cluster appears, the other one names its object.
  createCluster("c-early", "tc-early");
  e2e::mergePatch(kNamespace, kClusters, "c-wrong",
                  {{"spec", {{"infrastructureRef", {{"name", "tc-wrong"}}}}}});
  ASSERT_TRUE(eventually(
      [] {
        return readyTrue(get("terraformcluster", "tc-early")) &&
               readyTrue(get("terraformcluster", "tc-wrong"));
      },
      std::chrono::seconds(300)))
      << get("terraformcluster", "tc-early").dump(2) << get("terraformcluster", "tc-wrong").dump(2)
      << manager_.processLog();
  EXPECT_EQ(e2e::runJobs(kNamespace, "tc-early", "apply").size(), 1U);
  EXPECT_EQ(e2e::runJobs(kNamespace, "tc-wrong", "apply").size(), 1U);
}

TEST_F(GatesE2eTest, AMachineWaitsForItsClusterGateByGate) {
  // A Cluster whose infrastructure is not a TerraformCluster (a control
  // plane only, no infrastructureRef): ClusterNotTerraform, announced.
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "Cluster"},
         {"metadata", {{"name", "c-foreign"}, {"namespace", kNamespace}}},
         {"spec",
          {{"controlPlaneRef",
            {{"apiGroup", "controlplane.cluster.x-k8s.io"},
             {"kind", "KubeadmControlPlane"},
             {"name", "c-foreign"}}}}}});
  createMemberPair("m-foreign", "c-foreign", "tm-foreign");
  expectCondition("terraformmachine", "tm-foreign", "DependenciesReady", "False",
                  "ClusterNotTerraform");
  EXPECT_TRUE(eventually([] { return events("tm-foreign", "ClusterNotTerraform") > 0; }));
  expectNoJob("tm-foreign");

  // A TerraformCluster that cannot provision yet (its identity does not
  // exist): the machine waits, announced once, with no Job.
  e2e::createClusterPair(
      kNamespace, "tc-late", "c-late",
      {{"source", {{"image", cluster_image_}}}, {"identityRef", {{"name", "gates-late"}}}});
  createMemberPair("m-late", "c-late", "tm-late");
  expectCondition("terraformmachine", "tm-late", "DependenciesReady", "Unknown",
                  "WaitingForClusterInfrastructure");
  EXPECT_TRUE(eventually([] { return events("tm-late", "WaitingForClusterInfrastructure") > 0; }));
  expectNoJob("tm-late");
  expectNoJob("tc-late");

  // The identity appears: the cluster provisions, then the machine, with
  // one apply each.
  e2e::createTenant(kNamespace, "gates-late", {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
  ASSERT_TRUE(eventually([] { return readyTrue(get("terraformmachine", "tm-late")); },
                         std::chrono::seconds(300)))
      << get("terraformmachine", "tm-late").dump(2) << manager_.processLog();
  EXPECT_EQ(e2e::runJobs(kNamespace, "tc-late", "apply").size(), 1U);
  EXPECT_EQ(e2e::runJobs(kNamespace, "tm-late", "apply").size(), 1U);
  EXPECT_EQ(events("tm-late", "WaitingForClusterInfrastructure"), 1U);

  // The cluster is deleted while its machine exists: held, and it says why.
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "terraformcluster", "tc-late", "--wait=false"})
                .exit_code,
            0);
  expectCondition("terraformcluster", "tc-late", "DeletionBlocked", "True", "DependentsExist");
  EXPECT_THAT(conditionOf(get("terraformcluster", "tc-late"), "DeletionBlocked", "message"),
              HasSubstr("Cluster c-late"));
  expectNoJob("tc-late", "destroy");

  // Its state cannot be read any more (deleted by hand): a new machine of
  // the cluster waits for the exports, with no Job.
  const std::string suffix =
      runner::e2e::stateSuffix(kNamespace, contract::Role::kCluster, "tc-late");
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "secret", "-l", "tfstateSecretSuffix=" + suffix})
                .exit_code,
            0);
  createMemberPair("m-exports", "c-late", "tm-exports");
  expectCondition("terraformmachine", "tm-exports", "DependenciesReady", "Unknown",
                  "WaitingForClusterExports");
  EXPECT_TRUE(eventually([] { return events("tm-exports", "WaitingForClusterExports") > 0; }));
  expectNoJob("tm-exports");
  // The held cluster still holds, without a destroy.
  EXPECT_EQ(conditionOf(get("terraformcluster", "tc-late"), "DeletionBlocked", "status"), "True");
  expectNoJob("tc-late", "destroy");
}

TEST_F(GatesE2eTest, AMissingVariablesSourceIsWaitedForThenApplied) {
  e2e::createClusterPair(kNamespace, "tc-vars", "c-vars",
                         {{"source", {{"image", cluster_image_}}},
                          {"identityRef", {{"name", kIdentity}}},
                          {"variablesFrom", {{{"secretRef", {{"name", "vars"}}}}}}});
  expectCondition("terraformcluster", "tc-vars", "DependenciesReady", "False",
                  "VariablesSourceNotFound");
  EXPECT_THAT(conditionOf(get("terraformcluster", "tc-vars"), "DependenciesReady", "message"),
              HasSubstr("vars"));
  expectNoJob("tc-vars");

  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata",
          {{"name", "vars"},
           {"namespace", kNamespace},
           {"labels", {{"captf.io/variables", "true"}}}}},
         {"data", json::object()}});
  ASSERT_TRUE(eventually([] { return readyTrue(get("terraformcluster", "tc-vars")); },
                         std::chrono::seconds(300)))
      << get("terraformcluster", "tc-vars").dump(2) << manager_.processLog();
  EXPECT_EQ(e2e::runJobs(kNamespace, "tc-vars", "apply").size(), 1U);

  // Paused, then resumed: each announced once however many passes run.
  e2e::mergePatch(kNamespace, "terraformcluster", "tc-vars",
                  {{"metadata", {{"annotations", {{"cluster.x-k8s.io/paused", ""}}}}}});
  expectCondition("terraformcluster", "tc-vars", "Paused", "True", "Paused");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  kubectl({"-n", kNamespace, "annotate", "terraformcluster", "tc-vars", "captf.e2e/poke=1"});
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(events("tc-vars", "Paused"), 1U);
  e2e::mergePatch(kNamespace, "terraformcluster", "tc-vars",
                  {{"metadata", {{"annotations", {{"cluster.x-k8s.io/paused", nullptr}}}}}});
  expectCondition("terraformcluster", "tc-vars", "Paused", "False", "NotPaused");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  kubectl({"-n", kNamespace, "annotate", "terraformcluster", "tc-vars", "captf.e2e/poke=2",
           "--overwrite"});
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(events("tc-vars", "Resumed"), 1U);
  EXPECT_TRUE(readyTrue(get("terraformcluster", "tc-vars")));
}

// Objects of names CAPTF uses that CAPTF did not make are never
// overwritten: a Secret of the durable inputs' name holds the apply; a
// ConfigMap of the run history's name is left alone while the run is
// bookkept.
TEST_F(GatesE2eTest, ObjectsOfOurNamesThatAreNotOursAreNeverOverwritten) {
  const workspace::ObjectRef ref{contract::Role::kCluster, kNamespace, "tc-taken", "", ""};
  const std::string inputs = workspace::durableInputsSecretName(ref);
  const std::string history = workspace::runHistoryName(ref);
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata", {{"name", inputs}, {"namespace", kNamespace}}},
         {"stringData", {{"mine", "a person's data"}}}});
  apply({{"apiVersion", "v1"},
         {"kind", "ConfigMap"},
         {"metadata", {{"name", history}, {"namespace", kNamespace}}},
         {"data", {{"mine", "a person's notes"}}}});
  e2e::createClusterPair(
      kNamespace, "tc-taken", "c-taken",
      {{"source", {{"image", cluster_image_}}}, {"identityRef", {{"name", kIdentity}}}});
  expectCondition("terraformcluster", "tc-taken", "ApplyJobSucceeded", "False",
                  "InputsSecretConflict");
  EXPECT_THAT(conditionOf(get("terraformcluster", "tc-taken"), "ApplyJobSucceeded", "message"),
              HasSubstr(inputs));
  expectNoJob("tc-taken");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(events("tc-taken", "InputsSecretConflict"), 1U);
  const json secret = get("secret", inputs);
  EXPECT_EQ(secret.value("data", json::object()).value("mine", ""),
            absl::Base64Escape("a person's data"))
      << secret.dump(2);
  EXPECT_FALSE(secret["metadata"].contains("ownerReferences")) << secret.dump(2);

  // Once it is gone the apply runs; the run history's name is still taken.
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "secret", inputs}).exit_code, 0);
  ASSERT_TRUE(eventually([] { return readyTrue(get("terraformcluster", "tc-taken")); },
                         std::chrono::seconds(300)))
      << get("terraformcluster", "tc-taken").dump(2) << manager_.processLog();
  EXPECT_TRUE(eventually([] { return events("tc-taken", "RunHistoryNotRecorded") > 0; }));
  const json notes = get("configmap", history);
  EXPECT_EQ(notes.value("data", json::object()), json({{"mine", "a person's notes"}}))
      << notes.dump(2);
}

TEST_F(GatesE2eTest, TheRunnerAccountMustOptInAndAForeignBindingIsLeftAlone) {
  // An override ServiceAccount without captf.io/runner=true: no Job until
  // it opts in.
  apply({{"apiVersion", "v1"},
         {"kind", "ServiceAccount"},
         {"metadata", {{"name", "custom-runner"}, {"namespace", kNamespace}}}});
  e2e::createClusterPair(kNamespace, "tc-sa", "c-sa",
                         {{"source", {{"image", cluster_image_}}},
                          {"identityRef", {{"name", kIdentity}}},
                          {"jobs", {{"serviceAccountName", "custom-runner"}}}});
  expectCondition("terraformcluster", "tc-sa", "RunnerRBACReady", "False",
                  "ServiceAccountNotOptedIn");
  expectNoJob("tc-sa");
  kubectl({"-n", kNamespace, "label", "serviceaccount", "custom-runner", "captf.io/runner=true"});
  expectCondition("terraformcluster", "tc-sa", "RunnerRBACReady", "True", "RBACReady");
  EXPECT_TRUE(eventually([] { return !e2e::runJobs(kNamespace, "tc-sa", "apply").empty(); }));

  // A tenant whose captf-runner RoleBinding was made by someone else: never
  // touched, RBACFailed, no Job; once it is gone the manager makes its own.
  const std::string ns = "gates-rbac";
  e2e::createTenant(ns, ns, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
  apply({{"apiVersion", "rbac.authorization.k8s.io/v1"},
         {"kind", "RoleBinding"},
         {"metadata", {{"name", "captf-runner"}, {"namespace", ns}}},
         {"roleRef",
          {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "view"}}},
         {"subjects", json::array()}});
  e2e::createClusterPair(
      ns, "tc-rbac", "c-rbac",
      {{"source", {{"image", cluster_image_}}}, {"identityRef", {{"name", ns}}}});
  expectCondition("terraformcluster", "tc-rbac", "RunnerRBACReady", "False", "RBACFailed", ns);
  EXPECT_THAT(conditionOf(get("terraformcluster", "tc-rbac", ns), "RunnerRBACReady", "message"),
              HasSubstr("not managed by CAPTF"));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_TRUE(e2e::runJobs(ns, "tc-rbac", "apply").empty());
  const json binding = getJson({"-n", ns, "get", "rolebinding", "captf-runner"});
  EXPECT_EQ(binding["roleRef"].value("name", ""), "view") << binding.dump(2);
  ASSERT_EQ(kubectl({"-n", ns, "delete", "rolebinding", "captf-runner"}).exit_code, 0);
  expectCondition("terraformcluster", "tc-rbac", "RunnerRBACReady", "True", "RBACReady", ns);
  EXPECT_TRUE(eventually([&] { return !e2e::runJobs(ns, "tc-rbac", "apply").empty(); }));
}

// Two managers on one rig, --watch-filter=a and --watch-filter=b (after the
// suite above has stopped its own): each provisions only the objects
// labelled with its value, both lead (a Lease each), and an object with
// neither label is touched by neither, although every Job, Cluster and
// identity event reaches both managers' queues.
class WatchFilterE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    for (e2e::ManagerRig* rig : {&a_, &b_}) {
      e2e::installManager(*rig);
      ASSERT_FALSE(HasFatalFailure());
      rig->runner_image = runner::e2e::Images::get().runner();
    }
    b_.log_name = "manager-b.log";
    image_ = runner::e2e::Images::get().module(
        "filter-cluster", runner::e2e::noopModule(contract::Role::kCluster), env().tofu);
    e2e::createTenant(kFilterNamespace, kFilterNamespace,
                      {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    // No resync within the suite: whatever wakes an object here is a watch.
    for (e2e::ManagerRig* rig : {&a_, &b_}) {
      rig->sync_period = "10m";
    }
    a_.start({"--watch-filter=a"});
    b_.start({"--watch-filter=b"});
    ASSERT_FALSE(HasFatalFailure());
  }
  static void TearDownTestSuite() {
    a_.stopCleanly();
    b_.stopCleanly();
  }
  static void createCluster(const std::string& name, const std::string& filter) {
    e2e::createClusterPair(
        kFilterNamespace, name, "c-" + name,
        {{"source", {{"image", image_}}}, {"identityRef", {{"name", kFilterNamespace}}}},
        filter.empty() ? json::object() : json{{"cluster.x-k8s.io/watch-filter", filter}});
  }
  // Whether manager `rig` exports captf_ready for TerraformCluster `name`:
  // it bookkept the object.
  static bool exports(const e2e::ManagerRig& rig, const std::string& name) {
    return e2e::metricValue(rig.metrics(), "captf_ready",
                            {{"namespace", kFilterNamespace}, {"name", name}})
        .has_value();
  }

  static constexpr char kFilterNamespace[] = "filter-e2e";
  static e2e::ManagerRig a_;
  static e2e::ManagerRig b_;
  static std::string image_;
};

e2e::ManagerRig WatchFilterE2eTest::a_;
e2e::ManagerRig WatchFilterE2eTest::b_;
std::string WatchFilterE2eTest::image_;

TEST_F(WatchFilterE2eTest, EachManagerReconcilesOnlyItsOwnLabel) {
  for (const char* lease :
       {"controller-leader-election-captf-a", "controller-leader-election-captf-b"}) {
    EXPECT_TRUE(eventually([&] {
      const json held = getJson({"-n", "captf-system", "get", "lease", lease});
      return held.is_object() &&
             !held.value("spec", json::object()).value("holderIdentity", "").empty();
    })) << lease;
  }
  createCluster("tc-a", "a");
  createCluster("tc-b", "b");
  createCluster("tc-none", "");
  for (const char* name : {"tc-a", "tc-b"}) {
    ASSERT_TRUE(eventually(
        [&] {
          return readyTrue(getJson({"-n", kFilterNamespace, "get", "terraformcluster", name}));
        },
        std::chrono::seconds(300)))
        << name << "\n"
        << a_.processLog() << b_.processLog();
  }
  EXPECT_TRUE(exports(a_, "tc-a"));
  EXPECT_FALSE(exports(a_, "tc-b"));
  EXPECT_TRUE(exports(b_, "tc-b"));
  EXPECT_FALSE(exports(b_, "tc-a"));
  // The unlabelled object: no finalizer, no status, no Job, from either.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const json none = getJson({"-n", kFilterNamespace, "get", "terraformcluster", "tc-none"});
  EXPECT_FALSE(none["metadata"].contains("finalizers")) << none.dump(2);
  EXPECT_FALSE(none.contains("status")) << none.dump(2);
  EXPECT_TRUE(e2e::runJobs(kFilterNamespace, "tc-none", "apply").empty());
  EXPECT_FALSE(exports(a_, "tc-none"));
  EXPECT_FALSE(exports(b_, "tc-none"));
}

// A TerraformMachine waiting for its variables source is woken by the
// source's creation (the resync is 10 minutes away): it renders and runs.
TEST_F(WatchFilterE2eTest, AMachineIsWokenByItsVariablesSource) {
  ASSERT_TRUE(eventually(
      [] {
        return readyTrue(getJson({"-n", kFilterNamespace, "get", "terraformcluster", "tc-a"}));
      },
      std::chrono::seconds(300)));
  e2e::createBootstrapSecret(kFilterNamespace, "filter-bootstrap");
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "Machine"},
         {"metadata", {{"name", "m-vars"}, {"namespace", kFilterNamespace}}},
         {"spec",
          {{"clusterName", "c-tc-a"},
           {"version", "v1.34.0"},
           {"bootstrap", {{"dataSecretName", "filter-bootstrap"}}},
           {"infrastructureRef",
            {{"apiGroup", kGroup}, {"kind", "TerraformMachine"}, {"name", "tm-vars"}}}}}});
  const std::string machine_uid =
      getJson({"-n", kFilterNamespace, "get", kMachines, "m-vars"})["metadata"].value("uid", "");
  const std::string machine_image = runner::e2e::Images::get().module(
      "filter-machine", runner::e2e::noopModule(contract::Role::kMachine), env().tofu);
  apply({{"apiVersion", std::string(kGroup) + "/v1alpha1"},
         {"kind", "TerraformMachine"},
         {"metadata",
          {{"name", "tm-vars"},
           {"namespace", kFilterNamespace},
           {"labels",
            {{"cluster.x-k8s.io/watch-filter", "a"}, {"cluster.x-k8s.io/cluster-name", "c-tc-a"}}},
           {"ownerReferences",
            {{{"apiVersion", "cluster.x-k8s.io/v1beta2"},
              {"kind", "Machine"},
              {"name", "m-vars"},
              {"uid", machine_uid}}}}}},
         {"spec",
          {{"source", {{"image", machine_image}}},
           {"variablesFrom", {{{"secretRef", {{"name", "machine-vars"}}}}}}}}});
  auto machine = [] {
    return getJson({"-n", kFilterNamespace, "get", "terraformmachine", "tm-vars"});
  };
  ASSERT_TRUE(eventually([&] {
    return conditionOf(machine(), "DependenciesReady", "reason") == "VariablesSourceNotFound";
  })) << machine().dump(2)
      << a_.processLog();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata",
          {{"name", "machine-vars"},
           {"namespace", kFilterNamespace},
           {"labels", {{"captf.io/variables", "true"}}}}},
         {"data", json::object()}});
  // Woken by the source's watch, well inside the 10-minute resync.
  EXPECT_TRUE(eventually([] { return !e2e::runJobs(kFilterNamespace, "tm-vars", "apply").empty(); },
                         std::chrono::seconds(60)))
      << machine().dump(2) << a_.processLog();
}

// One manager started with --namespace=scoped-e2e and
// --cluster-operation-gate=false (after the suites above stopped theirs):
// it reconciles its namespace only (identities stay cluster-wide), and a
// cluster's apply no longer waits for its machines' (docs/behaviour/
// lifecycle.md, "The cluster operation gate"; docs/reference/flags.md).
class ScopedManagerE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    manager_.log_name = "manager-scoped.log";
    auto& images = runner::e2e::Images::get();
    manager_.runner_image = images.runner();
    cluster_image_ = images.module("scoped-cluster",
                                   runner::e2e::sizedModule(contract::Role::kCluster), env().tofu);
    // A machine whose apply takes a minute (the test child sleeps: no shell).
    slow_image_ =
        images.module("scoped-machine-slow", runner::e2e::slowMachineModule(60), env().tofu);
    for (const char* ns : {kScoped, kOutside}) {
      e2e::createTenant(ns, ns, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    }
    e2e::createBootstrapSecret(kScoped, "scoped-bootstrap");
    manager_.start({std::string("--namespace=") + kScoped, "--cluster-operation-gate=false"});
    ASSERT_FALSE(HasFatalFailure());
  }
  static void TearDownTestSuite() { manager_.stopCleanly(); }

  static void createCluster(const std::string& ns, const std::string& name) {
    e2e::createClusterPair(
        ns, name, "c-" + name,
        {{"source", {{"image", cluster_image_}}}, {"identityRef", {{"name", ns}}}});
  }
  static json tc(const std::string& ns, const std::string& name) {
    return getJson({"-n", ns, "get", "terraformcluster", name});
  }
  static size_t active(const std::vector<std::string>& jobs) {
    size_t n = 0;
    for (const std::string& job : jobs) {
      const json st = getJson({"-n", kScoped, "get", "job", job}).value("status", json::object());
      n += st.value("succeeded", 0) == 0 && st.value("failed", 0) == 0 ? 1U : 0U;
    }
    return n;
  }

  static constexpr char kScoped[] = "scoped-e2e";
  static constexpr char kOutside[] = "scoped-outside";
  static e2e::ManagerRig manager_;
  static std::string cluster_image_;
  static std::string slow_image_;
};

e2e::ManagerRig ScopedManagerE2eTest::manager_;
std::string ScopedManagerE2eTest::cluster_image_;
std::string ScopedManagerE2eTest::slow_image_;

TEST_F(ScopedManagerE2eTest, OnlyItsNamespaceIsReconciled) {
  createCluster(kOutside, "tc-out");
  createCluster(kScoped, "tc-in");
  ASSERT_TRUE(eventually([] { return readyTrue(tc(kScoped, "tc-in")); }, std::chrono::seconds(300)))
      << tc(kScoped, "tc-in").dump(2) << manager_.processLog();
  // The object outside: no finalizer, no status, no Job, no series.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const json out = tc(kOutside, "tc-out");
  EXPECT_FALSE(out["metadata"].contains("finalizers")) << out.dump(2);
  EXPECT_FALSE(out.contains("status")) << out.dump(2);
  EXPECT_TRUE(e2e::runJobs(kOutside, "tc-out", "apply").empty());
  EXPECT_FALSE(e2e::metricValue(manager_.metrics(), "captf_ready",
                                {{"namespace", kOutside}, {"name", "tc-out"}})
                   .has_value());
  EXPECT_TRUE(e2e::metricValue(manager_.metrics(), "captf_ready",
                               {{"namespace", kScoped}, {"name", "tc-in"}})
                  .has_value());
}

// With the gate off, a cluster's re-apply starts while a machine's apply
// runs, and no cluster write Lease is taken.
TEST_F(ScopedManagerE2eTest, WithoutTheGateAClusterAppliesBesideItsMachines) {
  ASSERT_TRUE(eventually(
      [] {
        return getJson({"-n", kScoped, "get", "clusters.v1beta2.cluster.x-k8s.io", "c-tc-in"})
            .value("status", json::object())
            .value("initialization", json::object())
            .value("infrastructureProvisioned", false);
      },
      std::chrono::seconds(300)))
      << manager_.processLog();
  apply({{"apiVersion", std::string(kGroup) + "/v1alpha1"},
         {"kind", "TerraformMachine"},
         {"metadata",
          {{"name", "tm-slow"},
           {"namespace", kScoped},
           {"labels", {{"cluster.x-k8s.io/cluster-name", "c-tc-in"}}}}},
         {"spec", {{"source", {{"image", slow_image_}}}}}});
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "Machine"},
         {"metadata", {{"name", "m-slow"}, {"namespace", kScoped}}},
         {"spec",
          {{"clusterName", "c-tc-in"},
           {"version", "v1.34.0"},
           {"bootstrap", {{"dataSecretName", "scoped-bootstrap"}}},
           {"infrastructureRef",
            {{"apiGroup", kGroup}, {"kind", "TerraformMachine"}, {"name", "tm-slow"}}}}}});
  ASSERT_TRUE(eventually([] { return active(e2e::runJobs(kScoped, "tm-slow", "apply")) == 1; },
                         std::chrono::seconds(120)))
      << getJson({"-n", kScoped, "get", "terraformmachine", "tm-slow"}).dump(2)
      << manager_.processLog();
  const size_t cluster_applies = e2e::runJobs(kScoped, "tc-in", "apply").size();
  e2e::mergePatch(kScoped, "terraformcluster", "tc-in",
                  {{"spec", {{"variables", {{"size", "large"}}}}}});
  // The cluster's Job exists while the machine's still runs (a minute).
  bool beside = false;
  ASSERT_TRUE(eventually([&] {
    if (e2e::runJobs(kScoped, "tc-in", "apply").size() <= cluster_applies) {
      return false;
    }
    beside = active(e2e::runJobs(kScoped, "tm-slow", "apply")) == 1;
    return true;
  })) << tc(kScoped, "tc-in").dump(2)
      << manager_.processLog();
  EXPECT_TRUE(beside) << "the machine's apply ended before the cluster's Job was made";
  EXPECT_TRUE(e2e::items(kScoped, "leases", "captf.io/lease=cluster").empty());
  EXPECT_TRUE(e2e::eventsFor(kScoped, "tc-in", "WaitingForMachineOperations").empty());
  EXPECT_TRUE(eventually(
      [] {
        return readyTrue(tc(kScoped, "tc-in")) &&
               readyTrue(getJson({"-n", kScoped, "get", "terraformmachine", "tm-slow"}));
      },
      std::chrono::seconds(240)))
      << tc(kScoped, "tc-in").dump(2) << manager_.processLog();
}

} // namespace
} // namespace captf::controllers
