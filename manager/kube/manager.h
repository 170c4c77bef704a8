#pragma once

// The Manager wires the client runtime together, as controller-runtime's
// manager does: one REST client, one informer cache, one metrics registry
// (with the process collector and the feature gates, standard_metrics.h),
// an event recorder, health and readiness checks, leader election, and the
// runnables (controllers and others) started in the right order.

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/cache.h"
#include "manager/kube/client.h"
#include "manager/kube/clock.h"
#include "manager/kube/config.h"
#include "manager/kube/controller.h"
#include "manager/kube/diagnostics_server.h"
#include "manager/kube/discovery.h"
#include "manager/kube/events.h"
#include "manager/kube/leader_election.h"
#include "manager/kube/metrics.h"
#include "manager/kube/read_through.h"
#include "manager/kube/rest_client.h"
#include "manager/kube/standard_metrics.h"

namespace captf::kube {

enum class NeedLeaderElection { kNo, kYes };
enum class LeaderElectionMode { kDisabled, kEnabled };

// Something the manager runs until it stops.
class Runnable {
public:
  virtual ~Runnable() = default;
  // Runs until `stop` fires, then returns OK. An error stops the manager.
  virtual absl::Status start(std::stop_token stop) = 0;
};

class RunnableFunc final : public Runnable {
public:
  explicit RunnableFunc(std::function<absl::Status(std::stop_token)> fn) : fn_(std::move(fn)) {}
  absl::Status start(std::stop_token stop) override { return fn_(std::move(stop)); }

private:
  std::function<absl::Status(std::stop_token)> fn_;
};

// Whether the probe address also serves /metrics (plain HTTP).
enum class ProbeMetrics { kServe, kOmit };

struct ManagerOptions {
  std::string name = "captf-manager"; // field manager and event reporter
  CacheOptions cache;
  LeaderElectionMode leader_election = LeaderElectionMode::kDisabled;
  std::string leader_election_namespace;       // default: the config's namespace
  std::string leader_election_id;              // the Lease name; required when enabled
  LeaderElectionConfig leader_election_config; // identity defaults to host_random
  // Probes (/healthz, /readyz) and plain /metrics; empty disables.
  std::string health_probe_address = ":9440";
  // The manager binary omits them: its metrics are served only on
  // --diagnostics-address, authenticated unless --insecure-diagnostics.
  ProbeMetrics probe_metrics = ProbeMetrics::kServe;
  std::string event_reporting_instance; // default: the identity
  // How long run() waits, once stopped, for the runnables (controllers with
  // their in-flight reconcile passes) to return; controller-runtime's
  // GracefulShutdownTimeout. docs/decisions/shutdown.md.
  Duration graceful_shutdown_timeout = std::chrono::seconds(30);
  // The feature gates kubernetes_feature_enabled reports (the manager
  // binary: its --feature-gates, manager/flags).
  std::vector<FeatureGate> feature_gates;
};

// Reads from the cache, writes to the API server (controller-runtime's
// default client).
class DelegatingClient final : public Client {
public:
  DelegatingClient(Reader& reader, Writer& writer) : reader_(reader), writer_(writer) {}
  absl::StatusOr<Json> get(const GroupVersionKind& gvk, const ObjectKey& key) override {
    return reader_.get(gvk, key);
  }
  absl::StatusOr<ObjectList> list(const GroupVersionKind& gvk,
                                  const ListOptions& options) override {
    return reader_.list(gvk, options);
  }
  absl::StatusOr<Json> create(const Json& object, const CreateOptions& options = {}) override {
    return writer_.create(object, options);
  }
  absl::StatusOr<Json> update(const Json& object, const UpdateOptions& options = {}) override {
    return writer_.update(object, options);
  }
  absl::StatusOr<Json> patch(const GroupVersionKind& gvk, const ObjectKey& key, PatchType type,
                             const Json& patch, const PatchOptions& options = {}) override {
    return writer_.patch(gvk, key, type, patch, options);
  }
  absl::StatusOr<Json> apply(const Json& object, const ApplyOptions& options) override {
    return writer_.apply(object, options);
  }
  absl::Status remove(const GroupVersionKind& gvk, const ObjectKey& key,
                      const DeleteOptions& options = {}) override {
    return writer_.remove(gvk, key, options);
  }

private:
  Reader& reader_;
  Writer& writer_;
};

class Manager {
public:
  static absl::StatusOr<std::unique_ptr<Manager>>
  create(const RestConfig& config, ManagerOptions options, std::shared_ptr<spdlog::logger> logger);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Reads from the cache (creating informers on first use), writes to the
  // API server.
  Client& client() { return *client_; }
  // Reads and writes straight to the API server (objects never cached).
  ApiClient& apiClient() { return *api_; }
  InformerCache& cache() { return *cache_; }
  MetricsRegistry& metrics() { return metrics_; }
  EventRecorder& eventRecorder() { return *events_; }
  Clock& clock() { return clock_; }
  const std::string& identity() const { return identity_; }

