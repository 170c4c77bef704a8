// ClusterClass topologies end to end on the rig's capi tier: Cluster API
// v1.14's topology controller (ClusterTopology gate on), the `manager`
// executable with exactly the shipped RBAC and its webhooks, real Jobs, real
// OpenTofu on noop modules that declare one variable, `size`.
//
//   templates/cluster-template-clusterclass.yaml and the class it names
//   (clusterclass-terraform.yaml), rendered by clusterctl,
//   applied as shipped (plus the module variables and a rollout strategy
//   the rig needs) → the topology controller creates the TerraformCluster
//   (identity set by the class's patch from a topology variable), a
//   MachineDeployment of 2 TerraformMachines and a MachinePool of 2 on a
//   TerraformMachinePool, each provisioned with real Jobs; its dry-runs
//   pass our webhooks, and a value our webhook refuses stops the topology
//   without a Job. Changing workerModuleVariables rolls only the workers
//   (new machines, one apply each; the cluster and the pool run nothing);
//   changing poolModuleVariables re-applies only the pool, in place, once.
//   Deleting the Cluster destroys everything and leaves nothing behind.
//
// No kubeadm provider runs on the rig: KubeadmStandIn writes what its
// controllers would (the control plane's status once the infrastructure is
// provisioned, each KubeadmConfig's bootstrap data Secret and status).
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "contract/roles.h"
#include "test/manager/controllers/manager_e2e.h"
#include "test/runner/e2e_support.h"
#include "webhooks/registrations.h"

namespace captf::controllers {
namespace {

using e2e::apply;
using e2e::conditionOf;
using e2e::env;
using e2e::eventually;
using e2e::getJson;
using e2e::kubectl;
using e2e::readyTrue;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNamespace[] = "cc-e2e";
constexpr char kIdentity[] = "cc-e2e";
constexpr char kCluster[] = "cc1";
constexpr char kClass[] = "terraform"; // templates/clusterclass-terraform.yaml
constexpr char kWebhooks[] = "captf-cluster-class-e2e-webhooks";
// In every bootstrap data Secret the stand-in writes: never in a log, an
// Event or a status.
constexpr char kBootstrapMarker[] = "e2e-topology-bootstrap-3e9a17";
constexpr char kClusters[] = "clusters.v1beta2.cluster.x-k8s.io";
constexpr char kDeployments[] = "machinedeployments.v1beta2.cluster.x-k8s.io";
constexpr char kMachines[] = "machines.v1beta2.cluster.x-k8s.io";
constexpr char kPools[] = "machinepools.v1beta2.cluster.x-k8s.io";
constexpr char kControlPlanes[] = "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io";
constexpr char kConfigs[] = "kubeadmconfigs.bootstrap.cluster.x-k8s.io";

// The string at JSON `pointer` in `j` ("" when absent: objects appear
// while the test polls).
std::string stringAt(const json& j, const std::string& pointer) {
  const json::json_pointer at(pointer);
  return j.is_object() && j.contains(at) && j.at(at).is_string() ? j.at(at).get<std::string>() : "";
}

// What kubeadm's control plane and bootstrap controllers would write, for
// a rig that runs neither (docs/decisions/cluster-class.md): every
// KubeadmControlPlane of `ns` whose Cluster's infrastructure is provisioned
// reports its spec (version, replicas all ready and up to date) and an
// initialized control plane; every KubeadmConfig gets a bootstrap data
// Secret of its name (owned by it) and reports it. A pass a second, on its
// own thread, until destroyed; errors are retried by the next pass.
class KubeadmStandIn {
public:
  explicit KubeadmStandIn(std::string ns)
      : ns_(std::move(ns)), thread_([this](std::stop_token stop) { run(stop); }) {}

private:
  void run(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      controlPlanes();
      bootstrapConfigs();
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }

