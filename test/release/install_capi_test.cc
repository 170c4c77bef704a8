// The install the Cluster API way, on the rig's install tier: cert-manager
// runs; scripts/install.sh has `clusterctl init` install Cluster API's core
// from a local repository of the rig's own build and CAPTF from
// scripts/release.sh's artifacts, offline. Both managers then run as
// Deployment pods from their images, with their ServiceAccounts and the
// shipped RBAC only, behind their Services (docs/decisions/rig-pod-network.md).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/manager/controllers/manager_e2e.h"
#include "test/release/binaries.h"
#include "test/runner/e2e_support.h"

namespace captf {
namespace {

namespace e2e = controllers::e2e;
using e2e::json;
using ::testing::HasSubstr;

constexpr char kVersion[] = "v0.1.0";

class InstallTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // The install tier first: every helper after this one shares its rig.
    const rig::Env& env = rig::shared(rig::Tier::kInstall);
    // The quickstart on this rig (--rig-dir): the install, the sample
    // modules and a sample cluster waited for until it is provisioned.
    state_ = env.dir + "/quickstart";
    dir_ = state_ + "/install";
    const auto started = std::chrono::steady_clock::now();
    const rig::CommandResult r = quickstart(env);
    first_run_ = std::chrono::steady_clock::now() - started;
    init_output_ = r.output;
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // The last line: "installed: cluster-api VERSION, terraform VERSION".
    const auto at = r.output.rfind("installed: cluster-api ");
    ASSERT_NE(at, std::string::npos) << r.output;
    capi_version_ = r.output.substr(at + 23, r.output.find(',', at) - at - 23);
    const std::string components =
        rig::readFile(dir_ + "/release/" + kVersion + "/infrastructure-components.yaml");
    const std::string marker = "captf/cluster-api-provider-terraform@";
    const auto pin = components.find(marker);
    ASSERT_NE(pin, std::string::npos);
    image_ = env.registry + "/" + marker + components.substr(pin + marker.size(), 71);
  }

  static rig::CommandResult quickstart(const rig::Env& env) {
    std::vector<std::string> argv = {"bash", e2e::sourceDir() + "/scripts/quickstart.sh", "up",
                                     "--rig-dir", env.dir};
    const std::vector<std::string> binaries = release::releaseBinaryArgs();
    argv.insert(argv.end(), binaries.begin(), binaries.end());
    return rig::run(argv, "", {{"CAPTF_QUICKSTART_DIR", state_}});
  }

  static json managerPod() {
    const auto pods = e2e::items("captf-system", "pods", "control-plane=controller-manager");
    return pods.empty() ? json() : pods.front();
  }

  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static std::string state_;
  static std::string dir_;
  static std::chrono::steady_clock::duration first_run_;
  static std::string capi_version_;
  static std::string image_;
  static std::string init_output_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

// NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
std::string InstallTest::state_;
std::string InstallTest::dir_;
std::chrono::steady_clock::duration InstallTest::first_run_;
std::string InstallTest::capi_version_;
std::string InstallTest::image_;
std::string InstallTest::init_output_;
// NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)

TEST_F(InstallTest, ClusterctlInitInstallsBothProvidersAndTheirPodsBecomeReady) {
  EXPECT_THAT(init_output_,
              HasSubstr("Skipping installing cert-manager as it is already installed"));
  EXPECT_THAT(init_output_,
              HasSubstr("Installing provider=\"infrastructure-terraform\" version=\"" +
                        std::string(kVersion) + "\" targetNamespace=\"captf-system\""));
  EXPECT_THAT(init_output_, HasSubstr("Installing provider=\"cluster-api\""));
  // clusterctl's inventory knows both.
  std::string providers;
  const json inventory = e2e::getJson({"get", "providers.clusterctl.cluster.x-k8s.io", "-A"});
  ASSERT_TRUE(inventory.is_object());
  for (const json& p : inventory["items"]) {
    providers +=
        p["metadata"]["name"].get<std::string>() + "@" + p.value("version", std::string()) + " ";
  }
  EXPECT_THAT(providers, HasSubstr("infrastructure-terraform@" + std::string(kVersion)));
  EXPECT_THAT(providers, HasSubstr("cluster-api@" + capi_version_));
  for (const char* ns : {"captf-system", "capi-system"}) {
    const auto r = e2e::kubectl(
        {"-n", ns, "wait", "--for=condition=Available", "--timeout=120s", "deployment", "--all"});
    EXPECT_EQ(r.exit_code, 0) << ns << ": " << r.output;
  }
  const json pod = managerPod();
  ASSERT_FALSE(pod.is_null());
  EXPECT_TRUE(e2e::readyTrue(pod)) << pod.dump(2);
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], image_) << "the image pinned by digest";
  EXPECT_EQ(pod["spec"]["serviceAccountName"], "captf-controller-manager");
  EXPECT_EQ(pod["status"]["podIP"].get<std::string>().rfind("10.", 0), 0U) << pod["status"];
}

