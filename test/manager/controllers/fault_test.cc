// The fault matrix (docs/decisions/fault-matrix.md): one manager on the
// rig's capi tier, and each case breaks one thing at an exact point of a
// TerraformCluster's run (a runner or its runtime SIGKILLed, the manager
// SIGKILLed while a chosen write is held by the API server, the API server
// or etcd restarted or stalled, the watches expired, the registry down, a
// Job, the state Secret or the lock Lease changed by hand), then checks the
// same invariants (checkInvariants):
//
//   - never two runner pods of one object running at once (watched on the
//     host's processes during the whole case);
//   - the state parses, its serial never goes back except by a restore;
//   - no duplicate apply: the module counts its own creates outside every
//     pod (the test child's `send` to a counter of the test);
//   - the lock Lease free at the end;
//   - each finished Job counted once in captf_jobs_total;
//   - the object Ready at the end (or gone, for a deletion);
//   - no sanitizer report in the manager's log;
//   - the credential canary absent from Events, status and the log.
//
// FAULT_REPS=N repeats every case N times (default 1): the long run is
// `FAULT_REPS=20 ctest --preset dev -L fault`.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "contract/roles.h"
#include "contract/state.h"
#include "manager/workspace/names.h"
#include "manager/workspace/set_aside.h"
#include "test/manager/controllers/manager_e2e.h"
#include "test/runner/e2e_support.h"

namespace captf::controllers {
namespace {

using e2e::eventually;
using e2e::getJson;
using e2e::kubectl;
using e2e::readyTrue;
using nlohmann::json;

constexpr char kNamespace[] = "fault";
constexpr char kIdentity[] = "fault";
constexpr char kOwnerLabel[] = "captf.infrastructure.cluster.x-k8s.io/owner-name";

int reps() {
  const char* text = std::getenv("FAULT_REPS");
  const int n = text != nullptr ? std::atoi(text) : 1;
  return n > 0 ? n : 1;
}

void runRig(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {e2e::sourceDir() + "/test/rig/rig"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--dir", e2e::env().dir});
  const rig::CommandResult r = rig::run(argv);
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// --- The module's create counter -------------------------------------------

// Counts the lines the module's `counted` resources send on create and on
// destroy ("create <object> <rev>", "destroy <object> <rev>"), outside every
// pod, so a run that is killed cannot take its count with it.
class CreateCounter {
public:
  CreateCounter() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::jthread([this](const std::stop_token& stop) { serve(stop); });
  }
  ~CreateCounter() {
    thread_.request_stop();
    thread_.join();
    ::close(fd_);
  }
  CreateCounter(const CreateCounter&) = delete;
  CreateCounter& operator=(const CreateCounter&) = delete;

  int port() const { return port_; }
  int creates(const std::string& object, const std::string& rev) const {
    return count("create " + object + " " + rev);
  }
  int destroys(const std::string& object, const std::string& rev) const {
    return count("destroy " + object + " " + rev);
  }

private:
  int count(const std::string& line) const {
    std::scoped_lock lock(mu_);
    auto it = counts_.find(line);
    return it == counts_.end() ? 0 : it->second;
  }

  void serve(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) {
        continue;
      }
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) {
        continue;
      }
      std::string text;
      char buffer[256];
      for (ssize_t n = 0; (n = ::read(client, buffer, sizeof buffer)) > 0;) {
        text.append(buffer, static_cast<size_t>(n));
      }
      ::close(client);
      std::scoped_lock lock(mu_);
      for (const absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
        ++counts_[std::string(line)];
      }
    }
  }

  int fd_ = -1;
  int port_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, int> counts_;
  std::jthread thread_;
};

// --- The host's processes ---------------------------------------------------

struct Proc {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;
  std::vector<std::string> argv;
};

// The whole of a /proc file ("" when the process is gone: a read can fail
// half-way, so no stream that throws).
std::string readFile(const std::string& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return out;
  }
  char buffer[4096];
  for (ssize_t n = 0; (n = ::read(fd, buffer, sizeof buffer)) > 0;) {
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// Which processes' command lines processes() reads: every one, or only the
// runners' (what the watch needs ten times a second).
enum class CommandLines { kAll, kRunners };

std::vector<Proc> processes(CommandLines lines = CommandLines::kAll) {
  std::vector<Proc> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) {
      continue;
    }
    Proc p;
    p.pid = std::atoi(name.c_str());
    const std::string stat = readFile("/proc/" + name + "/stat");
    const size_t close = stat.rfind(')');
    const size_t open = stat.find('(');
    if (close == std::string::npos || open == std::string::npos || close + 4 > stat.size()) {
      continue;
    }
    if (stat[close + 2] == 'Z') {
      continue; // a zombie has ended
    }
    p.comm = stat.substr(open + 1, close - open - 1);
    p.ppid = std::atoi(stat.c_str() + close + 4);
    if (lines == CommandLines::kAll || p.comm == "runner") {
      p.argv = absl::StrSplit(readFile("/proc/" + name + "/cmdline"), '\0', absl::SkipEmpty());
    }
    out.push_back(std::move(p));
  }
  return out;
}

// The environment variable `key` of `pid` ("" when unreadable).
std::string envOf(pid_t pid, const std::string& key) {
  const std::string text = readFile("/proc/" + std::to_string(pid) + "/environ");
  for (const absl::string_view entry : absl::StrSplit(text, '\0')) {
    if (absl::StartsWith(entry, key + "=")) {
      return std::string(entry.substr(key.size() + 1));
    }
  }
  return "";
}

// Runner processes (`runner run`) of the object whose Jobs start with
// `job_prefix`, by pod name.
std::map<std::string, pid_t> runnersOf(const std::vector<Proc>& procs,
                                       const std::string& job_prefix) {
  std::map<std::string, pid_t> pods;
  for (const Proc& p : procs) {
    if (p.comm != "runner" || p.argv.size() < 2 || p.argv[1] != "run") {
      continue;
    }
    const std::string pod = envOf(p.pid, "HOSTNAME");
    if (envOf(p.pid, "KUBE_NAMESPACE") == kNamespace && pod.starts_with(job_prefix)) {
      pods[pod] = p.pid;
    }
  }
  return pods;
}

// --- The state ----------------------------------------------------------------

struct StateRead {
  bool found = false;
  absl::Status status;
  contract::StateSummary summary;
};

// The state of `suffix` as the manager reads it, without asserting.
StateRead readState(const std::string& suffix) {
  StateRead out;
  const json list =
      getJson({"-n", kNamespace, "get", "secrets", "-l", "tfstateSecretSuffix=" + suffix});
  if (!list.is_object()) {
    out.status = absl::UnavailableError("the Secrets could not be listed");
    return out;
  }
  std::vector<contract::NamedChunk> chunks;
  for (const json& secret : list.value("items", json::array())) {
    std::string data;
    if (!absl::Base64Unescape(secret.value("data", json::object()).value("tfstate", ""), &data)) {
      out.found = true;
      out.status = absl::DataLossError(
          absl::StrCat("undecodable base64 in ", secret["metadata"].value("name", "")));
      return out;
    }
    chunks.push_back({secret["metadata"].value("name", ""), data});
  }
  out.found = !chunks.empty();
  if (!out.found) {
    out.status = absl::NotFoundError("no state Secret");
    return out;
  }
  auto ordered = contract::orderChunks("tfstate-default-" + suffix, chunks);
  if (!ordered.ok()) {
    out.status = ordered.status();
    return out;
  }
  auto text = contract::assembleState(*ordered);
  if (!text.ok()) {
    out.status = text.status();
    return out;
  }
  auto summary = contract::inspectState(*text);
  out.status = summary.status();
  if (summary.ok()) {
    out.summary = *summary;
  }
  return out;
}

// --- The case watch -----------------------------------------------------------

// Watches one object for a whole case: the host's runner processes every
// 100 ms (two pods at once is a violation), the state's serial and the
// object's Jobs every 1.5 s.
class CaseWatch {
public:
  CaseWatch(const e2e::ManagerRig& manager, std::string object)
      : manager_(manager), object_(std::move(object)), job_prefix_("captf-c-" + object_ + "-"),
        suffix_(runner::e2e::stateSuffix(kNamespace, contract::Role::kCluster, object_)) {
    metrics_base_ = manager_.metrics();
    bookkept_base_ = bookkeptJobs();
    thread_ = std::jthread([this](const std::stop_token& stop) { loop(stop); });
  }
  ~CaseWatch() {
    thread_.request_stop();
    thread_.join();
  }
  CaseWatch(const CaseWatch&) = delete;
  CaseWatch& operator=(const CaseWatch&) = delete;

