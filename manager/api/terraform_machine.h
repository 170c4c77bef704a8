#pragma once

#include <optional>
#include <string>
#include <vector>

#include "manager/api/codec.h"
#include "manager/api/core_types.h"
#include "manager/api/keys.h"
#include "manager/api/workspace.h"

namespace captf::api {

// source, identityRef, variables and variablesFrom are immutable after
// creation; providerID may only go from empty to set (webhook-enforced).
struct TerraformMachineSpec : WorkspaceSpec {
  std::optional<std::string> provider_id;
  std::optional<IdentityReference> identity_ref;
  std::optional<MachineDriftPolicy> drift;
  std::optional<MachineRemediation> remediation;

  friend bool operator==(const TerraformMachineSpec&, const TerraformMachineSpec&) = default;
};

struct TerraformMachineStatus : WorkspaceStatus {
  // Cluster API v1beta1 compatibility, latched with initialization.provisioned.
  std::optional<bool> ready;
  std::vector<MachineAddress> addresses;
  std::optional<std::string> failure_domain;
  std::optional<bool> interruptible;
  std::optional<std::int32_t> unhealthy_samples;

  friend bool operator==(const TerraformMachineStatus&, const TerraformMachineStatus&) = default;
};

// InfraMachine: one machine-role module instance per object.
struct TerraformMachine {
  std::string api_version{kGroupVersion};
  std::string kind{kKindTerraformMachine};
  ObjectMeta metadata;
  TerraformMachineSpec spec;
  std::optional<TerraformMachineStatus> status;

  friend bool operator==(const TerraformMachine&, const TerraformMachine&) = default;
};

CAPTF_API_DECLARE_CODEC(TerraformMachineSpec);
CAPTF_API_DECLARE_CODEC(TerraformMachineStatus);
CAPTF_API_DECLARE_CODEC(TerraformMachine);

} // namespace captf::api
