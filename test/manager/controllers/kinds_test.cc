// The workload kinds as data: the one list of kinds (kinds.h kWorkloadKinds)
// covers every contract role, and each kind declares the traits the docs
// give it (docs/decisions/manager-reconcile-pass.md "Kinds"):
//   - TerraformMachine: immutable inputs (docs/behaviour/inputs.md) and a
//     post-apply refresh;
//   - TerraformCluster: plan approval (docs/behaviour/approval.md) and the
//     cluster write Lease (docs/behaviour/lifecycle.md#run-leases-and-the-cluster-operation-gate);
//   - TerraformMachinePool: pool membership (docs/behaviour/pools.md), a
//     post-apply refresh, and a failed re-apply in Ready
//     (docs/behaviour/lifecycle.md#ready-summarization).
// And a kind's pass keeps what its hooks find (a member's TerraformCluster)
// from one hook to the next, per pass: the kind itself, shared by every
// pass, keeps nothing.
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "contract/roles.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/metrics.h"
#include "manager/controllers/terraform_cluster_kind.h"
#include "manager/controllers/terraform_machine_kind.h"
#include "manager/controllers/terraform_machine_pool_kind.h"
#include "manager/controllers/workload_kind.h"
#include "manager/kube/clock.h"
#include "manager/kube/metrics.h"
#include "test/manager/controllers/fake_deps.h"
#include "test/manager/kube/fake_client.h"
#include "test/manager/lifecycle/testing.h"

namespace captf::controllers {
namespace {

class KindsTest : public ::testing::Test, protected FakeReconcilerDeps {
protected:
  std::vector<std::unique_ptr<WorkloadKind>> workloadKinds() {
    std::vector<std::unique_ptr<WorkloadKind>> out;
    out.push_back(terraformClusterKind(deps()));
    out.push_back(terraformMachineKind(deps()));
    out.push_back(terraformMachinePoolKind(deps()));
    return out;
  }
};

TEST_F(KindsTest, OneWorkloadKindPerContractRole) {
  std::vector<std::string> listed;
  listed.reserve(kinds::kWorkloadKinds.size());
  for (const kube::GroupVersionKind* gvk : kinds::kWorkloadKinds) {
    listed.push_back(gvk->kind);
  }
  std::vector<std::string> roles;
  roles.reserve(contract::allRoles().size());
  for (const contract::RoleSpec& role : contract::allRoles()) {
    roles.emplace_back(role.kind);
  }
  EXPECT_EQ(listed, roles);
  EXPECT_EQ(kinds::kWorkloadKinds.front(), &kinds::kTerraformCluster);
  // And each kind of the pass is one of them, with its own role.
  std::set<std::string> kinds_of_pass;
  for (const auto& kind : workloadKinds()) {
    EXPECT_EQ(kind->gvk().kind, contract::roleSpec(kind->role()).kind);
    kinds_of_pass.insert(kind->gvk().kind);
  }
  EXPECT_EQ(kinds_of_pass, std::set<std::string>(listed.begin(), listed.end()));
}

TEST_F(KindsTest, TraitsAreWhatTheDocsSay) {
  const auto cluster = terraformClusterKind(deps());
  const auto machine = terraformMachineKind(deps());
  const auto pool = terraformMachinePoolKind(deps());
  EXPECT_EQ(cluster->traits(),
            (workspace::KindTraits{.plan_approval = true, .owns_cluster_lease = true}));
  EXPECT_EQ(machine->traits(),
            (workspace::KindTraits{.immutable_inputs = true, .post_apply_refresh = true}));
  EXPECT_EQ(pool->traits(), (workspace::KindTraits{.pool_membership = true,
                                                   .post_apply_refresh = true,
                                                   .ready_tracks_reapply = true}));
  for (const auto& kind : workloadKinds()) {
    SCOPED_TRACE(kind->gvk().kind);
    // The lifecycle tables name kinds through these same traits.
    EXPECT_EQ(kind->traits(), lifecycle::testing::traitsOf(kind->role()));
  }
}

// A TerraformMachine owned by Machine m1 of Cluster c1, whose
// infrastructureRef names TerraformCluster tc1 (spec.defaults.jobs and an
// identity of its own).
class MemberPassTest : public KindsTest {
protected:
  static constexpr char kNs[] = "ns";

