#pragma once

// The admission rules of docs/reference/webhooks.md that several kinds share.
// Pure functions: each appends every error it finds to `errors`.

#include <nlohmann/json.hpp>

#include "contract/roles.h"
#include "manager/api/field_path.h"
#include "manager/api/workspace.h"
#include "webhooks/field_error.h"

namespace captf::webhooks {

// Exactly one of spec.source.image and spec.source.git. An image (and
// git.runtimeImage) is a syntactically valid OCI reference with a tag or a
// digest (contract/image_reference.h); git's url, ref and path follow
// contract/git_source.h (docs/decisions/git-sources.md).
void validateSource(const api::Source& source, const api::FieldPath& path, FieldErrorList& errors);

// spec.variables: unset, or a JSON object with 1..256 keys, each a
// Terraform identifier that is not captf_-prefixed, not a contract input of
// `role` and not a module meta-argument.
void validateVariables(const nlohmann::json& variables, contract::Role role,
                       const api::FieldPath& path, FieldErrorList& errors);

// Each spec.variablesFrom entry names exactly one of configMapRef and
// secretRef.
void validateVariablesFrom(const std::vector<api::VariablesSource>& sources,
                           const api::FieldPath& path, FieldErrorList& errors);

// A jobs policy: securityContext and podSecurityContext refuse what Pod
// Security baseline forbids (privileged, privilege escalation, added
// capabilities, a /proc mount other than Default, Unconfined seccomp or
// AppArmor, a SELinux type other than container_t or any SELinux user or
// role, Windows HostProcess) and sysctls; runAsUser 0 is refused where the
// same policy requires runAsNonRoot for the `source` container;
// lockTimeoutSeconds below activeDeadlineSeconds when the policy sets both.
// No merge with defaults or an inherited policy.
void validateJobPolicy(const api::JobPolicy& jobs, const api::FieldPath& path,
                       FieldErrorList& errors);

// All of the above for a workload spec (source, variables, variablesFrom,
// jobs) at `path` ("spec" or "spec.template.spec").
void validateWorkspaceSpec(const api::WorkspaceSpec& spec, contract::Role role,
                           const api::FieldPath& path, FieldErrorList& errors);

} // namespace captf::webhooks
