#pragma once

// SubjectAccessReview for TerraformClusterIdentity: whoever creates an
// identity, or changes its secretRef, must be allowed to `get` the Secret it
// names, or the identity would be a way to read Secrets one cannot read.
// The manager's secure diagnostics endpoint asks the same way about
// non-resource URLs (/metrics, /debug/flags/v).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "manager/api/workspace.h"
#include "webhooks/field_error.h"

namespace captf::webhooks {

// authentication.k8s.io/v1 UserInfo of the requesting user, as the
// AdmissionReview carries it.
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  friend bool operator==(const UserInfo&, const UserInfo&) = default;
};

struct AccessDecision {
  bool allowed = false;
  // An explicit deny by an authorizer (allowed is false then too).
  bool denied = false;
  std::string reason;
  std::string evaluation_error;
};

// Sends a SubjectAccessReview to the API server and returns its decoded
// status. Implemented by the Kubernetes client (manager/kube); tests inject
// a fake. Errors are transport or server failures, never "not allowed".
// Must be safe to call from several webhook threads at once.
class AccessReviewer {
public:
  virtual ~AccessReviewer() = default;
  virtual absl::StatusOr<AccessDecision> review(const nlohmann::json& subject_access_review) = 0;
};

// The authorization.k8s.io/v1 SubjectAccessReview asking whether `user` may
// get Secret `namespace_name`/`name`.
[[nodiscard]] nlohmann::json
secretGetAccessReview(const UserInfo& user, std::string_view namespace_name, std::string_view name);

// The authorization.k8s.io/v1 SubjectAccessReview asking whether `user` may
// `verb` the non-resource URL `path`.
[[nodiscard]] nlohmann::json nonResourceAccessReview(const UserInfo& user, std::string_view path,
                                                     std::string_view verb);

// Reads the status of a SubjectAccessReview response. InvalidArgument when
// the document is not one.
[[nodiscard]] absl::StatusOr<AccessDecision> parseAccessReviewResponse(const nlohmann::json& doc);

// The field error for a denied review of `user` getting `ref`, at
// spec.secretRef; nullopt when access is allowed.
[[nodiscard]] std::optional<FieldError> secretAccessError(const AccessDecision& decision,
                                                          const UserInfo& user,
                                                          const api::SecretReference& ref);

} // namespace captf::webhooks
