#pragma once

#include <optional>
#include <string>
#include <vector>

#include "manager/api/codec.h"
#include "manager/api/core_types.h"
#include "manager/api/keys.h"
#include "manager/api/workspace.h"

namespace captf::api {

// Settings a TerraformCluster hands down to its machines and pools (never
// used by the cluster itself).
struct TerraformClusterDefaults {
  std::optional<IdentityReference> identity_ref;
  std::optional<JobPolicy> jobs;
  std::optional<MachineDriftPolicy> drift;

  friend bool operator==(const TerraformClusterDefaults&,
                         const TerraformClusterDefaults&) = default;
};

struct TerraformClusterSpec : WorkspaceSpec {
  std::optional<ApiEndpoint> control_plane_endpoint;
  // Required (docs/decisions/api-spec-conflicts.md, docs/decisions/api-spec-conflicts.md item 5).
  IdentityReference identity_ref;
  std::optional<DriftPolicy> drift;
  std::optional<ApplyPolicy> apply_policy;
  std::optional<TerraformClusterDefaults> defaults;

  friend bool operator==(const TerraformClusterSpec&, const TerraformClusterSpec&) = default;
};

struct TerraformClusterStatus : WorkspaceStatus {
  // Cluster API v1beta1 compatibility, latched with initialization.provisioned
  // (docs/decisions/api-spec-conflicts.md, "TerraformCluster status.ready").
  std::optional<bool> ready;
  std::vector<FailureDomain> failure_domains;
  std::optional<PlanPreview> plan;

  friend bool operator==(const TerraformClusterStatus&, const TerraformClusterStatus&) = default;
};

// InfraCluster: one cluster-role module state per object.
struct TerraformCluster {
  std::string api_version{kGroupVersion};
  std::string kind{kKindTerraformCluster};
  ObjectMeta metadata;
  TerraformClusterSpec spec;
  std::optional<TerraformClusterStatus> status;

  friend bool operator==(const TerraformCluster&, const TerraformCluster&) = default;
};

CAPTF_API_DECLARE_CODEC(TerraformClusterDefaults);
CAPTF_API_DECLARE_CODEC(TerraformClusterSpec);
CAPTF_API_DECLARE_CODEC(TerraformClusterStatus);
CAPTF_API_DECLARE_CODEC(TerraformCluster);

} // namespace captf::api
