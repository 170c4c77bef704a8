#pragma once

// Delegated authorization, as the API server's delegating authorizer and
// controller-runtime's filters do it: a SubjectAccessReview
// (authorization.k8s.io/v1) asks the API server whether a user may do
// something, on a resource (the webhooks: may the requester get this
// Secret?) or on a non-resource URL (the secure diagnostics endpoint:
// /metrics, /debug/flags/v). The user is an authentication.k8s.io/v1
// UserInfo, as AdmissionReviews and TokenReviews carry it.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace captf::kube {

class RestClient;

// authentication.k8s.io/v1 UserInfo of a requesting user.
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  friend bool operator==(const UserInfo&, const UserInfo&) = default;
};

// Reads an authentication.k8s.io/v1 UserInfo object (AdmissionReview's
// request.userInfo, TokenReview's status.user); null leaves `out` as it is.
// `path` names the object in errors ("request.userInfo.groups: expected
// array of strings").
[[nodiscard]] absl::Status parseUserInfo(const nlohmann::json& v, std::string_view path,
                                         UserInfo& out);

struct AccessDecision {
  bool allowed = false;
  // An explicit deny by an authorizer (allowed is false then too).
  bool denied = false;
  std::string reason;
  std::string evaluation_error;
};

// Sends a SubjectAccessReview to the API server and returns its decoded
// status. KubeAccessReviewer below; tests inject a fake. Errors are
// transport or server failures, never "not allowed". Must be safe to call
// from several threads at once.
class AccessReviewer {
public:
  virtual ~AccessReviewer() = default;
  virtual absl::StatusOr<AccessDecision> review(const nlohmann::json& subject_access_review) = 0;
};

// SubjectAccessReviews POSTed with the process's own credentials on behalf
// of the user the review names. Thread-safe (the REST client is).
class KubeAccessReviewer final : public AccessReviewer {
public:
  explicit KubeAccessReviewer(RestClient& rest) : rest_(rest) {}
  absl::StatusOr<AccessDecision> review(const nlohmann::json& subject_access_review) override;

private:
  RestClient& rest_;
};

// The authorization.k8s.io/v1 SubjectAccessReview asking whether `user` may
// act as `resource_attributes` say (namespace, verb, group, version,
// resource, name).
[[nodiscard]] nlohmann::json resourceAccessReview(const UserInfo& user,
                                                  nlohmann::json resource_attributes);

// The authorization.k8s.io/v1 SubjectAccessReview asking whether `user` may
// `verb` the non-resource URL `path`.
[[nodiscard]] nlohmann::json nonResourceAccessReview(const UserInfo& user, std::string_view path,
                                                     std::string_view verb);

// Reads the status of a SubjectAccessReview response. InvalidArgument when
// the document is not one.
[[nodiscard]] absl::StatusOr<AccessDecision> parseAccessReviewResponse(const nlohmann::json& doc);

} // namespace captf::kube
