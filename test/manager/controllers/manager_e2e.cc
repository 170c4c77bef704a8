#include "test/manager/controllers/manager_e2e.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spawn.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "manager/kube/certificates.h"
#include "manager/kube/https_server.h"

namespace captf::controllers::e2e {

namespace fs = std::filesystem;

namespace {

constexpr char kUser[] = "captf-manager-e2e";

std::string credentialsSecretName(const std::string& identity) {
  return identity + "-credentials";
}

} // namespace

const rig::Env& env() {
  return rig::shared(rig::Tier::kCapi);
}

std::string sourceDir() {
  return CAPTF_E2E_SOURCE_DIR;
}

rig::CommandResult kubectl(const std::vector<std::string>& args, const std::string& in) {
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
    return {};
  }
  json parsed = json::parse(r.output, nullptr, false);
  return parsed.is_discarded() ? json() : parsed;
}

void mergePatch(const std::string& ns, const std::string& resource, const std::string& name,
                const json& patch) {
  const rig::CommandResult r =
      kubectl({"-n", ns, "patch", resource, name, "--type=merge", "-p", patch.dump()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

bool eventually(const std::function<bool()>& check, std::chrono::seconds limit) {
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
  if (!object.is_object()) {
    return "";
  }
  const json conditions = object.value("status", json::object()).value("conditions", json::array());
  for (const json& c : conditions) {
    if (c.value("type", "") == type) {
      return c.value(field, "");
    }
  }
  return "";
}

bool readyTrue(const json& object) {
  return conditionOf(object, "Ready", "status") == "True";
}

int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "no free port: " << std::strerror(errno);
  }
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// --- Processes ---------------------------------------------------------------

// --- ManagerProcess ----------------------------------------------------------

void ManagerProcess::start(const std::vector<std::string>& args, const std::string& log,
                           const std::vector<std::string>& env) {
  std::vector<std::string> argv = {CAPTF_MANAGER_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> environment = {"POD_NAMESPACE=captf-system"};
  environment.insert(environment.end(), env.begin(), env.end());
  pid_ = spawn(argv, log, environment);
  ASSERT_GT(pid_, 0) << "cannot start " << argv.front();
}

void ManagerProcess::signal(int sig) const {
  if (pid_ > 0) {
    ::kill(pid_, sig);
  }
}

std::optional<int> ManagerProcess::wait(std::chrono::seconds limit) {
  if (pid_ <= 0) {
    return -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int ManagerProcess::stop(int sig, std::chrono::seconds limit) {
  if (pid_ <= 0) {
    return -1;
  }
  ::kill(pid_, sig);
  if (std::optional<int> code = wait(limit)) {
    return *code;
  }
  ADD_FAILURE() << "the manager did not exit within " << limit.count() << " s of signal " << sig;
  ::kill(pid_, SIGKILL);
  return wait(limit).value_or(-1);
}

bool ManagerProcess::running() const {
  return pid_ > 0 && ::kill(pid_, 0) == 0;
}

// --- ManagerRig --------------------------------------------------------------

std::string ManagerRig::logText() const {
  std::ifstream in(log());
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string ManagerRig::processLog() const {
  const std::string all = logText();
  return all.substr(std::min(log_offset, all.size()));
}

void ManagerRig::stopCleanly() {
  // A SIGTERM before main has blocked the signals ends the process by the
  // default action (143): wait, bounded, for the manager's start line.
  for (int i = 0;
       i < 300 && process.running() && processLog().find("starting manager") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int code = process.stop(SIGTERM);
  const std::string text = processLog();
  EXPECT_EQ(code, 0) << text;
  EXPECT_EQ(sanitizerReport(text), "") << text;
  EXPECT_NE(text.find("manager stopped"), std::string::npos) << text;
}

void ManagerRig::start(const std::vector<std::string>& extra) {
  log_offset = fs::exists(log()) ? fs::file_size(log()) : 0;
  webhook_port = freePort();
  health_port = freePort();
  metrics_port = freePort();
  report_port = freePort();
  std::vector<std::string> args = {
      "--kubeconfig=" + kubeconfig,
      "--runner-image=" + runner_image,
      // Shorter than the defaults (15 s, 10 s, 2 s) so that a killed
      // manager's successor takes over soon, with a renew deadline that a
      // loaded CI machine's stalls do not reach (at 3 s, a manager lost its
      // lease and stopped mid-test under three parallel rigs).
      "--leader-elect",
      "--leader-elect-lease-duration=" + lease_duration,
      "--leader-elect-renew-deadline=" + renew_deadline,
      "--leader-elect-retry-period=1s",
      "--webhook-port=" + std::to_string(webhook_port),
      "--webhook-cert-dir=" + dir + "/certs",
      "--health-addr=127.0.0.1:" + std::to_string(health_port),
      "--diagnostics-address=127.0.0.1:" + std::to_string(metrics_port),
      "--insecure-diagnostics",
      // Runner pods share the host's network.
      "--runner-report-address=127.0.0.1:" + std::to_string(report_port),
      "--runner-report-bind-address=127.0.0.1:" + std::to_string(report_port),
      "--sync-period=" + sync_period,
      "--v=" + std::to_string(verbosity),
  };
  args.insert(args.end(), extra.begin(), extra.end());
  process.start(args, log(), env);
}

std::string ManagerRig::metrics() const {
  const rig::CommandResult r =
      rig::run({"curl", "-sf", "http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics"});
  return r.exit_code == 0 ? r.output : std::string();
}

void installManager(ManagerRig& rig) {
  const rig::Env& e = env();
  rig.dir = e.dir + "/manager-e2e";
  fs::create_directories(rig.dir + "/certs");
  // CRDs and the manager's RBAC exactly as shipped.
  rig::CommandResult r = kubectl({"apply", "--server-side", "-k", sourceDir() + "/config/crd"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  kubectl({"create", "namespace", "captf-system"});
  r = kubectl({"apply", "--server-side", "-k", sourceDir() + "/config/rbac"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* crd : {"terraformclusters", "terraformclusteridentities"}) {
    r = kubectl({"wait", "--for=condition=Established", "--timeout=60s",
                 std::string("crd/") + crd + ".infrastructure.cluster.x-k8s.io"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // A user bound to the ClusterRole and the leader-election Role, nothing else.
  rig.kubeconfig = rig::userKubeconfig(e, kUser);
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
  // The webhook server's certificate (the API server calls it by URL).
  r = rig::run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                rig.dir + "/certs/tls.key", "-out", rig.dir + "/certs/tls.crt"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

void createTenant(const std::string& ns, const std::string& identity,
                  const std::map<std::string, std::string>& data) {
  kubectl({"create", "namespace", ns});
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata", {{"name", credentialsSecretName(identity)}, {"namespace", "captf-system"}}},
         {"stringData", data}});
  apply(
      {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
       {"kind", "TerraformClusterIdentity"},
       {"metadata", {{"name", identity}}},
       {"spec",
        {{"secretRef", {{"name", credentialsSecretName(identity)}, {"namespace", "captf-system"}}},
         {"allowedNamespaces", {{"list", {ns}}}}}}});
}

void createClusterPair(const std::string& ns, const std::string& name, const std::string& cluster,
                       const json& spec, const json& labels) {
  json metadata = {{"name", name}, {"namespace", ns}};
  if (!labels.empty()) {
    metadata["labels"] = labels;
  }
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformCluster"},
         {"metadata", metadata},
         {"spec", spec}});
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "Cluster"},
         {"metadata", {{"name", cluster}, {"namespace", ns}}},
         {"spec",
          {{"infrastructureRef",
            {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
             {"kind", "TerraformCluster"},
             {"name", name}}}}}});
}

void createBootstrapSecret(const std::string& ns, const std::string& name,
                           const std::string& value) {
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata", {{"name", name}, {"namespace", ns}}},
         {"data",
          {{"value", absl::Base64Escape(value)}, {"format", absl::Base64Escape("cloud-config")}}}});
}

void rotateCredentials(const std::string& identity,
                       const std::map<std::string, std::string>& data) {
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata", {{"name", credentialsSecretName(identity)}, {"namespace", "captf-system"}}},
         {"stringData", data}});
}

namespace {

// Parses `{a="x",b="y"}` (the exposition format's label set).
std::map<std::string, std::string> parseLabels(std::string_view text) {
  std::map<std::string, std::string> labels;
  size_t i = 0;
  while (i < text.size()) {
    const size_t eq = text.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') {
      break;
    }
    std::string key(text.substr(i, eq - i));
    std::string value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
      }
      value.push_back(text[j]);
    }
    labels[key] = value;
    i = j + 1;
    if (i < text.size() && text[i] == ',') {
      ++i;
    }
  }
  return labels;
}

} // namespace

