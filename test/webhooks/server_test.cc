// The webhook HTTPS server over loopback: AdmissionReview in and out, keep-
// alive, routing by path, and handlers that wait on the API server. The
// transport itself (TLS versions, curves, the body limit, certificates and
// their rotation) is tested with kube::HttpsServer in
// test/manager/kube/https_server_test.cc.
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "test/webhooks/https_client.h"
#include "test/webhooks/test_certs.h"
#include "webhooks/registrations.h"
#include "webhooks/server.h"

namespace captf::webhooks {
namespace {

using ::testing::HasSubstr;
using testing::HttpsClient;
using testing::KeyPair;

constexpr const char* kClusterPath =
    "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformcluster";

constexpr const char* kGoodCluster =
    R"({"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"TerraformCluster",)"
    R"("metadata":{"name":"c1","namespace":"ns"},"spec":{"identityRef":{"name":"id"},)"
    R"("source":{"image":"registry.example.com/modules/cluster:v1.0.0"}}})";
constexpr const char* kBadCluster =
    R"({"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"TerraformCluster",)"
    R"("metadata":{"name":"c1","namespace":"ns"},"spec":{"identityRef":{"name":"id"},)"
    R"("source":{"image":"registry.example.com/modules/cluster"}}})";

std::shared_ptr<spdlog::logger> nullLogger() {
  return std::make_shared<spdlog::logger>("webhook-server-test",
                                          std::make_shared<spdlog::sinks::null_sink_mt>());
}

class NoLookups : public AdmissionLookups, public AccessReviewer {
public:
  absl::StatusOr<std::optional<OwnerMachine>> getMachine(std::string_view,
                                                         std::string_view) override {
    return std::optional<OwnerMachine>();
  }
  absl::StatusOr<std::optional<ClusterInfo>> getCluster(std::string_view,
                                                        std::string_view) override {
    return std::optional<ClusterInfo>();
  }
  absl::StatusOr<IdentityUsageSnapshot> identityUsage() override { return IdentityUsageSnapshot{}; }
  absl::StatusOr<AccessDecision> review(const nlohmann::json&) override {
    return AccessDecision{true, false, "", ""};
  }
};

class WebhookServerTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("captf-webhook-server-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    ca_ = testing::makeCa("captf-test-ca");
    testing::writePair(dir_.string(), testing::makeServingCert(ca_, {"localhost"}, 100));
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  void start(kube::ServerOptions options = {}) {
    options.address = "127.0.0.1";
    options.port = 0;
    options.cert_dir = dir_.string();
    options.reload_interval = std::chrono::milliseconds(50);
    server_ = std::make_unique<WebhookServer>(options, handler_, nullLogger());
    ASSERT_TRUE(server_->start().ok());
  }

  HttpsClient client(bool max_tls12 = false) const {
    return {"127.0.0.1", server_->port(), ca_.cert_pem, max_tls12};
  }

  std::filesystem::path dir_;
  KeyPair ca_;
  NoLookups lookups_;
  AdmissionHandler handler_{lookups_, lookups_};
  std::unique_ptr<WebhookServer> server_;
};

TEST_F(WebhookServerTest, AdmitsAndDeniesWithTheUidEchoedOnOneKeepAliveConnection) {
  start();
  HttpsClient c = client();
  auto good =
      c.post(kClusterPath, testing::admissionReview("uid-1", "TerraformCluster", kGoodCluster));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->status, 200);
  EXPECT_TRUE(good->keep_alive);
  const auto good_doc = nlohmann::json::parse(good->body);
  EXPECT_EQ(good_doc["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(good_doc["response"]["uid"], "uid-1");
  EXPECT_EQ(good_doc["response"]["allowed"], true);

  auto bad =
      c.post(kClusterPath, testing::admissionReview("uid-2", "TerraformCluster", kBadCluster));
  ASSERT_TRUE(bad.ok()) << bad.status();
  const auto bad_doc = nlohmann::json::parse(bad->body);
  EXPECT_EQ(bad_doc["response"]["uid"], "uid-2");
  EXPECT_EQ(bad_doc["response"]["allowed"], false);
  EXPECT_EQ(bad_doc["response"]["status"]["code"], 422);
  EXPECT_THAT(bad_doc["response"]["status"]["message"].get<std::string>(),
              HasSubstr("spec.source.image"));
}

TEST_F(WebhookServerTest, IgnoresTheTimeoutQueryTheApiServerAppends) {
  start();
  HttpsClient c = client();
  auto r = c.post(std::string(kClusterPath) + "?timeout=10s",
                  testing::admissionReview("uid-q", "TerraformCluster", kGoodCluster));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(nlohmann::json::parse(r->body)["response"]["allowed"], true);
}

// An access review that waits for the API server (here: until released)
// runs on a handler thread; with one I/O thread, other connections are still
// answered meanwhile.
class GatedReviewer : public NoLookups {
public:
  absl::StatusOr<AccessDecision> review(const nlohmann::json&) override {
    std::unique_lock lock(mu_);
    started_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_; });
    return AccessDecision{true, false, "", ""};
  }
  void waitStarted() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return started_; });
  }
  void release() {
    std::scoped_lock lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool released_ = false;
};

