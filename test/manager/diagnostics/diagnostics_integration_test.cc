// The secure diagnostics endpoint against the rig's real kube-apiserver
// (RBAC on): the server runs in this process with the manager's credentials
// reduced to config/rbac's ClusterRole, callers present ServiceAccount
// tokens from the TokenRequest API (`kubectl create token`), and the
// metrics-reader ClusterRole comes from config/prometheus.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "manager/controllers/metrics.h"
#include "manager/diagnostics/server.h"
#include "manager/kube/clock.h"
#include "manager/kube/config.h"
#include "manager/kube/rest_client.h"
#include "test/rig/fixture.h"
#include "test/webhooks/https_client.h"

namespace captf::diagnostics {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using webhooks::testing::HttpsClient;

constexpr char kNamespace[] = "diagnostics-test";
constexpr char kManagerUser[] = "captf-diagnostics-manager";

const rig::Env& env() {
  return rig::shared(rig::Tier::kIntegration);
}

std::string sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

void apply(const json& manifest) {
  const rig::CommandResult r =
      rig::kubectl(env(), {"apply", "--server-side", "-f", "-"}, manifest.dump());
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

json clusterRoleBinding(const std::string& name, const std::string& role, const json& subject) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRoleBinding"},
          {"metadata", {{"name", name}}},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role}}},
          {"subjects", json::array({subject})}};
}

json serviceAccount(const std::string& name) {
  return {{"kind", "ServiceAccount"}, {"name", name}, {"namespace", kNamespace}};
}

