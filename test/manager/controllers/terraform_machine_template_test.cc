// The TerraformMachineTemplate reconciler over the in-memory API server with
// a scripted registry: what each image's labels give in status, when the
// registry is read, and that the pull Secrets reach it.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "manager/controllers/kinds.h"
#include "manager/controllers/metrics.h"
#include "manager/controllers/terraform_machine_template_controller.h"
#include "manager/kube/clock.h"
#include "manager/kube/metrics.h"
#include "test/contract/tcp_servers.h"
#include "test/manager/controllers/fakes.h"
#include "test/manager/kube/fakes.h"

namespace captf::controllers {
namespace {

using contract::testing::CannedHttpServer;
using contract::testing::httpResponse;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

class MachineTemplateTest : public ::testing::Test {
protected:
  MachineTemplateTest()
      : cache_(store_), metrics_(registry_, "v", "c"),
        reconciler_(ReconcilerDeps{cache_, store_, store_, events_, clock_, metrics_, settings_},
                    [this](const std::string& image,
                           const std::vector<std::pair<std::string, std::string>>& configs)
                        -> absl::StatusOr<std::map<std::string, std::string>> {
                      ++reads_;
                      configs_ = configs;
                      auto it = images_.find(image);
                      if (it == images_.end()) {
                        return absl::UnavailableError("connection refused");
                      }
                      return it->second;
                    }) {}