  void controlPlanes() {
    for (const json& cp : e2e::items(ns_, kControlPlanes)) {
      const json meta = cp["metadata"];
      const std::string cluster =
          meta.value("labels", json::object()).value("cluster.x-k8s.io/cluster-name", "");
      const bool provisioned = getJson({"-n", ns_, "get", kClusters, cluster})
                                   .value("status", json::object())
                                   .value("initialization", json::object())
                                   .value("infrastructureProvisioned", false);
      if (!provisioned) {
        continue;
      }
      const json spec = cp.value("spec", json::object());
      const int replicas = spec.value("replicas", 1);
      const json want = {{"version", spec.value("version", "")},
                         {"replicas", replicas},
                         {"readyReplicas", replicas},
                         {"availableReplicas", replicas},
                         {"upToDateReplicas", replicas},
                         {"observedGeneration", meta.value("generation", 0)},
                         {"initialization", {{"controlPlaneInitialized", true}}}};
      const json have = cp.value("status", json::object());
      bool same = true;
      for (const auto& [key, value] : want.items()) {
        same = same && have.contains(key) && have[key] == value;
      }
      if (!same) {
        kubectl({"-n", ns_, "patch", kControlPlanes, meta.value("name", ""), "--subresource=status",
                 "--type=merge", "-p", json{{"status", want}}.dump()});
      }
    }
  }

  void bootstrapConfigs() {
    for (const json& config : e2e::items(ns_, kConfigs)) {
      const json status = config.value("status", json::object());
      if (!status.value("dataSecretName", "").empty() &&
          status.value("initialization", json::object()).value("dataSecretCreated", false)) {
        continue;
      }
      const json meta = config["metadata"];
      const std::string name = meta.value("name", "");
      const json secret = {
          {"apiVersion", "v1"},
          {"kind", "Secret"},
          {"type", "cluster.x-k8s.io/secret"},
          {"metadata",
           {{"name", name},
            {"namespace", ns_},
            {"labels",
             {{"cluster.x-k8s.io/cluster-name",
               meta.value("labels", json::object()).value("cluster.x-k8s.io/cluster-name", "")}}},
            {"ownerReferences",
             {{{"apiVersion", "bootstrap.cluster.x-k8s.io/v1beta2"},
               {"kind", "KubeadmConfig"},
               {"name", name},
               {"uid", meta.value("uid", "")},
               {"controller", true}}}}}},
          {"data",
           {{"value", absl::Base64Escape(std::string("#cloud-config\nruncmd: [echo ") +
                                         kBootstrapMarker + "]\n")},
            {"format", absl::Base64Escape("cloud-config")}}}};
      if (kubectl({"apply", "--server-side", "--force-conflicts", "-f", "-"}, secret.dump())
              .exit_code != 0) {
        continue;
      }
      kubectl({"-n", ns_, "patch", kConfigs, name, "--subresource=status", "--type=merge", "-p",
               json{{"status",
                     {{"dataSecretName", name}, {"initialization", {{"dataSecretCreated", true}}}}}}
                   .dump()});
    }
  }

