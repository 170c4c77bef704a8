#pragma once

// What sets one workload kind's lifecycle apart from another's, as data. Each
// WorkloadKind declares its traits (manager/controllers/workload_kind.h); the pure parts of the
// pass (workspace::classifyState, lifecycle's DecisionInput, readyInputs and GateInput) read
// these fields and never the object's role, so a new kind states its behaviour in one place
// (docs/decisions/manager-reconcile-pass.md, "Kinds").
//
// Here rather than in manager/lifecycle because classifyState reads it and lifecycle depends
// on this library, not the other way round (as ObjectRef).

namespace captf::workspace {

struct KindTraits {
  // Inputs are built only until the object is provisioned; afterwards every operation runs
  // from the durable inputs Secret and the digest its first apply ran, a destroy never from a
  // fresh render, inputs changes never trigger an apply, and a provisioned object whose state
  // carries no inputs hash is lost (docs/behaviour/inputs.md, docs/behaviour/state.md).
  // TerraformMachine.
  bool immutable_inputs = false;
  // Plan approval (docs/behaviour/approval.md): applyPolicy Manual plans and waits for
  // captf.io/approve-plan, Automatic applies run with the destructive-plan guard and wait for
  // captf.io/approve-destructive-plan, and status.plan exists. TerraformCluster.
  bool plan_approval = false;
  // Pool membership (docs/behaviour/pools.md#membership-refresh-and-convergence): the
  // converging and membershipRefreshIntervalSeconds refresh rows, and a pending health
  // reading refreshed at that cadence instead of the doubling backoff. TerraformMachinePool.
  bool pool_membership = false;
  // A refresh right after each apply (docs/behaviour/drift-and-health.md#scheduling, schedule
  // row 1). TerraformMachine and TerraformMachinePool.
  bool post_apply_refresh = false;
  // Ready keeps ApplyJobSucceeded after provisioning: the kind is re-applied in normal
  // operation and a failed re-apply must show (docs/behaviour/lifecycle.md#ready-summarization;
  // a pool, when its bootstrap data rotates). TerraformMachinePool.
  bool ready_tracks_reapply = false;
  // The cluster side of the cluster operation gate: takes the cluster write Lease, waits for
  // its dependents' operations, and deletes the Lease in final cleanup
  // (docs/behaviour/lifecycle.md#run-leases-and-the-cluster-operation-gate). Other kinds wait
  // while another Job holds it. TerraformCluster.
  bool owns_cluster_lease = false;

  friend bool operator==(const KindTraits&, const KindTraits&) = default;
};

} // namespace captf::workspace