  void put(const std::string& image, const std::vector<std::string>& pull_secrets = {}) {
    putSource({{"image", image}}, pull_secrets);
  }
  void putSource(const json& source, const std::vector<std::string>& pull_secrets = {}) {
    json secrets = json::array();
    for (const std::string& name : pull_secrets) {
      secrets.push_back({{"name", name}});
    }
    json spec = {{"source", source}};
    if (!secrets.empty()) {
      spec["jobs"]["imagePullSecrets"] = secrets;
    }
    json object = {
        {"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
        {"kind", "TerraformMachineTemplate"},
        {"metadata",
         {{"name", "workers"}, {"namespace", "t1"}, {"generation", 1}, {"resourceVersion", "1"}}},
        {"spec", {{"template", {{"spec", spec}}}}}};
    if (auto existing = store_.get(kinds::kTerraformMachineTemplate, {"t1", "workers"});
        existing.ok()) {
      object["status"] = existing->value("status", json::object());
      object["metadata"]["resourceVersion"] = (*existing)["metadata"]["resourceVersion"];
    }
    store_.put(object);
  }
  absl::StatusOr<kube::Result> reconcile() {
    auto logger = kube::testing::quietLogger();
    return reconciler_.reconcile(kube::ReconcileContext{{}, kube::Logger(logger)},
                                 kube::Request{"t1", "workers"});
  }
  json status() {
    return store_.get(kinds::kTerraformMachineTemplate, {"t1", "workers"})->value("status", json());
  }
  std::string condition(const char* field) {
    for (const json& c : status().value("conditions", json::array())) {
      if (c.value("type", "") == "CapacityResolved") {
        return c.value(field, "");
      }
    }
    return "";
  }

  kube::testing::FakeClient store_;
  StoreCache cache_;
  kube::FakeClock clock_;
  Reasons events_;
  kube::MetricsRegistry registry_;
  CaptfMetrics metrics_;
  ControllerSettings settings_;
  std::map<std::string, std::map<std::string, std::string>> images_;
  std::vector<std::pair<std::string, std::string>> configs_;
  int reads_ = 0;
  TerraformMachineTemplateReconciler reconciler_;
};

TEST_F(MachineTemplateTest, ReportsTheLabelsOnceAndAgainForANewImage) {
  images_["reg.local/m:v1"] = {{"io.captf.capacity", R"({"cpu":"4","memory":"16Gi"})"},
                               {"io.captf.node-info", R"({"architecture":"arm64"})"}};
  images_["reg.local/m:v2"] = {{"io.captf.capacity", R"({"cpu":"8"})"}};
  put("reg.local/m:v1");
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(condition("status"), "True");
  EXPECT_EQ(status()["capacity"]["cpu"], "4");
  EXPECT_EQ(status()["capacity"]["memory"], "16Gi");
  EXPECT_EQ(status()["nodeInfo"]["architecture"], "arm64");
  EXPECT_EQ(status()["capacitySource"]["image"], "reg.local/m:v1");
  EXPECT_THAT(events_.reasons, Contains("CapacityResolved"));
  // Resolved: the registry is not read again for the same image.
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(reads_, 1);
  // A new image is.
  put("reg.local/m:v2");
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(reads_, 2);
  EXPECT_EQ(status()["capacity"], (json{{"cpu", "8"}}));
  EXPECT_FALSE(status().contains("nodeInfo"));
}

TEST_F(MachineTemplateTest, NoLabelsAndInvalidLabelsAreSaid) {
  images_["reg.local/plain:v1"] = {{"org.opencontainers.image.version", "1"}};
  put("reg.local/plain:v1");
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(condition("status"), "False");
  EXPECT_EQ(condition("reason"), "CapacityNotDeclared");

  images_["reg.local/bad:v1"] = {{"io.captf.capacity", R"({"cpu":4})"}};
  put("reg.local/bad:v1");
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(condition("reason"), "CapacityLabelInvalid");
  EXPECT_THAT(condition("message"), HasSubstr("\"cpu\" is not a quantity string"));
  EXPECT_EQ(metrics_.image_inspect_errors_total.withLabels({"label_invalid"}).value(), 1);
}

TEST_F(MachineTemplateTest, AnUnreachableRegistryIsRetriedAndKeepsWhatWasResolved) {
  images_["reg.local/m:v1"] = {{"io.captf.capacity", R"({"cpu":"4"})"}};
  put("reg.local/m:v1");
  ASSERT_TRUE(reconcile().ok());
  put("gone.local/m:v2");
  auto result = reconcile();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->requeue); // with backoff
  EXPECT_EQ(condition("reason"), "ImageInspectFailed");
  EXPECT_THAT(condition("message"), HasSubstr("gone.local"));
  EXPECT_THAT(condition("message"), HasSubstr("connection refused"));
  EXPECT_EQ(status()["capacity"]["cpu"], "4");
  EXPECT_THAT(events_.reasons, Contains("ImageInspectFailed"));
  EXPECT_EQ(metrics_.image_inspect_errors_total.withLabels({"registry"}).value(), 1);
  // Retried: the registry is read again, and the same failure is not
  // counted again (failure counters count transitions).
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(reads_, 3);
  EXPECT_EQ(metrics_.image_inspect_errors_total.withLabels({"registry"}).value(), 1);
}

// docs/decisions/manager-machine-template.md: a Git source has no image to
// inspect. Nothing is read, retried, counted or warned about; the capacity an
// earlier image gave goes.
TEST_F(MachineTemplateTest, AGitSourcedTemplateIsNotInspected) {
  images_["reg.local/m:v1"] = {{"io.captf.capacity", R"({"cpu":"4"})"}};
  put("reg.local/m:v1");
  ASSERT_TRUE(reconcile().ok());
  ASSERT_EQ(status()["capacity"]["cpu"], "4");
  events_.reasons.clear();
  putSource({{"git",
              {{"url", "https://git.example/modules.git"},
               {"ref", {{"branch", "main"}}},
               {"path", "machine"},
               {"runtimeImage", "reg.local/tofu:1"}}}});
  for (int i = 0; i < 3; ++i) {
    auto result = reconcile();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_FALSE(result->requeue);
  }
  EXPECT_EQ(reads_, 1) << "only the earlier image was read";
  EXPECT_EQ(condition("status"), "False");
  EXPECT_EQ(condition("reason"), "CapacityNotDeclared");
  EXPECT_THAT(condition("message"), HasSubstr("Git"));
  EXPECT_FALSE(status().contains("capacity")) << status().dump();
  EXPECT_FALSE(status().contains("capacitySource")) << status().dump();
  EXPECT_THAT(events_.reasons, IsEmpty());
  for (const char* reason : {"registry", "not_found", "label_invalid"}) {
    EXPECT_EQ(metrics_.image_inspect_errors_total.withLabels({reason}).value(), 0) << reason;
  }
}

// An inspection that keeps failing is one Warning Event, when it begins;
// the retries say nothing new. Each new failure after a success is one
// more.
TEST_F(MachineTemplateTest, AFailingImageIsOneEventAcrossItsRetries) {
  const auto inspect_failures = [&] {
    return std::count(events_.reasons.begin(), events_.reasons.end(), "ImageInspectFailed");
  };
  put("reg.local/m:v1");
  for (int i = 0; i < 4; ++i) {
    auto result = reconcile();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(result->requeue);
  }
  EXPECT_EQ(reads_, 4);
  EXPECT_EQ(condition("reason"), "ImageInspectFailed");
  EXPECT_EQ(inspect_failures(), 1) << ::testing::PrintToString(events_.reasons);
  // The registry answers: resolved; then it fails again for a new image.
  images_["reg.local/m:v1"] = {{"io.captf.capacity", R"({"cpu":"4"})"}};
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(condition("reason"), "CapacityResolved");
  put("reg.local/m:v2");
  ASSERT_TRUE(reconcile().ok());
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(inspect_failures(), 2) << ::testing::PrintToString(events_.reasons);
  EXPECT_EQ(metrics_.image_inspect_errors_total.withLabels({"registry"}).value(), 2);
}

TEST_F(MachineTemplateTest, ThePullSecretsReachTheRegistry) {
  images_["reg.local/m:v1"] = {};
  store_.put({{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata", {{"name", "pull"}, {"namespace", "t1"}, {"resourceVersion", "1"}}},
              {"type", "kubernetes.io/dockerconfigjson"},
              {"data", {{".dockerconfigjson", "eyJhdXRocyI6e319"}}}}); // {"auths":{}}
  put("reg.local/m:v1", {"pull", "missing"});
  ASSERT_TRUE(reconcile().ok());
  ASSERT_EQ(configs_.size(), 1U);
  EXPECT_EQ(configs_[0].first, "image pull Secret pull");
  EXPECT_EQ(configs_[0].second, R"({"auths":{}})");
}

// With the real registry reader (lint/oci): a registry cannot send the
// manager, with the template's pull credentials, to a plain-HTTP token
// realm on another host, and no answer's body reaches the status
// (docs/decisions/lint-image-registry.md, "Token realm", "Error answers").
TEST_F(MachineTemplateTest, ARegistryCannotSteerTheManagerToAPlainHttpRealmNorQuoteABody) {
  constexpr std::string_view kCanary = "CANARY-metadata-7f3a";
  CannedHttpServer realm(httpResponse(403, "Forbidden", {}, kCanary));
  CannedHttpServer steering(
      httpResponse(401, "Unauthorized",
                   {{"WWW-Authenticate",
                     "Bearer realm=\"http://127.0.0.1:" + std::to_string(realm.port()) + "/x\""}},
                   kCanary));
  CannedHttpServer failing(httpResponse(500, "Oops", {}, kCanary));
  // "localhost" is another host than the realm's 127.0.0.1.
  const std::string steering_host = "localhost:" + std::to_string(steering.port());
  ImageInspectOptions options;
  options.insecure_registries = {steering_host, failing.host()};
  options.timeout = std::chrono::seconds(5);
  TerraformMachineTemplateReconciler real(
      ReconcilerDeps{cache_, store_, store_, events_, clock_, metrics_, settings_},
      registryLabelReader(options));
  const auto reconcile_real = [&] {
    auto logger = kube::testing::quietLogger();
    return real.reconcile(kube::ReconcileContext{{}, kube::Logger(logger)},
                          kube::Request{"t1", "workers"});
  };

  put(steering_host + "/team/module:v1");
  ASSERT_TRUE(reconcile_real().ok());
  EXPECT_EQ(condition("reason"), "ImageInspectFailed");
  EXPECT_THAT(condition("message"), HasSubstr("token realm at http://127.0.0.1:"));
  EXPECT_THAT(status().dump(), Not(HasSubstr(kCanary)));
  EXPECT_THAT(realm.requests(), IsEmpty());

  put(failing.host() + "/team/module:v1");
  ASSERT_TRUE(reconcile_real().ok());
  EXPECT_EQ(condition("reason"), "ImageInspectFailed");
  EXPECT_THAT(condition("message"), HasSubstr("answered 500"));
  EXPECT_THAT(status().dump(), Not(HasSubstr(kCanary)));
}

} // namespace
} // namespace captf::controllers
