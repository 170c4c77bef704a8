// The manager end to end on the rig's capi tier: Cluster API v1.14 core
// controllers, real Jobs run by the process kubelet, real OpenTofu against
// the kubernetes backend, and the `manager` executable as a local process
// authenticated as a user bound to exactly config/rbac's ClusterRole.
//
//   a Cluster whose infrastructureRef is a TerraformCluster (noop cluster
//   module image) → the manager creates the apply Job → the TerraformCluster
//   is Provisioned and Ready → the Cluster is InfrastructureReady → the state
//   Secret is adopted (ownerReference + inputs hash); changing a variable
//   re-applies with a new hash; a replacing change is blocked until approved;
//   deleting the Cluster destroys, removes state and finalizers, and leaves
//   nothing the manager created behind.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contract/roles.h"
#include "test/rig/fixture.h"
#include "test/runner/e2e_support.h"
#include "webhooks/registrations.h"

extern char** environ;

namespace captf::controllers {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNamespace[] = "tc-e2e";
constexpr char kIdentity[] = "tc-e2e";
constexpr char kUser[] = "captf-manager-e2e";

const rig::Env& env() {
  return rig::shared(rig::Tier::kCapi);
}

std::string sourceDir() {
  return CAPTF_E2E_SOURCE_DIR;
}

rig::CommandResult kubectl(const std::vector<std::string>& args, const std::string& in = "") {
  return rig::kubectl(env(), args, in);
}

void apply(const json& manifest) {
  const rig::CommandResult r =
      kubectl({"apply", "--server-side", "--force-conflicts", "-f", "-"}, manifest.dump());
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

json getJson(const std::vector<std::string>& args) {
  std::vector<std::string> full = args;
  full.insert(full.end(), {"-o", "json"});
  const rig::CommandResult r = kubectl(full);
  if (r.exit_code != 0) {
    return json();
  }
  json parsed = json::parse(r.output, nullptr, false);
  return parsed.is_discarded() ? json() : parsed;
}

// Polls `check` every 500 ms for up to `limit`; returns whether it held.
bool eventually(const std::function<bool()>& check,
                std::chrono::seconds limit = std::chrono::seconds(240)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (check()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return check();
}

std::string conditionOf(const json& object, const std::string& type, const char* field) {
  const json conditions = object.value("status", json::object()).value("conditions", json::array());
  for (const json& c : conditions) {
    if (c.value("type", "") == type) {
      return c.value(field, "");
    }
  }
  return "";
}

int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// The manager executable as a child process of the test.
class ManagerProcess {
public:
  void start(const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> argv = {CAPTF_MANAGER_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (std::string& a : argv) {
      raw.push_back(a.data());
    }
    raw.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      env_strings.emplace_back(*e);
    }
    env_strings.emplace_back("POD_NAMESPACE=captf-system");
    std::vector<char*> envp;
    for (std::string& e : env_strings) {
      envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    const int rc = posix_spawn(&pid_, raw[0], &actions, nullptr, raw.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << "cannot start " << raw[0];
  }
  void stop(int sig = SIGTERM) {
    if (pid_ <= 0) {
      return;
    }
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  bool running() const { return pid_ > 0 && ::kill(pid_, 0) == 0; }
  ~ManagerProcess() { stop(SIGKILL); }

private:
  pid_t pid_ = -1;
};

class TerraformClusterE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    const rig::Env& rig = env();
    dir_ = rig.dir + "/manager-e2e";
    fs::create_directories(dir_ + "/certs");
    // CRDs and the manager's RBAC exactly as shipped.
    rig::CommandResult r = kubectl({"apply", "--server-side", "-k", sourceDir() + "/config/crd"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = kubectl({"create", "namespace", "captf-system"});
    r = kubectl({"apply", "--server-side", "-k", sourceDir() + "/config/rbac"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* crd : {"terraformclusters", "terraformclusteridentities"}) {
      r = kubectl({"wait", "--for=condition=Established", "--timeout=60s",
                   std::string("crd/") + crd + ".infrastructure.cluster.x-k8s.io"});
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    // A user bound to the ClusterRole and the leader-election Role, nothing else.
    kubeconfig_ = rig::userKubeconfig(rig, kUser);
    apply({{"apiVersion", "rbac.authorization.k8s.io/v1"},
           {"kind", "ClusterRoleBinding"},
           {"metadata", {{"name", "captf-manager-e2e"}}},
           {"roleRef",
            {{"apiGroup", "rbac.authorization.k8s.io"},
             {"kind", "ClusterRole"},
             {"name", "captf-manager-role"}}},
           {"subjects",
            {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", kUser}}}}});
    apply({{"apiVersion", "rbac.authorization.k8s.io/v1"},
           {"kind", "RoleBinding"},
           {"metadata", {{"name", "captf-manager-e2e"}, {"namespace", "captf-system"}}},
           {"roleRef",
            {{"apiGroup", "rbac.authorization.k8s.io"},
             {"kind", "Role"},
             {"name", "captf-leader-election-role"}}},
           {"subjects",
            {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", kUser}}}}});

    // Images: the runner (init container) and the noop cluster module with
    // one user variable `size`.
    runner_image_ = runner::e2e::Images::get().runner();
    module_image_ = moduleImage("1");

    // The webhook server's certificate (the API server calls it by URL).
    r = rig::run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                  "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                  dir_ + "/certs/tls.key", "-out", dir_ + "/certs/tls.crt"});
    ASSERT_EQ(r.exit_code, 0) << r.output;

    // The tenant namespace, the identity and its Secret.
    kubectl({"create", "namespace", kNamespace});
    apply({{"apiVersion", "v1"},
           {"kind", "Secret"},
           {"metadata", {{"name", "tc-e2e-credentials"}, {"namespace", "captf-system"}}},
           {"stringData", {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}}}});
    apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
           {"kind", "TerraformClusterIdentity"},
           {"metadata", {{"name", kIdentity}}},
           {"spec",
            {{"secretRef", {{"name", "tc-e2e-credentials"}, {"namespace", "captf-system"}}},
             {"allowedNamespaces", {{"list", {kNamespace}}}}}}});
    startManager();
  }

  static void TearDownTestSuite() { manager_.stop(); }

  static std::string moduleImage(const std::string& revision) {
    const std::string main_tf = runner::e2e::noopModule(contract::Role::kCluster, revision) +
                                "variable \"size\" {\n"
                                "  type    = string\n"
                                "  default = \"small\"\n"
                                "}\n"
                                "resource \"terraform_data\" \"sized\" {\n"
                                "  input = var.size\n"
                                "}\n";
    return runner::e2e::Images::get().module("tc-e2e-" + revision, main_tf, env().tofu);
  }

  static void startManager() {
    webhook_port_ = freePort();
    health_port_ = freePort();
    metrics_port_ = freePort();
    manager_.start({"--kubeconfig=" + kubeconfig_, "--runner-image=" + runner_image_,
                    "--leader-elect", "--leader-elect-lease-duration=4s",
                    "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s",
                    "--webhook-port=" + std::to_string(webhook_port_),
                    "--webhook-cert-dir=" + dir_ + "/certs",
                    "--health-addr=127.0.0.1:" + std::to_string(health_port_),
                    "--diagnostics-address=127.0.0.1:" + std::to_string(metrics_port_),
                    "--insecure-diagnostics", "--sync-period=30s", "--v=4"},
                   dir_ + "/manager.log");
  }

  static json tc(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "terraformcluster", name});
  }
  static json cluster(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "clusters.v1beta2.cluster.x-k8s.io", name});
  }
  static std::string stateSuffix(const std::string& name) {
    return runner::e2e::stateSuffix(kNamespace, contract::Role::kCluster, name);
  }
  static json stateSecret(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "secret", "tfstate-default-" + stateSuffix(name)});
  }
  static std::string managerLog() {
    std::ifstream in(dir_ + "/manager.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Names of Jobs of the TerraformCluster `name` with `op`.
  static std::vector<std::string> jobs(const std::string& name, const std::string& op) {
    const json list = getJson({"-n", kNamespace, "get", "jobs", "-l",
                               "captf.infrastructure.cluster.x-k8s.io/owner-name=" + name +
                                   ",captf.infrastructure.cluster.x-k8s.io/op=" + op});
    std::vector<std::string> names;
    for (const json& job : list.value("items", json::array())) {
      names.push_back(job["metadata"]["name"].get<std::string>());
    }
    return names;
  }

  static inline std::string dir_;
  static inline std::string kubeconfig_;
  static inline std::string runner_image_;
  static inline std::string module_image_;
  static inline int webhook_port_ = 0;
  static inline int health_port_ = 0;
  static inline int metrics_port_ = 0;
  static inline ManagerProcess manager_;
};

bool readyTrue(const json& object) {
  return conditionOf(object, "Ready", "status") == "True";
}

TEST_F(TerraformClusterE2eTest, ManagerServesProbesMetricsAndWebhooks) {
  // Readiness includes the informer sync and the webhook server.
  ASSERT_TRUE(eventually([&] {
    return rig::run({"curl", "-sf", "http://127.0.0.1:" + std::to_string(health_port_) + "/readyz"})
               .exit_code == 0;
  })) << managerLog();
  const rig::CommandResult metrics =
      rig::run({"curl", "-sf", "http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics"});
  ASSERT_EQ(metrics.exit_code, 0) << metrics.output;
  EXPECT_THAT(metrics.output, HasSubstr("captf_build_info{"));
  EXPECT_THAT(metrics.output, HasSubstr("# HELP captf_jobs_total [ALPHA] "));
  // Leader election on the fixed Lease.
  ASSERT_TRUE(eventually([] {
    const json lease =
        getJson({"-n", "captf-system", "get", "lease", "controller-leader-election-captf"});
    return !lease.value("spec", json::object()).value("holderIdentity", "").empty();
  })) << managerLog();
  // The webhooks answer the API server from the same process: register them
  // by URL and see an invalid object refused.
  std::ifstream cert_in(dir_ + "/certs/tls.crt");
  const std::string ca((std::istreambuf_iterator<char>(cert_in)), {});
  json config = webhooks::validatingWebhookConfiguration(
      webhooks::UrlClientConfig{"https://127.0.0.1:" + std::to_string(webhook_port_), ca},
      "captf-e2e-webhooks");
  apply(config);
  const json invalid = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                        {"kind", "TerraformCluster"},
                        {"metadata", {{"name", "invalid"}, {"namespace", kNamespace}}},
                        {"spec",
                         {{"source", {{"image", module_image_}}},
                          {"identityRef", {{"name", kIdentity}}},
                          {"variables", {{"captf_reserved", "x"}}}}}};
  bool refused = eventually([&] {
    const rig::CommandResult r = kubectl({"create", "--dry-run=server", "-f", "-"}, invalid.dump());
    return r.exit_code != 0 && r.output.find("captf_") != std::string::npos;
  });
  EXPECT_TRUE(refused);
  kubectl({"delete", "validatingwebhookconfiguration", "captf-e2e-webhooks"});
}

TEST_F(TerraformClusterE2eTest, ClusterBecomesReadyReappliesAndIsDestroyed) {
  const std::string name = "tc1";
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformCluster"},
         {"metadata", {{"name", name}, {"namespace", kNamespace}}},
         {"spec",
          {{"source", {{"image", module_image_}}},
           {"identityRef", {{"name", kIdentity}}},
           {"variables", {{"size", "small"}}}}}});
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "Cluster"},
         {"metadata", {{"name", "c1"}, {"namespace", kNamespace}}},
         {"spec",
          {{"clusterNetwork", {{"pods", {{"cidrBlocks", {"192.168.0.0/16"}}}}}},
           {"infrastructureRef",
            {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
             {"kind", "TerraformCluster"},
             {"name", name}}}}}});

  // Provisioned and Ready; the Cluster sees its infrastructure.
  ASSERT_TRUE(eventually([&] {
    const json object = tc(name);
    return readyTrue(object) &&
           object["status"].value("initialization", json::object()).value("provisioned", false);
  })) << tc(name).dump(2)
      << "\n"
      << managerLog();
  ASSERT_TRUE(eventually([&] {
    const json c = cluster("c1");
    return c.value("status", json::object())
               .value("initialization", json::object())
               .value("infrastructureProvisioned", false) &&
           conditionOf(c, "InfrastructureReady", "status") == "True";
  })) << cluster("c1").dump(2);
  json object = tc(name);
  EXPECT_THAT(object["metadata"]["finalizers"],
              Contains("terraformcluster.infrastructure.cluster.x-k8s.io"));
  // The endpoint output was written back once, and the Cluster copied it.
  EXPECT_EQ(object["spec"]["controlPlaneEndpoint"]["host"], "lb.tc1.example");
  EXPECT_EQ(object["spec"]["controlPlaneEndpoint"]["port"], 6443);
  EXPECT_EQ(object["status"]["failureDomains"][0]["name"], "fd-a");

  // The state Secret is adopted: owned by the object, annotated with the hash.
  json state = stateSecret(name);
  const std::string uid = object["metadata"]["uid"];
  bool owned = false;
  for (const json& ref : state["metadata"].value("ownerReferences", json::array())) {
    owned = owned || ref.value("uid", "") == uid;
  }
  EXPECT_TRUE(owned) << state["metadata"].dump(2);
  const std::string hash1 =
      state["metadata"]["annotations"].value("captf.io/inputs-hash", std::string());
  EXPECT_THAT(hash1, ::testing::StartsWith("h2:"));
  EXPECT_EQ(jobs(name, "apply").size(), 1U);

  // Changing a variable re-applies: a new inputs hash on the state.
  ASSERT_EQ(kubectl({"-n", kNamespace, "patch", "terraformcluster", name, "--type=merge", "-p",
                     R"({"spec":{"variables":{"size":"large"}}})"})
                .exit_code,
            0);
  std::string hash2;
  ASSERT_TRUE(eventually([&] {
    hash2 =
        stateSecret(name)["metadata"]["annotations"].value("captf.io/inputs-hash", std::string());
    return !hash2.empty() && hash2 != hash1 && readyTrue(tc(name));
  })) << tc(name).dump(2);
  EXPECT_EQ(jobs(name, "apply").size(), 2U);

  // A change that replaces a resource is blocked until approved.
  const std::string image2 = moduleImage("2");
  ASSERT_EQ(kubectl({"-n", kNamespace, "patch", "terraformcluster", name, "--type=merge", "-p",
                     json{{"spec", {{"source", {{"image", image2}}}}}}.dump()})
                .exit_code,
            0);
  ASSERT_TRUE(eventually([&] {
    return conditionOf(tc(name), "ApplyJobSucceeded", "reason") == "DestructivePlanBlocked";
  })) << tc(name).dump(2);
  // Nothing changed: the state keeps the previous hash.
  EXPECT_EQ(stateSecret(name)["metadata"]["annotations"].value("captf.io/inputs-hash", ""), hash2);
  // The blocked Job names the hash to approve.
  std::string blocked_hash;
  for (const std::string& job : jobs(name, "apply")) {
    const json j = getJson({"-n", kNamespace, "get", "job", job});
    if (j["metadata"]["annotations"].contains("captf.io/destructive-plan-blocked")) {
      blocked_hash = j["metadata"]["annotations"].value("captf.io/inputs-hash", "");
    }
  }
  ASSERT_FALSE(blocked_hash.empty());
  ASSERT_EQ(kubectl({"-n", kNamespace, "annotate", "terraformcluster", name,
                     "captf.io/approve-destructive-plan=" + blocked_hash})
                .exit_code,
            0);
  ASSERT_TRUE(eventually([&] {
    const json approved = tc(name);
    return stateSecret(name)["metadata"]["annotations"].value("captf.io/inputs-hash", "") ==
               blocked_hash &&
           !approved["metadata"]
                .value("annotations", json::object())
                .contains("captf.io/approve-destructive-plan") &&
           readyTrue(approved);
  })) << tc(name).dump(2);

  // Deleting the Cluster destroys, removes the state and the finalizers.
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io", "c1",
                     "--wait=false"})
                .exit_code,
            0);
  ASSERT_TRUE(eventually([&] {
    return kubectl({"-n", kNamespace, "get", "terraformcluster", name}).exit_code != 0 &&
           kubectl({"-n", kNamespace, "get", "clusters.v1beta2.cluster.x-k8s.io", "c1"})
                   .exit_code != 0;
  })) << tc(name).dump(2)
      << managerLog();
  // Nothing the manager created for it is left: state, inputs, leases,
  // mirror, Jobs (garbage-collected with their owner).
  ASSERT_TRUE(eventually([&] {
    const json secrets =
        getJson({"-n", kNamespace, "get", "secrets", "-l", "captf.io/managed=true"});
    const json leases = getJson({"-n", kNamespace, "get", "leases"});
    const json jobs_left =
        getJson({"-n", kNamespace, "get", "jobs", "-l", "captf.io/managed=true"});
    // The runner's ServiceAccount and RoleBinding go with the orphan sweep
    // (every --sync-period, 30s here).
    const json rbac = getJson(
        {"-n", kNamespace, "get", "serviceaccounts,rolebindings", "-l", "captf.io/managed=true"});
    return secrets.value("items", json::array()).empty() &&
           leases.value("items", json::array()).empty() &&
           jobs_left.value("items", json::array()).empty() &&
           rbac.value("items", json::array()).empty();
  })) << getJson({"-n", kNamespace, "get", "secrets,leases,jobs,serviceaccounts,rolebindings"})
             .dump(2);
  EXPECT_THAT(managerLog(), Not(HasSubstr(runner::e2e::kCredentialValue)));
}

