#pragma once

// The run Lease, the cluster operation gate (docs/behaviour/lifecycle.md) and the clusterctl
// move block (docs/behaviour/lifecycle.md): who may start a Job given the Leases' holders, and
// the Lease objects to write. Pure; the controller reads and writes the
// Leases and acts on the verdicts.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "manager/api/time.h"
#include "manager/api/workspace.h"
#include "manager/lifecycle/names.h"
#include "manager/lifecycle/schedule.h"
#include "manager/workspace/kind_traits.h"

namespace captf::lifecycle {

// A Lease whose holder Job does not exist is taken over after this long
// (measured from captf.io/lease-acquired-at): the holder is created right
// after the Lease, so a holder still missing then was never created.
inline constexpr Seconds kLeaseMissingHolderGrace{60};
// A Lease older than its spec.leaseDurationSeconds plus this is taken over
// whatever its holder looks like (a backstop for holders we cannot see).
inline constexpr Seconds kLeaseBackstop{600};

// The state of the Job a Lease names, as the controller sees it.
enum class HolderState {
  // Exists and has not finished.
  kLive,
  // Exists and has finished.
  kFinished,
  // No Job of that name exists.
  kMissing,
};

// A run or cluster Lease as read.
struct LeaseView {
  // spec.holderIdentity: the holding Job's name; "" when released.
  std::string holder{};
  // captf.io/lease-acquired-at (or spec.acquireTime).
  std::optional<api::Time> acquired_at{};
  // spec.leaseDurationSeconds (0 when unset: no backstop).
  std::int64_t duration_seconds = 0;
  // State of the Job named `holder` (ignored when holder is empty).
  HolderState holder_state = HolderState::kMissing;
};

enum class LeaseVerdict {
  // No Lease object: create it (leaseManifest) holding our Job.
  kCreate,
  // Free or ours already: update holder/annotations to our Job (a no-op
  // update when it already names our Job).
  kAcquire,
  // Held by a Job that is gone, finished or past the backstop: take over
  // (update holder to our Job).
  kTakeOver,
  // Held by another live Job: wait (re-check every kLeaseRecheck).
  kWait,
};

// docs/behaviour/lifecycle.md takeover rules. `lease` nullopt: no Lease object exists.
// `our_job`: the name of the Job about to be created.
LeaseVerdict evaluateLease(const std::optional<LeaseView>& lease, std::string_view our_job,
                           TimePoint now);

// Whether the verdict lets the caller hold the Lease (all but kWait).
inline bool mayHold(LeaseVerdict verdict) {
  return verdict != LeaseVerdict::kWait;
}

// The Lease a Job holds. `kind` selects the captf.io/lease label ("run" or
// "cluster"). Labels: captf.io/lease, captf.io/managed=true, owner-kind,
// owner-name, cluster.x-k8s.io/cluster-name; annotations captf.io/lease-op
// and captf.io/lease-acquired-at; spec.holderIdentity = job,
// spec.leaseDurationSeconds = activeDeadlineSeconds + the termination grace
// period (the longest a holder can live), spec.acquireTime = now.
enum class LeaseKind { kRun, kCluster };
struct LeaseRequest {
  LeaseKind kind = LeaseKind::kRun;
  ObjectIdentity object{};
  std::string cluster_name{};
  std::string job{};
  api::Operation operation = api::Operation::kApply;
  std::int64_t active_deadline_seconds = 0;
  TimePoint now{};
};
// A complete coordination.k8s.io/v1 Lease (name from runLeaseName or
// clusterLeaseName, namespace of the object) for create, or as the
// merge-patch body of a takeover (metadata.labels/annotations + spec).
nlohmann::json leaseManifest(const LeaseRequest& request);

// "run" / "cluster": values of the captf.io/lease label.
std::string_view leaseLabelValue(LeaseKind kind);

// --- the cluster operation gate ---------------------------------------------

// Whether the gate applies: --cluster-operation-gate on, and an apply,
// destroy or restore (never refresh, drift or plan).
bool gateApplies(bool gate_enabled, api::Operation operation);

enum class GateVerdict {
  kProceed,
  // TerraformCluster: after taking its run Lease and the cluster write
  // Lease, machines/pools of the cluster are applying or destroying: keep
  // both Leases and wait (ApplyJobSucceeded/RestoreJobSucceeded
  // Unknown/WaitingForMachineOperations; metric reason machine_operations).
  kWaitForMachineOperations,
  // TerraformMachine/Pool: the cluster write Lease is held: release the run
  // Lease and wait (Unknown/WaitingForClusterOperation; metric reason
  // cluster_operation).
  kWaitForClusterOperation,
};

// The gate, after the object's own run Lease is held. `traits.owns_cluster_lease` picks the side.
//   cluster: take the cluster write Lease (clusterLeaseName) with
//     evaluateLease for our Job and pass the verdict as
//     `cluster_lease_verdict` (kWait: another live Job holds it — the gate
//     then waits too, reported like machine operations), and
//     `dependent_operations`: the number of machines/pools of the Cluster
//     whose active Job is an apply, destroy or restore.
//   machine/pool: pass `cluster_lease_held_by_other`: the cluster write
//     Lease exists and evaluateLease(lease, our_job, now) is kWait (held by
//     a live Job that is not ours).
// Precondition: gateApplies(...) is true.
struct GateInput {
  workspace::KindTraits traits{};
  LeaseVerdict cluster_lease_verdict = LeaseVerdict::kCreate;
  std::int32_t dependent_operations = 0;
  bool cluster_lease_held_by_other = false;
};
GateVerdict evaluateGate(const GateInput& input);

// --- the clusterctl move block (docs/behaviour/lifecycle.md) -------------------------------------

enum class BlockMoveAction {
  // Nothing to write.
  kNone,
  // Set clusterctl.cluster.x-k8s.io/block-move now (a direct write, before
  // creating the Job).
  kSet,
  // Remove it now: no Job is active and none is about to be created
  // (paused or not).
  kClear,
};

// `present`: the annotation is on the object. `job_active`: a run Job of
// the object is active. `creating_job`: the caller is about to create one.
BlockMoveAction blockMoveAction(bool present, bool job_active, bool creating_job);

} // namespace captf::lifecycle
