#include "manager/lifecycle/leases.h"

#include "contract/strings.h"
#include "manager/api/keys.h"
#include "manager/lifecycle/defaults.h"

namespace captf::lifecycle {

using nlohmann::json;

LeaseVerdict evaluateLease(const std::optional<LeaseView>& lease, std::string_view our_job,
                           TimePoint now) {
  if (!lease) {
    return LeaseVerdict::kCreate;
  }
  if (lease->holder.empty() || lease->holder == our_job) {
    return LeaseVerdict::kAcquire;
  }
  if (lease->holder_state == HolderState::kFinished) {
    return LeaseVerdict::kTakeOver;
  }
  if (lease->acquired_at) {
    const TimePoint acquired = toTimePoint(*lease->acquired_at);
    if (lease->holder_state == HolderState::kMissing &&
        now >= acquired + kLeaseMissingHolderGrace) {
      return LeaseVerdict::kTakeOver;
    }
    if (lease->duration_seconds > 0 &&
        now >= acquired + Seconds(lease->duration_seconds) + kLeaseBackstop) {
      return LeaseVerdict::kTakeOver;
    }
  } else if (lease->holder_state == HolderState::kMissing) {
    // No acquisition time to measure the grace from: a holder that does not
    // exist cannot be waited for.
    return LeaseVerdict::kTakeOver;
  }
  return LeaseVerdict::kWait;
}

std::string_view leaseLabelValue(LeaseKind kind) {
  return kind == LeaseKind::kRun ? "run" : "cluster";
}

json leaseManifest(const LeaseRequest& request) {
  const std::string name = request.kind == LeaseKind::kRun
                               ? runLeaseName(request.object)
                               : clusterLeaseName(request.object.ns, request.cluster_name);
  json labels = json::object();
  ObjectIdentity owner = request.object;
  owner.cluster_name = request.cluster_name;
  for (const auto& [key, value] : workspace::ownerLabels(owner)) {
    labels[key] = value;
  }
  labels[std::string(api::kLabelLease)] = std::string(leaseLabelValue(request.kind));
  const std::string acquired = api::formatTime(toApiTime(request.now));
  return {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata",
       {{"name", name},
        {"namespace", request.object.ns},
        {"labels", labels},
        {"annotations",
         {{std::string(api::kAnnotationLeaseOp), std::string(api::enumName(request.operation))},
          {std::string(api::kAnnotationLeaseAcquiredAt), acquired}}}}},
      {"spec",
       {{"holderIdentity", request.job},
        {"leaseDurationSeconds", request.active_deadline_seconds + kTerminationGracePeriodSeconds},
        // MicroTime: RFC 3339 with microseconds.
        {"acquireTime", acquired.substr(0, acquired.size() - 1) + ".000000Z"}}}};
}

bool gateApplies(bool gate_enabled, api::Operation operation) {
  return gate_enabled &&
         (operation == api::Operation::kApply || operation == api::Operation::kDestroy ||
          operation == api::Operation::kRestore);
}

GateVerdict evaluateGate(const GateInput& input) {
  if (input.traits.owns_cluster_lease) {
    // Holding the cluster Lease, dependents in flight make the cluster wait
    // with both Leases kept, so new dependent operations queue behind it.
    if (!mayHold(input.cluster_lease_verdict) || input.dependent_operations > 0) {
      return GateVerdict::kWaitForMachineOperations;
    }
    return GateVerdict::kProceed;
  }
  if (input.cluster_lease_held_by_other) {
    return GateVerdict::kWaitForClusterOperation;
  }
  return GateVerdict::kProceed;
}

BlockMoveAction blockMoveAction(bool present, bool job_active, bool creating_job) {
  if (creating_job || job_active) {
    // Set before a Job is created, held while one is active.
    return present ? BlockMoveAction::kNone : BlockMoveAction::kSet;
  }
  return present ? BlockMoveAction::kClear : BlockMoveAction::kNone;
}

} // namespace captf::lifecycle
