#include "manager/api/terraform_machine.h"

#include "manager/api/describe.h"
#include "manager/api/workspace_describe.h"

namespace captf::api {

using workspace_internal::objectFields;
using workspace_internal::workspaceSpecFields;
using workspace_internal::workspaceStatusFields;

template <> struct Describe<TerraformMachineSpec> {
  static constexpr std::string_view kDoc = "The desired state of a TerraformMachine.";
  static auto fields() {
    return std::tuple_cat(
        std::tuple{
            field("providerID", &TerraformMachineSpec::provider_id)
                .doc("Provider ID of the instance, set by the controller from the module output "
                     "provider_id; equals the Node's spec.providerID. Can only go from unset to "
                     "set.")
                .length(1, 512),
            field("identityRef", &TerraformMachineSpec::identity_ref)
                .doc("The TerraformClusterIdentity to use; unset falls back to the cluster's "
                     "spec.defaults.identityRef, then its spec.identityRef. Immutable after "
                     "creation, including from unset to set."),
        },
        workspaceSpecFields(" Immutable after creation."),
        std::tuple{
            field("drift", &TerraformMachineSpec::drift)
                .doc("Drift checking; machine drift is always reported. Mutable."),
            field("remediation", &TerraformMachineSpec::remediation)
                .doc("Whether an unhealthy instance asks Cluster API to remediate its Machine. "
                     "Mutable."),
        });
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformMachineStatus> {
  static constexpr std::string_view kDoc = "The observed state of a TerraformMachine.";
  static auto fields() {
    return std::tuple_cat(
        workspaceStatusFields(),
        std::tuple{
            field("ready", &TerraformMachineStatus::ready)
                .doc("Cluster API v1beta1 compatibility: true once provisioned (latched with "
                     "initialization.provisioned)."),
            field("addresses", &TerraformMachineStatus::addresses)
                .doc("Addresses of the instance, InternalIP, InternalDNS, ExternalIP, "
                     "ExternalDNS, Hostname, then by address.")
                .items(1, 256),
            field("failureDomain", &TerraformMachineStatus::failure_domain)
                .doc("Failure domain the instance runs in.")
                .length(1, 256),
            field("interruptible", &TerraformMachineStatus::interruptible)
                .doc("True for spot/preemptible instances; Cluster API then labels the Node "
                     "cluster.x-k8s.io/interruptible."),
            field("unhealthySamples", &TerraformMachineStatus::unhealthy_samples)
                .doc("Consecutive unhealthy health samples; unset when healthy.")
                .minimum(1),
        });
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformMachine> {
  static constexpr std::string_view kDoc =
      "TerraformMachine is Cluster API's InfraMachine implemented by an OpenTofu/Terraform "
      "machine-role module. A machine is immutable: a change means a new machine.";
  static auto fields() {
    return std::tuple_cat(objectFields<TerraformMachine>(),
                          std::tuple{
                              field("spec", &TerraformMachine::spec).required(),
                              field("status", &TerraformMachine::status),
                          });
  }
};

CAPTF_API_DEFINE_CODEC(TerraformMachineSpec)
CAPTF_API_DEFINE_CODEC(TerraformMachineStatus)
CAPTF_API_DEFINE_CODEC(TerraformMachine)

} // namespace captf::api
