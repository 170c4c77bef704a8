// The validating webhooks against a real kube-apiserver (rig tier
// `integration`): the CRDs of config/crd/bases installed, the webhook server
// running in this process on 127.0.0.1 with a certificate from a test CA,
// registered by URL and caBundle from the same registrations as
// config/webhook. Every case of test/webhooks/manifests/cases.yaml is applied
// with `kubectl apply --server-side`; then a certificate rotation under
// sustained load must not fail a single admission.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include "manager/kube/authorization.h"
#include "manager/kube/clock.h"
#include "manager/kube/config.h"
#include "manager/kube/discovery.h"
#include "manager/kube/https_server.h"
#include "test/rig/fixture.h"
#include "test/webhooks/https_client.h"
#include "test/webhooks/test_certs.h"
#include "webhooks/kube_lookups.h"
#include "webhooks/registrations.h"
#include "webhooks/server.h"

namespace captf::webhooks {
namespace {

using rig::CommandResult;
using ::testing::HasSubstr;

constexpr const char* kNamespace = "captf-webhook-test";
constexpr const char* kNoSecretsUser = "captf-test-no-secrets";

std::string sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string manifestDir() {
  return sourceDir() + "/test/webhooks/manifests/";
}

// Minimal stand-ins for Cluster API's Machine and Cluster: the delete
// guards read spec.clusterName, spec.paused, spec.infrastructureRef and
// metadata, which an open schema keeps.
constexpr const char* kClusterApiCrds = R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: machines.cluster.x-k8s.io
spec:
  group: cluster.x-k8s.io
  scope: Namespaced
  names: {plural: machines, singular: machine, kind: Machine, listKind: MachineList}
  versions:
  - name: v1beta2
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusters.cluster.x-k8s.io
spec:
  group: cluster.x-k8s.io
  scope: Namespaced
  names: {plural: clusters, singular: cluster, kind: Cluster, listKind: ClusterList}
  versions:
  - name: v1beta2
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)";

// One step of a case: apply a file or delete an object.
struct Step {
  std::string apply; // file relative to manifests/
  std::string as;
  bool dry_run = false;
  std::string delete_kind;
  std::string delete_name;
  std::string delete_namespace;
};

struct Scenario {
  std::string name; // gtest-safe
  std::vector<Step> steps;
  bool accepted = true;
  std::string by;
  std::string field;
  std::string message;
};

std::vector<Step> stepsOf(const YAML::Node& steps) {
  std::vector<Step> out;
  for (const YAML::Node& s : steps) {
    Step step;
    if (s["apply"]) {
      step.apply = s["apply"].as<std::string>();
      step.as = s["as"] ? s["as"].as<std::string>() : "";
      step.dry_run = s["dryRun"] && s["dryRun"].as<bool>();
    } else {
      const YAML::Node d = s["delete"];
      step.delete_kind = d["kind"].as<std::string>();
      step.delete_name = d["name"].as<std::string>();
      step.delete_namespace = d["namespace"] ? d["namespace"].as<std::string>() : "";
    }
    out.push_back(step);
  }
  return out;
}

std::string safeName(std::string s) {
  for (char& c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) {
      c = '_';
    }
  }
  return s;
}

void addScenarios(const std::string& case_name, const YAML::Node& node, bool accepted,
                  std::vector<Scenario>& out) {
  if (!node) {
    return;
  }
  std::vector<YAML::Node> entries;
  if (node.IsSequence()) {
    for (const YAML::Node& e : node) {
      entries.push_back(e);
    }
  } else {
    entries.push_back(node);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node& e = entries[i];
    Scenario s;
    s.accepted = accepted;
    s.name = safeName(case_name + (accepted ? "_accepted" : "_rejected") +
                      (entries.size() > 1 ? "_" + std::to_string(i) : ""));
    s.steps = stepsOf(e["steps"]);
    s.by = e["by"] ? e["by"].as<std::string>() : "";
    s.field = e["field"] ? e["field"].as<std::string>() : "";
    s.message = e["message"] ? e["message"].as<std::string>() : "";
    out.push_back(s);
  }
}