  const std::string& object() const { return object_; }
  const std::string& suffix() const { return suffix_; }
  const std::string& jobPrefix() const { return job_prefix_; }

  // Call with the old manager gone and the new one not yet started: the
  // new process counts from 0, and what is bookkept now is not its.
  void managerRestarting() {
    std::scoped_lock lock(mu_);
    metrics_base_.clear();
    bookkept_base_ = bookkeptJobs();
  }
  // A restore may set the serial back (docs/behaviour/state.md#restore).
  void serialMayGoBack() {
    std::scoped_lock lock(mu_);
    last_serial_ = 0;
  }
  // The runner process of the object's running pod, if one runs.
  std::optional<pid_t> runner() const {
    const auto pods = runnersOf(processes(CommandLines::kRunners), job_prefix_);
    if (pods.empty()) {
      return std::nullopt;
    }
    return pods.begin()->second;
  }
  std::vector<std::string> violations() const {
    std::scoped_lock lock(mu_);
    return violations_;
  }
  std::set<std::string> bookkeptSeen() const {
    std::scoped_lock lock(mu_);
    return bookkept_seen_;
  }
  std::set<std::string> bookkeptBase() const {
    std::scoped_lock lock(mu_);
    return bookkept_base_;
  }
  std::string metricsBase() const {
    std::scoped_lock lock(mu_);
    return metrics_base_;
  }
  // Reads the Jobs once more (the end of a case).
  void pollJobs() {
    const std::set<std::string> now = bookkeptJobs();
    std::scoped_lock lock(mu_);
    bookkept_seen_.insert(now.begin(), now.end());
  }

private:
  std::set<std::string> bookkeptJobs() const {
    std::set<std::string> names;
    for (const json& job :
         e2e::items(kNamespace, "jobs", std::string(kOwnerLabel) + "=" + object_)) {
      const json meta = job.value("metadata", json::object());
      if (meta.value("annotations", json::object()).contains("captf.io/bookkept")) {
        names.insert(meta.value("name", ""));
      }
    }
    return names;
  }

