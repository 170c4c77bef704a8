// Proves the e2e tier of the rig: Jobs whose pods come from images in the
// local registry, run by the process kubelet under bubblewrap, with the real
// Job controller and garbage collector, and real OpenTofu keeping its state
// in Secrets through the kubernetes backend in in-cluster mode; and the Git
// server's repositories over HTTPS and SSH.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/rig/fixture.h"
#include "test/rig/git_repo.h"

namespace captf::rig {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class RigE2eTest : public ::testing::Test {
protected:
  void SetUp() override {
    env_ = &shared(Tier::kE2e);
    root_ = fs::path(env_->dir) / "test-images" /
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(root_);
  }

  // Makes a rootfs directory with the given files (source path → path in the image).
  std::string rootfs(const std::string& name, const std::map<std::string, std::string>& files) {
    fs::path dir = root_ / name;
    fs::create_directories(dir / "etc");
    for (const auto& [src, dest] : files) {
      fs::path target = dir / fs::path(dest).relative_path();
      fs::create_directories(target.parent_path());
      fs::copy_file(src, target, fs::copy_options::overwrite_existing);
    }
    return dir.string();
  }

  void writeFile(const fs::path& path, const std::string& content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
  }

  std::string get(const std::vector<std::string>& args) {
    CommandResult r = kubectl(*env_, args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  }

  void apply(const std::string& manifest) {
    CommandResult r = kubectl(*env_, {"apply", "-f", "-"}, manifest);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  void waitComplete(const std::string& ns, const std::string& job) {
    CommandResult r = kubectl(
        *env_, {"-n", ns, "wait", "--for=condition=Complete", "--timeout=180s", "job/" + job});
    ASSERT_EQ(r.exit_code, 0) << r.output << "\n" << get({"-n", ns, "get", "pods", "-o", "yaml"});
  }

  // The pods of `ns` still there after up to a minute ("" once none is).
  std::string podsLeft(const std::string& ns) {
    std::string left;
    for (int i = 0; i < 300; ++i) {
      left = get({"-n", ns, "get", "pods", "-o", "name"});
      if (left.empty()) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return left;
  }

  std::string podOf(const std::string& ns, const std::string& job) {
    return get({"-n", ns, "get", "pods", "-l", "job-name=" + job, "-o",
                "jsonpath={.items[0].metadata.name}"});
  }

  const Env* env_ = nullptr;
  fs::path root_;
};

TEST_F(RigE2eTest, JobCopiesAStaticBinaryInAnInitContainerAndRunsIt) {
  const std::string hello =
      pushImage(*env_, rootfs("hello", {{CAPTF_RIG_HELLO, "/hello"}}), "rig/hello", "v1");
  const std::string empty = pushImage(*env_, rootfs("empty", {}), "rig/empty", "v1");
  ASSERT_FALSE(hello.empty());
  ASSERT_FALSE(empty.empty());
  apply(R"(
apiVersion: v1
kind: Namespace
metadata: {name: e2e-hello}
---
apiVersion: batch/v1
kind: Job
metadata: {name: hello, namespace: e2e-hello}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      volumes: [{name: bin, emptyDir: {}}]
      initContainers:
      - name: copy
        image: )" +
        hello + R"(
        command: [/hello, copy, /captf/bin/hello]
        volumeMounts: [{name: bin, mountPath: /captf/bin}]
      containers:
      - name: main
        image: )" +
        empty + R"(
        command: [/captf/bin/hello, run]
        volumeMounts: [{name: bin, mountPath: /captf/bin}]
)");
  waitComplete("e2e-hello", "hello");
  const std::string pod = podOf("e2e-hello", "hello");
  EXPECT_EQ(get({"-n", "e2e-hello", "get", "pod", pod, "-o",
                 "jsonpath={.status.containerStatuses[0].state.terminated.message}"}),
            "hello from " + pod);
  EXPECT_EQ(get({"-n", "e2e-hello", "get", "pod", pod, "-o", "jsonpath={.status.phase}"}),
            "Succeeded");
  EXPECT_THAT(podLog(*env_, "e2e-hello", pod, "main"), HasSubstr("hello ran"));

  // Background propagation: the Job goes at once, the garbage collector then
  // deletes its pod and the kubelet finishes that deletion.
  CommandResult r = kubectl(
      *env_, {"-n", "e2e-hello", "delete", "job", "hello", "--cascade=background", "--wait=true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(podsLeft("e2e-hello"), "") << "pods left behind after the Job was deleted";
}

// The kubelet binds a pod only while its requests fit what the pods bound
// and not yet finished leave of the Node's allocatable (2 CPUs), as the
// scheduler would; a pod that does not fit does not hold back a smaller one
// created after it.
TEST_F(RigE2eTest, PodsAreBoundOnlyWhileTheirRequestsFitTheNode) {
  EXPECT_EQ(get({"get", "node", "rig-node", "-o", "jsonpath={.status.allocatable.cpu}"}), "2");
  const std::string hello =
      pushImage(*env_, rootfs("hello", {{CAPTF_RIG_HELLO, "/hello"}}), "rig/hello", "v1");
  apply(R"({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "e2e-fit"}})");
  // Pods need the namespace's default ServiceAccount (the controller adds it).
  bool has_sa = false;
  for (int i = 0; i < 300 && !has_sa; ++i) {
    has_sa = kubectl(*env_, {"-n", "e2e-fit", "get", "serviceaccount", "default"}).exit_code == 0;
    if (!has_sa) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  ASSERT_TRUE(has_sa);
  auto pod = [&](const std::string& name, const std::string& cpu, bool gated) {
    std::string manifest = R"(
apiVersion: v1
kind: Pod
metadata: {name: )" + name +
                           R"(, namespace: e2e-fit}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: )" + hello + R"(
    command: [/hello, run]
    resources: {requests: {cpu: )" +
                           cpu + R"(, memory: 64Mi}}
)";
    if (gated) {
      // The Secret does not exist yet: the pod stays bound, creating, until it does.
      manifest += R"(    volumeMounts: [{name: gate, mountPath: /gate}]
  volumes: [{name: gate, secret: {secretName: gate}}]
)";
    }
    apply(manifest);
  };
  auto wait_for = [&](const std::string& name, const std::string& condition) {
    CommandResult r = kubectl(
        *env_, {"-n", "e2e-fit", "wait", "--for=" + condition, "--timeout=120s", "pod/" + name});
    ASSERT_EQ(r.exit_code, 0) << r.output << "\n"
                              << get({"-n", "e2e-fit", "get", "pods", "-o", "yaml"});
  };
  pod("big", "1500m", true);
  wait_for("big", "jsonpath={.spec.nodeName}=rig-node");
  pod("blocked", "1", false);
  pod("small", "100m", false);
  // The kubelet saw `blocked` before `small`: once `small` is done, `blocked`
  // was turned down for want of CPU, and still is while `big` holds 1.5 CPUs.
  wait_for("small", "jsonpath={.status.phase}=Succeeded");
  EXPECT_EQ(get({"-n", "e2e-fit", "get", "pod", "blocked", "-o", "jsonpath={.spec.nodeName}"}), "");
  EXPECT_EQ(get({"-n", "e2e-fit", "get", "pod", "blocked", "-o", "jsonpath={.status.phase}"}),
            "Pending");
  // `big` finishes, and its CPU goes to `blocked`.
  apply(R"(
apiVersion: v1
kind: Secret
metadata: {name: gate, namespace: e2e-fit}
stringData: {open: "yes"}
)");
  wait_for("big", "jsonpath={.status.phase}=Succeeded");
  wait_for("blocked", "jsonpath={.status.phase}=Succeeded");
}

// A pod that declares ports gets a network of its own (docs/decisions/
// rig-pod-network.md): two replicas of a Deployment both listen on :8080,
// each is Ready once its readiness probe passes, the EndpointSlice of their
// Service names both pod IPs, and the API server reaches them through the
// Service (the services proxy dials endpoints, as webhooks do). Once the
// Deployment is gone, so are the pod IPs on the host.
TEST_F(RigE2eTest, PodsWithPortsServeThroughTheirServiceFromNetworksOfTheirOwn) {
  const std::string hello =
      pushImage(*env_, rootfs("hello", {{CAPTF_RIG_HELLO, "/hello"}}), "rig/hello", "v1");
  apply(R"(
apiVersion: v1
kind: Namespace
metadata: {name: e2e-net}
---
apiVersion: v1
kind: Service
metadata: {name: hello, namespace: e2e-net}
spec:
  selector: {app: hello}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: hello, namespace: e2e-net}
spec:
  replicas: 2
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: )" +
        hello + R"(
        command: [/hello, serve, "8080"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /, port: http}}
)");
  CommandResult r = kubectl(*env_, {"-n", "e2e-net", "wait", "--for=condition=Available",
                                    "--timeout=120s", "deployment/hello"});
  ASSERT_EQ(r.exit_code, 0) << r.output << get({"-n", "e2e-net", "get", "pods", "-o", "yaml"});
  const std::string ips = get(
      {"-n", "e2e-net", "get", "pods", "-l", "app=hello", "-o",
       // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one argument, split over lines.
       "jsonpath={range .items[*]}{.status.podIP}{\" \"}{.status.conditions[?(@.type==\"Ready\")]."
       "status}{\"\\n\"}{end}"});
  std::vector<std::string> pod_ips;
  std::istringstream lines(ips);
  for (std::string ip, ready; lines >> ip >> ready;) {
    EXPECT_EQ(ready, "True") << ip;
    EXPECT_EQ(ip.rfind("10.", 0), 0U) << "a pod IP the EndpointSlice accepts, not loopback: " << ip;
    pod_ips.push_back(ip);
  }
  ASSERT_EQ(pod_ips.size(), 2U) << ips;
  EXPECT_NE(pod_ips[0], pod_ips[1]);
  std::string endpoints;
  for (int i = 0; i < 300; ++i) {
    endpoints =
        get({"-n", "e2e-net", "get", "endpointslices", "-l", "kubernetes.io/service-name=hello",
             "-o", "jsonpath={.items[*].endpoints[*].addresses[*]}"});
    if (endpoints.find(pod_ips[0]) != std::string::npos &&
        endpoints.find(pod_ips[1]) != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_THAT(endpoints, HasSubstr(pod_ips[0]));
  EXPECT_THAT(endpoints, HasSubstr(pod_ips[1]));
  EXPECT_THAT(get({"get", "--raw", "/api/v1/namespaces/e2e-net/services/hello:http/proxy/"}),
              HasSubstr("hello from hello-"));
  r = kubectl(*env_, {"-n", "e2e-net", "delete", "deployment", "hello", "--wait=true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(podsLeft("e2e-net"), "");
  const CommandResult addrs = run({"ip", "-o", "-4", "addr", "show", "dev", "lo"});
  EXPECT_THAT(addrs.output, Not(HasSubstr(pod_ips[0] + "/32")));
  EXPECT_THAT(addrs.output, Not(HasSubstr(pod_ips[1] + "/32")));
}

TEST_F(RigE2eTest, FailingContainerReportsItsExitCodeAndMessage) {
  const std::string hello =
      pushImage(*env_, rootfs("hello", {{CAPTF_RIG_HELLO, "/hello"}}), "rig/hello", "v1");
  apply(R"(
apiVersion: v1
kind: Namespace
metadata: {name: e2e-fail}
---
apiVersion: batch/v1
kind: Job
metadata: {name: fail, namespace: e2e-fail}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: )" +
        hello + R"(
        command: [/hello, run, "3"]
)");
  CommandResult r = kubectl(
      *env_, {"-n", "e2e-fail", "wait", "--for=condition=Failed", "--timeout=180s", "job/fail"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string pod = podOf("e2e-fail", "fail");
  EXPECT_EQ(get({"-n", "e2e-fail", "get", "pod", pod, "-o",
                 "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}"}),
            "3");
  EXPECT_EQ(get({"-n", "e2e-fail", "get", "pod", pod, "-o",
                 "jsonpath={.status.containerStatuses[0].state.terminated.message}"}),
            "hello from " + pod);
}

TEST_F(RigE2eTest, TofuInAJobKeepsItsStateInASecretThroughTheKubernetesBackend) {
  ASSERT_FALSE(env_->tofu.empty());
  const std::string dir = rootfs("tofu", {{env_->tofu, "/usr/local/bin/tofu"}});
  writeFile(fs::path(dir) / "module/main.tf", R"(
terraform {
  backend "kubernetes" {
    secret_suffix     = "rigtest"
    namespace         = "e2e-tofu"
    in_cluster_config = true
  }
}
resource "terraform_data" "greeting" {
  input = "hello, rig"
}
output "greeting" {
  value = terraform_data.greeting.output
}
)");
  const std::string image = pushImage(*env_, dir, "rig/tofu", "v1");
  ASSERT_FALSE(image.empty());
  // The least privilege the kubernetes backend needs (docs/decisions/rig-design.md).
  apply(R"(
apiVersion: v1
kind: Namespace
metadata: {name: e2e-tofu}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: tofu, namespace: e2e-tofu}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tofu-state, namespace: e2e-tofu}
rules:
- {apiGroups: [""], resources: [secrets], verbs: [get, list, create, update, delete]}
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, update, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tofu-state, namespace: e2e-tofu}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tofu-state}
subjects: [{kind: ServiceAccount, name: tofu, namespace: e2e-tofu}]
)");
  auto job = [&](const std::string& name, const std::string& args) {
    return R"(
apiVersion: batch/v1
kind: Job
metadata: {name: )" +
           name + R"(, namespace: e2e-tofu}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      serviceAccountName: tofu
      volumes: [{name: data, emptyDir: {}}]
      initContainers:
      - &c
        name: init
        image: )" +
           image + R"(
        command: [/usr/local/bin/tofu]
        args: [init, -input=false]
        workingDir: /module
        env:
        - {name: TF_DATA_DIR, value: /data/tf}
        - {name: TF_IN_AUTOMATION, value: "1"}
        - {name: HOME, value: /tmp}
        volumeMounts: [{name: data, mountPath: /data}]
      containers:
      - <<: *c
        name: main
        args: )" +
           args + R"(
)";
  };
  apply(job("apply", "[apply, -auto-approve, -input=false]"));
  waitComplete("e2e-tofu", "apply");

  EXPECT_EQ(get({"-n", "e2e-tofu", "get", "secret", "tfstate-default-rigtest", "-o",
                 "jsonpath={.metadata.labels.tfstate}"}),
            "true");
  CommandResult state = run({"sh", "-c",
                             env_->kubectl + " --kubeconfig " + env_->kubeconfig +
                                 " -n e2e-tofu get secret tfstate-default-rigtest"
                                 " -o jsonpath='{.data.tfstate}' | base64 -d | gunzip"});
  ASSERT_EQ(state.exit_code, 0) << state.output;
  EXPECT_THAT(state.output, HasSubstr(R"("type":"terraform_data")"));
  EXPECT_THAT(state.output, HasSubstr("hello, rig"));
  // The lock Lease exists and is released.
  EXPECT_EQ(get({"-n", "e2e-tofu", "get", "lease", "lock-tfstate-default-rigtest", "-o",
                 "jsonpath={.spec.holderIdentity}"}),
            "");

  // A second Job reads the output back from the stored state.
  apply(job("output", "[output, -raw, greeting]"));
  waitComplete("e2e-tofu", "output");
  EXPECT_EQ(podLog(*env_, "e2e-tofu", podOf("e2e-tofu", "output"), "main"), "hello, rig");
}

