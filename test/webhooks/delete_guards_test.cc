#include <gtest/gtest.h>

#include "test/manager/api/fixtures.h"
#include "test/webhooks/field_errors.h"
#include "webhooks/delete_guards.h"

namespace captf::webhooks {
namespace {

namespace t = api::testing;
using nlohmann::json;
using testing::strings;

api::TerraformMachine ownedMachine() {
  api::TerraformMachine m = t::minimalTerraformMachine();
  m.metadata.labels["cluster.x-k8s.io/cluster-name"] = "prod";
  m.metadata.owner_references = {
      {"cluster.x-k8s.io/v1beta2", "Machine", "prod-md-0-xyz", "uid-1", true, true}};
  return m;
}

OwnerMachine owner() {
  return OwnerMachine{
      "prod-md-0-xyz", "uid-1", "prod", false,
      ObjectRef{"infrastructure.cluster.x-k8s.io", "TerraformMachine", "prod-md-0-abc"}};
}

ClusterInfo cluster(bool paused) {
  return ClusterInfo{"team-a", "prod", paused,
                     ObjectRef{"infrastructure.cluster.x-k8s.io", "TerraformCluster", "prod"}};
}

const char* const kRefused =
    "metadata.ownerReferences: Forbidden: TerraformMachine is owned by Machine "
    "\"prod-md-0-xyz\", which is not being deleted: delete the Machine instead; Cluster API "
    "deletes this object once the instance is gone";

TEST(MachineDeleteGuardTest, Table) {
  struct Case {
    const char* name;
    api::TerraformMachine obj;
    std::optional<OwnerMachine> owner;
    std::optional<ClusterInfo> cluster;
    bool refused;
  };
  api::TerraformMachine orphan = ownedMachine();
  orphan.metadata.owner_references.clear();
  api::TerraformMachine cp_owned = ownedMachine();
  cp_owned.metadata.owner_references = {
      {"controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane", "kcp", "u", false, false}};
  api::TerraformMachine moving = ownedMachine();
  moving.metadata.annotations["clusterctl.cluster.x-k8s.io/delete-for-move"] = "";
  OwnerMachine deleting = owner();
  deleting.deleting = true;
  OwnerMachine other_infra = owner();
  other_infra.infrastructure_ref.name = "someone-else";
  OwnerMachine other_group = owner();
  other_group.infrastructure_ref.api_group = "infrastructure.cluster.x-k8s.io.evil";
  OwnerMachine other_uid = owner();
  other_uid.uid = "uid-2";
  OwnerMachine other_cluster = owner();
  other_cluster.cluster_name = "staging";
  api::TerraformMachine no_uid = ownedMachine();
  no_uid.metadata.owner_references[0].uid.clear();

  const std::vector<Case> cases = {
      {"live owner", ownedMachine(), owner(), std::nullopt, true},
      {"orphan", orphan, std::nullopt, std::nullopt, false},
      {"owned by a control plane only", cp_owned, std::nullopt, std::nullopt, false},
      {"owner gone", ownedMachine(), std::nullopt, std::nullopt, false},
      {"owner deleting", ownedMachine(), deleting, std::nullopt, false},
      {"owner names another infra object", ownedMachine(), other_infra, std::nullopt, false},
      {"owner names another group", ownedMachine(), other_group, std::nullopt, false},
      {"uid mismatch", ownedMachine(), other_uid, std::nullopt, false},
      {"ownerRef without uid still matches", no_uid, other_uid, std::nullopt, true},
      {"cluster label mismatch", ownedMachine(), other_cluster, std::nullopt, false},
      {"move from paused cluster", moving, owner(), cluster(true), false},
      {"move annotation but cluster running", moving, owner(), cluster(false), true},
      {"move annotation but cluster gone", moving, owner(), std::nullopt, true},
      {"paused cluster without move annotation", ownedMachine(), owner(), cluster(true), true},
  };
  for (const Case& c : cases) {
    const auto got = strings(validateTerraformMachineDelete(c.obj, c.owner, c.cluster));
    if (c.refused) {
      EXPECT_EQ(got, std::vector<std::string>{kRefused}) << c.name;
    } else {
      EXPECT_TRUE(got.empty()) << c.name << ": " << ::testing::PrintToString(got);
    }
  }
}

TEST(MachineDeleteGuardTest, BackReferenceNamesTheFailedCheck) {
  const api::TerraformMachine m = ownedMachine();
  const api::OwnerReference& ref = m.metadata.owner_references[0];
  OwnerMachine o = owner();
  EXPECT_FALSE(backReferenceMismatch(m, ref, o).has_value());
  o.uid = "uid-9";
  EXPECT_EQ(backReferenceMismatch(m, ref, o),
            "the ownerReference UID \"uid-1\" is not Machine \"prod-md-0-xyz\"'s UID \"uid-9\"");
  o = owner();
  o.cluster_name = "x";
  EXPECT_EQ(backReferenceMismatch(m, ref, o),
            "label cluster.x-k8s.io/cluster-name is \"prod\" but Machine \"prod-md-0-xyz\" "
            "belongs to Cluster \"x\"");
}

TEST(ParseCapiObjectsTest, ReadsV1beta2AndV1beta1Machines) {
  const json v1beta2 = json::parse(R"({
    "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
    "metadata": {"name": "m", "uid": "u", "deletionTimestamp": "2025-01-01T00:00:00Z"},
    "spec": {"clusterName": "prod", "infrastructureRef":
             {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "TerraformMachine", "name": "tm"}}})");
  absl::StatusOr<OwnerMachine> m = ownerMachineFromJson(v1beta2);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name, "m");
  EXPECT_EQ(m->uid, "u");
  EXPECT_TRUE(m->deleting);
  EXPECT_EQ(m->cluster_name, "prod");
  EXPECT_EQ(m->infrastructure_ref,
            (ObjectRef{"infrastructure.cluster.x-k8s.io", "TerraformMachine", "tm"}));

