#pragma once

// TerraformMachinePool on the shared pass (workload_kind.h, member_kind.h):
// owned by the Cluster API MachinePool whose
// spec.template.spec.infrastructureRef names it; a module runs a native
// scaling group and reports its members. Inputs are rebuilt every pass (the
// MachinePool's replicas, failure domains, labels, version and bootstrap
// data re-apply it through the inputs hash); spec.providerIDList and
// status.replicas/instances follow the outputs; with the Cluster API
// autoscaler's min/max annotations the module owns the replica count, which
// is written back to MachinePool.spec.replicas. docs/decisions/manager-machine-pool.md.

#include <memory>

#include "manager/controllers/workload_kind.h"

namespace captf::controllers {

std::unique_ptr<WorkloadKind> terraformMachinePoolKind(ReconcilerDeps deps);

} // namespace captf::controllers
