#include <gtest/gtest.h>

#include "manager/lifecycle/leases.h"
#include "test/manager/lifecycle/testing.h"

namespace captf::lifecycle {
namespace {

using api::Operation;
using testing::at;
using testing::kNow;

TEST(LeasesTest, EvaluateLease) {
  struct Case {
    std::string name{};
    std::optional<LeaseView> lease{};
    LeaseVerdict verdict{};
  };
  const auto held = [](HolderState state, std::int64_t acquired, std::int64_t duration = 4200) {
    return LeaseView{.holder = "other-job",
                     .acquired_at = at(acquired),
                     .duration_seconds = duration,
                     .holder_state = state};
  };
  const std::vector<Case> cases = {
      {"no Lease: create", std::nullopt, LeaseVerdict::kCreate},
      {"released: acquire", LeaseView{.holder = ""}, LeaseVerdict::kAcquire},
      {"ours already (a retried reconcile): acquire",
       LeaseView{.holder = "our-job", .holder_state = HolderState::kLive}, LeaseVerdict::kAcquire},
      {"held by a live Job: wait", held(HolderState::kLive, -60), LeaseVerdict::kWait},
      {"held by a finished Job: take over", held(HolderState::kFinished, -10),
       LeaseVerdict::kTakeOver},
      {"holder missing within the grace: wait", held(HolderState::kMissing, -59),
       LeaseVerdict::kWait},
      {"holder missing after the grace: take over", held(HolderState::kMissing, -60),
       LeaseVerdict::kTakeOver},
      {"holder missing, no acquisition time: take over",
       LeaseView{.holder = "other-job", .holder_state = HolderState::kMissing},
       LeaseVerdict::kTakeOver},
      {"live but older than duration + backstop: take over",
       held(HolderState::kLive, -(4200 + 600)), LeaseVerdict::kTakeOver},
      {"live, just inside the backstop: wait", held(HolderState::kLive, -(4200 + 599)),
       LeaseVerdict::kWait},
      {"live without a duration: no backstop", held(HolderState::kLive, -100000, 0),
       LeaseVerdict::kWait},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(evaluateLease(c.lease, "our-job", kNow), c.verdict);
    EXPECT_EQ(mayHold(c.verdict), c.verdict != LeaseVerdict::kWait);
  }
}

TEST(LeasesTest, LeaseManifest) {
  const ObjectIdentity object{.role = contract::Role::kMachine, .ns = "ns1", .name = "w0"};
  const nlohmann::json run = leaseManifest({.kind = LeaseKind::kRun,
                                            .object = object,
                                            .cluster_name = "c1",
                                            .job = "captf-m-w0-apply-a1-abcdef",
                                            .operation = Operation::kApply,
                                            .active_deadline_seconds = 3600,
                                            .now = kNow});
  EXPECT_EQ(run["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(run["kind"], "Lease");
  EXPECT_EQ(run["metadata"]["name"], runLeaseName(object));
  EXPECT_EQ(run["metadata"]["namespace"], "ns1");
  const nlohmann::json& labels = run["metadata"]["labels"];
  EXPECT_EQ(labels["captf.io/lease"], "run");
  EXPECT_EQ(labels["captf.io/managed"], "true");
  EXPECT_EQ(labels["captf.infrastructure.cluster.x-k8s.io/owner-kind"], "TerraformMachine");
  EXPECT_EQ(labels["captf.infrastructure.cluster.x-k8s.io/owner-name"], "w0");
  EXPECT_EQ(labels["cluster.x-k8s.io/cluster-name"], "c1");
  EXPECT_EQ(run["metadata"]["annotations"]["captf.io/lease-op"], "apply");
  EXPECT_EQ(run["metadata"]["annotations"]["captf.io/lease-acquired-at"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(run["spec"]["holderIdentity"], "captf-m-w0-apply-a1-abcdef");
  EXPECT_EQ(run["spec"]["leaseDurationSeconds"], 4200);
  EXPECT_EQ(run["spec"]["acquireTime"], "2026-01-01T00:00:00.000000Z");

  const nlohmann::json cluster =
      leaseManifest({.kind = LeaseKind::kCluster,
                     .object = {.role = contract::Role::kCluster, .ns = "ns1", .name = "tc"},
                     .cluster_name = "c1",
                     .job = "captf-c-tc-destroy-a1-abcdef",
                     .operation = Operation::kDestroy,
                     .active_deadline_seconds = 60,
                     .now = kNow});
  EXPECT_EQ(cluster["metadata"]["name"], clusterLeaseName("ns1", "c1"));
  EXPECT_EQ(cluster["metadata"]["labels"]["captf.io/lease"], "cluster");
  EXPECT_EQ(cluster["metadata"]["annotations"]["captf.io/lease-op"], "destroy");
  EXPECT_EQ(cluster["spec"]["leaseDurationSeconds"], 660);
}

TEST(LeasesTest, ClusterOperationGate) {
  struct Case {
    bool enabled{};
    Operation op{};
    bool applies{};
  };
  const Case applies[] = {
      {true, Operation::kApply, true},   {true, Operation::kDestroy, true},
      {true, Operation::kRestore, true}, {true, Operation::kRefresh, false},
      {true, Operation::kDrift, false},  {true, Operation::kPlan, false},
      {false, Operation::kApply, false}, {false, Operation::kDestroy, false},
  };
  for (const Case& c : applies) {
    SCOPED_TRACE(api::enumName(c.op));
    EXPECT_EQ(gateApplies(c.enabled, c.op), c.applies);
  }
  struct GateCase {
    std::string name{};
    GateInput input{};
    GateVerdict verdict{};
  };
  const std::vector<GateCase> cases = {
      {"cluster, no dependents in flight",
       {.traits = testing::traitsOf(contract::Role::kCluster)},
       GateVerdict::kProceed},
      {"cluster waits for machine operations",
       {.traits = testing::traitsOf(contract::Role::kCluster), .dependent_operations = 2},
       GateVerdict::kWaitForMachineOperations},
      {"cluster whose write Lease another live Job holds",
       {.traits = testing::traitsOf(contract::Role::kCluster),
        .cluster_lease_verdict = LeaseVerdict::kWait},
       GateVerdict::kWaitForMachineOperations},
      {"cluster taking over a stale write Lease",
       {.traits = testing::traitsOf(contract::Role::kCluster),
        .cluster_lease_verdict = LeaseVerdict::kTakeOver},
       GateVerdict::kProceed},
      {"machine, cluster lease free",
       {.traits = testing::traitsOf(contract::Role::kMachine)},
       GateVerdict::kProceed},
      {"machine waits for the cluster",
       {.traits = testing::traitsOf(contract::Role::kMachine), .cluster_lease_held_by_other = true},
       GateVerdict::kWaitForClusterOperation},
      {"pool waits for the cluster",
       {.traits = testing::traitsOf(contract::Role::kMachinePool),
        .cluster_lease_held_by_other = true},
       GateVerdict::kWaitForClusterOperation},
      {"a machine ignores dependent counts",
       {.traits = testing::traitsOf(contract::Role::kMachine), .dependent_operations = 5},
       GateVerdict::kProceed},
  };
  for (const GateCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(evaluateGate(c.input), c.verdict);
  }
}

TEST(LeasesTest, BlockMove) {
  struct Case {
    bool present{};
    bool active{};
    bool creating{};
    BlockMoveAction action{};
  };
  const Case cases[] = {
      {false, false, true, BlockMoveAction::kSet},   {true, false, true, BlockMoveAction::kNone},
      {true, true, false, BlockMoveAction::kNone},   {false, true, false, BlockMoveAction::kSet},
      {true, false, false, BlockMoveAction::kClear}, {false, false, false, BlockMoveAction::kNone},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.present << c.active << c.creating);
    EXPECT_EQ(blockMoveAction(c.present, c.active, c.creating), c.action);
  }
}

} // namespace
} // namespace captf::lifecycle
