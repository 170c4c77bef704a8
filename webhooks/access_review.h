#pragma once

// SubjectAccessReview for TerraformClusterIdentity: whoever creates an
// identity, or changes its secretRef, must be allowed to `get` the Secret it
// names, or the identity would be a way to read Secrets one cannot read.
// The review itself (UserInfo, AccessReviewer, KubeAccessReviewer, the
// response parser) is generic delegated authorization and lives in
// manager/kube/authorization.h; this is the identity's judgement on it.

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "manager/api/workspace.h"
#include "manager/kube/authorization.h"
#include "webhooks/field_error.h"

namespace captf::webhooks {

// The validators name these as the AdmissionReview carries them.
using kube::AccessDecision;
using kube::AccessReviewer;
using kube::UserInfo;

// The authorization.k8s.io/v1 SubjectAccessReview asking whether `user` may
// get Secret `namespace_name`/`name`.
[[nodiscard]] nlohmann::json
secretGetAccessReview(const UserInfo& user, std::string_view namespace_name, std::string_view name);

// The field error for a denied review of `user` getting `ref`, at
// spec.secretRef; nullopt when access is allowed.
[[nodiscard]] std::optional<FieldError> secretAccessError(const AccessDecision& decision,
                                                          const UserInfo& user,
                                                          const api::SecretReference& ref);

} // namespace captf::webhooks
