#pragma once

#include <optional>
#include <string>
#include <vector>

#include "manager/api/codec.h"
#include "manager/api/core_types.h"
#include "manager/api/keys.h"
#include "manager/api/workspace.h"

namespace captf::api {

struct TerraformClusterIdentitySpec {
  SecretReference secret_ref;
  std::optional<AllowedNamespaces> allowed_namespaces;

  friend bool operator==(const TerraformClusterIdentitySpec&,
                         const TerraformClusterIdentitySpec&) = default;
};

struct TerraformClusterIdentityStatus {
  std::vector<Condition> conditions;
  std::vector<std::string> namespaces;

  friend bool operator==(const TerraformClusterIdentityStatus&,
                         const TerraformClusterIdentityStatus&) = default;
};

// Cluster-scoped credentials for the Jobs of objects in allowed namespaces.
struct TerraformClusterIdentity {
  std::string api_version{kGroupVersion};
  std::string kind{kKindTerraformClusterIdentity};
  ObjectMeta metadata;
  TerraformClusterIdentitySpec spec;
  std::optional<TerraformClusterIdentityStatus> status;

  friend bool operator==(const TerraformClusterIdentity&,
                         const TerraformClusterIdentity&) = default;
};

CAPTF_API_DECLARE_CODEC(TerraformClusterIdentitySpec);
CAPTF_API_DECLARE_CODEC(TerraformClusterIdentityStatus);
CAPTF_API_DECLARE_CODEC(TerraformClusterIdentity);

} // namespace captf::api
