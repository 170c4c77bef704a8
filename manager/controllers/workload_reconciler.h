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
#include "manager/controllers/job_start.h"
#include "manager/controllers/pass_inputs.h"
#include "manager/controllers/run_bookkeeping.h"
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
  absl::Status reconcileOutputs(WorkloadPass& pass);
  absl::Status reconcileNormal(WorkloadPass& pass);
  absl::Status reconcileDelete(WorkloadPass& pass);
  absl::Status pausedBranch(WorkloadPass& pass);
  absl::Status decideAndRun(WorkloadPass& pass);
  absl::Status cleanup(WorkloadPass& pass);
  void summarize(WorkloadPass& pass);
  void exportReadingTimes(const WorkloadPass& pass);
  // The kind's name in metrics labels ("TerraformCluster").
  std::string kind() const;

  ReconcilerDeps deps_;
  std::unique_ptr<WorkloadKind> kind_;
  IdentityResolver identity_;
  RunnerRbac rbac_;
  // The phases (docs/decisions/manager-reconcile-pass.md, "Structure").
  RunBookkeeping bookkeeping_;
  PassInputs inputs_;
  JobStarter starter_;
};

} // namespace captf::controllers
