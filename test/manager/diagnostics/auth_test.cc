// DelegatingAuth: bearer tokens, TokenReview and SubjectAccessReview
// documents, and the caches (TTLs on a FakeClock, failures never cached),
// over fake reviewers that count their calls.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/diagnostics/auth.h"

namespace captf::diagnostics {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class FakeTokens : public TokenReviewer {
public:
  absl::StatusOr<Authentication> review(std::string_view token) override {
    ++calls;
    if (!error.ok()) {
      return error;
    }
    const auto it = users.find(std::string(token));
    if (it == users.end()) {
      return Authentication{false, {}, "invalid bearer token"};
    }
    return Authentication{true, it->second, ""};
  }
  std::map<std::string, kube::UserInfo> users;
  absl::Status error;
  int calls = 0;
};

class FakeAccess : public kube::AccessReviewer {
public:
  absl::StatusOr<kube::AccessDecision> review(const json& sar) override {
    reviews.push_back(sar);
    if (!error.ok()) {
      return error;
    }
    const json& spec = sar["spec"];
    const std::string key = spec["user"].get<std::string>() + " " +
                            spec["nonResourceAttributes"]["verb"].get<std::string>() + " " +
                            spec["nonResourceAttributes"]["path"].get<std::string>();
    kube::AccessDecision d;
    d.allowed = allowed.contains(key);
    d.reason = d.allowed ? "RBAC: allowed" : "";
    return d;
  }
  std::set<std::string> allowed; // "user verb path"
  absl::Status error;
  std::vector<json> reviews;
};

class DelegatingAuthTest : public ::testing::Test {
protected:
  DelegatingAuthTest() {
    tokens_.users["good"] = {"system:serviceaccount:ns:scraper",
                             "uid-1",
                             {"system:serviceaccounts", "system:authenticated"},
                             {{"authentication.kubernetes.io/pod-name", {"p"}}}};
    tokens_.users["other"] = {"alice", "", {"system:authenticated"}, {}};
    access_.allowed.insert("system:serviceaccount:ns:scraper get /metrics");
  }

  FakeTokens tokens_;
  FakeAccess access_;
  kube::FakeClock clock_;
  DelegatingAuth auth_{tokens_, access_, clock_};
};

TEST(BearerTokenTest, TakesTheTokenOfABearerHeaderOnly) {
  EXPECT_EQ(bearerToken("Bearer abc.def"), "abc.def");
  EXPECT_EQ(bearerToken("bearer abc"), "abc");
  EXPECT_EQ(bearerToken("  BEARER   abc  "), "abc");
  EXPECT_EQ(bearerToken(""), "");
  EXPECT_EQ(bearerToken("Bearer"), "");
  EXPECT_EQ(bearerToken("Bearer "), "");
  EXPECT_EQ(bearerToken("Basic dXNlcjpwYXNz"), "");
  EXPECT_EQ(bearerToken("Bearer a b"), "");
}

TEST(TokenReviewTest, BuildsTheReviewAndReadsItsStatus) {
  const json review = tokenReview("tok");
  EXPECT_EQ(review["apiVersion"], "authentication.k8s.io/v1");
  EXPECT_EQ(review["kind"], "TokenReview");
  EXPECT_EQ(review["spec"], json({{"token", "tok"}}));

  auto ok = parseTokenReviewResponse(json::parse(R"({"kind":"TokenReview","status":{
      "authenticated":true,"user":{"username":"system:serviceaccount:a:b","uid":"u",
      "groups":["system:serviceaccounts"],"extra":{"k":["v"]}}}})"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(ok->authenticated);
  EXPECT_EQ(ok->user.username, "system:serviceaccount:a:b");
  EXPECT_EQ(ok->user.uid, "u");
  EXPECT_EQ(ok->user.groups, std::vector<std::string>{"system:serviceaccounts"});
  EXPECT_EQ(ok->user.extra.at("k"), std::vector<std::string>{"v"});

  auto refused = parseTokenReviewResponse(
      json::parse(R"({"kind":"TokenReview","status":{"error":"token expired"}})"));
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->authenticated);
  EXPECT_EQ(refused->error, "token expired");

  EXPECT_FALSE(parseTokenReviewResponse(json::parse(R"({"kind":"Status"})")).ok());
  EXPECT_FALSE(parseTokenReviewResponse(json::parse(R"({"kind":"TokenReview"})")).ok());
  EXPECT_FALSE(parseTokenReviewResponse(
                   json::parse(R"({"kind":"TokenReview","status":{"authenticated":"yes"}})"))
                   .ok());
  EXPECT_FALSE(parseTokenReviewResponse(
                   json::parse(R"({"kind":"TokenReview","status":{"authenticated":true}})"))
                   .ok());
  auto bad_groups = parseTokenReviewResponse(json::parse(
      R"({"kind":"TokenReview","status":{"authenticated":true,"user":{"username":"x","groups":[1]}}})"));
  ASSERT_FALSE(bad_groups.ok());
  EXPECT_THAT(bad_groups.status().message(), HasSubstr("status.user.groups"));
}

