#include "manager/api/terraform_machine_pool.h"

#include "manager/api/describe.h"
#include "manager/api/workspace_describe.h"

namespace captf::api {

using workspace_internal::objectFields;
using workspace_internal::workspaceSpecFields;
using workspace_internal::workspaceStatusFields;

template <> struct Describe<TerraformMachinePoolSpec> {
  static constexpr std::string_view kDoc = "The desired state of a TerraformMachinePool.";
  static auto fields() {
    return std::tuple_cat(
        std::tuple{
            field("providerID", &TerraformMachinePoolSpec::provider_id)
                .doc("ID of the scaling group, set by the controller from the module output "
                     "provider_id; may change.")
                .length(1, 512),
            field("providerIDList", &TerraformMachinePoolSpec::provider_id_list)
                .doc("Provider IDs of every non-terminated member, set by the controller from "
                     "the module output provider_id_list.")
                .maxItems(10000)
                .itemLength(1, 512),
            field("identityRef", &TerraformMachinePoolSpec::identity_ref)
                .doc("The TerraformClusterIdentity to use; unset falls back to the cluster's "
                     "spec.defaults.identityRef, then its spec.identityRef."),
        },
        workspaceSpecFields(" Mutable; a change re-applies the module."),
        std::tuple{
            field("drift", &TerraformMachinePoolSpec::drift)
                .doc("Drift checking (default: the manager's interval, action Report)."),
            field("membershipRefreshIntervalSeconds",
                  &TerraformMachinePoolSpec::membership_refresh_interval_seconds)
                .doc("Seconds between membership refreshes (default 60).")
                .range(15, 86400),
        });
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformMachinePoolStatus> {
  static constexpr std::string_view kDoc = "The observed state of a TerraformMachinePool.";
  static auto fields() {
    return std::tuple_cat(
        workspaceStatusFields(),
        std::tuple{
            field("ready", &TerraformMachinePoolStatus::ready)
                .doc("Cluster API v1beta1 compatibility: true once provisioned (latched with "
                     "initialization.provisioned)."),
            field("replicas", &TerraformMachinePoolStatus::replicas)
                .doc("Desired capacity of the group observed at the last refresh (module output "
                     "replicas).")
                .minimum(0),
            field("instances", &TerraformMachinePoolStatus::instances)
                .doc("Instances of the group from the module output instances, at most 1000.")
                .items(1, 1000),
        });
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformMachinePool> {
  static constexpr std::string_view kDoc =
      "TerraformMachinePool is Cluster API's InfraMachinePool implemented by an "
      "OpenTofu/Terraform machinepool-role module managing a native scaling group.";
  static auto fields() {
    return std::tuple_cat(objectFields<TerraformMachinePool>(),
                          std::tuple{
                              field("spec", &TerraformMachinePool::spec).required(),
                              field("status", &TerraformMachinePool::status),
                          });
  }
};

CAPTF_API_DEFINE_CODEC(TerraformMachinePoolSpec)
CAPTF_API_DEFINE_CODEC(TerraformMachinePoolStatus)
CAPTF_API_DEFINE_CODEC(TerraformMachinePool)

} // namespace captf::api
