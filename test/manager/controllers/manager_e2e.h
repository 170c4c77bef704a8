#pragma once

// What the manager's end-to-end tests share: the rig's capi tier, kubectl
// helpers, bounded waits, the `manager` executable as a child process
// authenticated as a user bound to exactly config/rbac's ClusterRole, its
// metrics and Events, and tenants (a namespace with an identity and its
// credentials Secret).

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/types.h>

#include "test/rig/fixture.h"

namespace captf::kube {
class HttpsServer;
} // namespace captf::kube

namespace captf::controllers::e2e {

using nlohmann::json;

// The rig of this binary (capi tier).
const rig::Env& env();
// The repository (config/crd, config/rbac, test/rig/rig).
std::string sourceDir();

rig::CommandResult kubectl(const std::vector<std::string>& args, const std::string& in = "");
// Server-side apply (fails the test when refused).
void apply(const json& manifest);
// `kubectl <args> -o json`; null when the command fails.
json getJson(const std::vector<std::string>& args);
// Merge-patches `resource` `name` in `ns` (fails the test when refused).
void mergePatch(const std::string& ns, const std::string& resource, const std::string& name,
                const json& patch);

// Polls `check` every 500 ms for up to `limit`; returns whether it held.
bool eventually(const std::function<bool()>& check,
                std::chrono::seconds limit = std::chrono::seconds(240));

// The `field` of condition `type` in object.status.conditions ("" if none).
std::string conditionOf(const json& object, const std::string& type, const char* field);
bool readyTrue(const json& object);
// A TCP port free on 127.0.0.1 right now.
int freePort();

using rig::sanitizerReport;
using rig::spawn;

// The manager executable as a child process of the test.
class ManagerProcess {
public:
  ManagerProcess() = default;
  ManagerProcess(const ManagerProcess&) = delete;
  ManagerProcess& operator=(const ManagerProcess&) = delete;
  ~ManagerProcess() { stop(SIGKILL); }

  // Starts the manager with `args` and the test's environment plus `env`,
  // stdout and stderr appended to `log`.
  void start(const std::vector<std::string>& args, const std::string& log,
             const std::vector<std::string>& env = {});
  // Sends `sig` (SIGTERM by default) and waits for the process, at most
  // `limit` (then SIGKILL). Returns the exit code, 128 + N when signal N
  // ended it, -1 when nothing ran.
  int stop(int sig = SIGTERM, std::chrono::seconds limit = std::chrono::seconds(60));
  // Sends `sig` and returns at once.
  void signal(int sig) const;
  // Waits up to `limit` for the process to end; its stop() code, or nullopt
  // while it still runs.
  std::optional<int> wait(std::chrono::seconds limit);
  bool running() const;
  pid_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
};

// The manager installed on the rig: CRDs and RBAC exactly as shipped, a
// user bound to the ClusterRole and the leader-election Role (nothing
// else), the runner image and the webhook serving certificate.
struct ManagerRig {
  std::string dir;        // <rig>/manager-e2e
  std::string kubeconfig; // the manager user's
  std::string runner_image;
  // --sync-period: how often every object is reconciled without a cause.
  std::string sync_period = "30s";
  // --v: 4 (the -v=4 decision lines); the manager's levels end at 5 (trace).
  int verbosity = 4;
  // --leader-elect-lease-duration and --leader-elect-renew-deadline (see
  // start()); a test that needs a manager to outlast a longer API server
  // outage sets longer ones.
  std::string lease_duration = "10s";
  std::string renew_deadline = "8s";
  int webhook_port = 0;
  int health_port = 0;
  int metrics_port = 0;
  int report_port = 0; // the run reports (gRPC, TLS)
  // Environment variables ("NAME=value") of the next start()s besides the
  // test's own.
  std::vector<std::string> env;
  ManagerProcess process;
  size_t log_offset = 0; // where the running process's log starts

  // The log's file in `dir`: a second manager on the rig names its own.
  std::string log_name = "manager.log";

