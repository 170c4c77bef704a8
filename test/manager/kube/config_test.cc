#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "manager/kube/clock.h"
#include "manager/kube/config.h"
#include "manager/kube/credentials.h"
#include "manager/kube/object.h"

namespace captf::kube {
namespace {

namespace fs = std::filesystem;

class TempDir {
public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("kube-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& content) const {
    fs::path file = path_ / name;
    fs::create_directories(file.parent_path());
    std::ofstream(file) << content;
    return file.string();
  }
  std::string path() const { return path_.string(); }

private:
  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static inline int counter_ = 0;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
  fs::path path_;
};

EnvLookup envOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) {
      return std::nullopt;
    }
    return it->second;
  };
}

constexpr const char* kKubeconfig = R"(
apiVersion: v1
kind: Config
current-context: admin@one
clusters:
- name: one
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: Q0EtUEVN
- name: two
  cluster:
    server: https://two.example:443/prefix
    certificate-authority: ca/two.pem
    tls-server-name: kubernetes
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: bot
  user:
    tokenFile: token
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: get-token
      args: ["--cluster", "two"]
      env: [{name: REGION, value: eu}]
      interactiveMode: Never
      provideClusterInfo: true
contexts:
- name: admin@one
  context: {cluster: one, user: admin, namespace: team-a}
- name: bot@two
  context: {cluster: two, user: bot}
- name: plugin@two
  context: {cluster: two, user: plugin}
)";

TEST(KubeconfigTest, CurrentContextWithInlineData) {
  auto config = parseKubeconfig(kKubeconfig, "", "/nowhere");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://127.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, "CA-PEM");
  EXPECT_EQ(config->client_cert_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
  EXPECT_EQ(config->ns, "team-a");
  EXPECT_FALSE(config->exec.has_value());
}

TEST(KubeconfigTest, NamedContextResolvesRelativeFiles) {
  TempDir dir;
  dir.write("ca/two.pem", "TWO-CA");
  auto config = parseKubeconfig(kKubeconfig, "bot@two", dir.path());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://two.example:443/prefix");
  EXPECT_EQ(config->ca_pem, "TWO-CA");
  EXPECT_EQ(config->tls_server_name, "kubernetes");
  EXPECT_EQ(config->bearer_token_file, (fs::path(dir.path()) / "token").string());
  EXPECT_EQ(config->ns, "default");
}

TEST(KubeconfigTest, ExecPlugin) {
  TempDir dir;
  dir.write("ca/two.pem", "TWO-CA");
  auto config = parseKubeconfig(kKubeconfig, "plugin@two", dir.path());
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->exec.has_value());
  EXPECT_EQ(config->exec->command, "get-token");
  EXPECT_EQ(config->exec->args, (std::vector<std::string>{"--cluster", "two"}));
  ASSERT_EQ(config->exec->env.size(), 1U);
  EXPECT_EQ(config->exec->env[0], (std::pair<std::string, std::string>{"REGION", "eu"}));
  EXPECT_TRUE(config->exec->provide_cluster_info);
  EXPECT_EQ(config->exec->interactive_mode, "Never");
}

