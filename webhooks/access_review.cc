#include "webhooks/access_review.h"

#include <string>

#include <fmt/format.h>

namespace captf::webhooks {

nlohmann::json secretGetAccessReview(const UserInfo& user, std::string_view namespace_name,
                                     std::string_view name) {
  return kube::resourceAccessReview(user, {{"namespace", std::string(namespace_name)},
                                           {"verb", "get"},
                                           {"group", ""},
                                           {"version", "v1"},
                                           {"resource", "secrets"},
                                           {"name", std::string(name)}});
}

std::optional<FieldError> secretAccessError(const AccessDecision& decision, const UserInfo& user,
                                            const api::SecretReference& ref) {
  if (decision.allowed) {
    return std::nullopt;
  }
  std::string detail =
      fmt::format("user {} may not get Secret {}: only someone who can read the credentials may "
                  "point an identity at them",
                  quote(user.username), quote(ref.namespace_ + "/" + ref.name));
  if (!decision.reason.empty()) {
    detail += fmt::format(" ({})", decision.reason);
  }
  return forbidden(api::FieldPath("spec").child("secretRef"), detail);
}

} // namespace captf::webhooks
