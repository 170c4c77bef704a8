#include "webhooks/validators.h"

#include <fmt/format.h>

#include "contract/roles.h"
#include "manager/api/keys.h"
#include "webhooks/rules.h"

namespace captf::webhooks {
namespace {

using api::FieldPath;

const FieldPath kSpec("spec");
const FieldPath kTemplateSpec = FieldPath("spec").child("template").child("spec");

// Whether spec.identityRef must be set: on a TerraformCluster; a
// TerraformClusterTemplate may leave it to the ClusterClass's patches.
enum class Identity { kRequired, kOptional };

void clusterSpecRules(const api::TerraformClusterSpec& spec, const FieldPath& path,
                      FieldErrorList& errors, Identity identity = Identity::kRequired) {
  if (identity == Identity::kRequired && spec.identity_ref.name.empty()) {
    errors.push_back(required(path.child("identityRef"),
                              "a TerraformCluster must name its TerraformClusterIdentity; "
                              "machines and pools fall back to it"));
  }
  validateWorkspaceSpec(spec, contract::Role::kCluster, path, errors);
  if (spec.defaults && spec.defaults->jobs) {
    validateJobPolicy(*spec.defaults->jobs, path.child("defaults").child("jobs"), errors);
  }
}

void machineSpecRules(const api::TerraformMachineSpec& spec, const FieldPath& path,
                      FieldErrorList& errors) {
  validateWorkspaceSpec(spec, contract::Role::kMachine, path, errors);
}

void poolSpecRules(const api::TerraformMachinePoolSpec& spec, const FieldPath& path,
                   FieldErrorList& errors) {
  validateWorkspaceSpec(spec, contract::Role::kMachinePool, path, errors);
}

std::string endpointString(const api::ApiEndpoint& e) {
  return fmt::format("{}:{}", e.host, e.port);
}

template <class Spec>
void templateImmutable(const Spec& old_spec, const Spec& spec, std::string_view kind,
                       std::string_view referrers, TopologyDryRun dry_run, FieldErrorList& errors) {
  if (dry_run == TopologyDryRun::kYes || old_spec == spec) {
    return;
  }
  errors.push_back(invalidObject(
      kTemplateSpec,
      fmt::format("is immutable: create a new {} and point {} at it instead", kind, referrers)));
}

} // namespace

TopologyDryRun topologyDryRun(bool request_dry_run, const api::ObjectMeta& meta) {
  return request_dry_run && meta.annotations.contains(std::string(api::kAnnotationTopologyDryRun))
             ? TopologyDryRun::kYes
             : TopologyDryRun::kNo;
}

// ---- TerraformCluster -------------------------------------------------------

FieldErrorList validateTerraformClusterCreate(const api::TerraformCluster& obj) {
  FieldErrorList errors;
  clusterSpecRules(obj.spec, kSpec, errors);
  return errors;
}

FieldErrorList validateTerraformClusterUpdate(const api::TerraformCluster& old_obj,
                                              const api::TerraformCluster& obj) {
  FieldErrorList errors =
      ratchet(validateTerraformClusterCreate(obj), validateTerraformClusterCreate(old_obj));
  const auto& old_ep = old_obj.spec.control_plane_endpoint;
  if (old_ep && !old_ep->host.empty() && obj.spec.control_plane_endpoint != old_ep) {
    errors.push_back(invalidObject(
        kSpec.child("controlPlaneEndpoint"),
        fmt::format("is immutable once it has a host (it is {}); the endpoint of a running "
                    "cluster cannot move",
                    quote(endpointString(*old_ep)))));
  }
  return errors;
}

// ---- TerraformMachine -------------------------------------------------------

FieldErrorList validateTerraformMachineCreate(const api::TerraformMachine& obj) {
  FieldErrorList errors;
  machineSpecRules(obj.spec, kSpec, errors);
  return errors;
}

FieldErrorList validateTerraformMachineUpdate(const api::TerraformMachine& old_obj,
                                              const api::TerraformMachine& obj) {
  FieldErrorList errors =
      ratchet(validateTerraformMachineCreate(obj), validateTerraformMachineCreate(old_obj));
  constexpr std::string_view kWhy =
      "is immutable: a TerraformMachine is never changed in place; change the "
      "TerraformMachineTemplate and let Cluster API roll out new Machines";
  const api::TerraformMachineSpec& o = old_obj.spec;
  const api::TerraformMachineSpec& n = obj.spec;
  if (o.source != n.source) {
    errors.push_back(invalidObject(kSpec.child("source"), kWhy));
  }
  if (o.identity_ref != n.identity_ref) {
    errors.push_back(
        invalidObject(kSpec.child("identityRef"),
                      fmt::format("{} (this includes setting it when it was unset)", kWhy)));
  }
  if (o.variables != n.variables) {
    errors.push_back(invalidObject(kSpec.child("variables"), kWhy));
  }
  if (o.variables_from != n.variables_from) {
    errors.push_back(invalidObject(kSpec.child("variablesFrom"), kWhy));
  }
  if (o.provider_id && !o.provider_id->empty() && n.provider_id != o.provider_id) {
    errors.push_back(invalid(
        kSpec.child("providerID"), n.provider_id.value_or(""),
        fmt::format("can only change from unset to set; it is already {}", quote(*o.provider_id))));
  }
  return errors;
}

// ---- TerraformMachinePool ---------------------------------------------------

FieldErrorList validateTerraformMachinePoolCreate(const api::TerraformMachinePool& obj) {
  FieldErrorList errors;
  poolSpecRules(obj.spec, kSpec, errors);
  return errors;
}

FieldErrorList validateTerraformMachinePoolUpdate(const api::TerraformMachinePool& old_obj,
                                                  const api::TerraformMachinePool& obj) {
  // Every field of a pool is mutable.
  return ratchet(validateTerraformMachinePoolCreate(obj),
                 validateTerraformMachinePoolCreate(old_obj));
}

// ---- templates ----------------------------------------------------------------

FieldErrorList validateTerraformClusterTemplateCreate(const api::TerraformClusterTemplate& obj) {
  FieldErrorList errors;
  clusterSpecRules(obj.spec.template_.spec, kTemplateSpec, errors, Identity::kOptional);
  return errors;
}

FieldErrorList validateTerraformClusterTemplateUpdate(const api::TerraformClusterTemplate& old_obj,
                                                      const api::TerraformClusterTemplate& obj,
                                                      TopologyDryRun dry_run) {
  FieldErrorList errors = ratchet(validateTerraformClusterTemplateCreate(obj),
                                  validateTerraformClusterTemplateCreate(old_obj));
  templateImmutable(old_obj.spec.template_.spec, obj.spec.template_.spec,
                    api::kKindTerraformClusterTemplate, "the ClusterClass", dry_run, errors);
  return errors;
}

FieldErrorList validateTerraformMachineTemplateCreate(const api::TerraformMachineTemplate& obj) {
  FieldErrorList errors;
  machineSpecRules(obj.spec.template_.spec, kTemplateSpec, errors);
  return errors;
}

FieldErrorList validateTerraformMachineTemplateUpdate(const api::TerraformMachineTemplate& old_obj,
                                                      const api::TerraformMachineTemplate& obj,
                                                      TopologyDryRun dry_run) {
  FieldErrorList errors = ratchet(validateTerraformMachineTemplateCreate(obj),
                                  validateTerraformMachineTemplateCreate(old_obj));
  templateImmutable(old_obj.spec.template_.spec, obj.spec.template_.spec,
                    api::kKindTerraformMachineTemplate,
                    "the MachineDeployment, control plane or ClusterClass", dry_run, errors);
  return errors;
}

FieldErrorList
validateTerraformMachinePoolTemplateCreate(const api::TerraformMachinePoolTemplate& obj) {
  FieldErrorList errors;
  poolSpecRules(obj.spec.template_.spec, kTemplateSpec, errors);
  return errors;
}

FieldErrorList
validateTerraformMachinePoolTemplateUpdate(const api::TerraformMachinePoolTemplate& old_obj,
                                           const api::TerraformMachinePoolTemplate& obj,
                                           TopologyDryRun dry_run) {
  FieldErrorList errors = ratchet(validateTerraformMachinePoolTemplateCreate(obj),
                                  validateTerraformMachinePoolTemplateCreate(old_obj));
  templateImmutable(old_obj.spec.template_.spec, obj.spec.template_.spec,
                    api::kKindTerraformMachinePoolTemplate, "the ClusterClass", dry_run, errors);
  return errors;
}

// ---- TerraformClusterIdentity -----------------------------------------------

FieldErrorList validateTerraformClusterIdentityCreate(const api::TerraformClusterIdentity& obj) {
  FieldErrorList errors;
  const auto& allowed = obj.spec.allowed_namespaces;
  if (allowed && allowed->list.empty() && !allowed->selector) {
    errors.push_back(required(kSpec.child("allowedNamespaces"),
                              "at least one of list and selector must be set; omit "
                              "allowedNamespaces to allow no namespace, or use selector: {} to "
                              "allow all"));
  }
  return errors;
}

FieldErrorList validateTerraformClusterIdentityUpdate(const api::TerraformClusterIdentity& old_obj,
                                                      const api::TerraformClusterIdentity& obj) {
  return ratchet(validateTerraformClusterIdentityCreate(obj),
                 validateTerraformClusterIdentityCreate(old_obj));
}

} // namespace captf::webhooks
