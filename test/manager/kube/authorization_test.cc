// Delegated authorization's documents: UserInfo as reviews carry it, the
// SubjectAccessReviews asked, and their answers.
#include <gtest/gtest.h>

#include "manager/kube/authorization.h"

namespace captf::kube {
namespace {

using nlohmann::json;

TEST(UserInfoTest, ParsesEveryFieldAndNamesTheOffendingOne) {
  UserInfo user;
  ASSERT_TRUE(parseUserInfo(json::parse(R"({"username": "alice", "uid": "u-1",
                                            "groups": ["team-a", "system:authenticated"],
                                            "extra": {"scopes": ["x"]}})"),
                            "request.userInfo", user)
                  .ok());
  EXPECT_EQ(user,
            (UserInfo{"alice", "u-1", {"team-a", "system:authenticated"}, {{"scopes", {"x"}}}}));
  UserInfo untouched{"bob", "", {}, {}};
  EXPECT_TRUE(parseUserInfo(nullptr, "request.userInfo", untouched).ok());
  EXPECT_EQ(untouched.username, "bob");

  UserInfo bad;
  absl::Status s = parseUserInfo(json::parse(R"({"groups": "team-a"})"), "request.userInfo", bad);
  EXPECT_EQ(s.message(), "request.userInfo.groups: expected array of strings");
  s = parseUserInfo(json::parse(R"({"username": 7})"), "TokenReview status.user", bad);
  EXPECT_EQ(s.message(), "TokenReview status.user.username: expected string");
  s = parseUserInfo(json::parse(R"({"extra": {"k": [1]}})"), "request.userInfo", bad);
  EXPECT_EQ(s.message(), "request.userInfo.extra[k]: expected array of strings");
  s = parseUserInfo(json::parse("[]"), "request.userInfo", bad);
  EXPECT_EQ(s.message(), "request.userInfo: expected object");
}

TEST(AccessReviewTest, AsksForTheUserWithEveryIdentityField) {
  const UserInfo user{"alice", "u-1", {"g"}, {{"scopes", {"x"}}}};
  const json non_resource = nonResourceAccessReview(user, "/metrics", "get");
  EXPECT_EQ(non_resource["apiVersion"], "authorization.k8s.io/v1");
  EXPECT_EQ(non_resource["kind"], "SubjectAccessReview");
  EXPECT_EQ(non_resource["spec"]["nonResourceAttributes"],
            (json{{"path", "/metrics"}, {"verb", "get"}}));
  EXPECT_EQ(non_resource["spec"]["user"], "alice");
  EXPECT_EQ(non_resource["spec"]["uid"], "u-1");
  EXPECT_EQ(non_resource["spec"]["groups"], json::array({"g"}));
  EXPECT_EQ(non_resource["spec"]["extra"]["scopes"], json::array({"x"}));

  const json resource =
      resourceAccessReview(UserInfo{"bob", "", {}, {}}, {{"verb", "list"}, {"resource", "pods"}});
  EXPECT_EQ(resource["spec"]["resourceAttributes"], (json{{"verb", "list"}, {"resource", "pods"}}));
  EXPECT_FALSE(resource["spec"].contains("uid"));
  EXPECT_FALSE(resource["spec"].contains("groups"));
  EXPECT_FALSE(resource["spec"].contains("extra"));
}

TEST(AccessReviewTest, ParsesResponses) {
  absl::StatusOr<AccessDecision> d = parseAccessReviewResponse(json::parse(
      R"({"kind": "SubjectAccessReview", "status": {"allowed": true, "reason": "rbac"}})"));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->reason, "rbac");
  d = parseAccessReviewResponse(json::parse(
      R"({"kind": "SubjectAccessReview", "status": {"allowed": true, "denied": true}})"));
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allowed);
  EXPECT_FALSE(parseAccessReviewResponse(json::parse(R"({"kind": "Status"})")).ok());
  EXPECT_FALSE(
      parseAccessReviewResponse(json::parse(R"({"kind": "SubjectAccessReview", "status": {}})"))
          .ok());
  EXPECT_FALSE(parseAccessReviewResponse(
                   json::parse(R"({"kind": "SubjectAccessReview", "status": {"allowed": "yes"}})"))
                   .ok());
}

} // namespace
} // namespace captf::kube
