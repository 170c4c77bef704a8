// The release artifacts of scripts/release.sh, checked against the rig's
// capi tier (its registry, kube-apiserver, Cluster API's CRDs and webhooks,
// clusterctl): the manager image as pushed (two binaries, CA certificates,
// the manager's libraries, user 65532, no shell), infrastructure-components.yaml
// pinned by digest and accepted by a server-side dry run (with
// cert-manager's real CRDs), checksums, metadata, every kustomize overlay,
// and every flavor rendered by `clusterctl generate cluster` from the
// release's local repository and accepted by a server-side dry run.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/manager/controllers/manager_e2e.h"
#include "test/release/binaries.h"
#include "test/rig/fixture.h"

namespace captf::release {
namespace {

namespace e2e = controllers::e2e;
namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kVersion[] = "v0.1.0";
constexpr char kRepo[] = "captf/cluster-api-provider-terraform";

// The flavors templates/ ships: cluster-template[-FLAVOR].yaml, "" for the
// default, sorted. A new flavor is covered without editing this test.
std::vector<std::string> flavors() {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(e2e::sourceDir() + "/templates")) {
    const std::string name = entry.path().filename().string();
    constexpr std::string_view kPrefix = "cluster-template";
    if (!name.starts_with(kPrefix) || !name.ends_with(".yaml")) {
      continue;
    }
    std::string flavor = name.substr(kPrefix.size(), name.size() - kPrefix.size() - 5);
    out.push_back(flavor.empty() ? flavor : flavor.substr(1)); // "-machinepool" → "machinepool"
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ReleaseTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    out_ = e2e::env().dir + "/release";
    std::vector<std::string> argv = {"bash",       e2e::sourceDir() + "/scripts/release.sh",
                                     "--registry", e2e::env().registry,
                                     "--version",  kVersion,
                                     "--out",      out_};
    const std::vector<std::string> binaries = releaseBinaryArgs();
    argv.insert(argv.end(), binaries.begin(), binaries.end());
    const rig::CommandResult r = rig::run(argv, "", {{"KUBECTL", e2e::env().kubectl}});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    output_ = r.output;
    dist_ = out_ + "/" + kVersion;
  }