  // A controller started when this manager leads (or at once without
  // leader election). Call before run(); the reference lives as long as the
  // manager. `reconciler` must live as long as the manager: own() it.
  Controller& addController(std::string name, Reconciler& reconciler,
                            ControllerOptions options = {});
  // Keeps `object` (reconcilers, the informers and state they share) until
  // the manager is destroyed: after every controller and runnable, before
  // the cache and the clients. What controllers and runnables point into is
  // owned here, so nothing they reference can go first.
  template <typename T> T& own(std::unique_ptr<T> object) {
    T& ref = *object;
    owned_.push_back(std::shared_ptr<void>(std::move(object)));
    return ref;
  }
  // Runnables that need leadership start on election; others at once
  // (e.g. webhook servers). Call before run().
  void add(std::unique_ptr<Runnable> runnable, NeedLeaderElection need);
  void addCheck(CheckKind kind, std::string name, HealthCheck check);

  // Starts everything and blocks until `stop` fires (OK), a runnable fails
  // (its error), or leadership is lost (Aborted); the caller then exits the
  // process, as controller-runtime does when leadership is lost.
  //
  // The stop order (docs/decisions/shutdown.md): controllers stop taking
  // work and their in-flight passes finish, with the other leader
  // runnables; the leader Lease is released; the runnables that need no
  // leadership stop; the informers and the probe server stop. Every wait
  // shares one deadline, graceful_shutdown_timeout after the stop. When it
  // passes, run() returns DeadlineExceeded at once with the work still
  // running and the Lease kept (another leader must not start beside it):
  // the caller must then end the process (std::_Exit) rather than destroy
  // the manager, whose destructor would wait for that work.
  absl::Status run(std::stop_token stop);

private:
  Manager(const RestConfig& config, ManagerOptions options, std::shared_ptr<spdlog::logger> logger);
  absl::Status init(const RestConfig& config);
  void startRunnables(NeedLeaderElection group, std::stop_token stop);
  // Waits until every runnable of `group` returned or the shutdown deadline
  // passed, joining them when they all returned. False on the deadline.
  bool stopGroup(NeedLeaderElection group);
  // Every wait of the shutdown shares one deadline, counted from the first
  // wait (right after the stop). Call with mu_ held.
  SteadyTime shutdownDeadlineLocked();

  ManagerOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  RealClock local_clock_;
  // The clock of every component: local time, the API server's wall time
  // (learned from the main and Lease clients' answers).
  ServerClock clock_{local_clock_};
  MetricsRegistry metrics_;
  std::string identity_;
  std::unique_ptr<RestClient> rest_;
  std::unique_ptr<DiscoveryRestMapper> mapper_;
  std::unique_ptr<ApiClient> api_;
  std::unique_ptr<RestClient> lease_rest_; // leader election: renew deadline as timeout
  std::unique_ptr<ApiClient> lease_api_;
  std::unique_ptr<InformerCache> cache_;
  std::unique_ptr<DataReadThrough> read_through_; // kinds cached without their data
  std::unique_ptr<DelegatingClient> client_;
  std::unique_ptr<KubeEventRecorder> events_;
  std::unique_ptr<DiagnosticsServer> diagnostics_;
  // Declared after what they point into (destroyed in reverse): runnables
  // and controllers go first, then what they were given to own().
  std::vector<std::shared_ptr<void>> owned_;
  std::vector<std::unique_ptr<Controller>> controllers_;

  std::mutex mu_;
  std::condition_variable_any returned_cv_; // a runnable returned
  std::vector<std::pair<std::unique_ptr<Runnable>, NeedLeaderElection>> runnables_;
  std::vector<std::jthread> threads_[2];        // by NeedLeaderElection
  int running_[2] = {0, 0};                     // threads of each group not yet returned
  std::optional<SteadyTime> shutdown_deadline_; // see shutdownDeadlineLocked()
  std::stop_source failed_;                     // a runnable failed
  // The leader elector and its thread; run() may return at the deadline
  // with it still running, so they outlive run() (the destructor joins it
  // first).
  struct Election;
  std::unique_ptr<Election> election_;
  std::jthread election_thread_;
  absl::Status first_error_;
};

// hostname + "_" + 16 random hex digits.
std::string defaultIdentity();

} // namespace captf::kube
