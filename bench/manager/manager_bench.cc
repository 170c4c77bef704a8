// The manager benchmark (issue 5): N TerraformClusters, each owned by a
// Cluster API Cluster, created at once on the rig's capi tier, reconciled by
// the release `manager` executable with exactly config/rbac's ClusterRole,
// with real Jobs (noop cluster module, guarded apply) run by the process
// kubelet, which binds pods only while their requests fit the node.
//
// Measures in one run: seconds from creation until every TerraformCluster
// has an apply Job and until every one is Ready; the manager's peak RSS
// (VmHWM) and CPU seconds (utime + stime) from /proc; the manager's API
// requests per object (its rest_client_requests_total, scraped from
// --diagnostics-address, after minus before). Progress goes to stderr, the
// figures to stdout (and --out as JSON).
//
// Times are taken from `kubectl get --watch` streams, started before the
// objects are created, so nothing polls the API server.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contract/roles.h"
#include "test/manager/controllers/manager_e2e.h"
#include "test/rig/fixture.h"
#include "test/runner/e2e_support.h"

// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): POSIX declares it
extern char** environ;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kNamespace[] = "bench";
constexpr char kIdentity[] = "bench";

struct Options {
  int objects = 500;
  int timeout_seconds = 3600;
  int shards = 10; // parallel `kubectl create` processes
  std::string out;
  std::vector<std::string> manager_args;
  // Another build's manager, to compare two builds on one machine.
  std::string manager_binary = CAPTF_MANAGER_BINARY;
  // cluster: N TerraformClusters, each with its Cluster, until all Ready.
  // machine: N TerraformMachines, each with its Machine, under one Cluster,
  // until every apply Job exists; then the plain writer's baseline.
  std::string kind = "cluster";
  // cluster: each state padded to about this many KiB (0: the noop
  // module's near-empty state); see README.md, "Memory at realistic states".
  int state_kib = 0;
  // After every object is Ready, seconds the manager is watched idle (its
  // resyncs re-read every state), its RSS sampled each second.
  int settle_seconds = 0;
};

namespace e2e = captf::controllers::e2e;

// The manager's pid, stopped by die() too (the rig stops itself at exit).
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): read by die()
pid_t g_manager = -1;

void die(const std::string& what) {
  std::fprintf(stderr, "manager-bench: %s\n", what.c_str());
  if (g_manager > 0) {
    ::kill(g_manager, SIGTERM);
    ::waitpid(g_manager, nullptr, 0);
  }
  std::exit(1);
}

// The e2e helpers record gtest failures; outside a test, end the run on one.
void checkSetup(const std::string& step) {
  if (::testing::UnitTest::GetInstance()->Failed()) {
    die(step + " failed (see above)");
  }
}

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// e2e::spawn, dying when the program cannot start.
pid_t spawn(const std::vector<std::string>& argv, int stdout_fd, const std::string& log,
            const std::vector<std::string>& extra_env = {}) {
  const pid_t pid = e2e::spawn(argv, log, extra_env, stdout_fd);
  if (pid < 0) {
    die("cannot start " + argv.front());
  }
  return pid;
}

// A `kubectl get --watch -o jsonpath=...` stream; every line goes to
// `on_line` with the time it arrived. Restarted when the server ends the
// watch (the relist repeats lines, which the callers ignore).
class Watch {
public:
  Watch(std::vector<std::string> args, std::string log,
        std::function<void(const std::string&, Clock::time_point)> on_line)
      : args_(std::move(args)), log_(std::move(log)), on_line_(std::move(on_line)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Watch() {
    stopping_ = true;
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
    }
    thread_.join();
  }

private:
  void loop() {
    while (!stopping_) {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) {
        die("pipe");
      }
      std::vector<std::string> argv = {e2e::env().kubectl, "--kubeconfig", e2e::env().kubeconfig};
      argv.insert(argv.end(), args_.begin(), args_.end());
      pid_ = spawn(argv, fds[1], log_);
      ::close(fds[1]);
      std::string buffer;
      char chunk[65536];
      for (;;) {
        const ssize_t n = ::read(fds[0], chunk, sizeof(chunk));
        if (n <= 0) {
          break;
        }
        const Clock::time_point now = Clock::now();
        buffer.append(chunk, static_cast<std::size_t>(n));
        std::size_t start = 0;
        for (std::size_t nl = buffer.find('\n'); nl != std::string::npos;
             nl = buffer.find('\n', start)) {
          on_line_(buffer.substr(start, nl - start), now);
          start = nl + 1;
        }
        buffer.erase(0, start);
      }
      ::close(fds[0]);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      if (!stopping_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    }
  }

  std::vector<std::string> args_;
  std::string log_;
  std::function<void(const std::string&, Clock::time_point)> on_line_;
  std::atomic<bool> stopping_{false};
  std::atomic<pid_t> pid_{-1};
  std::thread thread_;
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    out.push_back(word);
  }
  return out;
}

// What the watches saw: the first time per object.
struct Progress {
  std::mutex mu;
  std::map<std::string, Clock::time_point> owned; // TerraformCluster got its Cluster owner
  std::map<std::string, Clock::time_point> job;   // its first Job exists
  std::map<std::string, Clock::time_point> ready; // Ready=True
  std::set<std::string> failed_jobs;              // Jobs that failed
  std::map<std::string, std::string> job_ops;     // every Job seen → its op
};