TEST_F(WebhookServerTest, AReviewWaitingOnTheApiServerDoesNotStallOtherConnections) {
  GatedReviewer reviewer;
  AdmissionHandler handler(reviewer, reviewer);
  kube::ServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.cert_dir = dir_.string();
  options.io_threads = 1;
  WebhookServer server(options, handler, nullLogger());
  ASSERT_TRUE(server.start().ok());
  const std::string identity =
      R"({"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"TerraformClusterIdentity",)"
      R"("metadata":{"name":"id"},"spec":{"secretRef":{"name":"creds","namespace":"ns"}}})";
  absl::StatusOr<testing::HttpsReply> slow;
  std::thread blocked([&] {
    HttpsClient c("127.0.0.1", server.port(), ca_.cert_pem);
    slow = c.post("/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformclusteridentity",
                  testing::admissionReview("uid-slow", "TerraformClusterIdentity", identity));
  });
  reviewer.waitStarted();
  HttpsClient fast("127.0.0.1", server.port(), ca_.cert_pem);
  auto r = fast.post(kClusterPath,
                     testing::admissionReview("uid-fast", "TerraformCluster", kGoodCluster));
  reviewer.release();
  blocked.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(nlohmann::json::parse(r->body)["response"]["uid"], "uid-fast");
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_EQ(nlohmann::json::parse(slow->body)["response"]["allowed"], true);
}

TEST_F(WebhookServerTest, ServesEveryRegisteredPathAndNoOther) {
  start();
  for (const WebhookRegistration& reg : webhookRegistrations()) {
    const WebhookServer::Reply reply = server_->serve(
        "POST", reg.path, testing::admissionReview("u", "SomethingElse", kGoodCluster));
    EXPECT_EQ(reply.status, 200) << reg.path;
    EXPECT_THAT(reply.body, HasSubstr(reg.kind)) << reg.path;
  }
  EXPECT_EQ(server_->serve("POST", "/validate-something", "{}").status, 404);
  EXPECT_EQ(server_->serve("GET", kClusterPath, "").status, 405);
  EXPECT_EQ(server_->serve("GET", "/readyz", "").status, 200);
}

TEST_F(WebhookServerTest, MalformedReviewsAreDeniedAsBadRequests) {
  start();
  const WebhookServer::Reply reply = server_->serve(
      "POST", kClusterPath,
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-9"}})");
  ASSERT_EQ(reply.status, 200);
  const auto doc = nlohmann::json::parse(reply.body);
  EXPECT_EQ(doc["response"]["uid"], "u-9");
  EXPECT_EQ(doc["response"]["allowed"], false);
  EXPECT_EQ(doc["response"]["status"]["code"], 400);
}

TEST(WebhookRegistrationsTest, ConfigWebhookManifestIsGeneratedFromTheRegistrations) {
  const char* source_dir = std::getenv("CAPTF_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr);
  std::ifstream in(std::filesystem::path(source_dir) / "config/webhook/manifests.yaml");
  ASSERT_TRUE(in) << "config/webhook/manifests.yaml is missing";
  std::stringstream buf;
  buf << in.rdbuf();
  EXPECT_EQ(buf.str(), toYaml(validatingWebhookConfiguration(ServiceClientConfig{})))
      << "regenerate with: webhook-server --print-webhook-configuration > "
         "config/webhook/manifests.yaml";
}

TEST(WebhookRegistrationsTest, UrlConfigurationPointsEveryHookAtTheServer) {
  const nlohmann::json doc =
      validatingWebhookConfiguration(UrlClientConfig{"https://127.0.0.1:1234", "PEM"}, "x");
  ASSERT_EQ(doc["webhooks"].size(), 7U);
  for (const nlohmann::json& hook : doc["webhooks"]) {
    EXPECT_THAT(hook["clientConfig"]["url"].get<std::string>(),
                HasSubstr("https://127.0.0.1:1234/validate-"));
    EXPECT_EQ(hook["clientConfig"]["caBundle"], "UEVN");
  }
  EXPECT_EQ(doc["webhooks"][6]["rules"][0]["resources"][0], "terraformclusteridentities");
}

} // namespace
} // namespace captf::webhooks