TEST(KubeconfigTest, Errors) {
  EXPECT_TRUE(absl::IsNotFound(parseKubeconfig(kKubeconfig, "missing", "").status()));
  EXPECT_FALSE(parseKubeconfig("clusters: [", "", "").ok());
  EXPECT_FALSE(parseKubeconfig("current-context: x\n", "", "").ok());
  // A missing CA file is an error, not an empty CA.
  EXPECT_FALSE(parseKubeconfig(kKubeconfig, "bot@two", "/nonexistent").ok());
  constexpr const char* kAuthProvider = R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://a:1"}}]
users: [{name: u, user: {auth-provider: {name: gcp}}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
)";
  EXPECT_EQ(parseKubeconfig(kAuthProvider, "", "").status().code(),
            absl::StatusCode::kUnimplemented);
  constexpr const char* kBadExec = R"(
current-context: c
clusters: [{name: k, cluster: {server: "https://a:1"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: x}}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
)";
  EXPECT_FALSE(parseKubeconfig(kBadExec, "", "").ok()) << "v1 needs interactiveMode";
}

TEST(KubeconfigTest, KubeconfigListMergesFirstWins) {
  TempDir dir;
  std::string first = dir.write("first", R"(
current-context: mine
clusters: [{name: k, cluster: {server: "https://first:1"}}]
contexts: [{name: mine, context: {cluster: k}}]
)");
  std::string second = dir.write("second", R"(
current-context: theirs
clusters: [{name: k, cluster: {server: "https://second:1"}},
           {name: other, cluster: {server: "https://other:1"}}]
contexts: [{name: theirs, context: {cluster: other}}]
)");
  auto config =
      loadConfig({.kubeconfig = "",
                  .context = "",
                  .env = envOf({{"KUBECONFIG", first + ":" + dir.path() + "/absent:" + second}}),
                  .in_cluster = {}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://first:1");
  auto theirs = loadKubeconfigFiles({first, second}, "theirs");
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(theirs->server, "https://other:1");
}

TEST(InClusterTest, ReadsServiceAccountFiles) {
  TempDir dir;
  InClusterPaths paths{dir.write("token", "tok\n"), dir.write("ca.crt", "CA"),
                       dir.write("namespace", "captf-system\n")};
  auto config = inClusterConfig(
      envOf({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}), paths);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:443");
  EXPECT_EQ(config->bearer_token_file, paths.token_file);
  EXPECT_TRUE(config->bearer_token.empty()) << "the file is re-read, never copied";
  EXPECT_EQ(config->ca_pem, "CA");
  EXPECT_EQ(config->ns, "captf-system");

  auto v6 = inClusterConfig(
      envOf({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}}), paths);
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");

  EXPECT_TRUE(absl::IsNotFound(inClusterConfig(envOf({}), paths).status()));
}

TEST(LoadConfigTest, PrecedenceFlagThenEnvThenInClusterThenHome) {
  TempDir dir;
  auto kubeconfig = [](const std::string& server) {
    return "current-context: c\nclusters: [{name: k, cluster: {server: \"" + server +
           "\"}}]\ncontexts: [{name: c, context: {cluster: k}}]\n";
  };
  std::string flag = dir.write("flag", kubeconfig("https://flag:1"));
  std::string env = dir.write("env", kubeconfig("https://env:1"));
  dir.write("home/.kube/config", kubeconfig("https://home:1"));
  InClusterPaths paths{dir.write("sa/token", "t"), dir.write("sa/ca.crt", "CA"),
                       dir.path() + "/sa/namespace"};
  std::map<std::string, std::string> vars{{"KUBECONFIG", env},
                                          {"HOME", dir.path() + "/home"},
                                          {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                          {"KUBERNETES_SERVICE_PORT", "443"}};

  auto load = [&](const std::string& flag_path) {
    return loadConfig(
        {.kubeconfig = flag_path, .context = "", .env = envOf(vars), .in_cluster = paths});
  };
  EXPECT_EQ(load(flag)->server, "https://flag:1");
  EXPECT_EQ(load("")->server, "https://env:1");
  vars.erase("KUBECONFIG");
  EXPECT_EQ(load("")->server, "https://10.0.0.1:443");
  vars.erase("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(load("")->server, "https://home:1");
  vars.erase("HOME");
  EXPECT_TRUE(absl::IsNotFound(load("").status()));
}

TEST(TokenFileCredentialsTest, ReReadsAfterRefreshPeriodOrUnauthorized) {
  TempDir dir;
  std::string path = dir.write("token", "first\n");
  FakeClock clock;
  TokenFileCredentials source(path, {}, clock, std::chrono::minutes(1));
  auto first = source.current();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->bearer_token, "first");

  dir.write("token", "second");
  EXPECT_EQ(source.current()->bearer_token, "first") << "cached within the period";
  clock.advance(std::chrono::seconds(61));
  EXPECT_EQ(source.current()->bearer_token, "second");

  dir.write("token", "third");
  auto used = source.current();
  EXPECT_TRUE(source.invalidate(*used));
  EXPECT_EQ(source.current()->bearer_token, "third") << "a 401 forces a re-read";

  fs::remove(path);
  clock.advance(std::chrono::minutes(5));
  EXPECT_EQ(source.current()->bearer_token, "third") << "keeps the last token when unreadable";
}

TEST(ExecCredentialTest, ParsesTokenCertificateAndExpiry) {
  auto parsed = ExecCredentials::parseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
          "status":{"token":"abc","expirationTimestamp":"2030-01-02T03:04:05Z"}})",
      "client.authentication.k8s.io/v1");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->first.bearer_token, "abc");
  ASSERT_TRUE(parsed->second.has_value());
  EXPECT_EQ(formatTime(*parsed->second), "2030-01-02T03:04:05Z");

  auto cert = ExecCredentials::parseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
          "status":{"clientCertificateData":"C","clientKeyData":"K"}})",
      "client.authentication.k8s.io/v1beta1");
  ASSERT_TRUE(cert.ok());
  EXPECT_EQ(cert->first.client_cert_pem, "C");
  EXPECT_FALSE(cert->second.has_value());

  for (const char* bad : {
           R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})",
           R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential",
               "status":{"token":"x"}})",
           R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
               "status":{"clientCertificateData":"C"}})",
           R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
               "status":{}})",
           "not json",
       }) {
    EXPECT_FALSE(ExecCredentials::parseExecCredential(bad, "client.authentication.k8s.io/v1").ok())
        << bad;
  }
}

} // namespace
} // namespace captf::kube
