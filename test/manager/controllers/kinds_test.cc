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
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "contract/roles.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/metrics.h"
#include "manager/controllers/terraform_cluster_kind.h"
#include "manager/controllers/terraform_machine_kind.h"
#include "manager/controllers/terraform_machine_pool_kind.h"
#include "manager/kube/clock.h"
#include "manager/kube/metrics.h"
#include "test/manager/controllers/fakes.h"
#include "test/manager/kube/fake_client.h"
#include "test/manager/lifecycle/testing.h"

namespace captf::controllers {
namespace {

class KindsTest : public ::testing::Test {
protected:
  KindsTest() : cache_(store_), cached_(cache_, store_), metrics_(registry_, "v", "c") {}

  ReconcilerDeps deps() {
    return ReconcilerDeps{cache_, cached_, store_, events_, clock_, metrics_, settings_};
  }
  std::vector<std::unique_ptr<WorkloadKind>> workloadKinds() {
    std::vector<std::unique_ptr<WorkloadKind>> out;
    out.push_back(terraformClusterKind(deps()));
    out.push_back(terraformMachineKind(deps()));
    out.push_back(terraformMachinePoolKind(deps()));
    return out;
  }

  kube::testing::FakeClient store_;
  StoreCache cache_;
  CachedClient cached_;
  kube::FakeClock clock_;
  Reasons events_;
  kube::MetricsRegistry registry_;
  CaptfMetrics metrics_;
  ControllerSettings settings_;
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

} // namespace
} // namespace captf::controllers
