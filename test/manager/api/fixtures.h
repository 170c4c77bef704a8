#pragma once

// Objects of each kind with every field set (so a round trip and the
// schema agreement test cover the whole API), and minimal valid objects for
// validator tests. Each call returns a fresh object.

#include "manager/api/templates.h"
#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_cluster_identity.h"
#include "manager/api/terraform_machine.h"
#include "manager/api/terraform_machine_pool.h"

namespace captf::api::testing {

TerraformCluster fullTerraformCluster();
TerraformMachine fullTerraformMachine();
TerraformMachinePool fullTerraformMachinePool();
TerraformClusterTemplate fullTerraformClusterTemplate();
TerraformMachineTemplate fullTerraformMachineTemplate();
TerraformMachinePoolTemplate fullTerraformMachinePoolTemplate();
TerraformClusterIdentity fullTerraformClusterIdentity();

TerraformCluster minimalTerraformCluster();
TerraformMachine minimalTerraformMachine();
TerraformMachinePool minimalTerraformMachinePool();
TerraformClusterTemplate minimalTerraformClusterTemplate();
TerraformMachineTemplate minimalTerraformMachineTemplate();
TerraformMachinePoolTemplate minimalTerraformMachinePoolTemplate();
TerraformClusterIdentity minimalTerraformClusterIdentity();

} // namespace captf::api::testing