TEST_F(DelegatingAuthTest, NoTokenIsUnauthenticatedWithoutAnyReview) {
  const AuthResult r = auth_.check("", "/metrics", "get");
  EXPECT_EQ(r.verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(tokens_.calls, 0);
  EXPECT_TRUE(access_.reviews.empty());
}

TEST_F(DelegatingAuthTest, AllowedAsksOnceWithTheUsersIdentityAndTheNonResourceUrl) {
  const AuthResult r = auth_.check("Bearer good", "/metrics", "get");
  EXPECT_EQ(r.verdict, Verdict::kAllowed);
  EXPECT_EQ(r.username, "system:serviceaccount:ns:scraper");
  ASSERT_EQ(access_.reviews.size(), 1U);
  const json& spec = access_.reviews[0]["spec"];
  EXPECT_EQ(access_.reviews[0]["kind"], "SubjectAccessReview");
  EXPECT_EQ(spec["nonResourceAttributes"], json({{"path", "/metrics"}, {"verb", "get"}}));
  EXPECT_FALSE(spec.contains("resourceAttributes"));
  EXPECT_EQ(spec["user"], "system:serviceaccount:ns:scraper");
  EXPECT_EQ(spec["uid"], "uid-1");
  EXPECT_EQ(spec["groups"], json({"system:serviceaccounts", "system:authenticated"}));
  EXPECT_EQ(spec["extra"]["authentication.kubernetes.io/pod-name"], json({"p"}));

  // Scrapes within the TTLs cost no API call.
  for (int i = 0; i < 5; ++i) {
    clock_.advance(std::chrono::seconds(10));
    EXPECT_EQ(auth_.check("Bearer good", "/metrics", "get").verdict, Verdict::kAllowed);
  }
  EXPECT_EQ(tokens_.calls, 1);
  EXPECT_EQ(access_.reviews.size(), 1U);

  // The token review expires after 1 min (it is 50 s old now), the
  // decision after 5 min.
  clock_.advance(std::chrono::seconds(11));
  EXPECT_EQ(auth_.check("Bearer good", "/metrics", "get").verdict, Verdict::kAllowed);
  EXPECT_EQ(tokens_.calls, 2);
  EXPECT_EQ(access_.reviews.size(), 1U);
  clock_.advance(std::chrono::seconds(240));
  EXPECT_EQ(auth_.check("Bearer good", "/metrics", "get").verdict, Verdict::kAllowed);
  EXPECT_EQ(access_.reviews.size(), 2U);
}

TEST_F(DelegatingAuthTest, InvalidTokensAreUnauthenticatedAndCachedForAMinute) {
  AuthResult r = auth_.check("Bearer forged", "/metrics", "get");
  EXPECT_EQ(r.verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(r.reason, "invalid bearer token");
  EXPECT_THAT(r.reason, ::testing::Not(HasSubstr("forged")));
  EXPECT_TRUE(access_.reviews.empty());
  clock_.advance(std::chrono::seconds(59));
  EXPECT_EQ(auth_.check("Bearer forged", "/metrics", "get").verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(tokens_.calls, 1);
  clock_.advance(std::chrono::seconds(1));
  EXPECT_EQ(auth_.check("Bearer forged", "/metrics", "get").verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(tokens_.calls, 2);
}

TEST_F(DelegatingAuthTest, DenialsAreForbiddenAndRecheckedAfterThirtySeconds) {
  EXPECT_EQ(auth_.check("Bearer other", "/metrics", "get").verdict, Verdict::kForbidden);
  EXPECT_EQ(auth_.check("Bearer good", "/debug/flags/v", "put").verdict, Verdict::kForbidden);
  ASSERT_EQ(access_.reviews.size(), 2U);
  // Granted meanwhile: still denied from the cache until the denial expires.
  access_.allowed.insert("alice get /metrics");
  clock_.advance(std::chrono::seconds(29));
  EXPECT_EQ(auth_.check("Bearer other", "/metrics", "get").verdict, Verdict::kForbidden);
  EXPECT_EQ(access_.reviews.size(), 2U);
  clock_.advance(std::chrono::seconds(1));
  EXPECT_EQ(auth_.check("Bearer other", "/metrics", "get").verdict, Verdict::kAllowed);
  EXPECT_EQ(access_.reviews.size(), 3U);
  // Path and verb are part of the question.
  EXPECT_EQ(auth_.check("Bearer other", "/metrics", "put").verdict, Verdict::kForbidden);
  EXPECT_EQ(access_.reviews.size(), 4U);
}

TEST_F(DelegatingAuthTest, FailedReviewsAreNotCached) {
  tokens_.error = absl::UnavailableError("connection refused");
  AuthResult r = auth_.check("Bearer good", "/metrics", "get");
  EXPECT_EQ(r.verdict, Verdict::kAuthnError);
  EXPECT_THAT(r.reason, HasSubstr("connection refused"));
  tokens_.error = absl::OkStatus();
  access_.error = absl::PermissionDeniedError("cannot create subjectaccessreviews");
  r = auth_.check("Bearer good", "/metrics", "get");
  EXPECT_EQ(r.verdict, Verdict::kError);
  EXPECT_EQ(tokens_.calls, 2);
  access_.error = absl::OkStatus();
  EXPECT_EQ(auth_.check("Bearer good", "/metrics", "get").verdict, Verdict::kAllowed);
  EXPECT_EQ(access_.reviews.size(), 2U);
}

TEST_F(DelegatingAuthTest, TheCachesStayWithinTheirBound) {
  AuthCacheOptions options;
  options.max_entries = 2;
  DelegatingAuth small(tokens_, access_, clock_, options);
  for (const char* token : {"a", "b", "c"}) {
    small.check(std::string("Bearer ") + token, "/metrics", "get");
  }
  EXPECT_EQ(tokens_.calls, 3);
  // "a" was dropped when "c" needed room.
  small.check("Bearer a", "/metrics", "get");
  EXPECT_EQ(tokens_.calls, 4);
}

} // namespace
} // namespace captf::diagnostics
