#include "manager/api/terraform_cluster.h"

#include "manager/api/describe.h"
#include "manager/api/workspace_describe.h"

namespace captf::api {

using workspace_internal::objectFields;
using workspace_internal::workspaceSpecFields;
using workspace_internal::workspaceStatusFields;

template <> struct Describe<TerraformClusterDefaults> {
  static constexpr std::string_view kDoc =
      "Settings inherited by the cluster's TerraformMachines and TerraformMachinePools, never by "
      "the TerraformCluster itself.";
  static auto fields() {
    return std::tuple{
        field("identityRef", &TerraformClusterDefaults::identity_ref)
            .doc("Identity of machines and pools that name none (before the cluster's own "
                 "identityRef)."),
        field("jobs", &TerraformClusterDefaults::jobs)
            .doc("Job policy merged field by field under each machine's and pool's own "
                 "spec.jobs."),
        field("drift", &TerraformClusterDefaults::drift)
            .doc("Drift interval of machines and pools that set none."),
    };
  }
};

template <> struct Describe<TerraformClusterSpec> {
  static constexpr std::string_view kDoc = "The desired state of a TerraformCluster.";
  static auto fields() {
    return std::tuple_cat(
        std::tuple{
            field("controlPlaneEndpoint", &TerraformClusterSpec::control_plane_endpoint)
                .doc("Endpoint of the control plane. A value set by the user is passed to the "
                     "module; otherwise the controller writes the module's output here once. "
                     "Immutable once it has a host."),
            // Required on a TerraformCluster (patch below), not on the
            // TerraformClusterTemplate a ClusterClass patches it into.
            field("identityRef", &TerraformClusterSpec::identity_ref)
                .doc("The TerraformClusterIdentity whose credentials the cluster's Jobs get; "
                     "machines and pools fall back to it. A change takes effect at the next "
                     "reconcile."),
        },
        workspaceSpecFields(" Mutable; a change re-applies the module."),
        std::tuple{
            field("drift", &TerraformClusterSpec::drift)
                .doc("Drift checking (default every 30m, action Report)."),
            field("applyPolicy", &TerraformClusterSpec::apply_policy)
                .doc("Automatic (the default) applies changes; Manual first runs a plan Job and "
                     "waits for the annotation captf.io/approve-plan to name its planHash. Not "
                     "hashed: switching re-applies nothing by itself."),
            field("defaults", &TerraformClusterSpec::defaults)
                .doc("Settings inherited by the cluster's machines and pools."),
        });
  }
  static void patch(Schema& s) {
    s.min_properties = 1;
    s.required.emplace_back("identityRef");
  }
};

template <> struct Describe<TerraformClusterStatus> {
  static constexpr std::string_view kDoc = "The observed state of a TerraformCluster.";
  static auto fields() {
    return std::tuple_cat(
        workspaceStatusFields(),
        std::tuple{
            field("ready", &TerraformClusterStatus::ready)
                .doc("Cluster API v1beta1 compatibility: true once provisioned (latched with "
                     "initialization.provisioned)."),
            field("failureDomains", &TerraformClusterStatus::failure_domains)
                .doc("Failure domains from the module output failure_domains.")
                .items(1, 100)
                .listMapKey("name"),
            field("plan", &TerraformClusterStatus::plan)
                .doc("The plan awaiting approval under applyPolicy Manual; unset when none."),
        });
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformCluster> {
  static constexpr std::string_view kDoc =
      "TerraformCluster is Cluster API's InfraCluster implemented by an OpenTofu/Terraform "
      "cluster-role module packaged in an OCI image and run as Kubernetes Jobs.";
  static auto fields() {
    return std::tuple_cat(objectFields<TerraformCluster>(),
                          std::tuple{
                              field("spec", &TerraformCluster::spec).required(),
                              field("status", &TerraformCluster::status),
                          });
  }
};

CAPTF_API_DEFINE_CODEC(TerraformClusterDefaults)
CAPTF_API_DEFINE_CODEC(TerraformClusterSpec)
CAPTF_API_DEFINE_CODEC(TerraformClusterStatus)
CAPTF_API_DEFINE_CODEC(TerraformCluster)

} // namespace captf::api
