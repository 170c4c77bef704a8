#pragma once

// The TerraformCluster reconciler: the shared pass of spec/captf-core.md
// §11.2 in Cluster API's shape (reconcile fetches — NotFound is success —,
// checks the owner Cluster (§11.3), adds the finalizer, then
// reconcileDelete or reconcileNormal; one status patch per pass), with the
// cluster's post-processing (§11.13, §15.1, §15.2) and the plan approval
// flows (§17).
//
// Reads come from the manager's cache (objects, managed Secrets, Jobs,
// Pods, Leases); identity Secrets, variables sources, the state lock Lease
// and Leases to take are read from the API server.

#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "manager/controllers/identity.h"
#include "manager/controllers/metrics.h"
#include "manager/controllers/options.h"
#include "manager/controllers/runner_rbac.h"
#include "manager/kube/cache.h"
#include "manager/kube/client.h"
#include "manager/kube/clock.h"
#include "manager/kube/controller.h"
#include "manager/kube/events.h"

namespace captf::controllers {

struct ReconcilerDeps {
  kube::Cache& cache;   // the informer cache and its indexes
  kube::Client& cached; // cache reads, API writes
  kube::Client& api;    // straight to the API server
  kube::EventRecorder& events;
  kube::Clock& clock;
  CaptfMetrics& metrics;
  const ControllerSettings& settings;
};

// The main container of every run Job.
inline constexpr char kSourceContainer[] = "source";

class TerraformClusterReconciler final : public kube::Reconciler {
public:
  explicit TerraformClusterReconciler(ReconcilerDeps deps);
  ~TerraformClusterReconciler() override;

  absl::StatusOr<kube::Result> reconcile(const kube::ReconcileContext& ctx,
                                         const kube::Request& request) override;

  struct Pass; // one reconcile's working set (opaque)

private:
  // The pass; reconcile() turns its Conflicts into a quiet requeue.
  absl::StatusOr<kube::Result> reconcilePass(const kube::ReconcileContext& ctx,
                                             const kube::Request& request);
  absl::Status reconcileOwner(Pass& pass);
  absl::Status reconcileCredentials(Pass& pass);
  absl::Status reconcileJobs(Pass& pass);
  absl::Status bookkeep(Pass& pass, size_t index);
  absl::Status adopt(Pass& pass, const std::string& inputs_hash, const std::string& job);
  bool waitForActiveJob(Pass& pass);
  absl::Status reconcileState(Pass& pass);
  absl::Status reconcileInputs(Pass& pass);
  absl::Status reconcileOutputs(Pass& pass);
  absl::Status reconcileBackups(Pass& pass);
  absl::Status reconcileNormal(Pass& pass);
  absl::Status reconcileDelete(Pass& pass);
  absl::Status pausedBranch(Pass& pass);
  absl::Status decideAndRun(Pass& pass);
  absl::Status runJob(Pass& pass);
  absl::Status cleanup(Pass& pass);
  void summarize(Pass& pass);
  void event(const Pass& pass, kube::EventType type, std::string_view reason,
             const std::string& note);

  ReconcilerDeps deps_;
  IdentityResolver identity_;
  RunnerRbac rbac_;
};

} // namespace captf::controllers