  const json v1beta1 = json::parse(R"({
    "kind": "Machine", "metadata": {"name": "m"},
    "spec": {"infrastructureRef":
             {"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "TerraformMachine", "name": "tm"}}})");
  m = ownerMachineFromJson(v1beta1);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->deleting);
  EXPECT_EQ(m->infrastructure_ref.api_group, "infrastructure.cluster.x-k8s.io");

  EXPECT_FALSE(ownerMachineFromJson(json::array()).ok());
  EXPECT_FALSE(ownerMachineFromJson(json::parse(R"({"kind": "Cluster", "metadata": {}})")).ok());
  EXPECT_TRUE(ownerMachineFromJson(json::parse(R"({"metadata": {}, "spec": 3})")).ok());
}

TEST(ParseCapiObjectsTest, ReadsClusters) {
  absl::StatusOr<ClusterInfo> c = clusterInfoFromJson(json::parse(R"({
    "kind": "Cluster", "metadata": {"name": "prod", "namespace": "team-a"},
    "spec": {"paused": true, "infrastructureRef":
             {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "TerraformCluster", "name": "tc"}}})"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->paused);
  EXPECT_EQ(c->namespace_, "team-a");
  EXPECT_EQ(c->infrastructure_ref.name, "tc");
  c = clusterInfoFromJson(json::parse(R"({"metadata": {}, "spec": {"paused": "yes"}})"));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->paused);
}

IdentityUsageSnapshot snapshot() {
  IdentityUsageSnapshot s;
  api::TerraformCluster tc = t::minimalTerraformCluster();
  tc.metadata.name = "tc";
  tc.spec.identity_ref.name = "cluster-identity";
  tc.spec.defaults = api::TerraformClusterDefaults{};
  tc.spec.defaults->identity_ref = api::IdentityReference{"worker-identity"};
  s.clusters.push_back(tc);
  s.capi_clusters.push_back(
      ClusterInfo{"team-a", "prod", false,
                  ObjectRef{"infrastructure.cluster.x-k8s.io", "TerraformCluster", "tc"}});
  api::TerraformMachine m = t::minimalTerraformMachine();
  m.metadata.labels["cluster.x-k8s.io/cluster-name"] = "prod";
  s.machines.push_back(m);
  api::TerraformMachinePool p = t::minimalTerraformMachinePool();
  p.spec.identity_ref = api::IdentityReference{"pool-identity"};
  s.pools.push_back(p);
  return s;
}

TEST(IdentityDeleteGuardTest, FindsDirectAndInheritedUsers) {
  const IdentityUsageSnapshot s = snapshot();
  EXPECT_EQ(findIdentityUser("cluster-identity", s), "TerraformCluster \"team-a/tc\"");
  EXPECT_EQ(findIdentityUser("worker-identity", s), "TerraformMachine \"team-a/prod-md-0-abc\"");
  EXPECT_EQ(findIdentityUser("pool-identity", s), "TerraformMachinePool \"team-a/prod-pool\"");
  EXPECT_EQ(findIdentityUser("unused", s), std::nullopt);

  // Without defaults the machine falls back to the cluster's own identity.
  IdentityUsageSnapshot no_defaults = s;
  no_defaults.clusters[0].spec.defaults.reset();
  no_defaults.clusters[0].metadata.name = "tc";
  no_defaults.clusters[0].spec.identity_ref.name = "only";
  EXPECT_EQ(findIdentityUser("only", no_defaults), "TerraformCluster \"team-a/tc\"");
  no_defaults.clusters.clear();
  EXPECT_EQ(findIdentityUser("only", no_defaults), std::nullopt);
}

TEST(IdentityDeleteGuardTest, RefusesWhileUsedOrMirrored) {
  api::TerraformClusterIdentity identity = t::minimalTerraformClusterIdentity();
  identity.metadata.name = "pool-identity";
  identity.status = api::TerraformClusterIdentityStatus{};
  identity.status->namespaces = {"team-a", "team-b"};
  EXPECT_EQ(strings(validateTerraformClusterIdentityDelete(identity, snapshot())),
            (std::vector<std::string>{
                "Forbidden: the identity is in use by TerraformMachinePool "
                "\"team-a/prod-pool\"; point it at another identity or delete it first",
                "status.namespaces: Forbidden: credential mirrors still exist in namespaces "
                "team-a, team-b; the controller removes them once no object there uses the "
                "identity"}));
  identity.metadata.name = "unused";
  identity.status->namespaces.clear();
  EXPECT_TRUE(validateTerraformClusterIdentityDelete(identity, snapshot()).empty());
}

} // namespace
} // namespace captf::webhooks