  std::string ns_;
  std::jthread thread_;
};

class ClusterClassE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    installKubeadmCrds();
    ASSERT_FALSE(HasFatalFailure());
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    auto& images = runner::e2e::Images::get();
    manager_.runner_image = images.runner();
    const std::string cluster_image = images.module(
        "cc-e2e-cluster", runner::e2e::sizedModule(contract::Role::kCluster), env().tofu);
    const std::string machine_image = images.module(
        "cc-e2e-machine", runner::e2e::sizedModule(contract::Role::kMachine), env().tofu);
    const std::string pool_image = images.module(
        "cc-e2e-pool", runner::e2e::sizedModule(contract::Role::kMachinePool), env().tofu);
    e2e::createTenant(kNamespace, kIdentity, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    // The rig's registry is plain HTTP: the template controller may read it.
    manager_.start({"--insecure-registry=" + env().registry});
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_TRUE(eventually([] {
      return rig::run({"curl", "-sf",
                       "http://127.0.0.1:" + std::to_string(manager_.health_port) + "/readyz"})
                 .exit_code == 0;
    })) << manager_.processLog();
    // The manager's webhooks, by URL: the topology controller's dry-runs
    // and writes go through them (failurePolicy Fail).
    std::ifstream cert_in(manager_.dir + "/certs/tls.crt");
    const std::string ca((std::istreambuf_iterator<char>(cert_in)), {});
    apply(webhooks::validatingWebhookConfiguration(
        webhooks::UrlClientConfig{"https://127.0.0.1:" + std::to_string(manager_.webhook_port), ca},
        kWebhooks));
    stand_in_ = std::make_unique<KubeadmStandIn>(kNamespace);

    // The class and the flavor as clusterctl renders them (`generate
    // cluster` puts the class first, fetched beside the flavor).
    const std::map<std::string, std::string> clusterctl_env = {
        {"CLUSTER_NAME", kCluster},
        {"NAMESPACE", kNamespace},
        {"KUBERNETES_VERSION", "v1.34.0"},
        {"CONTROL_PLANE_MACHINE_COUNT", "1"},
        {"WORKER_MACHINE_COUNT", "2"},
        {"WORKER_MACHINEPOOL_COUNT", "2"},
        {"TERRAFORM_CLUSTER_IMAGE", cluster_image},
        {"TERRAFORM_MACHINE_IMAGE", machine_image},
        {"TERRAFORM_MACHINEPOOL_IMAGE", pool_image},
        {"TERRAFORM_IDENTITY_NAME", kIdentity},
        // No node ever joins on the rig: no MachineHealthCheck may fire.
        {"TERRAFORM_NODE_STARTUP_TIMEOUT", "36000"},
        {"TERRAFORM_CP_NODE_STARTUP_TIMEOUT", "36000"}};
    const std::string rendered = env().dir + "/cc-e2e-flavor.yaml";
    const rig::CommandResult generated = rig::run(
        {"sh", "-c",
         // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one argument, split over lines.
         "for f in clusterclass-terraform.yaml cluster-template-clusterclass.yaml; do "
         "\"$0\" generate yaml --from \"$1/templates/$f\" && echo --- || exit 1; done >\"$2\"",
         env().clusterctl, e2e::sourceDir(), rendered},
        "", clusterctl_env);
    ASSERT_EQ(generated.exit_code, 0) << generated.output;
    const rig::CommandResult converted =
        kubectl({"create", "--dry-run=client", "-o", "json", "-f", rendered});
    ASSERT_EQ(converted.exit_code, 0) << converted.output;
    // One JSON document per object: gather them into a List.
    json objects = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
    std::istringstream documents(converted.output);
    while ((documents >> std::ws).peek() != std::char_traits<char>::eof()) {
      json item;
      ASSERT_NO_THROW(documents >> item) << converted.output;
      objects["items"].push_back(std::move(item));
    }
    ASSERT_EQ(objects["items"].size(), 9U) << converted.output;
    bool found = false;
    for (json& object : objects["items"]) {
      if (object.value("kind", "") != "Cluster") {
        continue;
      }
      found = true;
      json& topology = object["spec"]["topology"];
      ASSERT_EQ(topology["variables"], variables()) << "identityName is the flavor's one value";
      topology["variables"] = variables({{"clusterModuleVariables", {{"size", "small"}}},
                                         {"workerModuleVariables", {{"size", "small"}}},
                                         {"poolModuleVariables", {{"size", "small"}}}});
      // Without nodes no Machine becomes available: a rollout replaces
      // every worker at once instead of waiting for availability.
      topology["workers"]["machineDeployments"][0]["rollout"] = {
          {"strategy",
           {{"type", "RollingUpdate"},
            {"rollingUpdate", {{"maxSurge", 1}, {"maxUnavailable", 2}}}}}};
    }
    ASSERT_TRUE(found) << converted.output;
    apply(objects);
  }

  static void TearDownTestSuite() {
    stand_in_.reset();
    kubectl({"delete", "validatingwebhookconfiguration", kWebhooks});
    manager_.stopCleanly();
  }

