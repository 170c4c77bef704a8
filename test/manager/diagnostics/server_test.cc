// DiagnosticsHandler: every route behind authentication and authorization
// (fake reviewers), the metrics text, the verbosity handler and the pprof
// answer; the address parser and the -v mapping.
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "manager/diagnostics/server.h"

namespace captf::diagnostics {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class OneUser : public TokenReviewer, public kube::AccessReviewer {
public:
  absl::StatusOr<Authentication> review(std::string_view token) override {
    if (token != "scraper-token") {
      return Authentication{false, {}, "invalid bearer token"};
    }
    return Authentication{true, {"scraper", "", {"system:authenticated"}, {}}, ""};
  }
  absl::StatusOr<kube::AccessDecision> review(const json& sar) override {
    asked.push_back(sar["spec"]["nonResourceAttributes"]);
    if (!error.ok()) {
      return error;
    }
    const std::string key = sar["spec"]["nonResourceAttributes"]["verb"].get<std::string>() + " " +
                            sar["spec"]["nonResourceAttributes"]["path"].get<std::string>();
    kube::AccessDecision d;
    d.allowed = allowed.contains(key);
    return d;
  }
  std::set<std::string> allowed;
  std::vector<json> asked;
  absl::Status error;
};

class FailingTokens : public TokenReviewer {
public:
  absl::StatusOr<Authentication> review(std::string_view) override {
    return absl::PermissionDeniedError("cannot create tokenreviews");
  }
};

class DiagnosticsHandlerTest : public ::testing::Test {
protected:
  DiagnosticsHandlerTest() {
    registry_.gauge("captf_build_info", "[ALPHA] Build information.", {"version"})
        .withLabels({"1.2.3"})
        .set(1);
    logger_->set_level(spdlog::level::info);
  }

  kube::HttpReply call(std::string_view method, std::string_view target, std::string_view body = "",
                       std::string_view authorization = "Bearer scraper-token") {
    return handler_.serve(kube::IncomingRequest{method, target, authorization, body});
  }

  kube::MetricsRegistry registry_;
  OneUser user_;
  kube::FakeClock clock_;
  // No caching: every request asks, so the test sees each question.
  DelegatingAuth auth_{user_,
                       user_,
                       clock_,
                       {std::chrono::seconds(0), std::chrono::seconds(0), std::chrono::seconds(0),
                        std::chrono::seconds(0)}};
  std::shared_ptr<spdlog::logger> logger_ = std::make_shared<spdlog::logger>(
      "diagnostics-test", std::make_shared<spdlog::sinks::null_sink_mt>());
  DiagnosticsHandler handler_{registry_, auth_, logger_};
};

TEST_F(DiagnosticsHandlerTest, EveryPathNeedsAnAuthenticatedCaller) {
  for (const char* path : {"/metrics", "/debug/flags/v", "/debug/pprof/heap", "/nothing"}) {
    EXPECT_EQ(call("GET", path, "", "").status, 401) << path;
    EXPECT_EQ(call("GET", path, "", "Bearer forged").status, 401) << path;
  }
  EXPECT_TRUE(user_.asked.empty());
}

TEST_F(DiagnosticsHandlerTest, MetricsNeedGetOnTheNonResourceUrl) {
  kube::HttpReply r = call("GET", "/metrics");
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(r.body, HasSubstr("\"scraper\" may not get /metrics"));
  user_.allowed.insert("get /metrics");
  r = call("GET", "/metrics?x=1");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(r.body, HasSubstr("captf_build_info{version=\"1.2.3\"} 1"));
  EXPECT_EQ(user_.asked.back(), json({{"path", "/metrics"}, {"verb", "get"}}));
  user_.allowed.insert("post /metrics");
  EXPECT_EQ(call("POST", "/metrics").status, 405);
}

TEST_F(DiagnosticsHandlerTest, PutDebugFlagsVSetsTheLoggersLevelAsMinusVDoes) {
  EXPECT_EQ(call("PUT", "/debug/flags/v", "5").status, 403);
  EXPECT_EQ(user_.asked.back(), json({{"path", "/debug/flags/v"}, {"verb", "put"}}));
  EXPECT_EQ(logger_->level(), spdlog::level::info);

  user_.allowed.insert("put /debug/flags/v");
  kube::HttpReply r = call("PUT", "/debug/flags/v", "5\n");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr("verbosity to 5"));
  EXPECT_EQ(logger_->level(), spdlog::level::trace);
  EXPECT_EQ(call("PUT", "/debug/flags/v", "3").status, 200);
  EXPECT_EQ(logger_->level(), spdlog::level::debug);
  for (const char* bad : {"", "high", "-1", "2x"}) {
    EXPECT_EQ(call("PUT", "/debug/flags/v", bad).status, 400) << bad;
  }
  EXPECT_EQ(logger_->level(), spdlog::level::debug);
  user_.allowed.insert("get /debug/flags/v");
  EXPECT_EQ(call("GET", "/debug/flags/v").status, 405);
}