// /proc figures of one process.
struct ProcSample {
  double cpu_seconds = 0;
  double rss_mib = 0; // VmRSS
  double hwm_mib = 0; // VmHWM: the peak
};

ProcSample sampleProc(pid_t pid) {
  ProcSample s;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), {});
  // Fields after the command name (which may hold spaces): state is field 3,
  // utime 14, stime 15.
  const std::size_t close = content.rfind(')');
  if (close != std::string::npos) {
    const std::vector<std::string> fields = split(content.substr(close + 2));
    if (fields.size() > 12) {
      const auto ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
      s.cpu_seconds = (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
    }
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) {
      s.rss_mib = std::stod(line.substr(6)) / 1024;
    } else if (line.starts_with("VmHWM:")) {
      s.hwm_mib = std::stod(line.substr(6)) / 1024;
    }
  }
  return s;
}

// rest_client_requests_total by method, from the manager's /metrics.
std::map<std::string, double> restRequests(const std::string& exposition) {
  std::map<std::string, double> by_method;
  for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE"}) {
    by_method[method] =
        e2e::metricValue(exposition, "rest_client_requests_total", {{"method", method}})
            .value_or(0);
  }
  return by_method;
}

std::string scrape(const e2e::ManagerRig& manager) {
  std::string exposition = manager.metrics();
  if (exposition.empty()) {
    die("cannot scrape the manager's metrics");
  }
  return exposition;
}

double total(const std::map<std::string, double>& by_method) {
  double t = 0;
  for (const auto& [method, n] : by_method) {
    t += n;
  }
  return t;
}

std::string objectName(int i, const std::string& kind = "cluster") {
  char name[32];
  std::snprintf(name, sizeof(name), kind == "machine" ? "tm-%05d" : "tc-%05d", i);
  return name;
}

std::string clusterName(int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "c-%05d", i);
  return name;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        die("missing value for " + a);
      }
      return argv[++i];
    };
    if (a == "--objects") {
      o.objects = std::stoi(value());
    } else if (a == "--timeout") {
      o.timeout_seconds = std::stoi(value());
    } else if (a == "--shards") {
      o.shards = std::stoi(value());
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--manager-arg") {
      o.manager_args.push_back(value());
    } else if (a == "--manager-binary") {
      o.manager_binary = value();
    } else if (a == "--kind") {
      o.kind = value();
    } else if (a == "--state-kib") {
      o.state_kib = std::stoi(value());
    } else if (a == "--settle") {
      o.settle_seconds = std::stoi(value());
    } else {
      die("usage: manager_bench [--kind cluster|machine|pool] [--objects N] [--timeout SECONDS] "
          "[--shards K] [--out DIR] [--manager-arg ARG]... [--manager-binary PATH] "
          "[--state-kib KIB] [--settle SECONDS]");
    }
  }
  if (o.objects < 1 || o.shards < 1) {
    die("--objects and --shards must be positive");
  }
  if (o.state_kib < 0 || o.settle_seconds < 0) {
    die("--state-kib and --settle must not be negative");
  }
  if (o.kind != "cluster" && o.kind != "machine" && o.kind != "pool") {
    die("--kind is cluster, machine or pool");
  }
  return o;
}

// As the manager e2e sets up: CRDs and RBAC as shipped, a user bound to
// the manager's ClusterRole, the webhook certificate, a tenant with its
// identity and credentials; the runner image and the noop cluster module.
struct Setup {
  std::string runner_image;
  std::string module_image;
  std::string machine_image;
  std::string pool_image;
};

// The machine benchmark's one Cluster and its bootstrap Secret.
constexpr char kMachineCluster[] = "c-machines";
constexpr char kBootstrapSecret[] = "bench-bootstrap";

// The noop cluster module, its state padded to about `kib` KiB: a
// terraform_data resource whose input (kept twice in the state, as input and
// output) is SHA-512 digests in hex, which compress about as little as the
// identifiers, keys and addresses of a real state (gzip ~2:1).
std::string clusterModule(int kib) {
  std::string module = captf::runner::e2e::noopModule(captf::contract::Role::kCluster);
  if (kib > 0) {
    // 128 hex characters a digest, twice in the state: 4 digests a KiB.
    module += "resource \"terraform_data\" \"state_padding\" {\n"
              "  input = join(\"\", [for i in range(" +
              std::to_string(kib * 4) +
              ") : sha512(\"${var.captf_object.name}-${i}\")])\n"
              "}\n";
  }
  return module;
}

Setup setUp(e2e::ManagerRig& manager, const Options& o) {
  e2e::installManager(manager);
  checkSetup("installing the manager");
  e2e::createTenant(kNamespace, kIdentity,
                    {{"NOOP_API_TOKEN", captf::runner::e2e::kCredentialValue}});
  checkSetup("creating the tenant");
  namespace runner = captf::runner::e2e;
  Setup s;
  s.runner_image = runner::Images::get().runner();
  s.module_image = runner::Images::get().module("bench-cluster-" + std::to_string(o.state_kib),
                                                clusterModule(o.state_kib), e2e::env().tofu);
  s.machine_image = runner::Images::get().module(
      "bench-machine", runner::noopModule(captf::contract::Role::kMachine), e2e::env().tofu);
  s.pool_image = runner::Images::get().module(
      "bench-pool", runner::noopModule(captf::contract::Role::kMachinePool), e2e::env().tofu);
  checkSetup("pushing the images");
  return s;
}

