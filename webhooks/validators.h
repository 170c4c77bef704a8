#pragma once

// One validator per kind and operation (docs/reference/webhooks.md). Pure: each
// returns every field error it finds, in a stable order, and never reads
// anything but its arguments. The admission adapter (webhooks/admission.h)
// decodes requests, gathers the facts the delete guards need and wraps these
// results into responses; it never re-implements a rule.

#include "manager/api/templates.h"
#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_cluster_identity.h"
#include "manager/api/terraform_machine.h"
#include "manager/api/terraform_machine_pool.h"
#include "webhooks/field_error.h"

namespace captf::webhooks {

// Whether Cluster API's topology controller sent the request as a
// server-side-apply dry run: the request is a dry run AND the object carries
// topology.cluster.x-k8s.io/dry-run (CAPI's IsDryRunRequest). Templates skip
// their immutability check for such requests.
enum class TopologyDryRun { kNo, kYes };
[[nodiscard]] TopologyDryRun topologyDryRun(bool request_dry_run, const api::ObjectMeta& meta);

// UPDATE validators re-run the CREATE rules on both objects and report only
// errors the old object did not already have (see ratchet()), then add the
// update-only rules.

[[nodiscard]] FieldErrorList validateTerraformClusterCreate(const api::TerraformCluster& obj);
[[nodiscard]] FieldErrorList validateTerraformClusterUpdate(const api::TerraformCluster& old_obj,
                                                            const api::TerraformCluster& obj);

[[nodiscard]] FieldErrorList validateTerraformMachineCreate(const api::TerraformMachine& obj);
[[nodiscard]] FieldErrorList validateTerraformMachineUpdate(const api::TerraformMachine& old_obj,
                                                            const api::TerraformMachine& obj);

[[nodiscard]] FieldErrorList
validateTerraformMachinePoolCreate(const api::TerraformMachinePool& obj);
[[nodiscard]] FieldErrorList
validateTerraformMachinePoolUpdate(const api::TerraformMachinePool& old_obj,
                                   const api::TerraformMachinePool& obj);

[[nodiscard]] FieldErrorList
validateTerraformClusterTemplateCreate(const api::TerraformClusterTemplate& obj);
[[nodiscard]] FieldErrorList
validateTerraformClusterTemplateUpdate(const api::TerraformClusterTemplate& old_obj,
                                       const api::TerraformClusterTemplate& obj,
                                       TopologyDryRun dry_run);

[[nodiscard]] FieldErrorList
validateTerraformMachineTemplateCreate(const api::TerraformMachineTemplate& obj);
[[nodiscard]] FieldErrorList
validateTerraformMachineTemplateUpdate(const api::TerraformMachineTemplate& old_obj,
                                       const api::TerraformMachineTemplate& obj,
                                       TopologyDryRun dry_run);

[[nodiscard]] FieldErrorList
validateTerraformMachinePoolTemplateCreate(const api::TerraformMachinePoolTemplate& obj);
[[nodiscard]] FieldErrorList
validateTerraformMachinePoolTemplateUpdate(const api::TerraformMachinePoolTemplate& old_obj,
                                           const api::TerraformMachinePoolTemplate& obj,
                                           TopologyDryRun dry_run);

// The pure rules of an identity (allowedNamespaces). The SubjectAccessReview
// on spec.secretRef is separate: see identity_access.h.
[[nodiscard]] FieldErrorList
validateTerraformClusterIdentityCreate(const api::TerraformClusterIdentity& obj);
[[nodiscard]] FieldErrorList
validateTerraformClusterIdentityUpdate(const api::TerraformClusterIdentity& old_obj,
                                       const api::TerraformClusterIdentity& obj);

} // namespace captf::webhooks
