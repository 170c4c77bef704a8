#pragma once

// TerraformMachine on the shared pass (workload_kind.h): owned by the
// Cluster API Machine whose spec.infrastructureRef names it, in the Cluster
// its cluster.x-k8s.io/cluster-name label names; inherits the
// TerraformCluster's spec.defaults; waits for the cluster's infrastructure
// and exports and for the Machine's bootstrap data before it renders; its
// inputs are immutable (built until provisioned, then every operation runs
// from the durable inputs and the pinned digest); latches spec.providerID
// and reports addresses, failure domain and interruptible from its outputs;
// waits for the cluster's operations.

#include <memory>

#include "manager/controllers/workload_kind.h"

namespace captf::controllers {

std::unique_ptr<WorkloadKind> terraformMachineKind(ReconcilerDeps deps);

} // namespace captf::controllers
