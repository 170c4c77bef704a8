#pragma once

// The one reconcile pass of TerraformCluster, TerraformMachine and
// TerraformMachinePool (docs/decisions/manager-reconcile-pass.md), in
// Cluster API's shape: reconcile fetches (NotFound is success), checks the
// owner through the kind, adds the finalizer, then reconcileDelete or
// reconcileNormal; one status patch per pass. What differs per kind comes
// from its WorkloadKind (workload_kind.h).
//
// Reads come from the manager's cache (objects, managed Secrets, Jobs,
// Pods, Leases); identity Secrets, variables sources, the state lock Lease
// and Leases to take are read from the API server.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "manager/controllers/identity.h"
#include "manager/controllers/runner_rbac.h"
#include "manager/controllers/workload_kind.h"
#include "manager/kube/controller.h"
#include "manager/workspace/result.h"

namespace captf::controllers {

class WorkloadReconciler final : public kube::Reconciler {
public:
  WorkloadReconciler(ReconcilerDeps deps, std::unique_ptr<WorkloadKind> kind);
  ~WorkloadReconciler() override;

  absl::StatusOr<kube::Result> reconcile(const kube::ReconcileContext& ctx,
                                         const kube::Request& request) override;

private:
  // The pass; reconcile() turns its Conflicts into a quiet requeue.
  absl::StatusOr<kube::Result> reconcilePass(const kube::ReconcileContext& ctx,
                                             const kube::Request& request);
  absl::Status reconcileCredentials(WorkloadPass& pass);
  absl::Status reconcileJobs(WorkloadPass& pass);
  // Deletes a Job of an earlier object of this name (precondition: its uid).
  absl::Status removeLeftoverJob(WorkloadPass& pass, const nlohmann::json& job);
  absl::Status bookkeep(WorkloadPass& pass, size_t index);
  // Adds the finished run to the object's run history ConfigMap.
  absl::Status recordRun(WorkloadPass& pass, const RunJob& run, const api::LastRun& last_run,
                         const std::optional<workspace::RunReport>& parsed,
                         const std::string& result);
  absl::Status adopt(WorkloadPass& pass, const std::string& inputs_hash, const std::string& job);
  bool waitForActiveJob(WorkloadPass& pass);
  void replaceOutdatedPullWait(WorkloadPass& pass, const RunJob& run);
  absl::Status reconcileState(WorkloadPass& pass);
  absl::Status reconcileInputs(WorkloadPass& pass);
  void resolveSource(WorkloadPass& pass);
  absl::Status reconcileOutputs(WorkloadPass& pass);
  absl::Status reconcileBackups(WorkloadPass& pass);
  absl::Status reconcileNormal(WorkloadPass& pass);
  absl::Status reconcileDelete(WorkloadPass& pass);
  absl::Status pausedBranch(WorkloadPass& pass);
  absl::Status decideAndRun(WorkloadPass& pass);
  absl::Status runJob(WorkloadPass& pass);
  // Before a restore Job: an unreadable state's chunks copied aside, then
  // deleted (docs/behaviour/state.md#restore-over-an-unreadable-state). OK
  // when the restore may go on (also when there was nothing to set aside);
  // an error when a copy or a deletion failed, and then the state is as it
  // was or wholly kept aside.
  absl::Status setAsideUnreadableState(WorkloadPass& pass, std::int64_t serial);
  absl::Status cleanup(WorkloadPass& pass);
  void summarize(WorkloadPass& pass);
  void exportReadingTimes(const WorkloadPass& pass);
  // The kind's name in metrics labels ("TerraformCluster").
  std::string kind() const;

  ReconcilerDeps deps_;
  std::unique_ptr<WorkloadKind> kind_;
  IdentityResolver identity_;
  RunnerRbac rbac_;
};

} // namespace captf::controllers