// The Git server: git http-backend over HTTPS (the rig's CA, basic auth)
// and sshd, on the same bare repositories. The HTTPS server counts one ref
// advertisement per ls-remote or fetch, and none for a refused request.
TEST_F(RigE2eTest, GitServesRepositoriesOverHttpsAndSshAndCountsRefAdvertisements) {
  ASSERT_FALSE(env_->git_https.empty()) << "no CAPTF_RIG_GIT_HTTPS in " << env_->dir << "/env";
  GitRepo repo(*env_, "modules");
  const std::string v1 = repo.commitFiles("main", {{"main.tf", "# one\n"}}, "one");
  const std::string v2 =
      repo.commitFiles("main", {{"main.tf", "# two\n"}, {"sub/vars.tf", "# vars\n"}}, "two");
  ASSERT_EQ(v1.size(), 40U);
  ASSERT_EQ(v2.size(), 40U);
  EXPECT_EQ(repo.commitOf("main^"), v1);
  repo.tag("v1", v1);
  const std::string v2_tag = repo.annotatedTag("v2", v2, "release two");
  EXPECT_NE(v2_tag, v2);
  EXPECT_EQ(repo.commitOf("v2"), v2);
  EXPECT_EQ(repo.commitOf("no-such-branch"), "");

  // https://USER:PASSWORD@127.0.0.1:PORT/modules.git
  auto url_with = [&](const std::string& password) {
    std::string url = repo.httpsUrl();
    return url.insert(std::string("https://").size(), env_->git_user + ":" + password + "@");
  };
  const auto client = gitClientEnv(*env_);
  const GitCounts before = repo.counts();
  for (int i = 0; i < 3; ++i) {
    CommandResult r = git({"ls-remote", url_with(env_->git_password)}, client);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr(v2 + "\trefs/heads/main"));
    EXPECT_THAT(r.output, HasSubstr(v1 + "\trefs/tags/v1"));
    EXPECT_THAT(r.output, HasSubstr(v2_tag + "\trefs/tags/v2\n"));
    EXPECT_THAT(r.output, HasSubstr(v2 + "\trefs/tags/v2^{}"));
  }
  CommandResult refused = git({"ls-remote", url_with("wrong")}, client);
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("Authentication failed"));
  refused = git({"ls-remote", repo.httpsUrl()}, client);
  EXPECT_NE(refused.exit_code, 0) << "no credentials: " << refused.output;
  GitCounts after = repo.counts();
  EXPECT_EQ(after.ref_advertisements, before.ref_advertisements + 3);

  const fs::path clone = root_ / "clone";
  CommandResult r = git({"clone", "-q", url_with(env_->git_password), clone.string()}, client);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream vars(clone / "sub/vars.tf");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(vars), {}), "# vars\n");
  const GitCounts cloned = repo.counts();
  EXPECT_EQ(cloned.ref_advertisements, after.ref_advertisements + 1);
  EXPECT_GT(cloned.upload_packs, after.upload_packs);

  // Back to the older commit, as a force push; the tags stay.
  repo.forcePush("main", v1);
  r = git({"ls-remote", url_with(env_->git_password), "refs/heads/main"}, client);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, v1 + "\trefs/heads/main\n");

  // SSH: the client key, and the host key checked against known_hosts.
  r = git({"ls-remote", repo.sshUrl()}, client);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(v1 + "\trefs/heads/main"));
  EXPECT_THAT(r.output, HasSubstr(v2 + "\trefs/tags/v2^{}"));
  // The same host and port with another key: the host is refused.
  const std::string other = (root_ / "other_host_key").string();
  r = run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream known_in(env_->git_known_hosts);
  std::ifstream other_in(other + ".pub");
  std::string host;
  std::string type;
  std::string key;
  std::string other_type;
  std::string other_key;
  known_in >> host >> type >> key;
  other_in >> other_type >> other_key;
  EXPECT_EQ(host.rfind("[127.0.0.1]:", 0), 0U) << host;
  EXPECT_EQ(type, "ssh-ed25519");
  const std::string wrong_hosts = (root_ / "wrong_known_hosts").string();
  std::ofstream(wrong_hosts) << host << " " << other_type << " " << other_key << "\n";
  r = git({"ls-remote", repo.sshUrl()}, gitClientEnv(*env_, wrong_hosts));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Host key verification failed"));
}

} // namespace
} // namespace captf::rig