// Shard k of the Machines, paused: Cluster API's Machine controller leaves
// them alone, so the figures are the manager's (see README.md, "Machines").
json pausedMachineShardList(const Options& o, int shard) {
  json items = json::array();
  for (int i = shard; i < o.objects; i += o.shards) {
    const std::string name = objectName(i, "machine");
    items.push_back({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                     {"kind", "Machine"},
                     {"metadata",
                      {{"name", name},
                       {"namespace", kNamespace},
                       {"annotations", {{"cluster.x-k8s.io/paused", ""}}}}},
                     {"spec",
                      {{"clusterName", kMachineCluster},
                       {"bootstrap", {{"dataSecretName", kBootstrapSecret}}},
                       {"infrastructureRef",
                        {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
                         {"kind", "TerraformMachine"},
                         {"name", name}}}}}});
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

// Shard k of the TerraformMachines, each owned by its Machine (`uids`: the
// Machines' uids by name) as Cluster API would have set it.
json machineShardList(const Options& o, const Setup& s, int shard,
                      const std::map<std::string, std::string>& uids) {
  json items = json::array();
  for (int i = shard; i < o.objects; i += o.shards) {
    const std::string name = objectName(i, "machine");
    items.push_back({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                     {"kind", "TerraformMachine"},
                     {"metadata",
                      {{"name", name},
                       {"namespace", kNamespace},
                       {"labels", {{"cluster.x-k8s.io/cluster-name", kMachineCluster}}},
                       {"ownerReferences",
                        {{{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                          {"kind", "Machine"},
                          {"name", name},
                          {"uid", uids.at(name)},
                          {"controller", true},
                          {"blockOwnerDeletion", true}}}}}},
                     {"spec", {{"source", {{"image", s.machine_image}}}}}});
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

// Creates the shards' Lists with parallel `kubectl create`; dies on failure.
void createShards(const std::vector<std::string>& files, const std::string& log) {
  const captf::rig::Env& rig = e2e::env();
  std::vector<pid_t> creators;
  creators.reserve(files.size());
  for (const std::string& file : files) {
    creators.push_back(
        spawn({rig.kubectl, "--kubeconfig", rig.kubeconfig, "create", "-o", "name", "-f", file}, -1,
              log));
  }
  for (pid_t pid : creators) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      die("kubectl create failed; see " + log);
    }
  }
}

// What the manager wrote for the machines before their apply Jobs ran (the
// Job, its per-run Secret, the durable inputs Secret, the run Lease), as the
// API server holds it, made creatable again in `ns`: server fields dropped,
// Jobs suspended (no pods), in `shards` Lists.
std::vector<json> baselineLists(const std::string& ns, int shards) {
  std::vector<json> lists(static_cast<std::size_t>(shards),
                          json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}});
  std::size_t next = 0;
  for (const char* resource : {"secrets", "leases", "jobs"}) {
    const json list =
        e2e::getJson({"-n", kNamespace, "get", resource, "-l",
                      "captf.infrastructure.cluster.x-k8s.io/owner-kind=TerraformMachine"});
    for (json item : list.value("items", json::array())) {
      json& meta = item["metadata"];
      for (const char* field : {"uid", "resourceVersion", "creationTimestamp", "managedFields",
                                "ownerReferences", "generation", "selfLink"}) {
        meta.erase(field);
      }
      meta["namespace"] = ns;
      item.erase("status");
      if (item.value("kind", "") == "Job") {
        item["spec"]["suspend"] = true;
        item["spec"].erase("selector");
        item["spec"].erase("manualSelector");
        for (json* labels : {&meta["labels"], &item["spec"]["template"]["metadata"]["labels"]}) {
          for (const char* key : {"controller-uid", "batch.kubernetes.io/controller-uid",
                                  "job-name", "batch.kubernetes.io/job-name"}) {
            labels->erase(key);
          }
        }
      }
      lists[next++ % lists.size()]["items"].push_back(item);
    }
  }
  return lists;
}

// Shard k of the objects: the TerraformClusters first, then their Clusters.
json shardList(const Options& o, const Setup& s, int shard) {
  json items = json::array();
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = shard; i < o.objects; i += o.shards) {
      if (pass == 0) {
        items.push_back(
            {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
             {"kind", "TerraformCluster"},
             {"metadata", {{"name", objectName(i)}, {"namespace", kNamespace}}},
             {"spec",
              {{"source", {{"image", s.module_image}}}, {"identityRef", {{"name", kIdentity}}}}}});
      } else {
        items.push_back({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                         {"kind", "Cluster"},
                         {"metadata", {{"name", clusterName(i)}, {"namespace", kNamespace}}},
                         {"spec",
                          {{"clusterNetwork", {{"pods", {{"cidrBlocks", {"192.168.0.0/16"}}}}}},
                           {"infrastructureRef",
                            {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
                             {"kind", "TerraformCluster"},
                             {"name", objectName(i)}}}}}});
      }
    }
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

// --kind pool: one MachinePool on a TerraformMachinePool, scaled 0 -> N -> 0
// (README.md, "Machine pools"). Per step: the seconds until the pool
// reports N members (status.replicas, spec.providerIDList and
// status.instances), and the manager's reconciles, Jobs and API requests
// during the step (its own counters, after minus before).
int runPool(const Options& o, const Setup& setup, const e2e::ManagerRig& manager_rig,
            const std::string& out) {
  constexpr char kPool[] = "bench-pool";
  e2e::createClusterPair(
      kNamespace, "tc-pool", kMachineCluster,
      {{"source", {{"image", setup.module_image}}}, {"identityRef", {{"name", kIdentity}}}});
  e2e::apply({{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata", {{"name", kBootstrapSecret}, {"namespace", kNamespace}}},
              {"stringData", {{"value", "#cloud-config\n"}, {"format", "cloud-config"}}}});
  e2e::apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
              {"kind", "TerraformMachinePool"},
              {"metadata", {{"name", kPool}, {"namespace", kNamespace}}},
              {"spec", {{"source", {{"image", setup.pool_image}}}}}});
  e2e::apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
              {"kind", "MachinePool"},
              {"metadata", {{"name", kPool}, {"namespace", kNamespace}}},
              {"spec",
               {{"clusterName", kMachineCluster},
                {"replicas", 0},
                {"template",
                 {{"spec",
                   {{"clusterName", kMachineCluster},
                    {"version", "v1.34.0"},
                    {"bootstrap", {{"dataSecretName", kBootstrapSecret}}},
                    {"infrastructureRef",
                     {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
                      {"kind", "TerraformMachinePool"},
                      {"name", kPool}}}}}}}}}});
  checkSetup("creating the pool");
  const auto members = [&]() -> int {
    const json p = e2e::getJson({"-n", kNamespace, "get", "terraformmachinepool", kPool});
    if (!p.is_object() || !e2e::readyTrue(p)) {
      return -1;
    }
    const int replicas = p["status"].value("replicas", -1);
    const auto ids = p["spec"].value("providerIDList", json::array()).size();
    const auto instances = p["status"].value("instances", json::array()).size();
    return std::cmp_equal(ids, replicas) && std::cmp_equal(instances, replicas) ? replicas : -1;
  };
  if (!e2e::eventually([&] { return members() == 0; }, std::chrono::seconds(300))) {
    die("the pool of 0 never became Ready");
  }
  auto metric = [](const std::string& exposition, const char* name,
                   const std::map<std::string, std::string>& labels) {
    return e2e::metricValue(exposition, name, labels).value_or(0);
  };
  const std::map<std::string, std::string> controller = {{"controller", "terraformmachinepool"}};
  json steps = json::array();
  bool converged_all = true;
  for (const int target : {o.objects, 0}) {
    const std::string before = scrape(manager_rig);
    const auto t0 = Clock::now();
    e2e::mergePatch(kNamespace, "machinepools.v1beta2.cluster.x-k8s.io", kPool,
                    {{"spec", {{"replicas", target}}}});
    bool converged = false;
    while (seconds(Clock::now() - t0) < o.timeout_seconds) {
      if (members() == target) {
        converged = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    const double took = seconds(Clock::now() - t0);
    const std::string after = scrape(manager_rig);
    const auto delta = [&](const char* name, const std::map<std::string, std::string>& labels) {
      return metric(after, name, labels) - metric(before, name, labels);
    };
    const std::map<std::string, double> requests_before = restRequests(before);
    double requests = 0;
    for (const auto& [method, n] : restRequests(after)) {
      requests += n - requests_before.at(method);
    }
    json jobs = json::object();
    for (const char* op : {"apply", "refresh", "drift"}) {
      jobs[op] = delta("captf_jobs_total", {{"kind", "TerraformMachinePool"}, {"op", op}});
    }
    const json step = {{"replicas", target},
                       {"converged", converged},
                       {"seconds", took},
                       {"reconciles", delta("controller_runtime_reconcile_total", controller)},
                       {"jobs", jobs},
                       {"api_requests", requests}};
    std::fprintf(stderr, "manager-bench: pool -> %d: %s in %.1f s\n", target,
                 converged ? "converged" : "NOT converged", took);
    steps.push_back(step);
    converged_all = converged_all && converged;
  }
  std::ofstream(out + "/result.json") << json{{"kind", "pool"}, {"steps", steps}}.dump(2) << "\n";
  std::printf("one MachinePool, noop pool module; per step (manager's own counters):\n");
  for (const json& step : steps) {
    std::printf("  -> %3d replicas  %s %6.1f s  reconciles %4.0f  Jobs apply %.0f refresh %.0f  "
                "API requests %.0f\n",
                step["replicas"].get<int>(),
                step["converged"].get<bool>() ? "converged" : "TIMEOUT",
                step["seconds"].get<double>(), step["reconciles"].get<double>(),
                step["jobs"]["apply"].get<double>(), step["jobs"]["refresh"].get<double>(),
                step["api_requests"].get<double>());
  }
  std::printf("result: %s/result.json\n", out.c_str());
  return converged_all ? 0 : 2;
}

} // namespace

