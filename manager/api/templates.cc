#include "manager/api/templates.h"

#include "manager/api/describe.h"
#include "manager/api/workspace_describe.h"

namespace captf::api {

using workspace_internal::objectFields;

namespace {

constexpr std::string_view kTemplateMetadataDoc =
    "Labels and annotations copied onto each object created from the template. Mutable.";
constexpr std::string_view kTemplateSpecDoc =
    "Spec of each object created from the template. Immutable once created (except for Cluster "
    "API topology dry-run requests): create a new template to change it.";

} // namespace

template <> struct Describe<TerraformClusterTemplateResource> {
  static constexpr std::string_view kDoc = "The TerraformCluster a ClusterClass creates.";
  static auto fields() {
    return std::tuple{
        field("metadata", &TerraformClusterTemplateResource::metadata).doc(kTemplateMetadataDoc),
        field("spec", &TerraformClusterTemplateResource::spec).required().doc(kTemplateSpecDoc),
    };
  }
  // A ClusterClass commonly sets the identity with a patch from a topology
  // variable: the template may leave spec.identityRef out; the TerraformCluster
  // the topology creates from it must have one (its schema requires it).
  static void patch(Schema& s) {
    s.min_properties = 1;
    for (Property& p : s.properties) {
      if (p.name == "spec") {
        std::erase(p.schema.required, "identityRef");
      }
    }
  }
};

template <> struct Describe<TerraformClusterTemplateSpec> {
  static constexpr std::string_view kDoc = "The desired state of a TerraformClusterTemplate.";
  static auto fields() {
    return std::tuple{
        field("template", &TerraformClusterTemplateSpec::template_).required(),
    };
  }
};

template <> struct Describe<TerraformClusterTemplate> {
  static constexpr std::string_view kDoc =
      "TerraformClusterTemplate is the InfraClusterTemplate a ClusterClass references.";
  static auto fields() {
    return std::tuple_cat(objectFields<TerraformClusterTemplate>(),
                          std::tuple{
                              field("spec", &TerraformClusterTemplate::spec).required(),
                          });
  }
};

template <> struct Describe<TerraformMachineTemplateResource> {
  static constexpr std::string_view kDoc = "The TerraformMachine created for each Machine.";
  static auto fields() {
    return std::tuple{
        field("metadata", &TerraformMachineTemplateResource::metadata).doc(kTemplateMetadataDoc),
        field("spec", &TerraformMachineTemplateResource::spec).required().doc(kTemplateSpecDoc),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformMachineTemplateSpec> {
  static constexpr std::string_view kDoc = "The desired state of a TerraformMachineTemplate.";
  static auto fields() {
    return std::tuple{
        field("template", &TerraformMachineTemplateSpec::template_).required(),
    };
  }
};

template <> struct Describe<TerraformMachineTemplateStatus> {
  static constexpr std::string_view kDoc =
      "Capacity and node properties resolved from the image labels io.captf.capacity and "
      "io.captf.node-info, for scale-from-zero autoscaling.";
  static auto fields() {
    return std::tuple{
        field("conditions", &TerraformMachineTemplateStatus::conditions)
            .doc("CapacityResolved tells whether capacity and nodeInfo could be resolved.")
            .maxItems(32)
            .listMapKey("type"),
        field("nodeInfo", &TerraformMachineTemplateStatus::node_info)
            .doc("Architecture and operating system of the nodes the template creates."),
        field("capacitySource", &TerraformMachineTemplateStatus::capacity_source)
            .doc("The image capacity and nodeInfo were resolved from."),
        field("capacity", &TerraformMachineTemplateStatus::capacity)
            .doc("Resources of one node (cpu, memory, ...) the template creates."),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformMachineTemplate> {
  static constexpr std::string_view kDoc =
      "TerraformMachineTemplate is the InfraMachineTemplate that MachineDeployments, "
      "MachineSets, control planes and ClusterClasses clone TerraformMachines from.";
  static auto fields() {
    return std::tuple_cat(objectFields<TerraformMachineTemplate>(),
                          std::tuple{
                              field("spec", &TerraformMachineTemplate::spec).required(),
                              field("status", &TerraformMachineTemplate::status),
                          });
  }
};

template <> struct Describe<TerraformMachinePoolTemplateResource> {
  static constexpr std::string_view kDoc = "The TerraformMachinePool a ClusterClass creates.";
  static auto fields() {
    return std::tuple{
        field("metadata", &TerraformMachinePoolTemplateResource::metadata)
            .doc(kTemplateMetadataDoc),
        field("spec", &TerraformMachinePoolTemplateResource::spec).required().doc(kTemplateSpecDoc),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformMachinePoolTemplateSpec> {
  static constexpr std::string_view kDoc = "The desired state of a TerraformMachinePoolTemplate.";
  static auto fields() {
    return std::tuple{
        field("template", &TerraformMachinePoolTemplateSpec::template_).required(),
    };
  }
};

template <> struct Describe<TerraformMachinePoolTemplate> {
  static constexpr std::string_view kDoc =
      "TerraformMachinePoolTemplate is the InfraMachinePoolTemplate a ClusterClass references "
      "for topology-managed MachinePools.";
  static auto fields() {
    return std::tuple_cat(objectFields<TerraformMachinePoolTemplate>(),
                          std::tuple{
                              field("spec", &TerraformMachinePoolTemplate::spec).required(),
                          });
  }
};

CAPTF_API_DEFINE_CODEC(TerraformClusterTemplateResource)
CAPTF_API_DEFINE_CODEC(TerraformClusterTemplateSpec)
CAPTF_API_DEFINE_CODEC(TerraformClusterTemplate)
CAPTF_API_DEFINE_CODEC(TerraformMachineTemplateResource)
CAPTF_API_DEFINE_CODEC(TerraformMachineTemplateSpec)
CAPTF_API_DEFINE_CODEC(TerraformMachineTemplateStatus)
CAPTF_API_DEFINE_CODEC(TerraformMachineTemplate)
CAPTF_API_DEFINE_CODEC(TerraformMachinePoolTemplateResource)
CAPTF_API_DEFINE_CODEC(TerraformMachinePoolTemplateSpec)
CAPTF_API_DEFINE_CODEC(TerraformMachinePoolTemplate)

} // namespace captf::api