  void loop(const std::stop_token& stop) {
    for (int tick = 0; !stop.stop_requested(); ++tick) {
      const auto pods = runnersOf(processes(CommandLines::kRunners), job_prefix_);
      if (pods.size() > 1) {
        std::scoped_lock lock(mu_);
        violations_.push_back("two runner pods at once: " +
                              absl::StrJoin(pods, ", ", absl::PairFormatter("=")));
      }
      if (tick % 15 == 0) {
        const StateRead state = readState(suffix_);
        const std::set<std::string> jobs = bookkeptJobs();
        std::scoped_lock lock(mu_);
        bookkept_seen_.insert(jobs.begin(), jobs.end());
        if (state.status.ok()) {
          if (state.summary.serial < last_serial_) {
            violations_.push_back(absl::StrCat("the state serial went back from ", last_serial_,
                                               " to ", state.summary.serial));
          }
          last_serial_ = std::max(last_serial_, state.summary.serial);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  const e2e::ManagerRig& manager_;
  const std::string object_;
  const std::string job_prefix_;
  const std::string suffix_;
  mutable std::mutex mu_;
  std::string metrics_base_;
  std::set<std::string> bookkept_base_;
  std::set<std::string> bookkept_seen_;
  std::int64_t last_serial_ = 0;
  std::vector<std::string> violations_;
  std::jthread thread_;
};

// What a case expects besides the invariants' defaults.
struct Expect {
  // The object was deleted: gone at the end instead of Ready.
  bool deleted = false;
  // Creates of one rev allowed: 1, or 2 where a kill lands between a
  // resource's create and the state write that records it (the runtime's
  // own contract, docs/decisions/fault-matrix.md).
  int max_creates = 1;
  // Check captf_jobs_total against this object's Jobs alone (false where
  // objects run side by side: expectJobsCountedOnce checks them together).
  bool count_jobs = true;
};

class FaultTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    counter_ = std::make_unique<CreateCounter>();
    manager_.runner_image = runner::e2e::Images::get().runner();
    module_image_ = runner::e2e::Images::get().module("fault", moduleText(), e2e::env().tofu);
    e2e::createTenant(kNamespace, kIdentity, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    manager_.start();
  }

  static void TearDownTestSuite() {
    manager_.stopCleanly();
    counter_.reset();
  }

  // The noop cluster module and, for each rev in var.revs (comma
  // separated; revs are only ever added, so no apply is destructive):
  // `slow` (sleeps var.pause seconds in a test child named
  // fault-slow-<object>-<rev>), then `counted` (sends its create, and its
  // destroy, to the counter), then `after` (sleeps var.pause_after seconds).
  static std::string moduleText() {
    const std::string port = std::to_string(counter_->port());
    return runner::e2e::noopModule(contract::Role::kCluster) +
           "variable \"revs\" {\n  type    = string\n  default = \"\"\n}\n"
           "variable \"pause\" {\n  type    = string\n  default = \"0\"\n}\n"
           "variable \"pause_after\" {\n  type    = string\n  default = \"0\"\n}\n"
           "locals {\n  revs = toset(compact(split(\",\", var.revs)))\n}\n"
           "resource \"terraform_data\" \"slow\" {\n"
           "  for_each = local.revs\n"
           "  input    = each.key\n"
           "  provisioner \"local-exec\" {\n"
           "    command     = \"sleep:${var.pause}\"\n"
           "    interpreter = [\"/captf/module/child\", "
           "\"out:fault-slow-${var.captf_object.name}-${each.key}\"]\n"
           "  }\n"
           "}\n"
           "resource \"terraform_data\" \"counted\" {\n"
           "  for_each   = local.revs\n"
           "  input      = \"${var.captf_object.name} ${each.key}\"\n"
           "  depends_on = [terraform_data.slow]\n"
           "  provisioner \"local-exec\" {\n"
           "    command     = \"send:" +
           port +
           ":create ${self.input}\"\n"
           "    interpreter = [\"/captf/module/child\"]\n"
           "  }\n"
           "  provisioner \"local-exec\" {\n"
           "    when        = destroy\n"
           "    command     = \"send:" +
           port +
           ":destroy ${self.input}\"\n"
           "    interpreter = [\"/captf/module/child\"]\n"
           "  }\n"
           "}\n"
           "resource \"terraform_data\" \"after\" {\n"
           "  for_each   = local.revs\n"
           "  input      = each.key\n"
           "  depends_on = [terraform_data.counted]\n"
           "  provisioner \"local-exec\" {\n"
           "    command     = \"sleep:${var.pause_after}\"\n"
           "    interpreter = [\"/captf/module/child\", "
           "\"out:fault-after-${var.captf_object.name}-${each.key}\"]\n"
           "  }\n"
           "}\n";
  }

  // One object of a case: a TerraformCluster under a Cluster, and the revs
  // applied so far.
  struct Obj {
    std::string name;
    std::string cluster;
    std::vector<std::string> revs;
    std::string pause = "0";
    std::string pause_after = "0";
    // The module image ("": the suite's).
    std::string image{};
    // spec.jobs (null: none).
    json jobs{};
  };

  // Every case names its objects with its own `id`: the cases share one
  // rig, and a name taken twice would meet the first case's object.
  static Obj newObj(const std::string& id, int rep) {
    static std::set<std::string> taken;
    Obj o;
    o.name = "f" + id + "-" + std::to_string(rep);
    o.cluster = "c" + o.name;
    if (!taken.insert(o.name).second) {
      ADD_FAILURE() << "object " << o.name << " is named by two cases";
    }
    return o;
  }

  static json variables(const Obj& o) {
    return {
        {"revs", absl::StrJoin(o.revs, ",")}, {"pause", o.pause}, {"pause_after", o.pause_after}};
  }

  // Creates `o` with its first rev (its first apply).
  static void create(Obj& o) {
    o.revs = {"1"};
    json spec = {{"source", {{"image", o.image.empty() ? module_image_ : o.image}}},
                 {"identityRef", {{"name", kIdentity}}},
                 {"variables", variables(o)}};
    if (!o.jobs.is_null()) {
      spec["jobs"] = o.jobs;
    }
    e2e::createClusterPair(kNamespace, o.name, o.cluster, spec);
  }
  // Adds a rev: the next apply creates one more of each resource.
  static void bump(Obj& o) {
    o.revs.push_back(std::to_string(o.revs.size() + 1));
    e2e::mergePatch(kNamespace, "terraformcluster", o.name,
                    {{"spec", {{"variables", variables(o)}}}});
  }
  // Creates `o` and waits until it is Ready (a case that breaks something
  // of an applied object).
  static void createReady(Obj& o) {
    create(o);
    ASSERT_TRUE(eventually([&] { return readyTrue(tc(o.name)); }, std::chrono::seconds(120)))
        << tc(o.name).dump(2) << manager_.processLog();
  }

  // For a scope, the suite's manager started again with `change` made to
  // its settings (its environment, its kubeconfig); the suite's own manager,
  // as it was, again after.
  class ReplacedManager {
  public:
    explicit ReplacedManager(const std::function<void(e2e::ManagerRig&)>& change)
        : env_(manager_.env), kubeconfig_(manager_.kubeconfig) {
      manager_.stopCleanly();
      change(manager_);
      manager_.start();
    }
    ReplacedManager(const ReplacedManager&) = delete;
    ReplacedManager& operator=(const ReplacedManager&) = delete;
    ~ReplacedManager() {
      manager_.stopCleanly();
      manager_.env = env_;
      manager_.kubeconfig = kubeconfig_;
      manager_.start();
    }

  private:
    std::vector<std::string> env_;
    std::string kubeconfig_;
  };

  // Debian's multithreaded libfaketime ("" when missing).
  static std::string fakeTimeLibrary() {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/lib", error)) {
      const std::filesystem::path library = entry.path() / "faketime" / "libfaketimeMT.so.1";
      if (std::filesystem::exists(library, error)) {
        return library.string();
      }
    }
    return "";
  }

  // For a scope, the suite's manager talks to the API server through the
  // rig's proxy (test/rig/README.md, `proxy`), whose Secrets watches a case
  // can hold.
  class ProxiedManager {
  public:
    ProxiedManager() : kubeconfig_(manager_.dir + "/proxied.kubeconfig") {
      std::filesystem::remove(kubeconfig_ + ".control");
      pid_ = rig::spawn({e2e::sourceDir() + "/test/rig/rig", "proxy", "--dir", e2e::env().dir,
                         "--kubeconfig", manager_.kubeconfig, "--out", kubeconfig_},
                        manager_.dir + "/proxy.log");
      if (pid_ <= 0 ||
          !eventually([&] { return std::filesystem::exists(kubeconfig_ + ".control"); },
                      std::chrono::seconds(120))) {
        ADD_FAILURE() << "the rig's proxy did not start\n"
                      << rig::readFile(manager_.dir + "/proxy.log");
        return;
      }
      control_ = rig::readFile(kubeconfig_ + ".control");
      replaced_.emplace([&](e2e::ManagerRig& m) { m.kubeconfig = kubeconfig_; });
    }
    ProxiedManager(const ProxiedManager&) = delete;
    ProxiedManager& operator=(const ProxiedManager&) = delete;
    ~ProxiedManager() {
      if (replaced_) {
        release();
        replaced_.reset();
      }
      if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
        ::waitpid(pid_, nullptr, 0);
      }
    }
    bool started() const { return replaced_.has_value(); }
    // Holds the manager's Secrets watches (its informer falls behind);
    // lists and reads go through.
    void holdSecretWatches() const { control("/hold?match=/secrets%5C%3F.*watch%3D"); }
    void release() const { control("/release"); }

  private:
    void control(const std::string& path) const {
      const rig::CommandResult r = rig::run({"curl", "-sf", "-X", "POST", control_ + path});
      EXPECT_EQ(r.exit_code, 0) << path << ": " << r.output;
    }

    std::string kubeconfig_;
    std::string control_;
    pid_t pid_ = -1;
    std::optional<ReplacedManager> replaced_;
  };

  // The running apply's pod of `o` (created here) force-deleted on a lost
  // node while its process runs on; the lock holds (StateLocked, nothing
  // forced, no second run) until the runbook's fencing and unlock, and the
  // retry converges (AForceDeletedPodWhoseProcessLivesOnIsNotForcedOpen).
  static void forceDeleteTheHolderAndExpectNoForce(Obj& o) {
    CaseWatch watch(manager_, o.name);
    const auto forced = [] {
      return e2e::metricValue(manager_.metrics(), "captf_lock_force_unlocks_total",
                              {{"kind", "TerraformCluster"}})
          .value_or(0);
    };
    const double forced_before = forced();
    create(o);
    const std::optional<Proc> orphan = stepChild(o, "slow");
    ASSERT_TRUE(orphan) << manager_.processLog();
    const auto jobs = e2e::runJobs(kNamespace, o.name, "apply");
    ASSERT_EQ(jobs.size(), 1U);
    const json pods = getJson({"-n", kNamespace, "get", "pods", "-l", "job-name=" + jobs[0]});
    ASSERT_TRUE(pods.is_object() && !pods.value("items", json::array()).empty()) << pods.dump(2);
    const std::string pod = pods["items"][0]["metadata"].value("name", "");
    // Its node lost (test/rig/README.md): the deletion never reaches it.
    ASSERT_EQ(kubectl({"-n", kNamespace, "annotate", "pod", pod, "rig.captf.io/node-lost=true"})
                  .exit_code,
              0);
    ASSERT_EQ(
        kubectl({"-n", kNamespace, "delete", "pod", pod, "--force", "--grace-period=0"}).exit_code,
        0);
    // The orphan's processes: the runner, its runtime and their children
    // (the pod's name is their HOSTNAME).
    const auto orphans = [&pod] {
      std::vector<pid_t> pids;
      for (const Proc& p : processes(CommandLines::kRunners)) {
        if (envOf(p.pid, "HOSTNAME") == pod) {
          pids.push_back(p.pid);
        }
      }
      return pids;
    };
    ASSERT_TRUE(eventually([&] {
      const json object = tc(o.name);
      return e2e::conditionOf(object, "StateReadable", "reason") == "StateLocked" &&
             absl::StrContains(e2e::conditionOf(object, "StateReadable", "message"),
                               "no longer exists");
    })) << tc(o.name).dump(2);
    EXPECT_FALSE(orphans().empty()) << "the orphan runs on while the lock holds";
    // It goes on past its slow step (and tries to write the state, which
    // its token, bound to the gone pod, can no longer do); nothing is forced.
    ASSERT_TRUE(eventually([&] { return ::kill(orphan->pid, 0) != 0; }, std::chrono::seconds(120)));
    std::this_thread::sleep_for(std::chrono::seconds(5));
    EXPECT_NE(lockHolder(watch.suffix()), "");
    EXPECT_EQ(e2e::conditionOf(tc(o.name), "StateReadable", "reason"), "StateLocked");
    EXPECT_TRUE(e2e::eventsFor(kNamespace, o.name, "ForceUnlocked").empty());
    EXPECT_EQ(forced() - forced_before, 0.0);
    EXPECT_EQ(e2e::runJobs(kNamespace, o.name, "apply").size(), 1U) << "no second run";
    // The runbook's way out: the node fenced (its processes stopped), then
    // the lock released by hand.
    ASSERT_TRUE(eventually([&] {
      for (const pid_t pid : orphans()) {
        ::kill(pid, SIGKILL);
      }
      return orphans().empty();
    }));
    e2e::mergePatch(kNamespace, "lease", "lock-tfstate-default-" + watch.suffix(),
                    {{"metadata", {{"annotations", {{"app.terraform.io/lock-info", nullptr}}}}},
                     {"spec", {{"holderIdentity", nullptr}}}});
    // The orphan may have created a resource its state write could not
    // record: the runtime's own contract allows the retry to create it again.
    checkInvariants(watch, o, {.max_creates = 2});
  }

  static json tc(const std::string& name) {
    return getJson({"-n", kNamespace, "get", "terraformcluster", name});
  }

  // Waits for StateReadable's reason on `o` to become `reason`.
  static void expectStateReason(const Obj& o, const std::string& reason) {
    EXPECT_TRUE(eventually([&] {
      return e2e::conditionOf(tc(o.name), "StateReadable", "reason") == reason;
    })) << reason
        << "\n"
        << tc(o.name).dump(2);
  }

  // The process of `o`'s runtime child `fault-<step>-<object>-<rev>` of
  // its newest rev, once it runs (the run is inside that step).
  static std::optional<Proc> stepChild(const Obj& o, const std::string& step) {
    const std::string marker = "out:fault-" + step + "-" + o.name + "-" + o.revs.back();
    std::optional<Proc> found;
    eventually(
        [&] {
          for (const Proc& p : processes()) {
            if (std::find(p.argv.begin(), p.argv.end(), marker) != p.argv.end()) {
              found = p;
              return true;
            }
          }
          return false;
        },
        std::chrono::seconds(120));
    return found;
  }

  // The lock Lease's holder ("" when free or absent).
  static std::string lockHolder(const std::string& suffix) {
    const json lease =
        getJson({"-n", kNamespace, "get", "lease", "lock-tfstate-default-" + suffix});
    return lease.is_object() ? lease.value("spec", json::object()).value("holderIdentity", "")
                             : std::string();
  }

  // Each finished Job of the watched objects counted once, by the manager
  // process that bookkept it: captf_jobs_total grew by the number of Jobs
  // that gained captf.io/bookkept since the first watch's baseline.
  static void expectJobsCountedOnce(const std::vector<CaseWatch*>& watches) {
    size_t bookkept = 0;
    for (CaseWatch* watch : watches) {
      watch->pollJobs();
      const std::set<std::string> base = watch->bookkeptBase();
      for (const std::string& job : watch->bookkeptSeen()) {
        bookkept += base.contains(job) ? 0U : 1U;
      }
    }
    const std::map<std::string, std::string> kind = {{"kind", "TerraformCluster"}};
    const double counted =
        e2e::metricValue(manager_.metrics(), "captf_jobs_total", kind).value_or(0) -
        e2e::metricValue(watches.front()->metricsBase(), "captf_jobs_total", kind).value_or(0);
    EXPECT_EQ(counted, static_cast<double>(bookkept))
        << "captf_jobs_total grew by " << counted << " for " << bookkept << " bookkept Jobs";
  }

  // What the manager's Deployment does: a manager that exited (it does when
  // it loses its leader Lease, as an API server or etcd outage makes it,
  // docs/decisions/kube-client.md) is started again. Returns whether it had
  // exited.
  static bool keepManagerRunning(CaseWatch& watch) {
    const std::optional<int> code = manager_.process.wait(std::chrono::seconds(0));
    if (!code || *code < 0) {
      return false;
    }
    const std::string log = manager_.processLog();
    EXPECT_NE(log.find("leader election lost"), std::string::npos)
        << "the manager exited (" << *code << ") for another reason:\n"
        << log;
    watch.managerRestarting();
    manager_.start();
    return true;
  }

  // Every invariant of docs/decisions/fault-matrix.md, for `o` at the end
  // of a case.
  static void checkInvariants(CaseWatch& watch, const Obj& o, const Expect& expect = {}) {
    // The object Ready (or gone).
    if (expect.deleted) {
      EXPECT_TRUE(eventually(
          [&] {
            return kubectl({"-n", kNamespace, "get", "terraformcluster", o.name}).exit_code != 0;
          },
          std::chrono::seconds(120)))
          << tc(o.name).dump(2);
    } else {
      EXPECT_TRUE(eventually(
          [&] {
            keepManagerRunning(watch);
            const json object = tc(o.name);
            // Ready alone stays True after provisioning whatever the state
            // (docs/behaviour/lifecycle.md#ready-summarization).
            return readyTrue(object) &&
                   e2e::conditionOf(object, "StateReadable", "status") == "True" &&
                   object.value("status", json::object()).value("observedGeneration", 0) ==
                       object["metadata"].value("generation", -1);
          },
          std::chrono::seconds(150)))
          << tc(o.name).dump(2) << "\n"
          << manager_.processLog();
    }
    // No runner of the object still running, every Job bookkept.
    EXPECT_TRUE(eventually(
        [&] {
          if (!runnersOf(processes(CommandLines::kRunners), watch.jobPrefix()).empty()) {
            return false;
          }
          for (const json& job :
               e2e::items(kNamespace, "jobs", std::string(kOwnerLabel) + "=" + o.name)) {
            const json status = job.value("status", json::object());
            if (status.value("active", 0) > 0 || !job["metadata"]
                                                      .value("annotations", json::object())
                                                      .contains("captf.io/bookkept")) {
              return false;
            }
          }
          return true;
        },
        std::chrono::seconds(60)))
        << "a runner or an unbookkept Job is left";
    // Two runner pods at once, a serial gone back.
    for (const std::string& v : watch.violations()) {
      ADD_FAILURE() << o.name << ": " << v;
    }
    // The state parses; no duplicate apply.
    if (!expect.deleted) {
      const StateRead state = readState(watch.suffix());
      EXPECT_TRUE(state.status.ok()) << state.status;
      for (const std::string& rev : o.revs) {
        const int creates = counter_->creates(o.name, rev);
        EXPECT_GE(creates, 1) << o.name << " rev " << rev << " was never created";
        EXPECT_LE(creates, expect.max_creates)
            << o.name << " rev " << rev << " created " << creates << " times";
      }
    }
    // The lock free.
    EXPECT_TRUE(
        eventually([&] { return lockHolder(watch.suffix()).empty(); }, std::chrono::seconds(30)))
        << "the lock is held by " << lockHolder(watch.suffix());
    if (expect.count_jobs) {
      expectJobsCountedOnce({&watch});
    }
    // No sanitizer report; the canary nowhere.
    const std::string log = manager_.logText();
    EXPECT_EQ(e2e::sanitizerReport(log), "");
    EXPECT_EQ(log.find(runner::e2e::kCredentialValue), std::string::npos) << "in the log";
    EXPECT_EQ(tc(o.name).dump().find(runner::e2e::kCredentialValue), std::string::npos)
        << "in the status";
    for (const json& event : e2e::eventsFor(kNamespace, o.name)) {
      EXPECT_EQ(event.dump().find(runner::e2e::kCredentialValue), std::string::npos)
          << event.dump();
    }
  }

  // A control-plane fault, `rig ARGS...`, while an apply Job of a new object
  // (paused `pause` seconds in its slow step) runs; then the invariants.
  static void controlPlaneFaultDuringAnApply(const char* prefix, const char* pause,
                                             const std::vector<std::string>& rig_args,
                                             std::chrono::seconds lasts = std::chrono::seconds(0)) {
    for (int rep = 0; rep < reps(); ++rep) {
      Obj o = newObj(prefix, rep);
      o.pause = pause;
      CaseWatch watch(manager_, o.name);
      create(o);
      ASSERT_TRUE(stepChild(o, "slow")) << manager_.processLog();
      runRig(rig_args);
      std::this_thread::sleep_for(lasts);
      checkInvariants(watch, o);
    }
  }

  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static inline e2e::ManagerRig manager_;
  static inline std::string module_image_;
  static inline std::unique_ptr<CreateCounter> counter_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

// --- The runner and its runtime -------------------------------------------------

// A runner (or its runtime) killed is a crash, a counting failure: the
// retry waits the first backoff (1 min, docs/behaviour/lifecycle.md#retry-backoff).
// So the four kill points run at once, each on its own object, and wait
// that minute together; each has its own trace in a failure.
//
//   before: the runner SIGKILLed inside `slow`, before `counted` is
//     created. The lock is left to a finished pod (stale, force-unlocked);
//     the retry creates `counted` once.
//   after: the runtime's unlock (the lock Lease's update that clears the
//     holder) held, the runner SIGKILLed, the unlock let go (its client is
//     gone). The state holds the run; the lock is stale; the retry creates
//     nothing again.
//   during: the state Secret's write that follows `counted`'s create held,
//     the runner SIGKILLed. The write never lands, so the state may not
//     record `counted` and the retry may create it again: the runtime's
//     contract, allowed here only (max_creates 2).
//   runtime: the runtime alone SIGKILLed inside `slow` (an OOM kill of the
//     biggest process): the runner survives and reports the step's failure.
TEST_F(FaultTest, RunnerKilledBeforeDuringAndAfterTheStateWriteAndRuntimeKilled) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj before = newObj("rb", rep);
    Obj after = newObj("ra", rep);
    Obj during = newObj("rd", rep);
    Obj runtime = newObj("rt", rep);
    before.pause = "8";
    runtime.pause = "8";
    during.pause_after = "3";
    CaseWatch watch_before(manager_, before.name);
    CaseWatch watch_after(manager_, after.name);
    CaseWatch watch_during(manager_, during.name);
    CaseWatch watch_runtime(manager_, runtime.name);
    e2e::WriteHold unlock("unlock", {.group = "coordination.k8s.io",
                                     .version = "v1",
                                     .resource = "leases",
                                     .operations = {"UPDATE"},
                                     .ns = kNamespace,
                                     .name_prefix = "lock-tfstate-default-" + watch_after.suffix(),
                                     .when = [](const json& request) {
                                       return request.value("object", json::object())
                                           .value("spec", json::object())
                                           .value("holderIdentity", "")
                                           .empty();
                                     }});
    e2e::WriteHold write("statewrite",
                         {.version = "v1",
                          .resource = "secrets",
                          .operations = {"UPDATE"},
                          .ns = kNamespace,
                          .name_prefix = "tfstate-default-" + watch_during.suffix()},
                         /*armed=*/false);
    for (Obj* o : {&before, &after, &during, &runtime}) {
      create(*o);
    }
    std::vector<std::jthread> kills;
    kills.emplace_back([&] {
      SCOPED_TRACE("before");
      ASSERT_TRUE(stepChild(before, "slow")) << manager_.processLog();
      const std::optional<pid_t> runner = watch_before.runner();
      ASSERT_TRUE(runner);
      ASSERT_EQ(::kill(*runner, SIGKILL), 0);
    });
    kills.emplace_back([&] {
      SCOPED_TRACE("after");
      ASSERT_TRUE(unlock.awaitHeld(std::chrono::seconds(120))) << manager_.processLog();
      const std::optional<pid_t> runner = watch_after.runner();
      ASSERT_TRUE(runner);
      ASSERT_EQ(::kill(*runner, SIGKILL), 0);
      std::this_thread::sleep_for(std::chrono::seconds(1));
      unlock.release();
    });
    kills.emplace_back([&] {
      SCOPED_TRACE("during");
      ASSERT_TRUE(eventually([&] { return counter_->creates(during.name, "1") > 0; },
                             std::chrono::seconds(120)))
          << manager_.processLog();
      write.arm();
      ASSERT_TRUE(write.awaitHeld(std::chrono::seconds(60))) << manager_.processLog();
      const std::optional<pid_t> runner = watch_during.runner();
      ASSERT_TRUE(runner);
      ASSERT_EQ(::kill(*runner, SIGKILL), 0);
      std::this_thread::sleep_for(std::chrono::seconds(1));
      write.release();
    });
    kills.emplace_back([&] {
      SCOPED_TRACE("runtime");
      const std::optional<Proc> child = stepChild(runtime, "slow");
      ASSERT_TRUE(child) << manager_.processLog();
      // The child's parent is the runtime (local-exec); the runner is above it.
      const std::optional<pid_t> runner = watch_runtime.runner();
      ASSERT_TRUE(runner);
      ASSERT_NE(child->ppid, *runner);
      ASSERT_EQ(::kill(child->ppid, SIGKILL), 0);
    });
    kills.clear(); // joins
    {
      SCOPED_TRACE("before");
      checkInvariants(watch_before, before, {.count_jobs = false});
    }
    {
      SCOPED_TRACE("after");
      checkInvariants(watch_after, after, {.count_jobs = false});
    }
    {
      SCOPED_TRACE("during");
      checkInvariants(watch_during, during, {.max_creates = 2, .count_jobs = false});
      std::printf("fault: during the state write, rev 1 was created %d times\n",
                  counter_->creates(during.name, "1"));
    }
    {
      SCOPED_TRACE("runtime");
      checkInvariants(watch_runtime, runtime, {.count_jobs = false});
    }
    expectJobsCountedOnce({&watch_before, &watch_after, &watch_during, &watch_runtime});
  }
}