// Faults: the manager is killed (SIGKILL) right after it created the apply
// Job, the runner pod is deleted mid-apply, and the API server restarts while
// nothing reconciles. A new manager process recovers to Ready with the state
// adopted, and never runs two apply Jobs at once (one success, every Job a
// distinct attempt).
TEST_F(TerraformClusterE2eTest, RecoversFromManagerRunnerAndApiServerFaults) {
  const std::string name = "tc2";
  // An apply that takes 20 seconds (a local-exec of the test child), so the
  // runner pod is surely killed mid-apply.
  const std::string slow_image =
      runner::e2e::Images::get().module("tc-e2e-slow",
                                        runner::e2e::noopModule(contract::Role::kCluster) +
                                            "resource \"terraform_data\" \"slow\" {\n"
                                            "  input = var.captf_object.name\n"
                                            "  provisioner \"local-exec\" {\n"
                                            "    command     = \"sleep:20\"\n"
                                            "    interpreter = [\"/captf/module/child\"]\n"
                                            "  }\n"
                                            "}\n",
                                        env().tofu);
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformCluster"},
         {"metadata", {{"name", name}, {"namespace", kNamespace}}},
         {"spec", {{"source", {{"image", slow_image}}}, {"identityRef", {{"name", kIdentity}}}}}});
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "Cluster"},
         {"metadata", {{"name", "c2"}, {"namespace", kNamespace}}},
         {"spec",
          {{"infrastructureRef",
            {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
             {"kind", "TerraformCluster"},
             {"name", name}}}}}});
  std::string job;
  ASSERT_TRUE(eventually([&] {
    const auto names = jobs(name, "apply");
    if (!names.empty()) {
      job = names.front();
    }
    return !job.empty();
  })) << managerLog();
  manager_.stop(SIGKILL);
  // The runner pod, killed mid-apply: once its source container runs.
  std::string pod;
  ASSERT_TRUE(eventually(
      [&] {
        const json pods = getJson({"-n", kNamespace, "get", "pods", "-l", "job-name=" + job});
        for (const json& p : pods.value("items", json::array())) {
          const json statuses =
              p.value("status", json::object()).value("containerStatuses", json::array());
          for (const json& c : statuses) {
            if (c.value("name", "") == "source" &&
                c.value("state", json::object()).contains("running")) {
              pod = p["metadata"]["name"];
            }
          }
        }
        return !pod.empty();
      },
      std::chrono::seconds(120)));
  std::this_thread::sleep_for(std::chrono::seconds(5)); // into the apply step
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "pod", pod, "--wait=false"}).exit_code, 0);
  const rig::CommandResult restarted =
      rig::run({sourceDir() + "/test/rig/rig", "restart", "apiserver", "--dir", env().dir});
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
  startManager();
  ASSERT_TRUE(eventually([&] {
    const json object = tc(name);
    return readyTrue(object) && stateSecret(name)["metadata"]
                                    .value("annotations", json::object())
                                    .contains("captf.io/inputs-hash");
  })) << tc(name).dump(2)
      << "\n"
      << managerLog();
  const json list = getJson({"-n", kNamespace, "get", "jobs", "-l",
                             "captf.infrastructure.cluster.x-k8s.io/owner-name=" + name +
                                 ",captf.infrastructure.cluster.x-k8s.io/op=apply"});
  int succeeded = 0;
  std::set<std::string> attempts;
  for (const json& j : list.value("items", json::array())) {
    succeeded += j.value("status", json::object()).value("succeeded", 0);
    attempts.insert(
        j["metadata"]["labels"].value("captf.infrastructure.cluster.x-k8s.io/attempt", ""));
  }
  EXPECT_EQ(succeeded, 1) << list.dump(2);
  // The killed run was recognized as stopped from outside.
  int interrupted = 0;
  for (const json& j : list.value("items", json::array())) {
    if (j["metadata"].value("annotations", json::object()).contains("captf.io/interrupted")) {
      ++interrupted;
    }
  }
  EXPECT_GE(interrupted, 1) << list.dump(2);
  EXPECT_EQ(attempts.size(), list.value("items", json::array()).size()) << list.dump(2);
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io", "c2",
                     "--wait=false"})
                .exit_code,
            0);
  EXPECT_TRUE(eventually([&] {
    return kubectl({"-n", kNamespace, "get", "terraformcluster", name}).exit_code != 0;
  })) << tc(name).dump(2);
}

} // namespace
} // namespace captf::controllers
