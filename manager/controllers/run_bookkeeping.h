#pragma once

// The pass's run Jobs (docs/decisions/manager-reconcile-pass.md,
// "Structure"): the object's Jobs listed, Jobs of an earlier object of its
// name deleted, every finished Job bookkept once
// (docs/behaviour/lifecycle.md#bookkeeping: its result, the state's
// adoption, the digest pin, the run history, its per-run Secret and
// Leases released), history pruned; then the active Job waited for (a stuck
// one deleted, an image pull that fails reported, a Job waiting for an
// image the object no longer names replaced).

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "manager/controllers/workload_kind.h"
#include "manager/workspace/result.h"

namespace captf::controllers {

// One per reconciler, for every pass of its kind (several threads): it
// keeps no per-pass state of its own.
class RunBookkeeping {
public:
  RunBookkeeping(const ReconcilerDeps& deps, const WorkloadKind& kind) : deps_(deps), kind_(kind) {}

  // Lists the object's Jobs into pass.jobs, bookkeeps the finished ones
  // (their names into pass.bookkept, marked after the status patch), prunes
  // the history and sets pass.active.
  absl::Status reconcileJobs(WorkloadPass& pass);
  // With an active Job: status.activeJob and the Job's conditions, a stuck
  // Job deleted, the safety-net requeue; true (the pass waits). Without
  // one: status.activeJob cleared; false.
  bool waitForActiveJob(WorkloadPass& pass);

private:
  absl::Status bookkeep(WorkloadPass& pass, size_t index);
  // Adds the finished run to the object's run history ConfigMap.
  absl::Status recordRun(WorkloadPass& pass, const RunJob& run, const api::LastRun& last_run,
                         const std::optional<workspace::RunReport>& parsed,
                         const std::string& result);
  absl::Status adopt(WorkloadPass& pass, const std::string& inputs_hash, const std::string& job);
  void replaceOutdatedPullWait(WorkloadPass& pass, const RunJob& run);
  // The kind's name in metrics labels ("TerraformCluster").
  std::string kind() const;

  ReconcilerDeps deps_; // references and pointers: a copy is cheap
  const WorkloadKind& kind_;
};

// Deletes a Job of an earlier object of this name (precondition: its uid);
// OK when it is gone already or the name is another Job's now.
absl::Status removeLeftoverJob(kube::Client& api, WorkloadPass& pass, const nlohmann::json& job);

} // namespace captf::controllers