// NOLINTNEXTLINE(bugprone-exception-escape): a benchmark; an exception aborts it, as it should
int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::string out =
      o.out.empty() ? (fs::temp_directory_path() / "captf-manager-bench").string() : o.out;
  fs::create_directories(out);
  std::fprintf(stderr, "manager-bench: starting the rig (capi tier)\n");
  (void)e2e::env(); // starts the rig
  e2e::ManagerRig manager_rig;
  const Setup setup = setUp(manager_rig, o);

  // The manager with the shipped settings (leader election, the default
  // sync period and verbosity), plain-HTTP diagnostics for the scrape. Not
  // through ManagerRig::start: that one sets test cadences, and the
  // benchmark needs the pid for /proc.
  manager_rig.webhook_port = e2e::freePort();
  manager_rig.health_port = e2e::freePort();
  manager_rig.metrics_port = e2e::freePort();
  std::vector<std::string> manager_argv = {
      o.manager_binary,
      "--kubeconfig=" + manager_rig.kubeconfig,
      "--runner-image=" + setup.runner_image,
      "--leader-elect",
      "--webhook-port=" + std::to_string(manager_rig.webhook_port),
      "--webhook-cert-dir=" + manager_rig.dir + "/certs",
      "--health-addr=127.0.0.1:" + std::to_string(manager_rig.health_port),
      "--diagnostics-address=127.0.0.1:" + std::to_string(manager_rig.metrics_port),
      "--insecure-diagnostics"};
  manager_argv.insert(manager_argv.end(), o.manager_args.begin(), o.manager_args.end());
  const std::string manager_log = out + "/manager.log";
  fs::remove(manager_log);
  const pid_t manager = spawn(manager_argv, -1, manager_log, {"POD_NAMESPACE=captf-system"});
  g_manager = manager;
  const bool serving = e2e::eventually(
      [&] {
        return ::waitpid(manager, nullptr, WNOHANG) == 0 &&
               captf::rig::run(
                   {"curl", "-sf",
                    "http://127.0.0.1:" + std::to_string(manager_rig.health_port) + "/readyz"})
                       .exit_code == 0;
      },
      std::chrono::seconds(120));
  // The manager reconciles once it holds the Lease.
  const bool leading = serving && e2e::eventually([] {
                         return !e2e::kubectl({"-n", "captf-system", "get", "lease",
                                               "controller-leader-election-captf", "-o",
                                               "jsonpath={.spec.holderIdentity}"})
                                     .output.empty();
                       });
  if (!leading) {
    die("the manager did not become ready and leader; see " + manager_log);
  }
  if (o.kind == "pool") {
    const int code = runPool(o, setup, manager_rig, out);
    ::kill(manager, SIGTERM);
    ::waitpid(manager, nullptr, 0);
    g_manager = -1;
    return code;
  }
  const bool machines = o.kind == "machine";
  std::map<std::string, std::string> machine_uids; // Machine name -> uid
  if (machines) {
    // The one Cluster every machine joins, provisioned before the clock
    // starts, and the bootstrap data every Machine names.
    e2e::createClusterPair(
        kNamespace, "tc-machines", kMachineCluster,
        {{"source", {{"image", setup.module_image}}}, {"identityRef", {{"name", kIdentity}}}});
    e2e::apply({{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"metadata", {{"name", kBootstrapSecret}, {"namespace", kNamespace}}},
                {"stringData", {{"value", "#cloud-config\n"}, {"format", "cloud-config"}}}});
    checkSetup("creating the cluster");
    const bool provisioned = e2e::eventually(
        [] {
          return e2e::getJson({"-n", kNamespace, "get", "clusters.v1beta2.cluster.x-k8s.io",
                               kMachineCluster})
              .value("status", json::object())
              .value("initialization", json::object())
              .value("infrastructureProvisioned", false);
        },
        std::chrono::seconds(300));
    if (!provisioned) {
      die("the cluster was not provisioned; see " + manager_log);
    }
    std::vector<std::string> machine_files;
    for (int k = 0; k < std::min(o.shards, o.objects); ++k) {
      machine_files.push_back(out + "/machines-" + std::to_string(k) + ".json");
      std::ofstream(machine_files.back()) << pausedMachineShardList(o, k).dump();
    }
    createShards(machine_files, out + "/create-machines.log");
    for (const json& machine :
         e2e::getJson({"-n", kNamespace, "get", "machines.v1beta2.cluster.x-k8s.io"})
             .value("items", json::array())) {
      machine_uids[machine["metadata"]["name"]] = machine["metadata"]["uid"];
    }
    if (machine_uids.size() != static_cast<std::size_t>(o.objects)) {
      die("the Machines were not all created");
    }
  }
  const std::string owner_kind = machines ? "Machine" : "Cluster";
  const std::string object_prefix = machines ? "tm-" : "tc-";

  Progress progress;
  const std::string tc_columns = "jsonpath={.metadata.name} "
                                 "{.status.conditions[?(@.type==\"Ready\")].status} "
                                 "{.metadata.ownerReferences[*].kind}{\"\\n\"}";
  const std::string job_columns =
      "jsonpath={.metadata.ownerReferences[0].name} {.metadata.name} "
      "{.metadata.labels.captf\\.infrastructure\\.cluster\\.x-k8s\\.io/op} "
      "{.status.failed}{\"\\n\"}";
  std::unique_ptr<Watch> tc_watch = std::make_unique<Watch>(
      std::vector<std::string>{"-n", kNamespace, "get",
                               machines ? "terraformmachines" : "terraformclusters", "--watch",
                               "-o", tc_columns},
      out + "/watch-tc.log", [&](const std::string& line, Clock::time_point at) {
        const std::vector<std::string> f = split(line);
        if (f.empty()) {
          return;
        }
        std::scoped_lock lock(progress.mu);
        for (std::size_t i = 1; i < f.size(); ++i) {
          if (f[i] == owner_kind) {
            progress.owned.emplace(f[0], at);
          } else if (f[i] == "True" && i == 1) {
            progress.ready.emplace(f[0], at);
          }
        }
      });
  std::unique_ptr<Watch> job_watch = std::make_unique<Watch>(
      std::vector<std::string>{"-n", kNamespace, "get", "jobs", "--watch", "-o", job_columns},
      out + "/watch-jobs.log", [&](const std::string& line, Clock::time_point at) {
        const std::vector<std::string> f = split(line);
        if (f.size() < 3 || !f[0].starts_with(object_prefix)) {
          return;
        }
        std::scoped_lock lock(progress.mu);
        progress.job.emplace(f[0], at);
        progress.job_ops[f[1]] = f[2];
        if (f.size() > 3 && f[3] != "0") {
          progress.failed_jobs.insert(f[1]);
        }
      });
  std::this_thread::sleep_for(std::chrono::seconds(2)); // the watches are open

  // The shards' manifests, written before the clock starts.
  std::vector<std::string> files;
  for (int k = 0; k < std::min(o.shards, o.objects); ++k) {
    files.push_back(out + "/objects-" + std::to_string(k) + ".json");
    std::ofstream(files.back())
        << (machines ? machineShardList(o, setup, k, machine_uids) : shardList(o, setup, k)).dump();
  }
  const ProcSample before = sampleProc(manager);
  const std::map<std::string, double> requests_before = restRequests(scrape(manager_rig));

  if (machines) {
    std::fprintf(stderr, "manager-bench: creating %d TerraformMachines (their Machines exist)\n",
                 o.objects);
  } else {
    std::fprintf(stderr, "manager-bench: creating %d TerraformClusters and %d Clusters\n",
                 o.objects, o.objects);
  }
  const Clock::time_point t0 = Clock::now();
  createShards(files, out + "/create.log");
  const double created_s = seconds(Clock::now() - t0);

  const auto deadline = t0 + std::chrono::seconds(o.timeout_seconds);
  ProcSample at_jobs;
  ProcSample last;
  bool jobs_done = false;
  bool ready_done = false;
  json timeline = json::array();
  Clock::time_point last_line = t0;
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (::waitpid(manager, nullptr, WNOHANG) != 0) {
      die("the manager exited; see " + manager_log);
    }
    last = sampleProc(manager);
    std::size_t owned = 0;
    std::size_t jobs = 0;
    std::size_t ready = 0;
    std::size_t failed = 0;
    {
      std::scoped_lock lock(progress.mu);
      owned = progress.owned.size();
      jobs = progress.job.size();
      ready = progress.ready.size();
      failed = progress.failed_jobs.size();
    }
    if (!jobs_done && std::cmp_greater_equal(jobs, o.objects)) {
      jobs_done = true;
      at_jobs = last;
    }
    const Clock::time_point now = Clock::now();
    if (now - last_line >= std::chrono::seconds(10) || std::cmp_greater_equal(ready, o.objects)) {
      last_line = now;
      const double t = seconds(now - t0);
      std::fprintf(stderr,
                   "manager-bench: t=%.0fs owned=%zu jobs=%zu ready=%zu failed-jobs=%zu "
                   "rss=%.1fMiB cpu=%.1fs\n",
                   t, owned, jobs, ready, failed, last.rss_mib,
                   last.cpu_seconds - before.cpu_seconds);
      timeline.push_back({{"t", t},
                          {"owned", owned},
                          {"jobs", jobs},
                          {"ready", ready},
                          {"rss_mib", last.rss_mib},
                          {"cpu_s", last.cpu_seconds - before.cpu_seconds}});
    }
    if (std::cmp_greater_equal(ready, o.objects) || (machines && jobs_done)) {
      ready_done = std::cmp_greater_equal(ready, o.objects);
      break;
    }
  }
  const std::string exposition = scrape(manager_rig);
  const std::map<std::string, double> requests_after = restRequests(exposition);
  const double queue_sum =
      e2e::metricValue(exposition, "captf_job_queue_seconds_sum", {}).value_or(0);
  const double queue_count =
      e2e::metricValue(exposition, "captf_job_queue_seconds_count", {}).value_or(0);
  const double jobs_counted = e2e::metricValue(exposition, "captf_jobs_total", {}).value_or(0);
  std::ofstream(out + "/metrics.txt") << exposition;
  // Where the manager's time went: its TerraformCluster controller's
  // reconciles and work queue (nothing is reconciled before the creation).
  auto metric = [&](const char* name, const std::map<std::string, std::string>& labels) {
    return e2e::metricValue(exposition, name, labels).value_or(0);
  };
  const std::string controller_name = machines ? "terraformmachine" : "terraformcluster";
  const std::map<std::string, std::string> controller = {{"controller", controller_name}};
  json reconciles = json::object();
  for (const char* result : {"success", "error", "requeue", "requeue_after"}) {
    reconciles[result] = metric("controller_runtime_reconcile_total",
                                {{"controller", controller_name}, {"result", result}});
  }
  const double reconcile_count =
      metric("controller_runtime_reconcile_time_seconds_count", controller);
  const double reconcile_mean =
      reconcile_count > 0
          ? metric("controller_runtime_reconcile_time_seconds_sum", controller) / reconcile_count
          : 0;
  const double wait_count = metric("workqueue_queue_duration_seconds_count", controller);
  const double wait_mean =
      wait_count > 0 ? metric("workqueue_queue_duration_seconds_sum", controller) / wait_count : 0;
  tc_watch.reset();
  job_watch.reset();

  auto last_of = [&](const std::map<std::string, Clock::time_point>& m) {
    Clock::time_point t = t0;
    for (const auto& [name, at] : m) {
      t = std::max(t, at);
    }
    return seconds(t - t0);
  };
  auto first_of = [&](const std::map<std::string, Clock::time_point>& m) {
    Clock::time_point t = Clock::time_point::max();
    for (const auto& [name, at] : m) {
      t = std::min(t, at);
    }
    return m.empty() ? 0.0 : seconds(t - t0);
  };
  std::map<std::string, double> requests;
  for (const auto& [method, n] : requests_after) {
    const auto it = requests_before.find(method);
    requests[method] = n - (it == requests_before.end() ? 0 : it->second);
  }
  const double n = o.objects;
  const double reads = requests["GET"];
  const double writes = total(requests) - reads;

  // Idle at N provisioned objects: the resyncs re-read every state; the RSS
  // is sampled each second, its highest and last values reported.
  double settle_rss_max = 0;
  ProcSample settled = last;
  if (ready_done && o.settle_seconds > 0) {
    std::fprintf(stderr, "manager-bench: watching the idle manager for %d s\n", o.settle_seconds);
    const Clock::time_point s0 = Clock::now();
    Clock::time_point settle_line = s0;
    while (Clock::now() - s0 < std::chrono::seconds(o.settle_seconds)) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      if (::waitpid(manager, nullptr, WNOHANG) != 0) {
        die("the manager exited; see " + manager_log);
      }
      settled = sampleProc(manager);
      settle_rss_max = std::max(settle_rss_max, settled.rss_mib);
      if (Clock::now() - settle_line >= std::chrono::seconds(60)) {
        settle_line = Clock::now();
        std::fprintf(stderr, "manager-bench: idle t=%.0fs rss=%.1fMiB cpu=%.1fs\n",
                     seconds(settle_line - s0), settled.rss_mib,
                     settled.cpu_seconds - last.cpu_seconds);
      }
    }
  }

  // The plain writer (machines): the API server's own time to create what
  // the manager created per machine, replayed by parallel `kubectl create`
  // as the objects were, in a namespace of its own, in the same run.
  double baseline_s = -1;
  std::size_t baseline_objects = 0;
  if (machines && jobs_done) {
    e2e::kubectl({"create", "namespace", "bench-baseline"});
    std::vector<std::string> baseline_files;
    for (const json& list : baselineLists("bench-baseline", o.shards)) {
      baseline_objects += list["items"].size();
      baseline_files.push_back(out + "/baseline-" + std::to_string(baseline_files.size()) +
                               ".json");
      std::ofstream(baseline_files.back()) << list.dump();
    }
    std::fprintf(stderr, "manager-bench: baseline: creating %zu objects\n", baseline_objects);
    const Clock::time_point b0 = Clock::now();
    createShards(baseline_files, out + "/baseline.log");
    baseline_s = seconds(Clock::now() - b0);
  }
  json result = {
      {"objects", o.objects},
      {"complete", ready_done},
      {"create_seconds", created_s},
      {"owned_all_seconds", last_of(progress.owned)},
      {"first_job_seconds", first_of(progress.job)},
      {"jobs_all_seconds", jobs_done ? last_of(progress.job) : -1.0},
      {"jobs_seen", progress.job.size()},
      {"first_ready_seconds", first_of(progress.ready)},
      {"ready_all_seconds", ready_done ? last_of(progress.ready) : -1.0},
      {"ready_seen", progress.ready.size()},
      {"failed_jobs", progress.failed_jobs.size()},
      {"jobs_created", progress.job_ops.size()},
      {"captf_jobs_total", jobs_counted},
      {"reconciles", reconciles},
      {"reconcile_seconds_mean", reconcile_mean},
      {"workqueue_wait_seconds_mean", wait_mean},
      {"manager_peak_rss_mib", last.hwm_mib},
      {"manager_rss_before_mib", before.rss_mib},
      {"manager_cpu_seconds_total", last.cpu_seconds},
      {"manager_cpu_seconds_run", last.cpu_seconds - before.cpu_seconds},
      {"manager_cpu_seconds_until_jobs", jobs_done ? at_jobs.cpu_seconds - before.cpu_seconds : -1},
      {"api_requests", total(requests)},
      {"api_requests_per_object", total(requests) / n},
      {"api_requests_by_method", requests},
      {"api_reads_per_object", reads / n},
      {"api_writes_per_object", writes / n},
      {"kind", o.kind},
      {"baseline_objects", baseline_objects},
      {"baseline_seconds", baseline_s},
      {"job_queue_seconds_mean", queue_count > 0 ? queue_sum / queue_count : 0.0},
      {"state_kib", o.state_kib},
      {"settle_seconds", o.settle_seconds},
      {"settle_rss_max_mib", settle_rss_max},
      {"settle_rss_end_mib", settled.rss_mib},
      {"settle_peak_rss_mib", settled.hwm_mib},
      {"settle_cpu_seconds", settled.cpu_seconds - last.cpu_seconds},
      {"timeline", timeline},
  };
  std::ofstream(out + "/result.json") << result.dump(2) << "\n";

  std::map<std::string, int> ops;
  for (const auto& [job, op] : progress.job_ops) {
    ++ops[op];
  }
  std::string ops_text;
  for (const auto& [op, count] : ops) {
    ops_text += (ops_text.empty() ? "" : ", ") + op + " " + std::to_string(count);
  }
  auto reached = [&](bool done, double at, std::size_t seen) {
    char text[64];
    if (done) {
      std::snprintf(text, sizeof(text), "%.1f s", at);
    } else {
      std::snprintf(text, sizeof(text), "not reached (%zu of %d)", seen, o.objects);
    }
    return std::string(text);
  };
  std::printf("objects                              %d (%s each)\n", o.objects,
              machines ? "TerraformMachine owned by a paused Machine, one Cluster"
                       : "TerraformCluster + Cluster");
  std::printf("create (parallel kubectl, %zu shards) %.1f s\n", files.size(), created_s);
  std::printf("every object owned (CAPI)            %.1f s\n", last_of(progress.owned));
  std::printf("first Job / every Job exists         %.1f s / %s\n", first_of(progress.job),
              reached(jobs_done, last_of(progress.job), progress.job.size()).c_str());
  std::printf("first Ready / every object Ready     %.1f s / %s\n", first_of(progress.ready),
              reached(ready_done, last_of(progress.ready), progress.ready.size()).c_str());
  std::printf("Jobs created                         %zu (%s); captf_jobs_total %.0f\n",
              progress.job_ops.size(), ops_text.c_str(), jobs_counted);
  std::printf("failed Jobs                          %zu\n", progress.failed_jobs.size());
  std::printf("reconciles                           %.0f (success %.0f, error %.0f, requeue %.0f, "
              "requeue_after %.0f); mean %.3f s each, mean queue wait %.2f s\n",
              reconcile_count, reconciles["success"].get<double>(),
              reconciles["error"].get<double>(), reconciles["requeue"].get<double>(),
              reconciles["requeue_after"].get<double>(), reconcile_mean, wait_mean);
  std::printf("mean Job queue (creation -> start)   %.1f s over %.0f Jobs\n",
              queue_count > 0 ? queue_sum / queue_count : 0.0, queue_count);
  std::printf("manager peak RSS (VmHWM)             %.1f MiB (%.1f MiB before)\n", last.hwm_mib,
              before.rss_mib);
  if (ready_done && o.settle_seconds > 0) {
    std::printf("idle %d s at N Ready (state ~%d KiB)  RSS highest %.1f MiB, last %.1f MiB; "
                "VmHWM %.1f MiB; CPU %.1f s\n",
                o.settle_seconds, o.state_kib, settle_rss_max, settled.rss_mib, settled.hwm_mib,
                settled.cpu_seconds - last.cpu_seconds);
  }
  std::printf("manager CPU                          %.1f s during the run (%.1f s until every "
              "Job; %.1f s since start)\n",
              last.cpu_seconds - before.cpu_seconds,
              jobs_done ? at_jobs.cpu_seconds - before.cpu_seconds : -1.0, last.cpu_seconds);
  std::printf("manager API requests                 %.0f = %.1f per object (", total(requests),
              total(requests) / n);
  bool first = true;
  for (const auto& [method, count] : requests) {
    std::printf("%s%s %.0f", first ? "" : ", ", method.c_str(), count);
    first = false;
  }
  std::printf(")\n                                     %.1f reads + %.1f writes per object\n",
              reads / n, writes / n);
  if (baseline_s >= 0) {
    std::printf("plain writer (same %zu objects)       %.1f s; every Job exists / plain writer "
                "= %.2f\n",
                baseline_objects, baseline_s, last_of(progress.job) / baseline_s);
  }
  std::printf("result: %s/result.json, manager log: %s\n", out.c_str(), manager_log.c_str());

  ::kill(manager, SIGTERM);
  ::waitpid(manager, nullptr, 0);
  g_manager = -1;
  return (machines ? jobs_done : ready_done) ? 0 : 2;
}
