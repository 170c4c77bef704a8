#pragma once

#include <optional>
#include <string>
#include <vector>

#include "manager/api/codec.h"
#include "manager/api/core_types.h"
#include "manager/api/keys.h"
#include "manager/api/workspace.h"

namespace captf::api {

// Every field is mutable.
struct TerraformMachinePoolSpec : WorkspaceSpec {
  std::optional<std::string> provider_id;
  std::vector<std::string> provider_id_list;
  std::optional<IdentityReference> identity_ref;
  std::optional<MachinePoolDriftPolicy> drift;
  std::optional<std::int32_t> membership_refresh_interval_seconds;

  friend bool operator==(const TerraformMachinePoolSpec&,
                         const TerraformMachinePoolSpec&) = default;
};

struct TerraformMachinePoolStatus : WorkspaceStatus {
  std::optional<bool> ready;
  // Serialized even when 0 (Cluster API requires the field).
  std::optional<std::int32_t> replicas;
  std::vector<MachinePoolInstance> instances;

  friend bool operator==(const TerraformMachinePoolStatus&,
                         const TerraformMachinePoolStatus&) = default;
};

// InfraMachinePool: a native scaling group run by a machinepool-role module.
struct TerraformMachinePool {
  std::string api_version{kGroupVersion};
  std::string kind{kKindTerraformMachinePool};
  ObjectMeta metadata;
  TerraformMachinePoolSpec spec;
  std::optional<TerraformMachinePoolStatus> status;

  friend bool operator==(const TerraformMachinePool&, const TerraformMachinePool&) = default;
};

CAPTF_API_DECLARE_CODEC(TerraformMachinePoolSpec);
CAPTF_API_DECLARE_CODEC(TerraformMachinePoolStatus);
CAPTF_API_DECLARE_CODEC(TerraformMachinePool);

} // namespace captf::api
