#pragma once

// What the pass decides on (docs/decisions/manager-reconcile-pass.md,
// "Structure"): the state read, classified and its lock checked
// (docs/behaviour/state.md), backups of new serials, the Git source's
// commit, and the current inputs built and rendered
// (docs/behaviour/inputs.md). Also the setting aside of an unreadable state
// before a restore Job (JobStarter calls it with the Leases held).

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "manager/controllers/workload_kind.h"

namespace captf::controllers {

// One per reconciler, for every pass of its kind (several threads): it
// keeps no per-pass state of its own.
class PassInputs {
public:
  PassInputs(const ReconcilerDeps& deps, const WorkloadKind& kind) : deps_(deps), kind_(kind) {}

  // pass.state, pass.verdict and pass.lock; StateReadable.
  absl::Status reconcileState(WorkloadPass& pass);
  // Backups of new serials, pruning, status.stateBackups.
  absl::Status reconcileBackups(WorkloadPass& pass);
  // pass.durable, pass.git(_spec), pass.source_identity and pass.rendered,
  // or pass.inputs_blocked / pass.inputs_too_large with the condition that
  // says why.
  absl::Status reconcileInputs(WorkloadPass& pass);

private:
  void resolveSource(WorkloadPass& pass);
  // The kind's name in metrics labels ("TerraformCluster").
  std::string kind() const;

  ReconcilerDeps deps_; // references and pointers: a copy is cheap
  const WorkloadKind& kind_;
};

// Before a restore Job: an unreadable state's chunks copied aside, then
// deleted (docs/behaviour/state.md#restore-over-an-unreadable-state). OK
// when the restore may go on (also when there was nothing to set aside);
// an error when a copy or a deletion failed, and then the state is as it
// was or wholly kept aside.
absl::Status setAsideUnreadableState(const ReconcilerDeps& deps, const WorkloadKind& kind,
                                     WorkloadPass& pass, std::int64_t serial);

} // namespace captf::controllers