std::vector<Scenario> loadScenarios() {
  std::vector<Scenario> out;
  const YAML::Node doc = YAML::LoadFile(manifestDir() + "cases.yaml");
  for (const YAML::Node& c : doc["cases"]) {
    const auto name = c["name"].as<std::string>();
    addScenarios(name, c["accepted"], true, out);
    addScenarios(name, c["rejected"], false, out);
  }
  return out;
}

// The rig, the CRDs, the server and its registration, shared by every test
// of this binary.
struct Installation {
  const rig::Env* env = nullptr;
  std::string cert_dir;
  testing::KeyPair ca;
  std::unique_ptr<kube::RestClient> rest;
  kube::StaticRestMapper mapper;
  std::unique_ptr<kube::ApiClient> client;
  std::unique_ptr<KubeAdmissionLookups> lookups;
  std::unique_ptr<kube::KubeAccessReviewer> reviewer;
  std::unique_ptr<AdmissionHandler> handler;
  std::unique_ptr<WebhookServer> server;
};

// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state.
Installation* installation = nullptr;

void must(const CommandResult& r, const std::string& what) {
  ASSERT_EQ(r.exit_code, 0) << what << ": " << r.output;
}

void install() {
  auto* inst = new Installation();
  installation = inst;
  inst->env = &rig::shared(rig::Tier::kIntegration);
  const rig::Env& env = *inst->env;

  must(rig::kubectl(env, {"apply", "--server-side", "-f", sourceDir() + "/config/crd/bases"}),
       "install CRDs");
  must(rig::kubectl(env, {"apply", "--server-side", "-f", "-"}, kClusterApiCrds),
       "install Cluster API stand-in CRDs");
  must(rig::kubectl(env, {"wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"}),
       "wait for CRDs");

  // The serving certificate and its CA.
  inst->cert_dir = env.dir + "/webhook-certs";
  inst->ca = testing::makeCa("captf-webhook-test-ca");
  testing::writePair(inst->cert_dir, testing::makeServingCert(inst->ca, {"localhost"}, 1));

  // The server in this process, wired to the API server as the manager is.
  kube::LoadOptions load;
  load.kubeconfig = env.kubeconfig;
  absl::StatusOr<kube::RestConfig> config = kube::loadConfig(load);
  ASSERT_TRUE(config.ok()) << config.status();
  config->timeout = std::chrono::seconds(5);
  auto logger = spdlog::stderr_logger_mt("webhooks-integration");
  logger->set_level(spdlog::level::warn);
  absl::StatusOr<std::unique_ptr<kube::RestClient>> rest =
      kube::RestClient::create(*config, kube::realClock(), nullptr, logger);
  ASSERT_TRUE(rest.ok()) << rest.status();
  inst->rest = *std::move(rest);
  addAdmissionResources(inst->mapper);
  inst->client = std::make_unique<kube::ApiClient>(*inst->rest, inst->mapper);
  inst->lookups = std::make_unique<KubeAdmissionLookups>(*inst->client);
  inst->reviewer = std::make_unique<kube::KubeAccessReviewer>(*inst->rest);
  inst->handler = std::make_unique<AdmissionHandler>(*inst->lookups, *inst->reviewer);
  kube::ServerOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  options.cert_dir = inst->cert_dir;
  options.reload_interval = std::chrono::milliseconds(200);
  inst->server = std::make_unique<WebhookServer>(options, *inst->handler, logger);
  absl::Status started = inst->server->start();
  ASSERT_TRUE(started.ok()) << started;

  // Registered by URL and caBundle from the registrations config/webhook
  // is generated from.
  const nlohmann::json configuration = validatingWebhookConfiguration(
      UrlClientConfig{"https://127.0.0.1:" + std::to_string(inst->server->port()),
                      inst->ca.cert_pem},
      kWebhookConfigurationName);
  must(rig::kubectl(env, {"apply", "--server-side", "-f", "-"}, configuration.dump()),
       "register the webhooks");

  // The test namespace, the Secret the identity case names, and a user who
  // may write identities but not read Secrets.
  must(rig::kubectl(env, {"create", "namespace", kNamespace}), "create namespace");
  must(rig::kubectl(env, {"create", "secret", "generic", "captf-webhook-test-credentials", "-n",
                          kNamespace, "--from-literal=token=not-a-secret"}),
       "create secret");
  must(rig::kubectl(env, {"create", "clusterrole", "captf-test-identity-writer",
                          "--verb=get,list,create,update,patch",
                          "--resource=terraformclusteridentities.infrastructure.cluster.x-k8s.io"}),
       "create clusterrole");
  must(rig::kubectl(env, {"create", "clusterrolebinding", "captf-test-identity-writer",
                          "--clusterrole=captf-test-identity-writer",
                          std::string("--user=") + kNoSecretsUser}),
       "create clusterrolebinding");

  // The API server picks up webhook configurations asynchronously: wait
  // until a write the webhook rejects is rejected.
  const std::string rejected = rig::readFile(manifestDir() + "image-reference/rejected.yaml");
  for (int i = 0; i < 100; ++i) {
    const CommandResult r =
        rig::kubectl(env, {"apply", "--server-side", "--dry-run=server", "-f", "-"}, rejected);
    if (r.exit_code != 0 && r.output.find("spec.source.image") != std::string::npos) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  FAIL() << "the webhook never took effect";
}

// Leaves the test namespace and the cluster-scoped identities empty. Owner
// Machines go first (a TerraformMachine whose owner lives is guarded), then
// the workload kinds, then identities (guarded while used).
void cleanUp(const rig::Env& env) {
  rig::kubectl(env, {"delete", "machines.cluster.x-k8s.io,clusters.cluster.x-k8s.io", "--all", "-n",
                     kNamespace, "--wait=true"});
  rig::kubectl(
      env, {"delete",
            // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one argument, split over lines.
            "terraformmachines,terraformclusters,terraformmachinepools,"
            "terraformclustertemplates,terraformmachinetemplates,"
            "terraformmachinepooltemplates",
            "--all", "-n", kNamespace, "--wait=true"});
  rig::kubectl(env, {"delete", "terraformclusteridentities", "--all", "--wait=true"});
}

// Replaces ${UID:Kind/name} with that object's metadata.uid.
std::string substituteUids(const rig::Env& env, std::string text) {
  static const std::regex kUid(R"(\$\{UID:([A-Za-z]+)/([a-z0-9.-]+)\})");
  std::smatch m;
  while (std::regex_search(text, m, kUid)) {
    const CommandResult r = rig::kubectl(
        env, {"get", m[1].str(), m[2].str(), "-n", kNamespace, "-o", "jsonpath={.metadata.uid}"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    text.replace(static_cast<size_t>(m.position(0)), static_cast<size_t>(m.length(0)), r.output);
  }
  return text;
}

CommandResult runStep(const rig::Env& env, const Step& step) {
  if (!step.apply.empty()) {
    std::vector<std::string> args = {"apply", "--server-side", "-f", "-"};
    if (!step.as.empty()) {
      args.push_back("--as=" + step.as);
    }
    if (step.dry_run) {
      args.emplace_back("--dry-run=server");
    }
    return rig::kubectl(env, args, substituteUids(env, rig::readFile(manifestDir() + step.apply)));
  }
  std::vector<std::string> args = {"delete", step.delete_kind, step.delete_name, "--wait=true"};
  if (!step.delete_namespace.empty()) {
    args.emplace_back("-n");
    args.push_back(step.delete_namespace);
  }
  return rig::kubectl(env, args);
}

class WebhookCaseTest : public ::testing::TestWithParam<Scenario> {
protected:
  static void SetUpTestSuite() {
    if (installation == nullptr) {
      install();
    }
  }
  void SetUp() override {
    ASSERT_NE(installation, nullptr);
    ASSERT_NE(installation->server, nullptr) << "the installation failed";
    cleanUp(*installation->env);
  }
};

TEST_P(WebhookCaseTest, AppliesAsTheCaseSays) {
  const Scenario& s = GetParam();
  const rig::Env& env = *installation->env;
  ASSERT_FALSE(s.steps.empty());
  for (size_t i = 0; i + 1 < s.steps.size(); ++i) {
    const CommandResult r = runStep(env, s.steps[i]);
    ASSERT_EQ(r.exit_code, 0) << "step " << i << " (" << s.steps[i].apply << s.steps[i].delete_name
                              << "): " << r.output;
  }
  const CommandResult last = runStep(env, s.steps.back());
  if (s.accepted) {
    EXPECT_EQ(last.exit_code, 0) << last.output;
    return;
  }
  EXPECT_NE(last.exit_code, 0) << last.output;
  if (!s.field.empty()) {
    EXPECT_THAT(last.output, HasSubstr(s.field));
  }
  // The API server passes the webhook's Status through verbatim, so the
  // output does not say whether the schema or the webhook refused.
  EXPECT_THAT(last.output, HasSubstr(s.message));
}

INSTANTIATE_TEST_SUITE_P(Cases, WebhookCaseTest, ::testing::ValuesIn(loadScenarios()),
                         [](const ::testing::TestParamInfo<Scenario>& param_info) {
                           return param_info.param.name;
                         });

class WebhookServerIntegrationTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    if (installation == nullptr) {
      install();
    }
  }
  void SetUp() override {
    ASSERT_NE(installation, nullptr);
    ASSERT_NE(installation->server, nullptr) << "the installation failed";
    cleanUp(*installation->env);
  }
};

// The user refused in the identity-secret-access case is admitted once an
// RBAC grant lets them get the Secret: the SubjectAccessReview is asked as
// the requesting user, not as the webhook.
TEST_F(WebhookServerIntegrationTest, IdentitySecretAccessFollowsTheRequestingUsersRbac) {
  const rig::Env& env = *installation->env;
  const std::string identity =
      rig::readFile(manifestDir() + "identity-secret-access/identity.yaml");
  const std::vector<std::string> as_user = {"apply", "--server-side", "-f", "-",
                                            std::string("--as=") + kNoSecretsUser};
  CommandResult refused = rig::kubectl(env, as_user, identity);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, HasSubstr("spec.secretRef"));

  must(rig::kubectl(env, {"create", "role", "captf-test-read-credentials", "-n", kNamespace,
                          "--verb=get", "--resource=secrets",
                          "--resource-name=captf-webhook-test-credentials"}),
       "create role");
  must(rig::kubectl(env, {"create", "rolebinding", "captf-test-read-credentials", "-n", kNamespace,
                          "--role=captf-test-read-credentials",
                          std::string("--user=") + kNoSecretsUser}),
       "create rolebinding");
  CommandResult admitted = rig::kubectl(env, as_user, identity);
  EXPECT_EQ(admitted.exit_code, 0) << admitted.output;
  rig::kubectl(env,
               {"delete", "rolebinding,role", "captf-test-read-credentials", "-n", kNamespace});
}