std::optional<double> metricValue(const std::string& exposition, const std::string& name,
                                  const std::map<std::string, std::string>& labels) {
  std::optional<double> sum;
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with(name) || line.size() <= name.size()) {
      continue;
    }
    std::map<std::string, std::string> found;
    size_t value_at = name.size();
    if (line[name.size()] == '{') {
      const size_t close = line.find('}', name.size());
      if (close == std::string::npos) {
        continue;
      }
      found = parseLabels(std::string_view(line).substr(name.size() + 1, close - name.size() - 1));
      value_at = close + 1;
    } else if (line[name.size()] != ' ') {
      continue; // another metric with this prefix
    }
    bool match = true;
    for (const auto& [key, value] : labels) {
      auto it = found.find(key);
      match = match && it != found.end() && it->second == value;
    }
    if (match) {
      sum = sum.value_or(0) + std::stod(line.substr(value_at));
    }
  }
  return sum;
}

MetricsSince::MetricsSince(const ManagerRig& rig) : rig_(rig) {
  // The manager may still be starting (a shard's first case comes right
  // after the suite's setup).
  eventually(
      [&] {
        before_ = rig.metrics();
        return !before_.empty();
      },
      std::chrono::seconds(60));
  EXPECT_FALSE(before_.empty()) << "the manager's /metrics did not answer";
}

