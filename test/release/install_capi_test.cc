// The install the Cluster API way, on the rig's install tier: cert-manager
// runs; scripts/install.sh has `clusterctl init` install Cluster API's core
// from a local repository of the rig's own build and CAPTF from
// scripts/release.sh's artifacts, offline. Both managers then run as
// Deployment pods from their images, with their ServiceAccounts and the
// shipped RBAC only, behind their Services (docs/decisions/rig-pod-network.md).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/manager/controllers/manager_e2e.h"
#include "test/runner/e2e_support.h"

namespace captf {
namespace {

namespace e2e = controllers::e2e;
using e2e::json;
using ::testing::HasSubstr;

constexpr char kVersion[] = "v0.1.0";

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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
        readFile(dir_ + "/release/" + kVersion + "/infrastructure-components.yaml");
    const std::string marker = "captf/cluster-api-provider-terraform@";
    const auto pin = components.find(marker);
    ASSERT_NE(pin, std::string::npos);
    image_ = env.registry + "/" + marker + components.substr(pin + marker.size(), 71);
  }

  static rig::CommandResult quickstart(const rig::Env& env) {
    return rig::run({"bash", e2e::sourceDir() + "/scripts/quickstart.sh", "up", "--rig-dir",
                     env.dir, "--manager", CAPTF_RELEASE_MANAGER, "--runner", CAPTF_RUNNER_STATIC,
                     "--lint", CAPTF_RELEASE_LINT},
                    "", {{"CAPTF_QUICKSTART_DIR", state_}});
  }

  static json managerPod() {
    const auto pods = e2e::items("captf-system", "pods", "control-plane=controller-manager");
    return pods.empty() ? json() : pods.front();
  }

  static std::string state_;
  static std::string dir_;
  static std::chrono::steady_clock::duration first_run_;
  static std::string capi_version_;
  static std::string image_;
  static std::string init_output_;
};

std::string InstallTest::state_;
std::string InstallTest::dir_;
std::chrono::steady_clock::duration InstallTest::first_run_;
std::string InstallTest::capi_version_;
std::string InstallTest::image_;
std::string InstallTest::init_output_;

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

} // namespace
} // namespace captf