// Many concurrent admissions, direct (HTTPS POSTs of AdmissionReviews, each
// client reconnecting every few requests so that handshakes keep happening)
// and through the API server (kubectl dry-run creates), while the serving
// certificate is rotated: not one admission may fail.
TEST_F(WebhookServerIntegrationTest, CertificateRotationUnderLoadFailsNoAdmission) {
  const rig::Env& env = *installation->env;
  WebhookServer& server = *installation->server;
  const int generation_before = server.certificateGeneration();
  const std::string good_cluster = R"({"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1",)"
                                   R"("kind":"TerraformCluster","metadata":{"name":"c1",)"
                                   R"("namespace":"captf-webhook-test"},"spec":{"identityRef":)"
                                   R"({"name":"id"},"source":{"image":"r.example/m:v1"}}})";
  const std::string path = "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformcluster";

  std::atomic<bool> stop{false};
  std::atomic<int> direct_ok{0};
  std::atomic<int> direct_failed{0};
  std::atomic<int> kubectl_ok{0};
  std::atomic<int> kubectl_failed{0};
  std::atomic<int> new_serial_seen{0};
  std::mutex failure_mu;
  std::string first_failure;
  auto record_failure = [&](const std::string& what) {
    std::scoped_lock lock(failure_mu);
    if (first_failure.empty()) {
      first_failure = what;
    }
  };
  const long new_serial = 2;

  std::vector<std::jthread> workers;
  workers.reserve(16);
  for (int w = 0; w < 16; ++w) {
    workers.emplace_back([&, w] {
      int n = 0;
      while (!stop.load()) {
        testing::HttpsClient c("127.0.0.1", server.port(), installation->ca.cert_pem);
        for (int i = 0; i < 20 && !stop.load(); ++i, ++n) {
          const std::string uid = "load-" + std::to_string(w) + "-" + std::to_string(n);
          auto r = c.post(path, testing::admissionReview(uid, "TerraformCluster", good_cluster));
          if (!r.ok() || r->status != 200) {
            ++direct_failed;
            record_failure(r.ok() ? r->body : std::string(r.status().message()));
            continue;
          }
          const nlohmann::json doc = nlohmann::json::parse(r->body, nullptr, false);
          if (doc.is_discarded() || doc["response"]["uid"] != uid ||
              doc["response"]["allowed"] != true) {
            ++direct_failed;
            record_failure(r->body);
            continue;
          }
          ++direct_ok;
          if (c.peerSerial() == new_serial) {
            ++new_serial_seen;
          }
        }
      }
    });
  }
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        const CommandResult r =
            rig::kubectl(env, {"create", "--dry-run=server", "-f", "-"}, good_cluster);
        if (r.exit_code == 0) {
          ++kubectl_ok;
        } else {
          ++kubectl_failed;
          record_failure(r.output);
        }
      }
    });
  }

  // Load is counted, not timed: a loaded machine takes longer, not fewer.
  const auto until = [](const std::function<bool()>& done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (!done() && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  until([&] { return direct_ok.load() >= 500 && kubectl_ok.load() >= 3; });
  testing::writePair(installation->cert_dir,
                     testing::makeServingCert(installation->ca, {"localhost"}, new_serial));
  for (int i = 0; i < 100 && server.certificateGeneration() == generation_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  until([&] {
    return direct_ok.load() > 1000 && new_serial_seen.load() >= 200 && kubectl_ok.load() > 5;
  });
  stop = true;
  workers.clear();

  EXPECT_EQ(server.certificateGeneration(), generation_before + 1);
  EXPECT_GT(new_serial_seen.load(), 0) << "no connection used the rotated certificate";
  EXPECT_GT(direct_ok.load(), 1000);
  EXPECT_GT(kubectl_ok.load(), 5);
  EXPECT_EQ(direct_failed.load(), 0) << first_failure;
  EXPECT_EQ(kubectl_failed.load(), 0) << first_failure;
  std::cout << "admissions during rotation: direct " << direct_ok.load() << " ok, "
            << direct_failed.load() << " failed; through the API server " << kubectl_ok.load()
            << " ok, " << kubectl_failed.load() << " failed\n";
}

// The standalone webhook-server binary stops cleanly on SIGTERM, as a pod
// does on every rollout: exit 0 and no sanitizer report (dev preset: ASan
// and UBSan on). docs/decisions/shutdown.md.
TEST(WebhookServerBinaryTest, StopsCleanlyOnSigterm) {
  const rig::Env& e = rig::shared(rig::Tier::kIntegration);
  const std::string dir = e.dir + "/webhook-server-binary";
  std::filesystem::create_directories(dir);
  const auto ca = testing::makeCa("webhook-server-binary");
  testing::writePair(dir, testing::makeServingCert(ca, {"localhost"}, 1));
  const std::string log = dir + "/out.log";
  const std::vector<std::string> args = {
      CAPTF_WEBHOOK_SERVER_BINARY, "--kubeconfig=" + e.kubeconfig, "--webhook-port=0",
      "--webhook-bind-address=127.0.0.1", "--webhook-cert-dir=" + dir};
  const pid_t pid = rig::spawn(args, log);
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (rig::readFile(log).find("listening on port") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_THAT(rig::readFile(log), HasSubstr("listening on port"));
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const std::string out = rig::readFile(log);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_EQ(rig::sanitizerReport(out), "") << out;
}

} // namespace
} // namespace captf::webhooks