  // kubeadm's CRDs from the Cluster API module, with the contract label its
  // kustomization adds (Cluster API resolves a reference's version by it).
  static void installKubeadmCrds() {
    const std::string capi = env().vars.at("CAPTF_RIG_CAPI_SRC");
    for (const char* dir :
         {"/bootstrap/kubeadm/config/crd/bases", "/controlplane/kubeadm/config/crd/bases"}) {
      const auto r = kubectl({"apply", "--server-side", "-f", capi + dir});
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    for (const char* crd : {"kubeadmconfigs.bootstrap.cluster.x-k8s.io",
                            "kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io",
                            "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io",
                            "kubeadmcontrolplanetemplates.controlplane.cluster.x-k8s.io"}) {
      auto r = kubectl({"label", "--overwrite", "crd", crd, "cluster.x-k8s.io/v1beta2=v1beta2"});
      ASSERT_EQ(r.exit_code, 0) << r.output;
      r = kubectl(
          {"wait", "--for=condition=Established", "--timeout=60s", std::string("crd/") + crd});
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
  }

  // spec.topology.variables: identityName and `extra`, sorted by name.
  static json variables(const std::map<std::string, json>& extra = {}) {
    json out = json::array({{{"name", "identityName"}, {"value", kIdentity}}});
    for (const auto& [name, value] : extra) {
      out.push_back({{"name", name}, {"value", value}});
    }
    return out;
  }
  static void setVariables(const std::map<std::string, json>& extra) {
    e2e::mergePatch(kNamespace, kClusters, kCluster,
                    {{"spec", {{"topology", {{"variables", variables(extra)}}}}}});
  }

  static json list(const std::string& resource, const std::string& selector = "") {
    return e2e::items(kNamespace, resource, selector);
  }
  static json cluster() { return getJson({"-n", kNamespace, "get", kClusters, kCluster}); }
  static std::string terraformClusterName() {
    return stringAt(cluster(), "/spec/infrastructureRef/name");
  }
  static json terraformCluster() {
    return getJson({"-n", kNamespace, "get", "terraformcluster", terraformClusterName()});
  }
  static std::string deploymentName() {
    const json found = list(kDeployments, "topology.cluster.x-k8s.io/deployment-name=md-0");
    return found.empty() ? "" : stringAt(found[0], "/metadata/name");
  }
  static json machines() {
    const std::string md = deploymentName();
    return md.empty() ? json::array() : list(kMachines, "cluster.x-k8s.io/deployment-name=" + md);
  }
  static std::set<std::string> workerNames() {
    std::set<std::string> names;
    for (const json& machine : machines()) {
      names.insert(stringAt(machine, "/spec/infrastructureRef/name"));
    }
    return names;
  }
  static json terraformMachine(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "terraformmachine", name});
  }
  static std::string poolName() {
    const json found = list(kPools, "topology.cluster.x-k8s.io/pool-name=mp-0");
    return found.empty() ? "" : stringAt(found[0], "/spec/template/spec/infrastructureRef/name");
  }
  static json pool() {
    return getJson({"-n", kNamespace, "get", "terraformmachinepool", poolName()});
  }
  static std::set<std::string> applyJobs(const std::string& owner) {
    const std::vector<std::string> names = e2e::runJobs(kNamespace, owner, "apply");
    return {names.begin(), names.end()};
  }
  static bool quiet(const json& object) {
    return readyTrue(object) && !object.value("status", json::object()).contains("activeJob") &&
           conditionOf(object, "ApplyJobSucceeded", "reason") == "ApplySucceeded";
  }
  // `want` workers provisioned, each Ready with `size` and one apply.
  static bool workersAt(size_t want, const std::string& size) {
    const json items = machines();
    if (items.size() != want) {
      return false;
    }
    for (const json& machine : items) {
      if (machine.value("status", json::object()).value("phase", "") != "Provisioned" ||
          machine["spec"].value("providerID", "").empty()) {
        return false;
      }
      const std::string name = stringAt(machine, "/spec/infrastructureRef/name");
      const json tm = terraformMachine(name);
      if (!quiet(tm) || tm["spec"].value("variables", json::object()).value("size", "") != size) {
        return false;
      }
    }
    return true;
  }
  static bool poolAt(int want, const std::string& size) {
    const json p = pool();
    return p.is_object() && quiet(p) && p["status"].value("replicas", -1) == want &&
           p["spec"].value("providerIDList", json::array()).size() == static_cast<size_t>(want) &&
           p["spec"].value("variables", json::object()).value("size", "") == size;
  }
  // Everything provisioned, and the cluster's last apply saw the control
  // plane initialized (the module's control_plane_initialized input).
  static bool settled(const std::string& worker_size, const std::string& pool_size) {
    const json tc = terraformCluster();
    if (!quiet(tc) || !workersAt(2, worker_size) || !poolAt(2, pool_size)) {
      return false;
    }
    const json owner = cluster();
    if (!owner.is_object()) {
      return false;
    }
    const std::string initialized = [&owner] {
      for (const json& c :
           owner.value("status", json::object()).value("conditions", json::array())) {
        if (c.value("type", "") == "ControlPlaneInitialized" && c.value("status", "") == "True") {
          return c.value("lastTransitionTime", "");
        }
      }
      return std::string();
    }();
    std::string newest;
    for (const json& job :
         list("jobs", "captf.infrastructure.cluster.x-k8s.io/owner-name=" + terraformClusterName() +
                          ",captf.infrastructure.cluster.x-k8s.io/op=apply")) {
      newest = std::max(newest, job["metadata"].value("creationTimestamp", std::string()));
    }
    return !initialized.empty() && newest >= initialized;
  }
  static std::string dump() {
    return "\nCluster: " + cluster().dump(2) + "\nTerraformCluster: " + terraformCluster().dump(2) +
           "\nMachines: " + machines().dump(2) +
           "\nTerraformMachines: " + list("terraformmachines").dump(2) +
           "\nTerraformMachinePool: " + pool().dump(2) + "\nmanager: " + manager_.processLog();
  }
  static void expectNoBootstrapLeak() {
    EXPECT_THAT(manager_.logText(), Not(HasSubstr(kBootstrapMarker)));
    EXPECT_THAT(kubectl({"-n", kNamespace, "get", "events.events.k8s.io", "-o", "json"}).output,
                Not(HasSubstr(kBootstrapMarker)));
    for (const char* kind : {"terraformclusters", "terraformmachines", "terraformmachinepools"}) {
      EXPECT_THAT(kubectl({"-n", kNamespace, "get", kind, "-o", "json"}).output,
                  Not(HasSubstr(kBootstrapMarker)))
          << kind;
    }
  }

  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static inline e2e::ManagerRig manager_;
  static inline std::unique_ptr<KubeadmStandIn> stand_in_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

TEST_F(ClusterClassE2eTest, ATopologyClusterProvisionsItsClusterMachinesAndPool) {
  ASSERT_TRUE(eventually([] { return settled("small", "small"); }, std::chrono::seconds(600)))
      << dump();
  EXPECT_EQ(conditionOf(cluster(), "TopologyReconciled", "status"), "True") << cluster().dump(2);

  // The TerraformCluster: cloned from the class's template, the identity
  // and module variables from the topology's variables.
  json tc = terraformCluster();
  EXPECT_EQ(tc["spec"]["identityRef"].value("name", ""), kIdentity) << tc.dump(2);
  EXPECT_EQ(tc["spec"]["variables"], json({{"size", "small"}}));
  EXPECT_EQ(tc["metadata"]["annotations"].value("cluster.x-k8s.io/cloned-from-name", ""),
            std::string(kClass) + "-cluster");
  EXPECT_EQ(tc["metadata"]["labels"].value("topology.cluster.x-k8s.io/owned", "x"), "");
  EXPECT_TRUE(tc["status"]["initialization"].value("provisioned", false));
  EXPECT_FALSE(tc["spec"].value("controlPlaneEndpoint", json::object()).value("host", "").empty());

  // The workers: two provisioned machines with the worker class's variables.
  std::set<std::string> provider_ids;
  for (const std::string& name : workerNames()) {
    json tm = terraformMachine(name);
    SCOPED_TRACE(name);
    EXPECT_THAT(tm["spec"].value("providerID", ""), ::testing::StartsWith("noop://"));
    provider_ids.insert(tm["spec"].value("providerID", ""));
    EXPECT_EQ(applyJobs(name).size(), 1U);
  }
  EXPECT_EQ(provider_ids.size(), 2U);

  // The pool: two members, the pool class's variables.
  json p = pool();
  EXPECT_EQ(p["metadata"]["annotations"].value("cluster.x-k8s.io/cloned-from-name", ""),
            std::string(kClass) + "-pool");
  EXPECT_EQ(applyJobs(poolName()).size(), 1U);

  // The control plane the class describes, on its own TerraformMachineTemplate
  // (no kubeadm controller makes its machines on the rig).
  const json cps = list(kControlPlanes);
  ASSERT_EQ(cps.size(), 1U);
  EXPECT_EQ(stringAt(cps[0], "/spec/machineTemplate/spec/infrastructureRef/kind"),
            "TerraformMachineTemplate")
      << cps[0].dump(2);
  EXPECT_TRUE(getJson({"-n", kNamespace, "get", "terraformmachinetemplate",
                       stringAt(cps[0], "/spec/machineTemplate/spec/infrastructureRef/name")})
                  .is_object());
  expectNoBootstrapLeak();
}

// The topology controller's dry-run goes through our webhooks: a value the
// webhook refuses stops the topology with its message and starts nothing.
TEST_F(ClusterClassE2eTest, TheTopologyDryRunGoesThroughTheWebhooks) {
  ASSERT_TRUE(eventually([] { return settled("small", "small"); }, std::chrono::seconds(600)))
      << dump();
  const std::set<std::string> cluster_jobs = applyJobs(terraformClusterName());
  const int generation = terraformCluster()["metadata"].value("generation", 0);
  setVariables({{"clusterModuleVariables", {{"captf_reserved", "x"}}},
                {"workerModuleVariables", {{"size", "small"}}},
                {"poolModuleVariables", {{"size", "small"}}}});
  ASSERT_TRUE(eventually([] {
    const json c = cluster();
    return conditionOf(c, "TopologyReconciled", "status") == "False" &&
           conditionOf(c, "TopologyReconciled", "message").find("captf_reserved") !=
               std::string::npos;
  })) << cluster().dump(2);
  EXPECT_THAT(conditionOf(cluster(), "TopologyReconciled", "message"),
              HasSubstr("validation.terraformcluster.infrastructure.cluster.x-k8s.io"));
  EXPECT_EQ(terraformCluster()["metadata"].value("generation", 0), generation);
  EXPECT_EQ(terraformCluster()["spec"]["variables"], json({{"size", "small"}}));
  EXPECT_EQ(applyJobs(terraformClusterName()), cluster_jobs);

  setVariables({{"clusterModuleVariables", {{"size", "small"}}},
                {"workerModuleVariables", {{"size", "small"}}},
                {"poolModuleVariables", {{"size", "small"}}}});
  ASSERT_TRUE(eventually([] {
    return conditionOf(cluster(), "TopologyReconciled", "status") == "True";
  })) << cluster().dump(2);
  EXPECT_EQ(terraformCluster()["metadata"].value("generation", 0), generation);
  EXPECT_EQ(applyJobs(terraformClusterName()), cluster_jobs);
}

// A variable the class maps to the machine-deployment class only: the
// workers roll out (machines are immutable: new TerraformMachines, one
// apply each, the old ones destroyed); the cluster and the pool run nothing.
TEST_F(ClusterClassE2eTest, AWorkerVariableRollsOutOnlyTheWorkers) {
  ASSERT_TRUE(eventually([] { return settled("small", "small"); }, std::chrono::seconds(600)))
      << dump();
  const std::string tc_name = terraformClusterName();
  const std::string pool_name = poolName();
  const std::set<std::string> cluster_jobs = applyJobs(tc_name);
  const std::set<std::string> pool_jobs = applyJobs(pool_name);
  const int tc_generation = terraformCluster()["metadata"].value("generation", 0);
  const int pool_generation = pool()["metadata"].value("generation", 0);
  const std::set<std::string> before = workerNames();
  ASSERT_EQ(before.size(), 2U);

  setVariables({{"clusterModuleVariables", {{"size", "small"}}},
                {"workerModuleVariables", {{"size", "large"}}},
                {"poolModuleVariables", {{"size", "small"}}}});
  ASSERT_TRUE(eventually(
      [&] {
        const std::set<std::string> now = workerNames();
        for (const std::string& name : before) {
          if (now.contains(name) ||
              kubectl({"-n", kNamespace, "get", "terraformmachine", name}).exit_code == 0) {
            return false;
          }
        }
        return workersAt(2, "large");
      },
      std::chrono::seconds(600)))
      << dump();
  for (const std::string& name : workerNames()) {
    EXPECT_EQ(applyJobs(name).size(), 1U) << name;
  }
  // Nothing else moved: same objects, same generation, no new apply.
  EXPECT_EQ(terraformClusterName(), tc_name);
  EXPECT_EQ(poolName(), pool_name);
  EXPECT_EQ(terraformCluster()["metadata"].value("generation", 0), tc_generation);
  EXPECT_EQ(pool()["metadata"].value("generation", 0), pool_generation);
  EXPECT_EQ(applyJobs(tc_name), cluster_jobs);
  EXPECT_EQ(applyJobs(pool_name), pool_jobs);
  // Quiet, once the pool's membership refresh (every 60 s, not an apply)
  // that may be running at this instant has ended.
  EXPECT_TRUE(eventually([] { return quiet(terraformCluster()); })) << terraformCluster().dump(2);
  EXPECT_TRUE(eventually([] { return poolAt(2, "small"); })) << pool().dump(2);
}

// A variable the class maps to the machine-pool class only: the pool
// re-applies in place, once; the cluster and the workers run nothing.
TEST_F(ClusterClassE2eTest, APoolVariableReappliesOnlyThePoolInPlace) {
  ASSERT_TRUE(eventually([] { return settled("large", "small"); }, std::chrono::seconds(600)))
      << dump();
  const std::string tc_name = terraformClusterName();
  const std::string pool_name = poolName();
  const std::set<std::string> cluster_jobs = applyJobs(tc_name);
  const std::set<std::string> pool_jobs = applyJobs(pool_name);
  const std::set<std::string> workers = workerNames();
  std::map<std::string, std::set<std::string>> worker_jobs;
  for (const std::string& name : workers) {
    worker_jobs[name] = applyJobs(name);
  }

  setVariables({{"clusterModuleVariables", {{"size", "small"}}},
                {"workerModuleVariables", {{"size", "large"}}},
                {"poolModuleVariables", {{"size", "large"}}}});
  ASSERT_TRUE(eventually([] { return poolAt(2, "large"); }, std::chrono::seconds(300))) << dump();
  EXPECT_EQ(poolName(), pool_name);
  const std::set<std::string> after = applyJobs(pool_name);
  EXPECT_EQ(after.size(), pool_jobs.size() + 1) << "one re-apply of the pool";
  EXPECT_TRUE(std::includes(after.begin(), after.end(), pool_jobs.begin(), pool_jobs.end()));
  EXPECT_EQ(applyJobs(tc_name), cluster_jobs);
  EXPECT_EQ(workerNames(), workers);
  for (const auto& [name, jobs] : worker_jobs) {
    EXPECT_EQ(applyJobs(name), jobs) << name;
  }
  expectNoBootstrapLeak();
}

// Last: deleting the topology Cluster destroys what the topology made.
TEST_F(ClusterClassE2eTest, ZDeletingTheClusterDestroysEverythingAndLeavesNothing) {
  const std::string tc_name = terraformClusterName();
  ASSERT_FALSE(tc_name.empty());
  ASSERT_EQ(kubectl({"-n", kNamespace, "delete", kClusters, kCluster, "--wait=false"}).exit_code,
            0);
  // The cluster's Jobs go with it: record its destroy Job while it runs.
  bool destroy_seen = false;
  ASSERT_TRUE(eventually(
      [&] {
        destroy_seen = destroy_seen || !e2e::runJobs(kNamespace, tc_name, "destroy").empty();
        return kubectl({"-n", kNamespace, "get", kClusters, kCluster}).exit_code != 0 &&
               list("terraformclusters").empty() && list("terraformmachines").empty() &&
               list("terraformmachinepools").empty();
      },
      std::chrono::seconds(600)))
      << dump();
  EXPECT_TRUE(destroy_seen) << "the cluster's infrastructure was destroyed by a Job";
  EXPECT_TRUE(eventually([&] {
    return list("secrets", "captf.io/managed=true").empty() &&
           list("leases", "captf.io/managed=true").empty() &&
           list("secrets", "tfstateSecretSuffix").empty();
  })) << list("secrets").dump(2);
  // The class and its templates stay for the next cluster.
  EXPECT_TRUE(getJson({"-n", kNamespace, "get", "clusterclass", kClass}).is_object());
  EXPECT_TRUE(getJson({"-n", kNamespace, "get", "terraformclustertemplate",
                       std::string(kClass) + "-cluster"})
                  .is_object());
  expectNoBootstrapLeak();
}

} // namespace
} // namespace captf::controllers