  std::string log() const { return dir + "/" + log_name; }
  // The manager's log so far (every process).
  std::string logText() const;
  // What the running (or last) process wrote.
  std::string processLog() const;
  // Starts the manager (new ports each time) with leader election,
  // `sync_period` and `verbosity`; `extra` flags are appended.
  void start(const std::vector<std::string>& extra = {});
  // SIGTERM, as Kubernetes stops a pod: fails the test unless the process
  // exits 0 with no sanitizer report and logs "manager stopped".
  void stopCleanly();
  // GET /metrics (plain HTTP, --insecure-diagnostics); "" when unreachable.
  std::string metrics() const;
};

// Installs everything above (idempotent per rig) and fills `rig`; call from
// SetUpTestSuite. Fails the test on the first error.
void installManager(ManagerRig& rig);

// A tenant namespace `ns` with a TerraformClusterIdentity `identity` whose
// credentials Secret `identity`-credentials in captf-system holds `data`
// (string values) and allows only `ns`.
void createTenant(const std::string& ns, const std::string& identity,
                  const std::map<std::string, std::string>& data);
// A TerraformCluster `name` in `ns` with `spec`, and the Cluster API Cluster
// `cluster` whose infrastructureRef names it (fails the test when refused).
// `labels` go on the TerraformCluster.
void createClusterPair(const std::string& ns, const std::string& name, const std::string& cluster,
                       const json& spec, const json& labels = json::object());

// A bootstrap data Secret `name` in `ns` as a bootstrap provider writes it:
// `value` (cloud-config) and `format` cloud-config.
void createBootstrapSecret(const std::string& ns, const std::string& name,
                           const std::string& value = "#cloud-config\n");

// Replaces the data of the tenant's credentials Secret (a rotation).
void rotateCredentials(const std::string& identity, const std::map<std::string, std::string>& data);

// The sum of every sample of metric `name` whose labels include `labels`;
// nullopt when no sample matches.
std::optional<double> metricValue(const std::string& exposition, const std::string& name,
                                  const std::map<std::string, std::string>& labels);

// What the manager's metrics did since a first scrape: counters and
// histogram counts (`name` + "_count") grow, so a test measures its own
// events as differences even while other objects move the same series. A
// series missing counts as 0. The manager must not restart in between (its
// counters would start again from 0).
class MetricsSince {
public:
  // Scrapes `rig` now; `rig` must outlive this object.
  explicit MetricsSince(const ManagerRig& rig);

  // How much name{labels} (summed over the matching samples) grew since.
  double delta(const std::string& name, const std::map<std::string, std::string>& labels) const;
  // Polls (eventually) until delta(name, labels) >= at_least; whether it
  // did.
  bool grows(const std::string& name, const std::map<std::string, std::string>& labels,
             double at_least = 1, std::chrono::seconds limit = std::chrono::seconds(240)) const;
  // The first scrape.
  const std::string& before() const { return before_; }

private:
  const ManagerRig& rig_;
  std::string before_;
};

// The items of `kubectl -n ns get resource [-l selector]` ([] when none or
// the command fails).
std::vector<json> items(const std::string& ns, const std::string& resource,
                        const std::string& selector = "");
// Names of the run Jobs in `ns` of the object named `owner` with operation
// `op` (apply, destroy, refresh, ...).
std::vector<std::string> runJobs(const std::string& ns, const std::string& owner,
                                 const std::string& op);

// events.k8s.io/v1 Events in `ns` regarding the object named `name`, with
// `reason` ("" for any).
std::vector<json> eventsFor(const std::string& ns, const std::string& name,
                            const std::string& reason = "");

// Which writes a WriteHold holds: the API server sends the admission of
// every `operations` write of `resource` in namespace `ns` to the test, and
// the hold takes the first one whose name starts with `name_prefix` and for
// which `when` (given the AdmissionReview's request) is true.
struct WriteMatch {
  std::string group{};                   // API group: "" (core), "batch", "coordination.k8s.io"
  std::string version{};                 // "v1", "v1alpha1"
  std::string resource{};                // plural: "secrets", "jobs", "leases", ...
  std::vector<std::string> operations{}; // "CREATE", "UPDATE", "DELETE"
  std::string ns{};
  std::string name_prefix{};                  // "" for any name
  std::function<bool(const json&)> when = {}; // null for any write
  // How the hold proves it is in force: a server-side dry run that reaches
  // it. Empty: `kubectl create --dry-run=server` of a minimal object of
  // `resource` (secrets, configmaps, leases, jobs); else an existing object
  // of `resource` in `ns` that a dry-run annotation updates.
  std::string probe_object{};
};

// A write held by the API server at an exact point, so that a test can kill
// whoever is writing while the write has not landed: a
// ValidatingWebhookConfiguration (failurePolicy Fail) pointing at a server
// of the test that blocks the first matching write until release() (at most
// 28 s, the webhook's 30 s timeout less a margin; then it lets it through).
// Other writes of the resource pass at once. The constructor returns once
// the hold is in force; the destructor lets everything through and removes
// the configuration.
class WriteHold {
public:
  // `id` names the configuration (captf-e2e-hold-<id>); armed holds the
  // first matching write from now on, disarmed lets every write through
  // until arm().
  WriteHold(const std::string& id, WriteMatch match, bool armed = true);
  ~WriteHold();
  WriteHold(const WriteHold&) = delete;
  WriteHold& operator=(const WriteHold&) = delete;

  // Holds the next matching write (once).
  void arm();
  // Whether a matching write is being held, waiting up to `limit`.
  bool awaitHeld(std::chrono::seconds limit);
  // The AdmissionReview request held (null before one was).
  json held() const;
  // Lets the held write and every later one through.
  void release();

private:
  // The AdmissionReview response to `body`, after holding it if it matches.
  std::string answer(const std::string& body);

  const std::string name_;
  const WriteMatch match_;
  std::unique_ptr<kube::HttpsServer> server_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool armed_;
  int dry_runs_ = 0;
  bool holding_ = false;
  bool released_ = false;
  json held_;
};

} // namespace captf::controllers::e2e