double MetricsSince::delta(const std::string& name,
                           const std::map<std::string, std::string>& labels) const {
  return metricValue(rig_.metrics(), name, labels).value_or(0) -
         metricValue(before_, name, labels).value_or(0);
}

bool MetricsSince::grows(const std::string& name, const std::map<std::string, std::string>& labels,
                         double at_least, std::chrono::seconds limit) const {
  return eventually([&] { return delta(name, labels) >= at_least; }, limit);
}

std::vector<json> items(const std::string& ns, const std::string& resource,
                        const std::string& selector) {
  std::vector<std::string> args = {"-n", ns, "get", resource};
  if (!selector.empty()) {
    args.emplace_back("-l");
    args.push_back(selector);
  }
  const json list = getJson(args);
  std::vector<json> out;
  if (list.is_object()) {
    for (const json& item : list.value("items", json::array())) {
      out.push_back(item);
    }
  }
  return out;
}

std::vector<std::string> runJobs(const std::string& ns, const std::string& owner,
                                 const std::string& op) {
  std::vector<std::string> names;
  for (const json& job : items(ns, "jobs",
                               "captf.infrastructure.cluster.x-k8s.io/owner-name=" + owner +
                                   ",captf.infrastructure.cluster.x-k8s.io/op=" + op)) {
    names.push_back(job["metadata"].value("name", ""));
  }
  return names;
}

std::vector<json> eventsFor(const std::string& ns, const std::string& name,
                            const std::string& reason) {
  std::vector<json> out;
  const json list = getJson({"-n", ns, "get", "events.v1.events.k8s.io"});
  if (!list.is_object()) {
    return out;
  }
  for (const json& event : list.value("items", json::array())) {
    const json regarding = event.value("regarding", json::object());
    if (regarding.value("name", "") == name &&
        (reason.empty() || event.value("reason", "") == reason)) {
      out.push_back(event);
    }
  }
  return out;
}

// --- WriteHold ---------------------------------------------------------------

namespace {

// A minimal object of `resource` for the dry run that proves a hold in force.
json probeManifest(const std::string& resource, const std::string& ns) {
  const json metadata = {{"generateName", "hold-probe-"}, {"namespace", ns}};
  if (resource == "secrets" || resource == "configmaps") {
    return {{"apiVersion", "v1"},
            {"kind", resource == "secrets" ? "Secret" : "ConfigMap"},
            {"metadata", metadata}};
  }
  if (resource == "leases") {
    return {{"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"}, {"metadata", metadata}};
  }
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", metadata},
          {"spec",
           {{"template",
             {{"spec",
               {{"restartPolicy", "Never"},
                {"containers", json::array({{{"name", "c"}, {"image", "probe"}}})}}}}}}}};
}

// The name a write is about: the request's, or the object's for a create.
std::string writtenName(const json& request) {
  std::string name = request.value("name", "");
  if (name.empty()) {
    const json object = request.value("object", json::object());
    if (object.is_object()) {
      name = object.value("metadata", json::object()).value("name", "");
    }
  }
  return name;
}

} // namespace

