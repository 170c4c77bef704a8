#include "webhooks/access_review.h"

#include <fmt/format.h>

#include "absl/status/status.h"

namespace captf::webhooks {

namespace {

nlohmann::json accessReview(const UserInfo& user, const char* attributes_key,
                            nlohmann::json attributes) {
  nlohmann::json spec = {
      {attributes_key, std::move(attributes)},
      {"user", user.username},
  };
  if (!user.uid.empty()) {
    spec["uid"] = user.uid;
  }
  if (!user.groups.empty()) {
    spec["groups"] = user.groups;
  }
  if (!user.extra.empty()) {
    spec["extra"] = user.extra;
  }
  return {
      {"apiVersion", "authorization.k8s.io/v1"},
      {"kind", "SubjectAccessReview"},
      {"spec", std::move(spec)},
  };
}

} // namespace

nlohmann::json secretGetAccessReview(const UserInfo& user, std::string_view namespace_name,
                                     std::string_view name) {
  return accessReview(user, "resourceAttributes",
                      {{"namespace", std::string(namespace_name)},
                       {"verb", "get"},
                       {"group", ""},
                       {"version", "v1"},
                       {"resource", "secrets"},
                       {"name", std::string(name)}});
}

nlohmann::json nonResourceAccessReview(const UserInfo& user, std::string_view path,
                                       std::string_view verb) {
  return accessReview(user, "nonResourceAttributes",
                      {{"path", std::string(path)}, {"verb", std::string(verb)}});
}

absl::StatusOr<AccessDecision> parseAccessReviewResponse(const nlohmann::json& doc) {
  if (!doc.is_object() || doc.value("kind", "") != "SubjectAccessReview") {
    return absl::InvalidArgumentError("response is not a SubjectAccessReview");
  }
  const auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return absl::InvalidArgumentError("SubjectAccessReview response has no status");
  }
  AccessDecision d;
  auto boolField = [&](const char* key, bool& out) -> absl::Status {
    const auto it = status->find(key);
    if (it == status->end()) {
      return absl::OkStatus();
    }
    if (!it->is_boolean()) {
      return absl::InvalidArgumentError(std::string("SubjectAccessReview status.") + key +
                                        " is not a boolean");
    }
    out = it->get<bool>();
    return absl::OkStatus();
  };
  auto stringField = [&](const char* key, std::string& out) -> absl::Status {
    const auto it = status->find(key);
    if (it == status->end()) {
      return absl::OkStatus();
    }
    if (!it->is_string()) {
      return absl::InvalidArgumentError(std::string("SubjectAccessReview status.") + key +
                                        " is not a string");
    }
    out = it->get<std::string>();
    return absl::OkStatus();
  };
  if (!status->contains("allowed")) {
    return absl::InvalidArgumentError("SubjectAccessReview status.allowed is missing");
  }
  for (absl::Status s :
       {boolField("allowed", d.allowed), boolField("denied", d.denied),
        stringField("reason", d.reason), stringField("evaluationError", d.evaluation_error)}) {
    if (!s.ok()) {
      return s;
    }
  }
  if (d.denied) {
    d.allowed = false;
  }
  return d;
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