TEST_F(DiagnosticsHandlerTest, PprofIsAuthorizedThenAnsweredNotFoundWithTheReason) {
  EXPECT_EQ(call("GET", "/debug/pprof/heap").status, 403);
  user_.allowed.insert("get /debug/pprof/heap");
  const kube::HttpReply r = call("GET", "/debug/pprof/heap");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("no Go pprof profiles"));
  user_.allowed.insert("get /elsewhere");
  EXPECT_EQ(call("GET", "/elsewhere").status, 404);
}

TEST_F(DiagnosticsHandlerTest, AFailedTokenReviewIsUnauthorized) {
  FailingTokens failing;
  DelegatingAuth auth(failing, user_, clock_);
  DiagnosticsHandler handler(registry_, auth, logger_);
  user_.allowed.insert("get /metrics");
  EXPECT_EQ(handler.serve({"GET", "/metrics", "Bearer scraper-token", ""}).status, 401);
  EXPECT_TRUE(user_.asked.empty());
}

TEST_F(DiagnosticsHandlerTest, AFailedAccessReviewIsAServerError) {
  user_.error = absl::UnavailableError("apiserver down");
  const kube::HttpReply r = call("GET", "/metrics");
  EXPECT_EQ(r.status, 500);
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("apiserver")));
}

TEST(DiagnosticsOptionsTest, DefaultsFollowTheSpec) {
  const kube::ServerOptions options = serverOptions();
  EXPECT_EQ(options.port, 8443);
  EXPECT_EQ(options.cert_dir, "/tmp/k8s-metrics-server/serving-certs/");
  EXPECT_EQ(options.cert_name, "tls.crt");
  EXPECT_EQ(options.key_name, "tls.key");
  EXPECT_EQ(options.missing_certificate, kube::MissingCertificate::kSelfSigned);
  EXPECT_EQ(options.max_connections, 64U);
}

TEST(DiagnosticsOptionsTest, ParsesTheAddressFlag) {
  kube::ServerOptions options;
  ASSERT_TRUE(parseAddress(":8443", options).ok());
  EXPECT_EQ(options.address, "0.0.0.0");
  EXPECT_EQ(options.port, 8443);
  ASSERT_TRUE(parseAddress("127.0.0.1:0", options).ok());
  EXPECT_EQ(options.address, "127.0.0.1");
  EXPECT_EQ(options.port, 0);
  ASSERT_TRUE(parseAddress("[::1]:9000", options).ok());
  EXPECT_EQ(options.address, "::1");
  for (const char* bad : {"8443", ":", ":http", ":70000", "host:-1"}) {
    EXPECT_FALSE(parseAddress(bad, options).ok()) << bad;
  }
}

TEST(DiagnosticsOptionsTest, VerbosityMapsLikeKlogLevels) {
  EXPECT_EQ(levelForVerbosity(0), spdlog::level::info);
  EXPECT_EQ(levelForVerbosity(2), spdlog::level::info);
  EXPECT_EQ(levelForVerbosity(3), spdlog::level::debug);
  EXPECT_EQ(levelForVerbosity(4), spdlog::level::debug);
  EXPECT_EQ(levelForVerbosity(5), spdlog::level::trace);
  EXPECT_EQ(levelForVerbosity(10), spdlog::level::trace);
}

} // namespace
} // namespace captf::diagnostics