// --- The manager ----------------------------------------------------------------

// The manager SIGKILLed after the Job's create, before its per-run Secret:
// the pod waits for a Secret that no one writes until the next manager
// writes it (or replaces the Job).
TEST_F(FaultTest, ManagerKilledBeforeThePerRunSecret) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("ms", rep);
    CaseWatch watch(manager_, o.name);
    e2e::WriteHold secret("runsecret", {.version = "v1",
                                        .resource = "secrets",
                                        .operations = {"CREATE"},
                                        .ns = kNamespace,
                                        .name_prefix = "captf-run-" + watch.jobPrefix()});
    create(o);
    ASSERT_TRUE(secret.awaitHeld(std::chrono::seconds(120))) << manager_.processLog();
    EXPECT_EQ(e2e::items(kNamespace, "jobs", std::string(kOwnerLabel) + "=" + o.name).size(), 1U);
    manager_.process.stop(SIGKILL);
    secret.release();
    watch.managerRestarting();
    manager_.start();
    checkInvariants(watch, o);
  }
}

// The manager SIGKILLed in the bookkeeping of a finished apply, before the
// captf.io/bookkept mark: the next manager bookkeeps the Job again (the
// state adopted once, the Job counted once by it) and runs nothing again.
TEST_F(FaultTest, ManagerKilledBeforeTheBookkeptMark) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("mb", rep);
    CaseWatch watch(manager_, o.name);
    e2e::WriteHold mark("bookkept", {.group = "batch",
                                     .version = "v1",
                                     .resource = "jobs",
                                     .operations = {"UPDATE"},
                                     .ns = kNamespace,
                                     .name_prefix = watch.jobPrefix(),
                                     .when = [](const json& request) {
                                       const auto marked = [](const json& object) {
                                         return object.is_object() &&
                                                object.value("metadata", json::object())
                                                    .value("annotations", json::object())
                                                    .contains("captf.io/bookkept");
                                       };
                                       return marked(request.value("object", json())) &&
                                              !marked(request.value("oldObject", json()));
                                     }});
    create(o);
    ASSERT_TRUE(mark.awaitHeld(std::chrono::seconds(120))) << manager_.processLog();
    manager_.process.stop(SIGKILL);
    mark.release();
    watch.managerRestarting();
    manager_.start();
    checkInvariants(watch, o);
    EXPECT_EQ(e2e::runJobs(kNamespace, o.name, "apply").size(), 1U) << "nothing ran again";
  }
}