TEST_F(InstallTest, CertManagerIssuesTheWebhookCertificateAndInjectsItsCa) {
  const json cert =
      e2e::getJson({"-n", "captf-system", "get", "certificate", "captf-serving-cert"});
  EXPECT_TRUE(e2e::readyTrue(cert)) << cert.dump(2);
  const json secret =
      e2e::getJson({"-n", "captf-system", "get", "secret", "captf-webhook-service-cert"});
  ASSERT_TRUE(secret.contains("data")) << secret.dump(2);
  const std::string ca = secret["data"].value("ca.crt", std::string());
  ASSERT_FALSE(ca.empty());
  ASSERT_TRUE(secret["data"].contains("tls.crt"));
  const json hooks = e2e::getJson(
      {"get", "validatingwebhookconfiguration", "captf-validating-webhook-configuration"});
  ASSERT_FALSE(hooks["webhooks"].empty());
  for (const json& w : hooks["webhooks"]) {
    EXPECT_EQ(w["clientConfig"].value("caBundle", std::string()), ca) << w["name"];
    EXPECT_EQ(w["clientConfig"]["service"]["name"], "captf-webhook-service") << w["name"];
  }
}

TEST_F(InstallTest, TheWebhooksRefuseAnInvalidObjectThroughTheService) {
  ASSERT_EQ(e2e::kubectl({"create", "namespace", "install-webhook"}).exit_code, 0);
  const auto r = e2e::kubectl({"apply", "-f", "-"}, R"(
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
kind: TerraformCluster
metadata: {name: untagged, namespace: install-webhook}
spec:
  identityRef: {name: none}
  source: {image: registry.example.com/modules/cluster}
)");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("spec.source.image"));
  EXPECT_THAT(r.output, HasSubstr("must name a tag (:v1.2.3) or a digest (@sha256:...)"));
}

// The installed manager does the job it was installed for: the quickstart's
// cluster (development flavor, the sample modules) provisioned through real
// apply Jobs whose runner comes from the manager's own image, and Cluster
// API's core (a pod too) saw its infrastructure and both machines.
TEST_F(InstallTest, TheQuickstartClusterProvisionedThroughRealJobs) {
  EXPECT_THAT(init_output_, HasSubstr("sample modules: lint, package with OpenTofu, push"));
  EXPECT_THAT(init_output_, HasSubstr("] ready"));
  EXPECT_THAT(init_output_, HasSubstr("TerraformCluster quickstart/quickstart"))
      << "clusterctl describe cluster";
  const json tc = e2e::getJson({"-n", "quickstart", "get", "terraformcluster", "quickstart"});
  EXPECT_TRUE(e2e::readyTrue(tc)) << tc.dump(2);
  const auto machines = e2e::items("quickstart", "terraformmachines");
  ASSERT_EQ(machines.size(), 2U);
  for (const json& m : machines) {
    EXPECT_THAT(m["spec"].value("providerID", std::string()), ::testing::StartsWith("sample://"))
        << m.dump(2);
  }
  const auto jobs = e2e::runJobs("quickstart", "quickstart", "apply");
  ASSERT_EQ(jobs.size(), 1U);
  const json job = e2e::getJson({"-n", "quickstart", "get", "job", jobs.front()});
  EXPECT_EQ(job["spec"]["template"]["spec"]["initContainers"][0]["image"], image_)
      << "the runner is copied from the manager's image";
}

// A second run reuses the control plane, the install and the images, and
// changes nothing: no new apply Job. Its time is printed, not asserted
// (docs/decisions/rig-pod-network.md; the figure goes in the closing note).
TEST_F(InstallTest, ASecondQuickstartReusesEverything) {
  const auto jobs_before = e2e::items("quickstart", "jobs").size();
  const auto started = std::chrono::steady_clock::now();
  const rig::CommandResult r = quickstart(e2e::env());
  const auto second = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("control plane: reusing"));
  EXPECT_THAT(r.output, HasSubstr("Cluster API and CAPTF: already installed"));
  EXPECT_EQ(e2e::items("quickstart", "jobs").size(), jobs_before);
  using std::chrono::duration_cast;
  using std::chrono::seconds;
  std::printf("quickstart: first run %llds, second run %llds\n",
              static_cast<long long>(duration_cast<seconds>(first_run_).count()),
              static_cast<long long>(duration_cast<seconds>(second).count()));
}

