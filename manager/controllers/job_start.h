#pragma once

// The start of the Job a pass's decision names (docs/decisions/manager-reconcile-pass.md,
// "Structure"): credentials in place, which root the Job renders, the
// API server's copy decided on, the run Lease and the cluster operation
// gate (docs/behaviour/lifecycle.md#run-leases-and-the-cluster-operation-gate),
// an unreadable state set aside before a restore, block-move, the Git
// commit the Job fetches, the durable inputs of an apply, the Job and its
// per-run Secret, and the Events, metrics and status of the start.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/api/workspace.h"
#include "manager/controllers/workload_kind.h"
#include "manager/lifecycle/job_builder.h"
#include "manager/lifecycle/leases.h"
#include "manager/lifecycle/pass.h"
#include "manager/workspace/backups.h"
#include "manager/workspace/inputs.h"
#include "manager/workspace/state.h"

namespace captf::controllers {

// One per reconciler, for every pass of its kind (several threads): it
// keeps no per-pass state of its own.
class JobStarter {
public:
  JobStarter(const ReconcilerDeps& deps, const WorkloadKind& kind) : deps_(deps), kind_(kind) {}

  // Starts the Job of pass.decision (which runs one), or leaves the pass
  // waiting with the condition that says why and its requeue; sets
  // pass.stale when the cached copy was not the API server's.
  absl::Status start(WorkloadPass& pass);

private:
  // What one start gathers on its way to the Job.
  struct Start {
    api::Operation op = api::Operation::kApply;
    std::string op_name;
    std::string job_name;
    // The root the Job renders (null for a restore).
    const contract::RenderedRoot* root = nullptr;
    std::optional<workspace::RestoreInputs> restore;
    // The durable inputs Secret as the API server has it (an apply).
    std::optional<nlohmann::json> existing_durable;
    std::optional<lifecycle::GitFetch> git;
    // The run's report token ("" when the run reports nothing).
    std::string report_token;
  };

  // Each step below: true to go on; false when the pass waits or ends
  // (the step set what says so).
  bool credentialsInPlace(WorkloadPass& pass, const Start& start) const;
  absl::StatusOr<bool> chooseRoot(WorkloadPass& pass, Start& start) const;
  absl::StatusOr<bool> decidedOnServersCopy(WorkloadPass& pass) const;
  absl::StatusOr<bool> readDurableInputs(WorkloadPass& pass, Start& start) const;
  absl::StatusOr<bool> takeLeases(WorkloadPass& pass, const Start& start);
  absl::StatusOr<bool> passGate(WorkloadPass& pass, const Start& start,
                                const lifecycle::LeaseRequest& lease);
  // The wait's condition, and on its transition its Event and count; the
  // Lease recheck.
  void reportWait(WorkloadPass& pass, const Start& start, const lifecycle::LeaseWait& wait) const;
  absl::Status setAsideBeforeRestore(WorkloadPass& pass, const Start& start) const;
  absl::Status setBlockMove(WorkloadPass& pass) const;
  bool chooseCommit(WorkloadPass& pass, Start& start) const;
  absl::Status writeDurableInputs(WorkloadPass& pass, const Start& start) const;
  lifecycle::JobStart jobStart(WorkloadPass& pass, Start& start) const;
  absl::StatusOr<nlohmann::json> createJob(WorkloadPass& pass, Start& start) const;
  absl::Status createRunSecret(WorkloadPass& pass, const Start& start,
                               const nlohmann::json& job) const;
  void reportStart(WorkloadPass& pass, const Start& start) const;
  // The kind's name in metrics labels ("TerraformCluster").
  std::string kind() const;

  ReconcilerDeps deps_; // references and pointers: a copy is cheap
  const WorkloadKind& kind_;
};

} // namespace captf::controllers
