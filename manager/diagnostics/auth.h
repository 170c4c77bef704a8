#pragma once

// Authentication and authorization of the secure diagnostics endpoint
// (docs/reference/metrics.md), delegated to the API server as
// controller-runtime's WithAuthenticationAndAuthorization does: the bearer
// token goes to a TokenReview (authentication.k8s.io/v1), the user it names
// to a SubjectAccessReview on the non-resource URL (authorization.k8s.io/v1).
// Both answers are cached briefly so that a scrape every few seconds costs
// no API calls; the TTLs are those of Kubernetes' delegating authenticator
// and authorizer (docs/decisions/manager-binary.md).

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "manager/kube/authorization.h"
#include "manager/kube/clock.h"
#include "manager/kube/rest_client.h"

namespace captf::diagnostics {

// The status of a TokenReview.
struct Authentication {
  bool authenticated = false;
  kube::UserInfo user;
  std::string error; // status.error: why the token was refused
};

// Sends a TokenReview and returns its decoded status. Errors are transport
// or server failures, never "not authenticated". Thread-safe.
class TokenReviewer {
public:
  virtual ~TokenReviewer() = default;
  virtual absl::StatusOr<Authentication> review(std::string_view token) = 0;
};

// The authentication.k8s.io/v1 TokenReview of `token` (audiences left to
// the API server's own, as controller-runtime does).
[[nodiscard]] nlohmann::json tokenReview(std::string_view token);

// Reads the status of a TokenReview response. InvalidArgument when the
// document is not one.
[[nodiscard]] absl::StatusOr<Authentication> parseTokenReviewResponse(const nlohmann::json& doc);

// TokenReviews POSTed with the manager's credentials. Thread-safe (the REST
// client is).
class KubeTokenReviewer final : public TokenReviewer {
public:
  explicit KubeTokenReviewer(kube::RestClient& rest) : rest_(rest) {}
  absl::StatusOr<Authentication> review(std::string_view token) override;

private:
  kube::RestClient& rest_;
};

// The bearer token of an Authorization header ("Bearer <token>", scheme
// case-insensitive); empty when there is none.
[[nodiscard]] std::string_view bearerToken(std::string_view authorization);

struct AuthCacheOptions {
  // Kubernetes' delegating authenticator caches token reviews for 1 min and
  // its authorizer allows for 5 min and denials for 30 s.
  std::chrono::seconds authenticated_ttl{60};
  std::chrono::seconds unauthenticated_ttl{60};
  std::chrono::seconds allowed_ttl{300};
  std::chrono::seconds denied_ttl{30};
  // Per cache; beyond it the expired entries go, then all of them.
  std::size_t max_entries = 1024;
};

enum class Verdict {
  kAllowed,
  kUnauthenticated, // 401: no token, or the TokenReview refused it
  kAuthnError,      // 401 too: a TokenReview could not be made
  kForbidden,       // 403: the SubjectAccessReview did not allow the request
  kError,           // 500: a SubjectAccessReview could not be made
};

struct AuthResult {
  Verdict verdict = Verdict::kUnauthenticated;
  std::string username; // set once authenticated
  std::string reason;   // for the log and the 403/500 body; never the token
};

// Decides one request: authenticate the bearer token, then authorize
// `verb` on `path`. A failed TokenReview call is unauthenticated (401) as in
// Kubernetes' authentication filter; a failed SubjectAccessReview call is
// an error (500). Failed calls are not cached. Thread-safe; the reviewers
// must outlive this object.
class DelegatingAuth {
public:
  DelegatingAuth(TokenReviewer& tokens, kube::AccessReviewer& access, kube::Clock& clock,
                 AuthCacheOptions options = {});

  AuthResult check(std::string_view authorization, std::string_view path, std::string_view verb);

private:
  struct CachedAuthentication {
    Authentication value;
    kube::SteadyTime expires;
  };
  struct CachedDecision {
    kube::AccessDecision value;
    kube::SteadyTime expires;
  };

  absl::StatusOr<Authentication> authenticate(std::string_view token);
  absl::StatusOr<kube::AccessDecision> authorize(const nlohmann::json& review);

  TokenReviewer& tokens_;
  kube::AccessReviewer& access_;
  kube::Clock& clock_;
  const AuthCacheOptions options_;
  std::mutex mu_;
  // Keyed by the SHA-256 of the token, so the cache holds no token.
  std::map<std::string, CachedAuthentication> authentications_;
  // Keyed by the SubjectAccessReview document (user, groups, path, verb).
  std::map<std::string, CachedDecision> decisions_;
};

} // namespace captf::diagnostics