// The manager SIGKILLed on deletion, after the destroy and the cleanup,
// while its finalizer removal is held: the next manager removes it, and
// nothing the object had is left.
TEST_F(FaultTest, ManagerKilledBeforeTheFinalizerRemoval) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("mf", rep);
    CaseWatch watch(manager_, o.name);
    createReady(o);
    e2e::WriteHold finalizer(
        "finalizer", {.group = "infrastructure.cluster.x-k8s.io",
                      .version = "v1alpha1",
                      .resource = "terraformclusters",
                      .operations = {"UPDATE"},
                      .ns = kNamespace,
                      .name_prefix = o.name,
                      .when =
                          [](const json& request) {
                            const auto finalizers = [](const json& object) {
                              return object.is_object() ? object.value("metadata", json::object())
                                                              .value("finalizers", json::array())
                                                              .size()
                                                        : size_t{0};
                            };
                            return finalizers(request.value("object", json())) <
                                   finalizers(request.value("oldObject", json()));
                          },
                      .probe_object = o.name});
    ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io", o.cluster,
                       "--wait=false"})
                  .exit_code,
              0);
    ASSERT_TRUE(finalizer.awaitHeld(std::chrono::seconds(120))) << manager_.processLog();
    watch.pollJobs();
    manager_.process.stop(SIGKILL);
    finalizer.release();
    watch.managerRestarting();
    manager_.start();
    checkInvariants(watch, o, {.deleted = true});
    EXPECT_TRUE(readState(watch.suffix()).status.code() == absl::StatusCode::kNotFound)
        << "the state is deleted with the object";
    EXPECT_TRUE(eventually([&] {
      return kubectl({"-n", kNamespace, "get", "lease", "lock-tfstate-default-" + watch.suffix()})
                 .exit_code != 0;
    })) << "the lock Lease is deleted with the object";
  }
}

// --- The control plane ------------------------------------------------------------

// kube-apiserver restarted while an apply Job runs.
TEST_F(FaultTest, ApiServerRestartsWithAJobActive) {
  controlPlaneFaultDuringAnApply("as", "8", {"restart", "apiserver"});
}

// etcd restarted (SIGTERM, then the same data) while an apply Job runs.
TEST_F(FaultTest, EtcdRestartsWithAJobActive) {
  controlPlaneFaultDuringAnApply("er", "8", {"restart", "etcd"});
}

// etcd stalled (SIGSTOP) for 15 s while an apply Job runs and writes its
// state: every write and quorum read hangs, then goes on.
TEST_F(FaultTest, EtcdStalledFifteenSecondsWithAJobActive) {
  controlPlaneFaultDuringAnApply("ep", "3", {"pause", "etcd", "15"}, std::chrono::seconds(15));
}

