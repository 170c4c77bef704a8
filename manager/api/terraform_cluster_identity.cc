#include "manager/api/terraform_cluster_identity.h"

#include "manager/api/describe.h"
#include "manager/api/patterns.h"
#include "manager/api/workspace_describe.h"

namespace captf::api {

using workspace_internal::objectFields;

template <> struct Describe<TerraformClusterIdentitySpec> {
  static constexpr std::string_view kDoc = "The desired state of a TerraformClusterIdentity.";
  static auto fields() {
    return std::tuple{
        field("secretRef", &TerraformClusterIdentitySpec::secret_ref)
            .required()
            .doc("The credentials Secret. It is mirrored into each allowed namespace that uses "
                 "the identity and given to Jobs as environment variables and files. Whoever "
                 "sets or changes it must be allowed to get that Secret."),
        field("allowedNamespaces", &TerraformClusterIdentitySpec::allowed_namespaces)
            .doc("Namespaces whose objects may use the identity. Unset allows none; "
                 "selector: {} allows all."),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformClusterIdentityStatus> {
  static constexpr std::string_view kDoc = "The observed state of a TerraformClusterIdentity.";
  static auto fields() {
    return std::tuple{
        field("conditions", &TerraformClusterIdentityStatus::conditions)
            .doc("Ready is True (SecretFound) when the credentials Secret exists.")
            .maxItems(32)
            .listMapKey("type"),
        field("namespaces", &TerraformClusterIdentityStatus::namespaces)
            .doc("Namespaces currently holding a mirror of the credentials.")
            .maxItems(1000)
            .itemLength(1, 63)
            .listType("set"),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<TerraformClusterIdentity> {
  static constexpr std::string_view kDoc =
      "TerraformClusterIdentity names a credentials Secret and the namespaces whose "
      "TerraformClusters, TerraformMachines and TerraformMachinePools may use it.";
  static auto fields() {
    return std::tuple_cat(objectFields<TerraformClusterIdentity>(),
                          std::tuple{
                              field("spec", &TerraformClusterIdentity::spec).required(),
                              field("status", &TerraformClusterIdentity::status),
                          });
  }
};

CAPTF_API_DEFINE_CODEC(TerraformClusterIdentitySpec)
CAPTF_API_DEFINE_CODEC(TerraformClusterIdentityStatus)
CAPTF_API_DEFINE_CODEC(TerraformClusterIdentity)

} // namespace captf::api
