#include <gtest/gtest.h>

#include "manager/kube/errors.h"

namespace captf::kube {
namespace {

TEST(ErrorsTest, NotFoundFromStatusBody) {
  auto status = errorFromResponse(404, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"configmaps \"x\" not found","reason":"NotFound",
    "details":{"name":"x","kind":"configmaps"},"code":404})");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(isNotFound(status));
  EXPECT_FALSE(isConflict(status));
  auto error = apiError(status);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->name, "x");
  EXPECT_EQ(error->kind, "configmaps");
  EXPECT_EQ(error->http_code, 404);
  EXPECT_NE(status.message().find("not found"), absl::string_view::npos);
}

TEST(ErrorsTest, InvalidKeepsEveryCause) {
  auto status = errorFromResponse(422, R"({"kind":"Status","reason":"Invalid","code":422,
    "message":"invalid","details":{"causes":[
      {"reason":"FieldValueRequired","message":"Required value","field":"spec.a"},
      {"reason":"FieldValueInvalid","message":"bad","field":"metadata.name"}]}})");
  EXPECT_TRUE(isInvalid(status));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  auto error = apiError(status);
  ASSERT_TRUE(error.has_value());
  ASSERT_EQ(error->causes.size(), 2U);
  EXPECT_EQ(error->causes[0], (StatusCause{"FieldValueRequired", "Required value", "spec.a"}));
  EXPECT_EQ(error->causes[1].field, "metadata.name");
}

TEST(ErrorsTest, ReasonsMapToCodes) {
  struct Case {
    const char* reason;
    int code;
    absl::StatusCode want;
    bool (*predicate)(const absl::Status&);
  };
  const Case cases[] = {
      {"Conflict", 409, absl::StatusCode::kAborted, isConflict},
      {"AlreadyExists", 409, absl::StatusCode::kAlreadyExists, isAlreadyExists},
      {"Forbidden", 403, absl::StatusCode::kPermissionDenied, isForbidden},
      {"Unauthorized", 401, absl::StatusCode::kUnauthenticated, isUnauthorized},
      {"Expired", 410, absl::StatusCode::kOutOfRange, isGone},
      {"Gone", 410, absl::StatusCode::kOutOfRange, isGone},
      {"TooManyRequests", 429, absl::StatusCode::kResourceExhausted, isTooManyRequests},
  };
  for (const auto& c : cases) {
    std::string body = std::string(R"({"kind":"Status","reason":")") + c.reason + R"(","code":)" +
                       std::to_string(c.code) + "}";
    auto status = errorFromResponse(c.code, body);
    EXPECT_EQ(status.code(), c.want) << c.reason;
    EXPECT_TRUE(c.predicate(status)) << c.reason;
  }
}

TEST(ErrorsTest, RetryAfterFromHeaderOrDetails) {
  auto from_header = errorFromResponse(429, R"({"kind":"Status","reason":"TooManyRequests",
    "code":429})",
                                       " 3 ");
  ASSERT_TRUE(retryAfter(from_header).has_value());
  EXPECT_EQ(*retryAfter(from_header), std::chrono::seconds(3));
  EXPECT_TRUE(isTransient(from_header));

  auto from_details = errorFromResponse(429, R"({"kind":"Status","reason":"TooManyRequests",
    "code":429,"details":{"retryAfterSeconds":7}})");
  EXPECT_EQ(retryAfter(from_details), std::chrono::seconds(7));

  auto bad_header = errorFromResponse(503, "busy", "Wed, 21 Oct 2015 07:28:00 GMT");
  EXPECT_FALSE(retryAfter(bad_header).has_value());
}

TEST(ErrorsTest, NonStatusBodyUsesTheCode) {
  auto status = errorFromResponse(503, "<html>proxy says no</html>");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(reasonOf(status), Reason::kServiceUnavailable);
  EXPECT_TRUE(isTransient(status));
  EXPECT_NE(status.message().find("proxy says no"), absl::string_view::npos);

  auto missing = errorFromResponse(404, "404 page not found");
  EXPECT_TRUE(isNotFound(missing));
}

TEST(ErrorsTest, PlainStatusesAreNotApiErrors) {
  absl::Status plain = absl::NotFoundError("file");
  EXPECT_FALSE(apiError(plain).has_value());
  EXPECT_FALSE(isNotFound(plain));
  EXPECT_TRUE(isTransient(absl::UnavailableError("connection refused")));
  EXPECT_FALSE(isTransient(absl::InvalidArgumentError("bad")));
}

TEST(ErrorsTest, IgnoreNotFoundPassesEveryOtherStatusThrough) {
  EXPECT_TRUE(ignoreNotFound(errorFromResponse(404, "404 page not found")).ok());
  EXPECT_TRUE(ignoreNotFound(absl::OkStatus()).ok());
  const absl::Status conflict = errorFromResponse(409, R"({"kind":"Status","reason":"Conflict"})");
  EXPECT_EQ(ignoreNotFound(conflict), conflict);
  // A NotFound that is not the API server's (a missing file) is an error.
  EXPECT_EQ(ignoreNotFound(absl::NotFoundError("file")), absl::NotFoundError("file"));
}

} // namespace
} // namespace captf::kube