// etcd compacted at its current revision, then kube-apiserver restarted,
// while an apply Job runs: the manager's watches resume from revisions that
// are gone and are answered 410 Gone, as after an outage longer than the
// API server's compaction interval, and its informers relist; the run goes
// on. The new API server's watch cache answers 410 to a resourceVersion
// older than its first list; a watch that comes back before that cache is
// ready is served from etcd, which the compaction makes answer 410 too. The
// suite's manager would not see it: its renew deadline (8 s) is shorter
// than the API server's restart, so it exits (leader election lost) and
// its successor lists afresh. This case's manager renews for 45 s.
TEST_F(FaultTest, WatchesExpireWithAJobActive) {
  struct LongLease {
    LongLease() {
      manager_.stopCleanly();
      manager_.lease_duration = "60s";
      manager_.renew_deadline = "45s";
      manager_.start();
    }
    ~LongLease() {
      manager_.stopCleanly();
      manager_.lease_duration = "10s";
      manager_.renew_deadline = "8s";
      manager_.start();
    }
    LongLease(const LongLease&) = delete;
    LongLease& operator=(const LongLease&) = delete;
  } long_lease;
  ASSERT_TRUE(eventually([] { return !manager_.metrics().empty(); }, std::chrono::seconds(30)))
      << manager_.processLog();
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("wx", rep);
    // Longer than the API server's restart: the run writes its state once
    // the API server is back (a failed run would wait the 1 min backoff).
    o.pause = "20";
    CaseWatch watch(manager_, o.name);
    const size_t log_before = manager_.logText().size();
    create(o);
    ASSERT_TRUE(stepChild(o, "slow")) << manager_.processLog();
    runRig({"compact", "etcd"});
    runRig({"restart", "apiserver"});
    checkInvariants(watch, o);
    const std::string log = manager_.logText().substr(log_before);
    EXPECT_EQ(log.find("leader election lost"), std::string::npos) << log;
    EXPECT_TRUE(absl::StrContains(log, "informer watch expired, relisting kind=Job "))
        << "the Job informer did not relist:\n"
        << log;
  }
}

// --- The registry ------------------------------------------------------------------

// The registry stopped (its port refusing connections) for 20 s when a new
// object's apply pod pulls a module image of its own: the object is
// ApplyJobSucceeded=False/ImagePullFailed while the Job waits, with one
// Event and one count and no failed run (docs/behaviour/jobs.md#image-pulls);
// the registry back, the same Job pulls and the object is Ready.
TEST_F(FaultTest, RegistryDownWhileAnApplyPodPulls) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("rg", rep);
    // Its own content (a comment with its name): a digest no pod has used.
    o.image = runner::e2e::Images::get().module(
        "fault-" + o.name, moduleText() + "# " + o.name + "\n", e2e::env().tofu);
    ASSERT_FALSE(o.image.empty());
    CaseWatch watch(manager_, o.name);
    const e2e::MetricsSince since(manager_);
    const auto stopped = std::chrono::steady_clock::now();
    // Down long enough that the kubelet's back-off shows before it is back
    // on a loaded machine (five rigs side by side).
    runRig({"stop", "registry", "40"});
    create(o);
    ASSERT_TRUE(eventually(
        [&] {
          return e2e::conditionOf(tc(o.name), "ApplyJobSucceeded", "reason") == "ImagePullFailed";
        },
        std::chrono::seconds(30)))
        << tc(o.name).dump(2) << manager_.processLog();
    const auto seen = std::chrono::steady_clock::now() - stopped;
    EXPECT_LT(seen, std::chrono::seconds(40)) << "ImagePullFailed came after the registry's return";
    const json waiting = tc(o.name);
    // The kubelet's back-off shows in the message, not as a second Event.
    EXPECT_TRUE(eventually(
        [&] {
          return absl::StrContains(e2e::conditionOf(tc(o.name), "ApplyJobSucceeded", "message"),
                                   "ImagePullBackOff");
        },
        std::chrono::seconds(20)))
        << tc(o.name).dump(2);
    EXPECT_EQ(e2e::conditionOf(waiting, "ApplyJobSucceeded", "status"), "False");
    EXPECT_EQ(e2e::conditionOf(waiting, "Ready", "status"), "False");
    // The module image; or the runner's, when no pod of this rig has pulled
    // it yet (a case run alone): the rig's kubelet, as a real one, asks the
    // registry again for no image it holds by digest.
    const std::string message = e2e::conditionOf(waiting, "ApplyJobSucceeded", "message");
    EXPECT_TRUE(absl::StrContains(message, "image " + o.image + " of container source") ||
                absl::StrContains(message, "image " + manager_.runner_image + " of container"))
        << message;
    const std::vector<std::string> jobs = e2e::runJobs(kNamespace, o.name, "apply");
    ASSERT_EQ(jobs.size(), 1U);

    checkInvariants(watch, o);
    EXPECT_EQ(e2e::runJobs(kNamespace, o.name, "apply"), jobs) << "the Job that waited ran";
    EXPECT_EQ(e2e::conditionOf(tc(o.name), "ApplyJobSucceeded", "reason"), "ApplySucceeded");
    EXPECT_EQ(e2e::eventsFor(kNamespace, o.name, "ImagePullFailed").size(), 1U);
    EXPECT_EQ(since.delta("captf_image_pull_failures_total",
                          {{"kind", "TerraformCluster"}, {"op", "apply"}}),
              1.0);
    EXPECT_EQ(since.delta("captf_jobs_total",
                          {{"kind", "TerraformCluster"}, {"op", "apply"}, {"result", "failed"}}),
              0.0)
        << "a failed run was counted";
  }
}

// --- Objects changed by someone else -------------------------------------------

// The running apply Job deleted by someone else with background cascade:
// its pod goes too, the run is interrupted and retried at once.
TEST_F(FaultTest, AJobDeletedWithBackgroundCascade) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("jb", rep);
    o.pause = "8";
    CaseWatch watch(manager_, o.name);
    create(o);
    ASSERT_TRUE(stepChild(o, "slow")) << manager_.processLog();
    const auto jobs = e2e::runJobs(kNamespace, o.name, "apply");
    ASSERT_EQ(jobs.size(), 1U);
    ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "job", jobs[0], "--cascade=background",
                       "--wait=false"})
                  .exit_code,
              0);
    // A runtime stopped before it let go leaves the lock to a pod of a Job
    // that no longer exists: foreign by design, never unlocked by the
    // manager (docs/behaviour/state.md#locks). The person's step is the
    // runbook's unlock.
    std::string reason;
    ASSERT_TRUE(eventually(
        [&] {
          const json object = tc(o.name);
          reason = e2e::conditionOf(object, "StateReadable", "reason");
          return readyTrue(object) || reason == "StateLocked";
        },
        std::chrono::seconds(150)))
        << tc(o.name).dump(2);
    if (reason == "StateLocked") {
      std::printf("fault: the deleted Job's runner left the lock; unlocked by hand\n");
      e2e::mergePatch(kNamespace, "lease", "lock-tfstate-default-" + watch.suffix(),
                      {{"metadata", {{"annotations", {{"app.terraform.io/lock-info", nullptr}}}}},
                       {"spec", {{"holderIdentity", nullptr}}}});
    }
    checkInvariants(watch, o);
  }
}

// The running apply Job deleted with orphan cascade: its pod runs on with
// no Job, and no second runner may start while it runs.
TEST_F(FaultTest, AJobDeletedWithOrphanCascade) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("jo", rep);
    o.pause = "8";
    CaseWatch watch(manager_, o.name);
    create(o);
    ASSERT_TRUE(stepChild(o, "slow")) << manager_.processLog();
    const auto jobs = e2e::runJobs(kNamespace, o.name, "apply");
    ASSERT_EQ(jobs.size(), 1U);
    ASSERT_EQ(
        kubectl({"-n", kNamespace, "delete", "job", jobs[0], "--cascade=orphan", "--wait=false"})
            .exit_code,
        0);
    checkInvariants(watch, o);
  }
}

// The running apply's pod force-deleted (`--force --grace-period=0`) as on a
// node that cannot be reached: the pod object goes at once and its process
// runs on (its node lost: the rig's kubelet never hears of the deletion).
// The Job fails, but no second runner may start while the first may still
// run: the object is StateLocked ("no longer exists") and nothing is forced
// before its Job's deadline and grace period. The orphan can no longer write
// the state nor let go of the lock (its token was bound to its pod), so a
// person fences the node and unlocks by hand as
// docs/runbooks/CAPTFForceUnlocks.md says, and the retry converges. Before,
// a pod that no longer existed was taken as ended: its lock was forced at
// once and a second runner started beside the first.
TEST_F(FaultTest, AForceDeletedPodWhoseProcessLivesOnIsNotForcedOpen) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("fd", rep);
    o.pause = "30";
    forceDeleteTheHolderAndExpectNoForce(o);
  }
}

