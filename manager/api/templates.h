#pragma once

// The three template kinds (docs/reference/api.md#terraformclustertemplate): spec.template.spec is
// immutable once created; spec.template.metadata is mutable.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "manager/api/codec.h"
#include "manager/api/core_types.h"
#include "manager/api/keys.h"
#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_machine.h"
#include "manager/api/terraform_machine_pool.h"

namespace captf::api {

struct TerraformClusterTemplateResource {
  std::optional<TemplateObjectMeta> metadata;
  TerraformClusterSpec spec;

  friend bool operator==(const TerraformClusterTemplateResource&,
                         const TerraformClusterTemplateResource&) = default;
};

struct TerraformClusterTemplateSpec {
  TerraformClusterTemplateResource template_;

  friend bool operator==(const TerraformClusterTemplateSpec&,
                         const TerraformClusterTemplateSpec&) = default;
};

struct TerraformClusterTemplate {
  std::string api_version{kGroupVersion};
  std::string kind{kKindTerraformClusterTemplate};
  ObjectMeta metadata;
  TerraformClusterTemplateSpec spec;

  friend bool operator==(const TerraformClusterTemplate&,
                         const TerraformClusterTemplate&) = default;
};

struct TerraformMachineTemplateResource {
  std::optional<TemplateObjectMeta> metadata;
  TerraformMachineSpec spec;

  friend bool operator==(const TerraformMachineTemplateResource&,
                         const TerraformMachineTemplateResource&) = default;
};

struct TerraformMachineTemplateSpec {
  TerraformMachineTemplateResource template_;

  friend bool operator==(const TerraformMachineTemplateSpec&,
                         const TerraformMachineTemplateSpec&) = default;
};

// Resolved by the template controller from the image labels, for Cluster
// API's scale-from-zero autoscaling.
struct TerraformMachineTemplateStatus {
  std::vector<Condition> conditions;
  std::optional<NodeInfo> node_info;
  std::optional<CapacitySource> capacity_source;
  // corev1.ResourceList (docs/decisions/api-spec-conflicts.md, item 4).
  std::map<std::string, Quantity> capacity;

  friend bool operator==(const TerraformMachineTemplateStatus&,
                         const TerraformMachineTemplateStatus&) = default;
};

struct TerraformMachineTemplate {
  std::string api_version{kGroupVersion};
  std::string kind{kKindTerraformMachineTemplate};
  ObjectMeta metadata;
  TerraformMachineTemplateSpec spec;
  std::optional<TerraformMachineTemplateStatus> status;

  friend bool operator==(const TerraformMachineTemplate&,
                         const TerraformMachineTemplate&) = default;
};

struct TerraformMachinePoolTemplateResource {
  std::optional<TemplateObjectMeta> metadata;
  TerraformMachinePoolSpec spec;

  friend bool operator==(const TerraformMachinePoolTemplateResource&,
                         const TerraformMachinePoolTemplateResource&) = default;
};

struct TerraformMachinePoolTemplateSpec {
  TerraformMachinePoolTemplateResource template_;

  friend bool operator==(const TerraformMachinePoolTemplateSpec&,
                         const TerraformMachinePoolTemplateSpec&) = default;
};

struct TerraformMachinePoolTemplate {
  std::string api_version{kGroupVersion};
  std::string kind{kKindTerraformMachinePoolTemplate};
  ObjectMeta metadata;
  TerraformMachinePoolTemplateSpec spec;

  friend bool operator==(const TerraformMachinePoolTemplate&,
                         const TerraformMachinePoolTemplate&) = default;
};

CAPTF_API_DECLARE_CODEC(TerraformClusterTemplateResource);
CAPTF_API_DECLARE_CODEC(TerraformClusterTemplateSpec);
CAPTF_API_DECLARE_CODEC(TerraformClusterTemplate);
CAPTF_API_DECLARE_CODEC(TerraformMachineTemplateResource);
CAPTF_API_DECLARE_CODEC(TerraformMachineTemplateSpec);
CAPTF_API_DECLARE_CODEC(TerraformMachineTemplateStatus);
CAPTF_API_DECLARE_CODEC(TerraformMachineTemplate);
CAPTF_API_DECLARE_CODEC(TerraformMachinePoolTemplateResource);
CAPTF_API_DECLARE_CODEC(TerraformMachinePoolTemplateSpec);
CAPTF_API_DECLARE_CODEC(TerraformMachinePoolTemplate);

} // namespace captf::api