// clusterctl move of the quickstart's provisioned cluster to a second control
// plane with CAPTF installed the same way: the state, the durable inputs and
// the credential copies move with it (clusterctl.cluster.x-k8s.io/move), the
// identity too (its CRD carries move-hierarchy), and the target manager
// adopts them without re-applying anything (no apply Job, state
// unchanged); the source has nothing of the cluster left. Runs last: it
// takes the cluster away from this rig.
TEST_F(InstallTest, ZClusterctlMoveToASecondControlPlaneAdoptsWithoutReapplying) {
  const rig::Env& source = e2e::env();
  const rig::Env target = rig::another(rig::Tier::kInstall);
  auto on = [&](const rig::Env& env, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {env.kubectl, "--kubeconfig", env.kubeconfig};
    argv.insert(argv.end(), args.begin(), args.end());
    return rig::run(argv);
  };
  auto json_on = [&](const rig::Env& env, std::vector<std::string> args) {
    args.insert(args.end(), {"-o", "json"});
    const rig::CommandResult r = on(env, args);
    return r.exit_code == 0 ? json::parse(r.output, nullptr, false) : json();
  };
  std::vector<std::string> install = {"bash",         e2e::sourceDir() + "/scripts/install.sh",
                                      "--kubeconfig", target.kubeconfig,
                                      "--registry",   target.registry,
                                      "--out",        target.dir + "/install",
                                      "--version",    kVersion};
  const std::vector<std::string> binaries = release::releaseBinaryArgs();
  install.insert(install.end(), binaries.begin(), binaries.end());
  rig::CommandResult r = rig::run(install, "", {{"KUBECTL", target.kubectl}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // clusterctl moves only a cluster whose control plane is initialized and
  // whose machines have nodes. The sample modules boot nothing, so this rig
  // plays the workload cluster: the cluster's kubeconfig Secret names it, a
  // control-plane Machine joins the two workers, and a Node with each
  // Machine's providerID stands in for the kubelet that would register it.
  const std::string admin = rig::readFile(source.kubeconfig);
  e2e::apply({{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"type", "cluster.x-k8s.io/secret"},
              {"metadata",
               {{"name", "quickstart-kubeconfig"},
                {"namespace", "quickstart"},
                {"labels", {{"cluster.x-k8s.io/cluster-name", "quickstart"}}}}},
              {"stringData", {{"value", admin}}}});
  const json machine_template =
      e2e::getJson({"-n", "quickstart", "get", "terraformmachinetemplate", "quickstart-md-0"});
  e2e::apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
              {"kind", "TerraformMachine"},
              {"metadata", {{"name", "quickstart-cp-0"}, {"namespace", "quickstart"}}},
              {"spec", machine_template["spec"]["template"]["spec"]}});
  e2e::apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
              {"kind", "Machine"},
              {"metadata",
               {{"name", "quickstart-cp-0"},
                {"namespace", "quickstart"},
                {"labels", {{"cluster.x-k8s.io/control-plane", ""}}}}},
              {"spec",
               {{"clusterName", "quickstart"},
                {"version", "v1.34.0"},
                {"bootstrap", {{"dataSecretName", "quickstart-bootstrap"}}},
                {"infrastructureRef",
                 {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
                  {"kind", "TerraformMachine"},
                  {"name", "quickstart-cp-0"}}}}}});
  std::vector<json> machines;
  ASSERT_TRUE(e2e::eventually([&] {
    machines = e2e::items("quickstart", "machines.v1beta2.cluster.x-k8s.io");
    size_t provisioned = 0;
    for (const json& m : machines) {
      provisioned += m["spec"].contains("providerID") ? 1U : 0U;
    }
    return machines.size() == 3U && provisioned == 3U;
  })) << json(machines).dump(2);
  for (const json& m : machines) {
    const std::string name = m["metadata"]["name"];
    e2e::apply({{"apiVersion", "v1"},
                {"kind", "Node"},
                {"metadata", {{"name", name}}},
                {"spec", {{"providerID", m["spec"]["providerID"]}}}});
    const auto ready = e2e::kubectl(
        {"patch", "node", name, "--subresource=status", "--type=merge", "-p",
         json({{"status",
                {{"conditions",
                  {{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}}}}}})
             .dump()});
    ASSERT_EQ(ready.exit_code, 0) << ready.output;
  }
  json workload;
  ASSERT_TRUE(e2e::eventually([&] {
    workload = e2e::getJson(
        {"-n", "quickstart", "get", "clusters.v1beta2.cluster.x-k8s.io", "quickstart"});
    bool noded = true;
    for (const json& m : e2e::items("quickstart", "machines.v1beta2.cluster.x-k8s.io")) {
      noded = noded && m.contains("status") && m["status"].contains("nodeRef");
    }
    return noded && workload.is_object() &&
           e2e::conditionOf(workload, "ControlPlaneInitialized", "status") == "True";
  })) << workload.dump(2);

  // What must arrive unchanged: every Secret clusterctl moves by label.
  auto moved_secrets = [&](const rig::Env& env) {
    std::map<std::string, std::string> out;
    const json list = json_on(
        env, {"-n", "quickstart", "get", "secrets", "-l", "clusterctl.cluster.x-k8s.io/move"});
    for (const json& s : list.value("items", json::array())) {
      out[s["metadata"]["name"].get<std::string>()] = s.value("data", json::object()).dump();
    }
    return out;
  };
  const auto before = moved_secrets(source);
  size_t states = 0;
  for (const auto& [name, data] : before) {
    states += name.starts_with("tfstate-") ? 1U : 0U;
  }
  ASSERT_EQ(states, 4U) << "the cluster's and the three machines' state Secrets";
  // The credentials an operator restores on the target (the identity's
  // source Secret lives in the provider's namespace, which move leaves).
  const json credentials =
      json_on(source, {"-n", "captf-system", "get", "secret", "quickstart-credentials"});
  ASSERT_TRUE(credentials.is_object());
  json restored = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata", {{"name", "quickstart-credentials"}, {"namespace", "captf-system"}}},
      {"data", credentials["data"]}};
  r = rig::run({target.kubectl, "--kubeconfig", target.kubeconfig, "apply", "-f", "-"},
               restored.dump());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(on(target, {"create", "namespace", "quickstart"}).exit_code, 0);

  r = rig::run({source.clusterctl, "move", "--kubeconfig", source.kubeconfig, "--to-kubeconfig",
                target.kubeconfig, "--namespace", "quickstart"},
               "", {{"CLUSTERCTL_DISABLE_VERSIONCHECK", "true"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // The target has the cluster, provisioned, with its identity.
  EXPECT_TRUE(json_on(target, {"get", "terraformclusteridentity", "quickstart"}).is_object());
  json tc;
  EXPECT_TRUE(e2e::eventually([&] {
    tc = json_on(target, {"-n", "quickstart", "get", "terraformcluster", "quickstart"});
    return e2e::readyTrue(tc);
  })) << tc.dump(2);
  const json cluster = json_on(
      target, {"-n", "quickstart", "get", "clusters.v1beta2.cluster.x-k8s.io", "quickstart"});
  ASSERT_TRUE(cluster.is_object());
  EXPECT_FALSE(cluster["spec"].value("paused", false)) << "clusterctl unpauses it on the target";
  EXPECT_EQ(json_on(target, {"-n", "quickstart", "get", "terraformmachines"})["items"].size(), 3U);
  // Adopted, not re-applied: the moved Secrets are byte-for-byte what left
  // the source, and no apply Job ran, for as long as a resync takes.
  std::this_thread::sleep_for(std::chrono::seconds(40));
  const json jobs = json_on(target, {"-n", "quickstart", "get", "jobs"});
  for (const json& job : jobs.value("items", json::array())) {
    EXPECT_NE(job["metadata"]["labels"].value("captf.infrastructure.cluster.x-k8s.io/op", ""),
              "apply")
        << job["metadata"]["name"];
  }
  const auto after = moved_secrets(target);
  for (const auto& [name, data] : before) {
    if (name.starts_with("tfstate-")) {
      ASSERT_TRUE(after.contains(name)) << name;
      EXPECT_EQ(after.at(name), data) << name << " changed on the target";
    }
  }
  // The source keeps nothing of the cluster.
  EXPECT_TRUE(json_on(source, {"-n", "quickstart", "get", "terraformclusters,terraformmachines"})
                  .value("items", json::array())
                  .empty());
  EXPECT_TRUE(moved_secrets(source).empty());
  rig::run({e2e::sourceDir() + "/test/rig/rig", "down", "--dir", target.dir});
}

} // namespace
} // namespace captf
