#pragma once

// TerraformCluster on the shared pass (workload_kind.h): owned by the Cluster
// API Cluster whose spec.infrastructureRef names it; the cluster role's
// inputs and the control-plane endpoint rules; failure domains and the
// endpoint write-back from its outputs; deletion waits for its machines and
// pools; the cluster side of the cluster operation gate; plan approval.

#include <memory>

#include "manager/controllers/workload_kind.h"

namespace captf::controllers {

std::unique_ptr<WorkloadKind> terraformClusterKind(ReconcilerDeps deps);

} // namespace captf::controllers