  MemberPassTest() {
    const std::string infra_group = "infrastructure.cluster.x-k8s.io";
    store_.put({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                {"kind", "Cluster"},
                {"metadata", {{"name", "c1"}, {"namespace", kNs}, {"uid", "uid-c1"}}},
                {"spec",
                 {{"infrastructureRef",
                   {{"apiGroup", infra_group}, {"kind", "TerraformCluster"}, {"name", "tc1"}}}}}});
    store_.put({{"apiVersion", infra_group + "/v1alpha1"},
                {"kind", "TerraformCluster"},
                {"metadata", {{"name", "tc1"}, {"namespace", kNs}, {"uid", "uid-tc1"}}},
                {"spec",
                 {{"source", {{"image", "registry.test/cluster:v1"}}},
                  {"identityRef", {{"name", "cluster-identity"}}},
                  {"defaults", {{"jobs", {{"activeDeadlineSeconds", 600}}}}}}}});
    store_.put({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                {"kind", "Machine"},
                {"metadata", {{"name", "m1"}, {"namespace", kNs}, {"uid", "uid-m1"}}},
                {"spec",
                 {{"clusterName", "c1"},
                  {"infrastructureRef",
                   {{"apiGroup", infra_group}, {"kind", "TerraformMachine"}, {"name", "tm1"}}}}}});
  }

  static json machineObject() {
    return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
            {"kind", "TerraformMachine"},
            {"metadata",
             {{"name", "tm1"},
              {"namespace", kNs},
              {"uid", "uid-tm1"},
              {"labels", {{std::string(api::kLabelClusterName), "c1"}}},
              {"ownerReferences", json::array({{{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                                                {"kind", "Machine"},
                                                {"name", "m1"},
                                                {"uid", "uid-m1"}}})}}},
            {"spec", {{"source", {{"image", "registry.test/machine:v1"}}}}}};
  }

  // A pass as WorkloadReconciler begins it.
  std::unique_ptr<WorkloadPass> begin(const WorkloadKind& kind) {
    auto pass = std::make_unique<WorkloadPass>(store_, events_);
    pass->object = machineObject();
    auto begun = kind.begin(pass->object);
    EXPECT_TRUE(begun.ok()) << begun.status();
    if (!begun.ok()) {
      return nullptr;
    }
    pass->kind = *std::move(begun);
    pass->meta = &pass->kind->meta();
    pass->spec = &pass->kind->spec();
    pass->status = &pass->kind->status();
    pass->original = &pass->kind->original();
    pass->id = lifecycle::ObjectIdentity{kind.role(), kNs, "tm1"};
    return pass;
  }
};

TEST_F(MemberPassTest, KeepsWhatItsOwnerLookupFoundAcrossHooks) {
  const auto kind = terraformMachineKind(deps());
  auto pass = begin(*kind);
  ASSERT_NE(pass, nullptr);
  // Before the owner lookup the pass knows no TerraformCluster.
  EXPECT_EQ(pass->kind->inheritedJobs(*pass), std::nullopt);
  EXPECT_EQ(pass->kind->identityName(*pass), "");

  ASSERT_TRUE(pass->kind->reconcileOwner(*pass).ok());
  EXPECT_TRUE(pass->owner_ok);
  EXPECT_EQ(pass->cluster_name, "c1");
  // Later hooks read the TerraformCluster the owner lookup found.
  const std::optional<api::JobPolicy> inherited = pass->kind->inheritedJobs(*pass);
  ASSERT_TRUE(inherited.has_value());
  EXPECT_EQ(inherited->active_deadline_seconds, 600);
  EXPECT_EQ(pass->kind->identityName(*pass), "cluster-identity");

  // Another pass of the same kind starts from nothing: the state is the
  // pass's, not the kind's.
  auto other = begin(*kind);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->kind->inheritedJobs(*other), std::nullopt);
  EXPECT_EQ(other->kind->identityName(*other), "");
  EXPECT_EQ(pass->kind->identityName(*pass), "cluster-identity");
}

TEST_F(MemberPassTest, AnObjectThatDoesNotDecodeBeginsNoPass) {
  const auto kind = terraformMachineKind(deps());
  json object = machineObject();
  object["spec"]["source"] = "not an object";
  const auto begun = kind->begin(object);
  ASSERT_FALSE(begun.ok());
  EXPECT_NE(begun.status().message().find("spec.source"), std::string::npos) << begun.status();
}

} // namespace
} // namespace captf::controllers