// The manager's clock 15 minutes ahead of the cluster's (its node's time
// source broken; libfaketime under the manager alone): the case above again,
// with a Job deadline whose end, with the grace period (120 s + 600 s), comes
// 12 minutes after the Job's start. Every time the manager compares with a
// time the API server wrote is on the server's clock (the Date of its
// answers; docs/decisions/kube-client.md, "Whose clock"), so the lock of
// the live orphan is still not forced. Before, the manager's own clock put
// the Job past its deadline at once: the lock was forced and a second
// runner started beside the first.
TEST_F(FaultTest, AManagerWhoseClockIsAheadForcesNoLiveLock) {
  const std::string library = fakeTimeLibrary();
  ASSERT_FALSE(library.empty())
      << "libfaketime is not installed (scripts/bootstrap.sh installs it)";
  // Its monotonic clock left alone; the sanitizer runtime would insist on
  // being loaded first.
  const ReplacedManager skewed([&](e2e::ManagerRig& m) {
    m.env = {"LD_PRELOAD=" + library, "FAKETIME=+15m", "FAKETIME_DONT_FAKE_MONOTONIC=1",
             "ASAN_OPTIONS=verify_asan_link_order=0"};
  });
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("ck", rep);
    o.pause = "30";
    o.jobs = {{"activeDeadlineSeconds", 120}, {"lockTimeoutSeconds", 60}};
    forceDeleteTheHolderAndExpectNoForce(o);
  }
}

// The newest backup's serial in status.stateBackups (0 when none).
std::int64_t newestBackup(const json& object) {
  if (!object.is_object()) {
    return 0;
  }
  const json backups = object.value("status", json::object()).value("stateBackups", json::array());
  return backups.empty() ? 0 : backups[0].value("serial", std::int64_t{0});
}

// Asks for a restore of `serial` as a person does and waits for its
// outcome: RestoreJobSucceeded=True.
void restoreAndExpectSuccess(const std::string& name, std::int64_t serial) {
  e2e::mergePatch(
      kNamespace, "terraformcluster", name,
      {{"metadata", {{"annotations", {{"captf.io/restore-state", std::to_string(serial)}}}}}});
  json object;
  EXPECT_TRUE(eventually(
      [&] {
        object = getJson({"-n", kNamespace, "get", "terraformcluster", name});
        return e2e::conditionOf(object, "RestoreJobSucceeded", "status") == "True" ||
               e2e::conditionOf(object, "RestoreJobSucceeded", "reason") == "RestoreFailed";
      },
      std::chrono::seconds(120)));
  EXPECT_EQ(e2e::conditionOf(object, "RestoreJobSucceeded", "status"), "True")
      << e2e::conditionOf(object, "RestoreJobSucceeded", "message");
}

// The state Secret deleted by hand: the object is StateLost (a second apply
// would create everything again); a person restores the newest backup, and
// the next apply creates only its new rev.
TEST_F(FaultTest, StateSecretDeletedIsRestoredFromBackup) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("sd", rep);
    CaseWatch watch(manager_, o.name);
    createReady(o);
    std::int64_t serial = 0;
    ASSERT_TRUE(eventually([&] { return (serial = newestBackup(tc(o.name))) > 0; }))
        << tc(o.name).dump(2);
    ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "secret", "tfstate-default-" + watch.suffix()})
                  .exit_code,
              0);
    bump(o);
    expectStateReason(o, "StateLost");
    watch.serialMayGoBack();
    restoreAndExpectSuccess(o.name, serial);
    checkInvariants(watch, o);
  }
}

// The state Secret garbled by hand (its payload no longer gzip): the object
// is StateCorrupt and runs nothing. A restore of the newest backup is asked
// for at once, with no step of a person's before it: the restore sets the
// unreadable Secret aside and pushes the backup
// (docs/behaviour/state.md#restore-over-an-unreadable-state). First a
// Secret of someone else's under the copy's name stops it: no Job, the state
// untouched, RestoreJobSucceeded says why; once that Secret is gone the
// restore goes through, the copy holds the garbled bytes, and the object is
// Ready at the backup's serial.
TEST_F(FaultTest, StateSecretGarbledIsRestoredFromBackup) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("sg", rep);
    CaseWatch watch(manager_, o.name);
    createReady(o);
    std::int64_t serial = 0;
    ASSERT_TRUE(eventually([&] { return (serial = newestBackup(tc(o.name))) > 0; }))
        << tc(o.name).dump(2);
    const std::string state_secret = "tfstate-default-" + watch.suffix();
    const std::string garbage = absl::Base64Escape("not a state");
    e2e::mergePatch(kNamespace, "secret", state_secret, {{"data", {{"tfstate", garbage}}}});
    bump(o);
    expectStateReason(o, "StateCorrupt");
    EXPECT_EQ(e2e::runJobs(kNamespace, o.name, "apply").size(), 1U)
        << "no apply runs on an unreadable state";
    // The rev taken back: the restored state's inputs are the object's
    // again, so nothing applies after the restore and its serial shows.
    o.revs.pop_back();
    e2e::mergePatch(kNamespace, "terraformcluster", o.name,
                    {{"spec", {{"variables", variables(o)}}}});

    // Someone else's Secret under the name the copy takes.
    const json garbled = getJson({"-n", kNamespace, "get", "secret", state_secret});
    ASSERT_TRUE(garbled.is_object());
    const std::string aside =
        workspace::unreadableStateSecretName(state_secret, workspace::setAsideId({garbled}));
    ASSERT_EQ(kubectl({"-n", kNamespace, "create", "secret", "generic", aside,
                       "--from-literal=other=content"})
                  .exit_code,
              0);
    e2e::mergePatch(
        kNamespace, "terraformcluster", o.name,
        {{"metadata", {{"annotations", {{"captf.io/restore-state", std::to_string(serial)}}}}}});
    EXPECT_TRUE(eventually([&] {
      return e2e::conditionOf(tc(o.name), "RestoreJobSucceeded", "reason") == "StateSetAsideFailed";
    })) << tc(o.name).dump(2);
    EXPECT_NE(e2e::conditionOf(tc(o.name), "RestoreJobSucceeded", "message").find(aside),
              std::string::npos);
    EXPECT_FALSE(e2e::eventsFor(kNamespace, o.name, "StateSetAsideFailed").empty());
    EXPECT_TRUE(e2e::runJobs(kNamespace, o.name, "restore").empty())
        << "a restore started although the state could not be set aside";
    const json untouched = getJson({"-n", kNamespace, "get", "secret", state_secret});
    ASSERT_TRUE(untouched.is_object()) << "the unreadable state was deleted without a copy";
    EXPECT_EQ(untouched["data"].value("tfstate", ""), garbage);

    // Once that Secret is gone, the retried pass sets the state aside and restores.
    ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "secret", aside}).exit_code, 0);
    watch.serialMayGoBack();
    restoreAndExpectSuccess(o.name, serial);
    const std::vector<json> kept = e2e::items(
        kNamespace, "secrets",
        "captf.io/state-unreadable=true,captf.io/state-unreadable-suffix=" + watch.suffix());
    ASSERT_EQ(kept.size(), 1U);
    EXPECT_EQ(kept[0]["metadata"].value("name", ""), aside);
    EXPECT_EQ(kept[0]["data"].value("tfstate", ""), garbage) << "the garbled bytes are kept";
    EXPECT_FALSE(kept[0]["metadata"]["labels"].contains("tfstateSecretSuffix"));
    EXPECT_EQ(kept[0]["metadata"]["ownerReferences"][0].value("name", ""), o.name);
    EXPECT_FALSE(e2e::eventsFor(kNamespace, o.name, "StateSetAside").empty());
    // Ready with the backup's state: its serial, or the next one (the
    // backend's init writes an empty state into the emptied backend and the
    // runtime counts the push over it as a write), and nothing ran after
    // the restore.
    json object;
    std::int64_t observed = 0;
    EXPECT_TRUE(eventually(
        [&] {
          object = tc(o.name);
          const json status = object.value("status", json::object());
          observed = status.value("observedStateSerial", std::int64_t{0});
          return readyTrue(object) &&
                 e2e::conditionOf(object, "StateReadable", "status") == "True" &&
                 observed >= serial;
        },
        std::chrono::seconds(120)))
        << "not Ready with the backup's state (serial " << serial << ")\n"
        << object.dump(2);
    EXPECT_LE(observed, serial + 1) << object.dump(2);
    EXPECT_EQ(object.value("status", json::object())
                  .value("lastRun", json::object())
                  .value("operation", ""),
              "restore");
    EXPECT_EQ(e2e::runJobs(kNamespace, o.name, "apply").size(), 1U)
        << "an apply ran after the restore although the inputs are the backup's";
    const StateRead restored = readState(watch.suffix());
    ASSERT_TRUE(restored.status.ok()) << restored.status;
    EXPECT_EQ(restored.summary.serial, observed);
    // The next rev applies from the restored state.
    bump(o);
    checkInvariants(watch, o);
  }
}

