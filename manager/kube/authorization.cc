#include "manager/kube/authorization.h"

#include <utility>

#include <fmt/format.h>

#include "contract/status_macros.h"
#include "manager/kube/json_read.h"
#include "manager/kube/rest_client.h"

namespace captf::kube {
namespace {

using nlohmann::json;

absl::Status stringList(const json& v, std::string_view path, std::vector<std::string>& out) {
  if (v.is_null()) {
    return absl::OkStatus();
  }
  if (!v.is_array()) {
    return jsonShapeError(path, "array of strings");
  }
  for (const json& item : v) {
    if (!item.is_string()) {
      return jsonShapeError(path, "array of strings");
    }
    out.push_back(item.get<std::string>());
  }
  return absl::OkStatus();
}

json accessReview(const UserInfo& user, const char* attributes_key, json attributes) {
  json spec = {
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

absl::Status parseUserInfo(const json& v, std::string_view path, UserInfo& out) {
  if (v.is_null()) {
    return absl::OkStatus();
  }
  if (!v.is_object()) {
    return jsonShapeError(path, "object");
  }
  CAPTF_RETURN_IF_ERROR(readOptionalString(v, "username", path, out.username));
  CAPTF_RETURN_IF_ERROR(readOptionalString(v, "uid", path, out.uid));
  if (const auto g = v.find("groups"); g != v.end()) {
    CAPTF_RETURN_IF_ERROR(stringList(*g, fmt::format("{}.groups", path), out.groups));
  }
  if (const auto e = v.find("extra"); e != v.end() && !e->is_null()) {
    if (!e->is_object()) {
      return jsonShapeError(fmt::format("{}.extra", path), "object");
    }
    for (const auto& [k, values] : e->items()) {
      std::vector<std::string> list;
      CAPTF_RETURN_IF_ERROR(stringList(values, fmt::format("{}.extra[{}]", path, k), list));
      out.extra.emplace(k, std::move(list));
    }
  }
  return absl::OkStatus();
}

json resourceAccessReview(const UserInfo& user, json resource_attributes) {
  return accessReview(user, "resourceAttributes", std::move(resource_attributes));
}

json nonResourceAccessReview(const UserInfo& user, std::string_view path, std::string_view verb) {
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
  auto bool_field = [&](const char* key, bool& out) -> absl::Status {
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
  auto string_field = [&](const char* key, std::string& out) -> absl::Status {
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
       {bool_field("allowed", d.allowed), bool_field("denied", d.denied),
        string_field("reason", d.reason), string_field("evaluationError", d.evaluation_error)}) {
    if (!s.ok()) {
      return s;
    }
  }
  if (d.denied) {
    d.allowed = false;
  }
  return d;
}

absl::StatusOr<AccessDecision> KubeAccessReviewer::review(const json& review) {
  absl::StatusOr<Json> answer = rest_.sendJson(
      restRequest("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {}, review.dump()));
  if (!answer.ok()) {
    return answer.status();
  }
  return parseAccessReviewResponse(*answer);
}

} // namespace captf::kube