WriteHold::WriteHold(const std::string& id, WriteMatch match, bool armed)
    : name_("captf-e2e-hold-" + id), match_(std::move(match)), armed_(armed) {
  const std::string dir = env().dir + "/" + name_;
  fs::create_directories(dir);
  auto pair = kube::selfSignedPair("127.0.0.1");
  EXPECT_TRUE(pair.ok()) << pair.status();
  if (!pair.ok()) {
    return;
  }
  std::ofstream(dir + "/tls.crt") << pair->cert_pem;
  std::ofstream(dir + "/tls.key") << pair->key_pem;
  kube::ServerOptions options;
  options.name = "hold";
  options.address = "127.0.0.1";
  options.port = 0;
  options.cert_dir = dir;
  options.request_timeout = std::chrono::seconds(40);
  server_ = std::make_unique<kube::HttpsServer>(
      options,
      [this](const kube::IncomingRequest& request) {
        return kube::HttpReply{200, "application/json", answer(std::string(request.body))};
      },
      std::make_shared<spdlog::logger>("hold", std::make_shared<spdlog::sinks::null_sink_mt>()),
      [](std::string_view) { return true; });
  const absl::Status started = server_->start();
  EXPECT_TRUE(started.ok()) << started;
  std::vector<std::string> operations = match_.operations;
  if (match_.probe_object.empty() &&
      std::find(operations.begin(), operations.end(), "CREATE") == operations.end()) {
    operations.emplace_back("CREATE"); // for the probe; answer() matches the operations asked
  }
  if (!match_.probe_object.empty() &&
      std::find(operations.begin(), operations.end(), "UPDATE") == operations.end()) {
    operations.emplace_back("UPDATE");
  }
  const json rule = {{"apiGroups", {match_.group}},
                     {"apiVersions", {match_.version}},
                     {"operations", operations},
                     {"resources", {match_.resource}},
                     {"scope", "Namespaced"}};
  const json webhook = {
      {"name", "hold.captf.test"},
      {"admissionReviewVersions", {"v1"}},
      {"sideEffects", "None"},
      {"failurePolicy", "Fail"},
      {"timeoutSeconds", 30},
      {"clientConfig",
       {{"url", "https://127.0.0.1:" + std::to_string(server_->port()) + "/hold"},
        {"caBundle", absl::Base64Escape(pair->cert_pem)}}},
      {"rules", json::array({rule})},
      {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", match_.ns}}}}}};
  apply({{"apiVersion", "admissionregistration.k8s.io/v1"},
         {"kind", "ValidatingWebhookConfiguration"},
         {"metadata", {{"name", name_}}},
         {"webhooks", json::array({webhook})}});
  int probes = 0;
  EXPECT_TRUE(eventually(
      [&] {
        if (match_.probe_object.empty()) {
          kubectl({"create", "--dry-run=server", "-f", "-"},
                  probeManifest(match_.resource, match_.ns).dump());
        } else {
          kubectl({"-n", match_.ns, "annotate", "--dry-run=server", "--overwrite", match_.resource,
                   match_.probe_object, "captf.test/hold-probe=" + std::to_string(++probes)});
        }
        std::scoped_lock lock(mu_);
        return dry_runs_ > 0;
      },
      std::chrono::seconds(60)))
      << "the hold " << name_ << " never came into force";
}

WriteHold::~WriteHold() {
  release();
  kubectl({"delete", "validatingwebhookconfiguration", name_, "--ignore-not-found"});
  if (server_) {
    server_->stop();
  }
}

void WriteHold::arm() {
  std::scoped_lock lock(mu_);
  armed_ = true;
  released_ = false;
  held_ = nullptr;
}

bool WriteHold::awaitHeld(std::chrono::seconds limit) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, limit, [&] { return holding_; });
}

json WriteHold::held() const {
  std::scoped_lock lock(mu_);
  return held_;
}

void WriteHold::release() {
  std::scoped_lock lock(mu_);
  released_ = true;
  cv_.notify_all();
}

std::string WriteHold::answer(const std::string& body) {
  const json review = json::parse(body, nullptr, false);
  const json request =
      review.is_object() ? review.value("request", json::object()) : json::object();
  const std::string operation = request.value("operation", "");
  const bool asked = std::find(match_.operations.begin(), match_.operations.end(), operation) !=
                     match_.operations.end();
  {
    std::unique_lock lock(mu_);
    if (request.value("dryRun", false)) {
      ++dry_runs_;
    } else if (armed_ && asked && writtenName(request).starts_with(match_.name_prefix) &&
               (!match_.when || match_.when(request))) {
      armed_ = false;
      holding_ = true;
      held_ = request;
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(28), [&] { return released_; });
      holding_ = false;
    }
  }
  const json response = {{"apiVersion", "admission.k8s.io/v1"},
                         {"kind", "AdmissionReview"},
                         {"response", {{"uid", request.value("uid", "")}, {"allowed", true}}}};
  return response.dump();
}

} // namespace captf::controllers::e2e