// A backend label of the state Secret changed by hand (owner-name): the
// runtime finds state by the whole label map, so an apply now would see no
// state and create everything again. No duplicate create may follow; a
// person puts the label back and the apply goes on.
TEST_F(FaultTest, StateSecretRelabelledRunsNoDuplicateApply) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("sl", rep);
    CaseWatch watch(manager_, o.name);
    createReady(o);
    const std::string secret = "tfstate-default-" + watch.suffix();
    ASSERT_EQ(kubectl({"-n", kNamespace, "label", "--overwrite", "secret", secret,
                       std::string(kOwnerLabel) + "=someone-else"})
                  .exit_code,
              0);
    bump(o);
    // Give the manager the time of a pass or two with the changed label.
    std::this_thread::sleep_for(std::chrono::seconds(10));
    ASSERT_EQ(kubectl({"-n", kNamespace, "label", "--overwrite", "secret", secret,
                       std::string(kOwnerLabel) + "=" + o.name})
                  .exit_code,
              0);
    checkInvariants(watch, o);
  }
}

// A lock taken by someone else (a person's `tofu` on a laptop): the object
// is StateLocked and runs nothing; once the person lets go, the apply runs.
TEST_F(FaultTest, AForeignLockHoldsUntilReleased) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("fl", rep);
    CaseWatch watch(manager_, o.name);
    createReady(o);
    const std::string lease = "lock-tfstate-default-" + watch.suffix();
    const json info = {{"ID", "3b1c2d4e-0000-4000-8000-000000000001"},
                       {"Operation", "OperationTypeApply"},
                       {"Who", "admin@laptop"},
                       {"Version", "1.10.0"},
                       {"Created", "2026-01-01T00:00:00Z"}};
    e2e::mergePatch(kNamespace, "lease", lease,
                    {{"metadata", {{"annotations", {{"app.terraform.io/lock-info", info.dump()}}}}},
                     {"spec", {{"holderIdentity", "admin@laptop"}}}});
    bump(o);
    expectStateReason(o, "StateLocked");
    EXPECT_EQ(e2e::runJobs(kNamespace, o.name, "apply").size(), 1U)
        << "no apply runs against a foreign lock";
    e2e::mergePatch(kNamespace, "lease", lease,
                    {{"metadata", {{"annotations", {{"app.terraform.io/lock-info", nullptr}}}}},
                     {"spec", {{"holderIdentity", nullptr}}}});
    checkInvariants(watch, o);
  }
}

// A lock left by a pod of one of the object's own Jobs that has finished
// (a runtime stopped before it let go): stale, so the next Job forces it
// open with the lock ID read, once, with a Warning Event and the counter
// (docs/behaviour/state.md#locks), and applies.
TEST_F(FaultTest, AStaleLockOfAFinishedRunnerIsForcedOpen) {
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("sk", rep);
    CaseWatch watch(manager_, o.name);
    createReady(o);
    const auto jobs = e2e::runJobs(kNamespace, o.name, "apply");
    ASSERT_FALSE(jobs.empty());
    const std::string finished = *std::max_element(jobs.begin(), jobs.end()); // the newest
    const json pods = getJson({"-n", kNamespace, "get", "pods", "-l", "job-name=" + finished});
    ASSERT_TRUE(pods.is_object() && !pods.value("items", json::array()).empty()) << pods.dump(2);
    const std::string pod = pods["items"][0]["metadata"].value("name", "");
    const std::string lease = "lock-tfstate-default-" + watch.suffix();
    const std::string id = "5c2d7e10-0000-4000-8000-00000000000" + std::to_string(rep % 10);
    const json info = {{"ID", id},
                       {"Operation", "OperationTypeApply"},
                       {"Who", "runner@" + pod},
                       {"Version", "1.10.0"},
                       {"Created", "2026-01-01T00:00:00Z"}};
    const auto forced = [] {
      return e2e::metricValue(manager_.metrics(), "captf_lock_force_unlocks_total",
                              {{"kind", "TerraformCluster"}})
          .value_or(0);
    };
    const double forced_before = forced();
    e2e::mergePatch(kNamespace, "lease", lease,
                    {{"metadata", {{"annotations", {{"app.terraform.io/lock-info", info.dump()}}}}},
                     {"spec", {{"holderIdentity", id}}}}); // the backend's: the lock ID
    bump(o);
    ASSERT_TRUE(eventually([&] {
      return !e2e::eventsFor(kNamespace, o.name, "ForceUnlocked").empty();
    })) << tc(o.name).dump(2)
        << getJson({"-n", kNamespace, "get", "lease", lease}).dump(2)
        << getJson({"-n", kNamespace, "get", "pods", "-l", "job-name=" + finished}).dump(2)
        << manager_.processLog();
    const std::vector<json> events = e2e::eventsFor(kNamespace, o.name, "ForceUnlocked");
    EXPECT_EQ(events.front().value("type", ""), "Warning");
    EXPECT_TRUE(absl::StrContains(events.front().value("note", ""), pod)) << events.front().dump(2);
    checkInvariants(watch, o);
    EXPECT_EQ(forced() - forced_before, 1.0);
    EXPECT_EQ(lockHolder(watch.suffix()), "");
    EXPECT_NE(e2e::conditionOf(tc(o.name), "StateReadable", "reason"), "StateLocked");
  }
}

// --- The cache behind ------------------------------------------------------------

// A deletion while the manager's Secret informer is behind its Job
// informer: the manager talks to the API server through the rig's proxy,
// which holds its Secrets watches from before the object's first apply, so
// its cache never sees the state Secret that apply writes. With the apply
// Job removed (by hand, or by a TTL), nothing else makes the manager read
// the state again. The object is not StateLost on the cache's word, and it
// is deleted with the watches still held: whether a deleting object has
// state is read from the API server, not the cache
// (docs/behaviour/state.md#a-deleting-object-without-state), so the destroy
// runs and the object leaves while the informer is still behind. Before,
// the object was StateLost on the cache's word while its state was whole
// (a Warning, and no apply would have run until the informer caught up).
TEST_F(FaultTest, ADeletionWithTheSecretInformerBehindStillDestroys) {
  const ProxiedManager proxied;
  ASSERT_TRUE(proxied.started());
  for (int rep = 0; rep < reps(); ++rep) {
    Obj o = newObj("ib", rep);
    CaseWatch watch(manager_, o.name);
    proxied.holdSecretWatches();
    createReady(o);
    ASSERT_TRUE(readState(watch.suffix()).status.ok()) << "the apply wrote no state";
    watch.pollJobs();
    ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "jobs", "-l",
                       std::string(kOwnerLabel) + "=" + o.name, "--wait=true"})
                  .exit_code,
              0);
    // A few passes (each Job's deletion wakes the object).
    std::this_thread::sleep_for(std::chrono::seconds(10));
    EXPECT_NE(e2e::conditionOf(tc(o.name), "StateReadable", "reason"), "StateLost")
        << "StateLost on the word of a cache that is behind";
    ASSERT_EQ(kubectl({"-n", kNamespace, "delete", "clusters.v1beta2.cluster.x-k8s.io", o.cluster,
                       "--wait=false"})
                  .exit_code,
              0);
    // The state read from the API server, the destroy runs and the object
    // leaves, the informer still behind.
    EXPECT_TRUE(eventually(
        [&] {
          return kubectl({"-n", kNamespace, "get", "terraformcluster", o.name}).exit_code != 0;
        },
        std::chrono::seconds(90)))
        << "still there, its state read from the cache alone\n"
        << tc(o.name).dump(2);
    EXPECT_EQ(counter_->destroys(o.name, "1"), 1) << "the object left without a destroy";
    proxied.release();
    // The destroy Job goes with the object, often before the watch has
    // seen it bookkept: its count is the module's destroy below.
    checkInvariants(watch, o, {.deleted = true, .count_jobs = false});
    EXPECT_EQ(counter_->destroys(o.name, "1"), 1) << "the destroy did not run once";
  }
}

} // namespace
} // namespace captf::controllers