  static std::string registryGet(const std::string& path, const std::string& accept = "") {
    std::vector<std::string> argv = {"curl", "-sfL"};
    if (!accept.empty()) {
      argv.insert(argv.end(), {"-H", "Accept: " + accept});
    }
    argv.push_back("http://" + e2e::env().registry + "/v2/" + kRepo + path);
    const rig::CommandResult r = rig::run(argv);
    EXPECT_EQ(r.exit_code, 0) << path << ": " << r.output;
    return r.output;
  }
  // The digest infrastructure-components.yaml pins.
  static std::string pinnedDigest() {
    const std::string components = rig::readFile(dist_ + "/infrastructure-components.yaml");
    const std::string marker = std::string(kRepo) + "@";
    const auto at = components.find(marker);
    return at == std::string::npos ? "" : components.substr(at + marker.size(), 71);
  }
  static void applyFile(const std::string& path) {
    const auto r = e2e::kubectl({"apply", "--server-side", "-f", path});
    ASSERT_EQ(r.exit_code, 0) << path << ": " << r.output;
  }

  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static std::string out_;
  static std::string dist_;
  static std::string output_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

// NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
std::string ReleaseTest::out_;
std::string ReleaseTest::dist_;
std::string ReleaseTest::output_;
// NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)

TEST_F(ReleaseTest, EveryArtifactIsThereWithItsChecksum) {
  for (const char* name : {"infrastructure-components.yaml", "metadata.yaml", "identity.yaml",
                           "tfcapi-lint", "checksums.txt"}) {
    EXPECT_TRUE(fs::exists(dist_ + "/" + name)) << name;
  }
  // Every flavor and every ClusterClass a flavor names (clusterclass-NAME.yaml,
  // which clusterctl fetches beside it), in the release and the repository.
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(e2e::sourceDir() + "/templates")) {
    const std::string file = entry.path().filename().string();
    if (file.starts_with("cluster-template") || file.starts_with("clusterclass-")) {
      files.push_back(file);
    }
  }
  EXPECT_GE(files.size(), 5U) << "four flavors and the clusterclass flavor's class";
  for (const std::string& file : files) {
    EXPECT_TRUE(fs::exists(dist_ + "/" + file)) << file;
    EXPECT_TRUE(fs::exists(out_ + "/repository/infrastructure-terraform/" + kVersion + "/" + file))
        << file;
  }
  const rig::CommandResult sums =
      rig::run({"sh", "-c", "cd '" + dist_ + "' && sha256sum -c checksums.txt"});
  EXPECT_EQ(sums.exit_code, 0) << sums.output;
  EXPECT_THAT(rig::readFile(dist_ + "/checksums.txt"), HasSubstr("infrastructure-components.yaml"));
  const std::string metadata = rig::readFile(dist_ + "/metadata.yaml");
  EXPECT_THAT(metadata, HasSubstr("contract: v1beta2"));
  EXPECT_THAT(metadata, HasSubstr("minor: 1"));
  const rig::CommandResult lint = rig::run({dist_ + "/tfcapi-lint", "--version"});
  EXPECT_EQ(lint.exit_code, 0) << lint.output;
  // Progress: a line per stage with the elapsed time.
  EXPECT_THAT(output_, HasSubstr("s] pushing the manager image"));
  // The local repository clusterctl reads.
  EXPECT_TRUE(fs::exists(out_ + "/repository/infrastructure-terraform/" + kVersion +
                         "/infrastructure-components.yaml"));
  EXPECT_THAT(rig::readFile(out_ + "/clusterctl.yaml"), HasSubstr("name: terraform"));
}

TEST_F(ReleaseTest, TheImageHoldsTheManagerAndTheStaticRunnerAsNonRoot) {
  const std::string digest = pinnedDigest();
  ASSERT_THAT(digest, ::testing::StartsWith("sha256:"));
  const json manifest = json::parse(
      registryGet("/manifests/" + digest, "application/vnd.oci.image.manifest.v1+json,"
                                          "application/vnd.docker.distribution.manifest.v2+json"),
      nullptr, false);
  ASSERT_TRUE(manifest.is_object());
  const json config = json::parse(
      registryGet("/blobs/" + manifest["config"]["digest"].get<std::string>()), nullptr, false);
  ASSERT_TRUE(config.is_object());
  EXPECT_EQ(config["config"].value("User", ""), "65532:65532");
  EXPECT_EQ(config["config"]["Entrypoint"], json::array({"/manager"}));
  // The tag names the same image.
  const rig::CommandResult head =
      rig::run({"curl", "-sfI", "-H", "Accept: application/vnd.oci.image.manifest.v1+json",
                "http://" + e2e::env().registry + "/v2/" + kRepo + "/manifests/" + kVersion});
  EXPECT_THAT(head.output, HasSubstr(digest));
  // Its files: the two binaries, CA certificates, libraries; no shell.
  ASSERT_EQ(manifest["layers"].size(), 1U);
  const std::string layer = e2e::env().dir + "/release-layer.tar.gz";
  const rig::CommandResult fetched =
      rig::run({"curl", "-sfL", "-o", layer,
                "http://" + e2e::env().registry + "/v2/" + kRepo + "/blobs/" +
                    manifest["layers"][0]["digest"].get<std::string>()});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.output;
  const rig::CommandResult files = rig::run({"tar", "tzf", layer});
  ASSERT_EQ(files.exit_code, 0) << files.output;
  for (const char* path :
       {"manager", "runner", "etc/ssl/certs/ca-certificates.crt", "etc/passwd"}) {
    EXPECT_THAT(files.output, HasSubstr(path)) << path;
  }
  EXPECT_THAT(files.output, Not(HasSubstr("bin/sh")));
  EXPECT_THAT(files.output, Not(HasSubstr("bin/bash")));
  if (kManagerIsStatic) {
    // A static manager: exactly the two binaries, the CA bundle, the user
    // and /tmp (scripts/image-rootfs.sh), no library.
    std::vector<std::string> entries;
    std::istringstream lines(files.output);
    for (std::string line; std::getline(lines, line);) {
      while (line.starts_with("./")) {
        line.erase(0, 2);
      }
      if (!line.empty() && line != ".") {
        entries.push_back(line);
      }
    }
    EXPECT_THAT(entries, ::testing::UnorderedElementsAre("manager", "runner", "etc/", "etc/ssl/",
                                                         "etc/ssl/certs/",
                                                         "etc/ssl/certs/ca-certificates.crt",
                                                         "etc/passwd", "etc/group", "tmp/"));
  }
}

TEST_F(ReleaseTest, TheComponentsPinTheImageAndTheServerAcceptsThem) {
  const std::string components = rig::readFile(dist_ + "/infrastructure-components.yaml");
  const std::string image = e2e::env().registry + "/" + kRepo + "@" + pinnedDigest();
  EXPECT_THAT(components, HasSubstr("image: " + image));
  EXPECT_THAT(components, HasSubstr("value: " + image)) << "CAPTF_MANAGER_IMAGE";
  EXPECT_THAT(components, Not(HasSubstr(":dev")));
  size_t crds = 0;
  for (size_t at = components.find("kind: CustomResourceDefinition"); at != std::string::npos;
       at = components.find("kind: CustomResourceDefinition", at + 1)) {
    ++crds;
  }
  EXPECT_EQ(crds, 7U);
  EXPECT_THAT(components,
              HasSubstr("cert-manager.io/inject-ca-from: captf-system/captf-serving-cert"));
  EXPECT_THAT(components, HasSubstr("kind: Certificate"));
  // cert-manager's own CRDs (its controllers are not run on the rig yet),
  // the namespace, then a dry run of everything.
  const std::string cert_manager = e2e::env().vars.at("CAPTF_RIG_CERT_MANAGER_SRC");
  applyFile(cert_manager + "/deploy/crds/cert-manager.io_issuers.yaml");
  applyFile(cert_manager + "/deploy/crds/cert-manager.io_certificates.yaml");
  e2e::kubectl({"create", "namespace", "captf-system"});
  EXPECT_TRUE(e2e::eventually([&] {
    return e2e::kubectl({"apply", "--dry-run=server", "--validate=strict", "-f",
                         dist_ + "/infrastructure-components.yaml"})
               .exit_code == 0;
  }));
  const auto r = e2e::kubectl({"apply", "--dry-run=server", "--validate=strict", "-f",
                               dist_ + "/infrastructure-components.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(ReleaseTest, EveryOverlayBuilds) {
  for (const char* overlay : {"default", "crd", "rbac", "manager", "webhook", "certmanager",
                              "prometheus", "network-policy", "admission-policy"}) {
    const auto r =
        rig::run({e2e::env().kubectl, "kustomize", e2e::sourceDir() + "/config/" + overlay});
    EXPECT_EQ(r.exit_code, 0) << overlay << ": " << r.output;
    EXPECT_THAT(r.output, Not(HasSubstr("Warning"))) << overlay;
  }
}

TEST_F(ReleaseTest, EveryFlavorRendersAndTheServerAcceptsIt) {
  // What the flavors name: our CRDs and kubeadm's (bootstrap and control
  // plane; their controllers are not run on the rig).
  applyFile(e2e::sourceDir() + "/config/crd/bases");
  const std::string capi = e2e::env().vars.at("CAPTF_RIG_CAPI_SRC");
  applyFile(capi + "/bootstrap/kubeadm/config/crd/bases");
  applyFile(capi + "/controlplane/kubeadm/config/crd/bases");
  e2e::kubectl({"create", "namespace", "rel-e2e"});
  const std::map<std::string, std::string> variables = {
      {"TERRAFORM_CLUSTER_IMAGE", "registry.example/team/cluster:v1"},
      {"TERRAFORM_MACHINE_IMAGE", "registry.example/team/machine:v1"},
      {"TERRAFORM_MACHINEPOOL_IMAGE", "registry.example/team/pool:v1"},
      {"TERRAFORM_IDENTITY_NAME", "team"},
      {"NAMESPACE", "rel-e2e"}};
  // What each flavor must hold beyond a Cluster and a TerraformCluster (or
  // its template): its workers.
  const std::map<std::string, std::vector<std::string>> holds = {
      {"", {"kind: MachineDeployment", "kind: KubeadmControlPlane"}},
      {"machinepool", {"kind: MachinePool", "kind: TerraformMachinePool"}},
      {"development", {"kind: MachineDeployment"}},
      {"clusterclass",
       {"kind: ClusterClass", "kind: TerraformClusterTemplate", "kind: TerraformMachineTemplate",
        "kind: TerraformMachinePoolTemplate", "kind: KubeadmControlPlaneTemplate",
        "topology:", "machineDeployments:", "machinePools:"}}};
  const std::vector<std::string> found = flavors();
  ASSERT_GE(found.size(), holds.size()) << "templates/ lost a flavor";
  for (const std::string& flavor : found) {
    SCOPED_TRACE(flavor.empty() ? "default" : flavor);
    const std::string rendered = e2e::env().dir + "/flavor-" + flavor + ".yaml";
    std::vector<std::string> argv = {e2e::env().clusterctl,
                                     "generate",
                                     "cluster",
                                     "demo",
                                     "--config",
                                     out_ + "/clusterctl.yaml",
                                     "--infrastructure",
                                     std::string("terraform:") + kVersion,
                                     "--kubernetes-version",
                                     "v1.34.0",
                                     "--control-plane-machine-count",
                                     "3",
                                     "--worker-machine-count",
                                     "2",
                                     "--target-namespace",
                                     "rel-e2e",
                                     "--kubeconfig",
                                     e2e::env().kubeconfig,
                                     "--write-to",
                                     rendered};
    if (!flavor.empty()) {
      argv.insert(argv.end(), {"--flavor", flavor});
    }
    const rig::CommandResult generated = rig::run(argv, "", variables);
    ASSERT_EQ(generated.exit_code, 0) << generated.output;
    const std::string text = rig::readFile(rendered);
    EXPECT_THAT(text, Not(HasSubstr("${"))) << text;
    EXPECT_THAT(text, HasSubstr("kind: Cluster\n"));
    EXPECT_THAT(text, HasSubstr("kind: TerraformCluster"));
    const auto expected = holds.find(flavor);
    EXPECT_TRUE(holds.contains(flavor)) << "say in `holds` what the new flavor must hold";
    if (expected != holds.end()) {
      for (const std::string& kind : expected->second) {
        EXPECT_THAT(text, HasSubstr(kind));
      }
    }
    const auto accepted =
        e2e::kubectl({"apply", "--dry-run=server", "--validate=strict", "-f", rendered});
    EXPECT_EQ(accepted.exit_code, 0) << accepted.output;
  }
}

// A ClusterClass commonly sets the identity with a patch: the template's
// schema leaves spec.identityRef out, the TerraformCluster's requires it.
TEST_F(ReleaseTest, AClusterTemplateMayLeaveTheIdentityToItsClass) {
  applyFile(e2e::sourceDir() + "/config/crd/bases");
  e2e::kubectl({"create", "namespace", "rel-cc"});
  const json tmpl = {
      {"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
      {"kind", "TerraformClusterTemplate"},
      {"metadata", {{"name", "noop"}, {"namespace", "rel-cc"}}},
      {"spec",
       {{"template",
         {{"spec",
           {{"source", {{"image", "example.invalid/captf/set-by-clusterclass:unset"}}}}}}}}}};
  const auto accepted = e2e::kubectl({"apply", "--dry-run=server", "-f", "-"}, tmpl.dump());
  EXPECT_EQ(accepted.exit_code, 0) << accepted.output;
  const json cluster = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                        {"kind", "TerraformCluster"},
                        {"metadata", {{"name", "noop"}, {"namespace", "rel-cc"}}},
                        {"spec", {{"source", {{"image", "example.invalid/captf/x:1"}}}}}};
  const auto refused = e2e::kubectl({"apply", "--dry-run=server", "-f", "-"}, cluster.dump());
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, HasSubstr("identityRef")) << refused.output;
}

} // namespace
} // namespace captf::release