// Waits until the API server's RBAC authorizer has seen a binding (its
// informer lags the write a little).
bool canI(const std::vector<std::string>& args) {
  for (int i = 0; i < 100; ++i) {
    std::vector<std::string> argv = {"auth", "can-i"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (rig::kubectl(env(), argv).exit_code == 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// A token of ServiceAccount `name` from the TokenRequest API. Never printed.
std::string tokenOf(const std::string& name) {
  const rig::CommandResult r =
      rig::kubectl(env(), {"-n", kNamespace, "create", "token", name, "--duration=10m"});
  if (r.exit_code != 0) {
    ADD_FAILURE() << "kubectl create token " << name << " failed";
    return "";
  }
  std::string token = r.output;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) {
    token.pop_back();
  }
  return token;
}

class SecureDiagnosticsIntegrationTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    const rig::Env& rig = env();
    // The manager's ClusterRole as shipped and the optional metrics reader.
    rig::CommandResult r =
        rig::kubectl(rig, {"apply", "--server-side", "-f", sourceDir() + "/config/rbac/role.yaml"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // Only the reader's RBAC of config/prometheus: its ServiceMonitor and
    // PrometheusRule need the Prometheus Operator's CRDs.
    r = rig::kubectl(rig, {"apply", "--server-side", "-f",
                           sourceDir() + "/config/prometheus/metrics_reader_role.yaml", "-f",
                           sourceDir() + "/config/prometheus/metrics_reader_role_binding.yaml"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    rig::kubectl(rig, {"create", "namespace", kNamespace});
    for (const char* sa : {"stranger", "scraper", "operator"}) {
      apply({{"apiVersion", "v1"},
             {"kind", "ServiceAccount"},
             {"metadata", {{"name", sa}, {"namespace", kNamespace}}}});
    }
    apply(clusterRoleBinding(
        "diagnostics-test-manager", "captf-manager-role",
        {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", kManagerUser}}));
    apply(clusterRoleBinding("diagnostics-test-scraper", "captf-metrics-reader",
                             serviceAccount("scraper")));
    apply({{"apiVersion", "rbac.authorization.k8s.io/v1"},
           {"kind", "ClusterRole"},
           {"metadata", {{"name", "diagnostics-test-operator"}}},
           {"rules",
            {{{"nonResourceURLs", {"/metrics", "/debug/flags/v"}}, {"verbs", {"get", "put"}}}}}});
    apply(clusterRoleBinding("diagnostics-test-operator", "diagnostics-test-operator",
                             serviceAccount("operator")));
    const std::string sa = std::string("--as=system:serviceaccount:") + kNamespace + ":";
    ASSERT_TRUE(canI(
        {"create", "tokenreviews.authentication.k8s.io", std::string("--as=") + kManagerUser}));
    ASSERT_TRUE(canI({"create", "subjectaccessreviews.authorization.k8s.io",
                      std::string("--as=") + kManagerUser}));
    ASSERT_TRUE(canI({"get", "/metrics", sa + "scraper"}));
    ASSERT_TRUE(canI({"put", "/debug/flags/v", sa + "operator"}));

    // The server, as the manager builds it, with a user bound to exactly
    // config/rbac's ClusterRole and no certificate files.
    kube::LoadOptions load;
    load.kubeconfig = rig::userKubeconfig(rig, kManagerUser);
    absl::StatusOr<kube::RestConfig> config = kube::loadConfig(load);
    ASSERT_TRUE(config.ok()) << config.status();
    logger_ = std::make_shared<spdlog::logger>(
        "diagnostics-integration", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    logger_->set_level(spdlog::level::info);
    absl::StatusOr<std::unique_ptr<kube::RestClient>> rest =
        kube::RestClient::create(*config, kube::realClock(), nullptr, logger_);
    ASSERT_TRUE(rest.ok()) << rest.status();
    rest_ = *std::move(rest);
    registry_ = std::make_unique<kube::MetricsRegistry>();
    metrics_ = std::make_unique<controllers::CaptfMetrics>(*registry_, "1.2.3", "abc");
    kube::ServerOptions options = serverOptions();
    ASSERT_TRUE(parseAddress("127.0.0.1:0", options).ok());
    options.cert_dir = rig.dir + "/no-metrics-certs/";
    server_ = std::make_unique<SecureDiagnosticsServer>(options, *registry_, *rest_,
                                                        kube::realClock(), logger_);
    ASSERT_TRUE(server_->start().ok());
  }

  static void TearDownTestSuite() {
    if (server_) {
      server_->stop();
    }
    server_.reset();
    metrics_.reset();
    registry_.reset();
    rest_.reset();
  }

  // Accepts any certificate, as a ServiceMonitor with insecureSkipVerify.
  static std::unique_ptr<HttpsClient> client(const std::string& token = "") {
    auto c = std::make_unique<HttpsClient>("127.0.0.1", server_->port(), "");
    c->setBearerToken(token);
    return c;
  }

  static inline std::ostringstream log_;
  static inline std::shared_ptr<spdlog::logger> logger_;
  static inline std::unique_ptr<kube::RestClient> rest_;
  static inline std::unique_ptr<kube::MetricsRegistry> registry_;
  static inline std::unique_ptr<controllers::CaptfMetrics> metrics_;
  static inline std::unique_ptr<SecureDiagnosticsServer> server_;
};

TEST_F(SecureDiagnosticsIntegrationTest, ServesASelfSignedCertificateWhenNoFilesExist) {
  EXPECT_TRUE(server_->selfSigned());
  auto c = client();
  ASSERT_TRUE(c->connect().ok());
  EXPECT_TRUE(c->peerSelfSigned());
}

TEST_F(SecureDiagnosticsIntegrationTest, NoOrAnInvalidTokenIsUnauthorized) {
  auto r = client()->get("/metrics");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 401);
  EXPECT_THAT(r->body, ::testing::Not(HasSubstr("captf_build_info")));
  r = client("not-a-token")->get("/metrics");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 401);
}

TEST_F(SecureDiagnosticsIntegrationTest, AServiceAccountWithoutTheNonResourceUrlIsForbidden) {
  auto c = client(tokenOf("stranger"));
  auto r = c->get("/metrics");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 403);
  EXPECT_THAT(r->body, HasSubstr("system:serviceaccount:diagnostics-test:stranger"));
}

TEST_F(SecureDiagnosticsIntegrationTest, TheMetricsReaderScrapesMetrics) {
  auto c = client(tokenOf("scraper"));
  for (int i = 0; i < 3; ++i) { // one keep-alive connection, answers from the caches
    auto r = c->get("/metrics");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 200);
    EXPECT_THAT(r->body, HasSubstr("captf_build_info{"));
  }
  // The role grants /metrics only.
  auto r = c->put("/debug/flags/v", "4");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(logger_->level(), spdlog::level::info);
}

TEST_F(SecureDiagnosticsIntegrationTest, PutDebugFlagsVChangesTheVerbosityWhenAuthorized) {
  auto c = client(tokenOf("operator"));
  auto r = c->put("/debug/flags/v", "5");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(logger_->level(), spdlog::level::trace);
  // At V(5) refusals are logged, with the user but never the token.
  const std::string token = tokenOf("stranger");
  r = client(token)->get("/metrics");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 403);
  logger_->flush();
  EXPECT_THAT(log_.str(), HasSubstr("diagnostics request forbidden"));
  EXPECT_THAT(log_.str(), HasSubstr("system:serviceaccount:diagnostics-test:stranger"));
  EXPECT_EQ(log_.str().find(token), std::string::npos) << "the token was logged";
  r = c->put("/debug/flags/v", "2");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(logger_->level(), spdlog::level::info);
  // pprof needs get on /debug/pprof/*, which the operator role lacks.
  r = c->get("/debug/pprof/heap");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 403);
}

} // namespace
} // namespace captf::diagnostics
