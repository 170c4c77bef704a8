#include "manager/diagnostics/auth.h"

#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "absl/status/status.h"
#include "contract/digest.h"

namespace captf::diagnostics {
namespace {

// Keeps a cache under its bound: drops expired entries, then everything.
template <typename Map> void makeRoom(Map& cache, kube::SteadyTime now, std::size_t max_entries) {
  if (cache.size() < max_entries) {
    return;
  }
  std::erase_if(cache, [now](const auto& entry) { return entry.second.expires <= now; });
  if (cache.size() >= max_entries) {
    cache.clear();
  }
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

} // namespace

nlohmann::json tokenReview(std::string_view token) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenReview"},
          {"spec", {{"token", std::string(token)}}}};
}

absl::StatusOr<Authentication> parseTokenReviewResponse(const nlohmann::json& doc) {
  if (!doc.is_object() || doc.value("kind", "") != "TokenReview") {
    return absl::InvalidArgumentError("response is not a TokenReview");
  }
  const auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return absl::InvalidArgumentError("TokenReview response has no status");
  }
  Authentication out;
  if (const auto it = status->find("authenticated"); it != status->end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return absl::InvalidArgumentError("TokenReview status.authenticated is not a boolean");
    }
    out.authenticated = it->get<bool>();
  }
  if (const auto it = status->find("error"); it != status->end() && !it->is_null()) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError("TokenReview status.error is not a string");
    }
    out.error = it->get<std::string>();
  }
  if (const auto it = status->find("user"); it != status->end()) {
    if (absl::Status s = kube::parseUserInfo(*it, "TokenReview status.user", out.user); !s.ok()) {
      return s;
    }
  }
  if (out.authenticated && out.user.username.empty()) {
    return absl::InvalidArgumentError("TokenReview authenticated a token without a username");
  }
  return out;
}

absl::StatusOr<Authentication> KubeTokenReviewer::review(std::string_view token) {
  absl::StatusOr<kube::Json> answer = rest_.sendJson(kube::restRequest(
      "POST", "/apis/authentication.k8s.io/v1/tokenreviews", {}, tokenReview(token).dump()));
  if (!answer.ok()) {
    return answer.status();
  }
  return parseTokenReviewResponse(*answer);
}

std::string_view bearerToken(std::string_view authorization) {
  while (!authorization.empty() &&
         (authorization.front() == ' ' || authorization.front() == '\t')) {
    authorization.remove_prefix(1);
  }
  const std::size_t space = authorization.find(' ');
  if (space == std::string_view::npos ||
      !equalsIgnoreCase(authorization.substr(0, space), "bearer")) {
    return {};
  }
  std::string_view token = authorization.substr(space + 1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) {
    token.remove_suffix(1);
  }
  while (!token.empty() && token.front() == ' ') {
    token.remove_prefix(1);
  }
  // A token is one word (RFC 6750 b64token).
  if (token.find_first_of(" \t") != std::string_view::npos) {
    return {};
  }
  return token;
}

DelegatingAuth::DelegatingAuth(TokenReviewer& tokens, kube::AccessReviewer& access,
                               kube::Clock& clock, AuthCacheOptions options)
    : tokens_(tokens), access_(access), clock_(clock), options_(options) {}

absl::StatusOr<Authentication> DelegatingAuth::authenticate(std::string_view token) {
  const std::string key = contract::sha256Hex(token);
  {
    std::scoped_lock lock(mu_);
    const auto it = authentications_.find(key);
    if (it != authentications_.end() && clock_.now() < it->second.expires) {
      return it->second.value;
    }
  }
  // The lock is not held across the call: concurrent first requests with
  // one token may each ask, which is harmless.
  absl::StatusOr<Authentication> answer = tokens_.review(token);
  if (!answer.ok()) {
    return answer.status();
  }
  const auto ttl =
      answer->authenticated ? options_.authenticated_ttl : options_.unauthenticated_ttl;
  std::scoped_lock lock(mu_);
  const kube::SteadyTime now = clock_.now();
  makeRoom(authentications_, now, options_.max_entries);
  authentications_[key] = CachedAuthentication{*answer, now + ttl};
  return answer;
}

absl::StatusOr<kube::AccessDecision> DelegatingAuth::authorize(const nlohmann::json& review) {
  const std::string key = review.dump();
  {
    std::scoped_lock lock(mu_);
    const auto it = decisions_.find(key);
    if (it != decisions_.end() && clock_.now() < it->second.expires) {
      return it->second.value;
    }
  }
  absl::StatusOr<kube::AccessDecision> answer = access_.review(review);
  if (!answer.ok()) {
    return answer.status();
  }
  const auto ttl = answer->allowed ? options_.allowed_ttl : options_.denied_ttl;
  std::scoped_lock lock(mu_);
  const kube::SteadyTime now = clock_.now();
  makeRoom(decisions_, now, options_.max_entries);
  decisions_[key] = CachedDecision{*answer, now + ttl};
  return answer;
}

AuthResult DelegatingAuth::check(std::string_view authorization, std::string_view path,
                                 std::string_view verb) {
  const std::string_view token = bearerToken(authorization);
  if (token.empty()) {
    return {Verdict::kUnauthenticated, "", "no bearer token"};
  }
  absl::StatusOr<Authentication> authn = authenticate(token);
  if (!authn.ok()) {
    return {Verdict::kAuthnError, "",
            fmt::format("the TokenReview failed: {}", std::string(authn.status().message()))};
  }
  if (!authn->authenticated) {
    return {Verdict::kUnauthenticated, "",
            authn->error.empty() ? "the token was not authenticated" : authn->error};
  }
  const nlohmann::json review = kube::nonResourceAccessReview(authn->user, path, verb);
  absl::StatusOr<kube::AccessDecision> authz = authorize(review);
  if (!authz.ok()) {
    return {
        Verdict::kError, authn->user.username,
        fmt::format("the SubjectAccessReview failed: {}", std::string(authz.status().message()))};
  }
  if (!authz->allowed) {
    return {Verdict::kForbidden, authn->user.username, authz->reason};
  }
  return {Verdict::kAllowed, authn->user.username, authz->reason};
}

} // namespace captf::diagnostics
