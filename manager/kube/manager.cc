#include "manager/kube/manager.h"

#include <array>
#include <random>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "contract/status_macros.h"
#include "manager/kube/strings.h"

namespace captf::kube {

std::string defaultIdentity() {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) {
    host[0] = '\0';
  }
  std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("%s_%016x", host.data(), rng());
}

// What the leader elector's thread uses. run() may return at the shutdown
// deadline with that thread still renewing, so this outlives run(): the
// destructor joins the thread first.
struct Manager::Election {
  Election(Client& client, const std::string& ns, const std::string& name)
      : lock(client, ns, name) {}
  KubeLeaseLock lock;
  std::unique_ptr<LeaderElector> elector;
  std::stop_source stop;    // stops the elector
  bool leading = false;     // guarded by Manager::mu_
  bool work_stopped = true; // the leader work returned before the deadline
  bool done = false;        // elector.run() returned; guarded by Manager::mu_
  absl::Status result;      // of elector.run(), read once done
};

Manager::Manager(const RestConfig& config, ManagerOptions options,
                 std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)), logger_(std::move(logger)) {
  identity_ = options_.leader_election_config.identity.empty()
                  ? defaultIdentity()
                  : options_.leader_election_config.identity;
  options_.leader_election_config.identity = identity_;
  registerProcessMetrics(metrics_);
  registerFeatureGates(metrics_, options_.feature_gates);
  if (options_.leader_election_namespace.empty()) {
    options_.leader_election_namespace = config.ns.empty() ? "default" : config.ns;
  }
}

Manager::~Manager() {
  // Threads that run() left at its deadline still use everything below: wait
  // for them first (the manager binary exits instead of getting here).
  if (election_thread_.joinable()) {
    if (election_) {
      election_->stop.request_stop();
    }
    election_thread_.join();
  }
  for (auto& group : threads_) {
    group.clear();
  }
  // The probe server's checks may point into runnables (the webhook server).
  diagnostics_.reset();
  // No informer delivers events any more before controllers unregister;
  // controllers and runnables go before what they point into (owned_), all
  // of it before the cache and the clients.
  if (cache_) {
    cache_->stop();
  }
  controllers_.clear();
  runnables_.clear();
  owned_.clear();
}

absl::StatusOr<std::unique_ptr<Manager>> Manager::create(const RestConfig& config,
                                                         ManagerOptions options,
                                                         std::shared_ptr<spdlog::logger> logger) {
  if (options.leader_election == LeaderElectionMode::kEnabled) {
    if (options.leader_election_id.empty()) {
      return absl::InvalidArgumentError("leader election needs a lease name");
    }
    LeaderElectionConfig check = options.leader_election_config;
    check.identity = "x";
    CAPTF_RETURN_IF_ERROR(validate(check));
  }
  std::unique_ptr<Manager> manager(new Manager(config, std::move(options), std::move(logger)));
  CAPTF_RETURN_IF_ERROR(manager->init(config));
  return manager;
}

absl::Status Manager::init(const RestConfig& config) {
  // The clients keep time on the local clock (deadlines, and an exec
  // plugin's expiry, which it computed on this machine's clock); only their
  // answers' Date headers go to clock_.
  auto rest = RestClient::create(config, local_clock_, &metrics_, logger_);
  if (!rest.ok()) {
    return rest.status();
  }
  rest_ = *std::move(rest);
  rest_->observeServerTime(clock_);
  mapper_ = std::make_unique<DiscoveryRestMapper>(*rest_, clock_);
  api_ = std::make_unique<ApiClient>(*rest_, *mapper_);
  if (options_.leader_election == LeaderElectionMode::kEnabled) {
    // Lease requests get the renew deadline as their timeout, as client-go
    // bounds each renewal: a renewal that cannot finish in time has failed.
    RestConfig lease_config = config;
    lease_config.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
        options_.leader_election_config.renew_deadline);
    auto lease_rest = RestClient::create(lease_config, local_clock_, &metrics_, logger_);
    if (!lease_rest.ok()) {
      return lease_rest.status();
    }
    lease_rest_ = *std::move(lease_rest);
    lease_rest_->observeServerTime(clock_);
    lease_api_ = std::make_unique<ApiClient>(*lease_rest_, *mapper_);
  }
  cache_ = std::make_unique<InformerCache>(InformerCache::apiFactory(*api_), clock_, options_.cache,
                                           &metrics_, logger_);
  std::set<GroupVersionKind> without_data;
  for (const auto& [gvk, kind] : options_.cache.by_kind) {
    if (!kind.cache_data) {
      without_data.insert(gvk);
    }
  }
  Reader* reader = cache_.get();
  if (!without_data.empty()) {
    read_through_ = std::make_unique<DataReadThrough>(*cache_, *api_, std::move(without_data),
                                                      options_.cache.payload_memo_bytes, &metrics_);
    reader = read_through_.get();
  }
  client_ = std::make_unique<DelegatingClient>(*reader, *api_);
  EventRecorderOptions event_options;
  event_options.reporting_controller = options_.name;
  event_options.reporting_instance =
      options_.event_reporting_instance.empty() ? identity_ : options_.event_reporting_instance;
  events_ = std::make_unique<KubeEventRecorder>(*api_, event_options, clock_, &metrics_, logger_);
  if (!options_.health_probe_address.empty()) {
    diagnostics_ = std::make_unique<DiagnosticsServer>(
        options_.health_probe_address,
        options_.probe_metrics == ProbeMetrics::kServe ? &metrics_ : nullptr, logger_);
    diagnostics_->addCheck(CheckKind::kHealthz, "ping", [] { return absl::OkStatus(); });
    diagnostics_->addCheck(CheckKind::kReadyz, "informer-sync", [this] {
      return cache_->hasSynced() ? absl::OkStatus() : absl::UnavailableError("not synced");
    });
  }
  return absl::OkStatus();
}

Controller& Manager::addController(std::string name, Reconciler& reconciler,
                                   ControllerOptions options) {
  auto controller = std::make_unique<Controller>(std::move(name), reconciler, std::move(options),
                                                 clock_, &metrics_, logger_);
  Controller& ref = *controller;
  controllers_.push_back(std::move(controller));
  add(std::make_unique<RunnableFunc>(
          [&ref](std::stop_token stop) { return ref.run(std::move(stop)); }),
      NeedLeaderElection::kYes);
  return ref;
}

void Manager::add(std::unique_ptr<Runnable> runnable, NeedLeaderElection need) {
  std::scoped_lock lock(mu_);
  runnables_.emplace_back(std::move(runnable), need);
}

void Manager::addCheck(CheckKind kind, std::string name, HealthCheck check) {
  if (diagnostics_) {
    diagnostics_->addCheck(kind, std::move(name), std::move(check));
  }
}

void Manager::startRunnables(NeedLeaderElection group, std::stop_token stop) {
  std::scoped_lock lock(mu_);
  const int g = group == NeedLeaderElection::kYes ? 1 : 0;
  for (auto& [runnable, need] : runnables_) {
    if (need != group) {
      continue;
    }
    ++running_[g];
    threads_[g].emplace_back([this, g, r = runnable.get(), stop] {
      absl::Status status = r->start(stop);
      if (!status.ok()) {
        {
          std::scoped_lock error_lock(mu_);
          if (first_error_.ok()) {
            first_error_ = status;
          }
        }
        logger_->error("runnable failed, stopping the manager error=\"{}\"", msg(status));
        failed_.request_stop();
      }
      std::scoped_lock done_lock(mu_);
      --running_[g];
      returned_cv_.notify_all();
    });
  }
}

SteadyTime Manager::shutdownDeadlineLocked() {
  if (!shutdown_deadline_) {
    shutdown_deadline_ = clock_.now() + options_.graceful_shutdown_timeout;
  }
  return *shutdown_deadline_;
}

bool Manager::stopGroup(NeedLeaderElection group) {
  const int g = group == NeedLeaderElection::kYes ? 1 : 0;
  std::vector<std::jthread> threads;
  {
    std::unique_lock lock(mu_);
    if (!clock_.waitUntil(lock, returned_cv_, std::stop_token(), shutdownDeadlineLocked(),
                          [&] { return running_[g] == 0; })) {
      return false;
    }
    threads.swap(threads_[g]);
  }
  threads.clear(); // every one has returned: joins at once
  return true;
}

absl::Status Manager::run(std::stop_token stop) {
  if (diagnostics_) {
    CAPTF_RETURN_IF_ERROR(diagnostics_->start());
  }
  // One stop for the leader work: the caller's, or a failed runnable. The
  // runnables that need no leadership (the webhook server) get their own
  // and stop last: passes still finishing write objects that this
  // manager's own webhooks validate.
  std::stop_source all;
  std::stop_source late;
  std::stop_callback on_stop(stop, [&] { all.request_stop(); });
  std::stop_callback on_failure(failed_.get_token(), [&] { all.request_stop(); });

  cache_->start();
  startRunnables(NeedLeaderElection::kNo, late.get_token());

  const auto expired = [this] {
    logger_->error(
        "graceful shutdown timed out: work still in flight is abandoned, the leader "
        "lease is kept gracePeriod={}s",
        std::chrono::duration_cast<std::chrono::seconds>(options_.graceful_shutdown_timeout)
            .count());
    return absl::DeadlineExceededError(
        absl::StrCat("the runnables did not stop within the graceful shutdown timeout of ",
                     absl::FormatDuration(absl::FromChrono(options_.graceful_shutdown_timeout))));
  };
  absl::Status result = absl::OkStatus();
  if (options_.leader_election == LeaderElectionMode::kEnabled) {
    election_ = std::make_unique<Election>(*lease_api_, options_.leader_election_namespace,
                                           options_.leader_election_id);
    Election& election = *election_;
    // The elector keeps renewing the Lease until the leader work has
    // stopped (or was abandoned), so no other replica leads beside passes
    // that are still finishing; it stops at once when this replica never
    // led.
    std::stop_callback stop_elector(all.get_token(), [this, &election] {
      std::scoped_lock guard(mu_);
      if (!election.leading) {
        election.stop.request_stop();
      }
    });
    LeaderCallbacks callbacks;
    callbacks.on_started_leading = [this, &election, all](std::stop_token lost) {
      {
        std::scoped_lock guard(mu_);
        election.leading = true;
      }
      std::stop_source group;
      std::stop_callback a(lost, [&] { group.request_stop(); });
      std::stop_callback b(all.get_token(), [&] { group.request_stop(); });
      startRunnables(NeedLeaderElection::kYes, group.get_token());
      std::mutex mu;
      std::condition_variable_any cv;
      std::unique_lock wait_lock(mu);
      cv.wait(wait_lock, group.get_token(), [] { return false; });
      const bool stopped = stopGroup(NeedLeaderElection::kYes);
      {
        std::scoped_lock guard(mu_);
        election.work_stopped = stopped;
      }
      election.stop.request_stop();
    };
    LeaderElectionConfig config = options_.leader_election_config;
    config.release_on_cancel = ReleaseOnCancel::kNo; // released below, once the work stopped
    election.elector = std::make_unique<LeaderElector>(election.lock, config, std::move(callbacks),
                                                       clock_, logger_);
    election_thread_ = std::jthread([this, &election] {
      absl::Status status = election.elector->run(election.stop.get_token());
      std::scoped_lock guard(mu_);
      election.result = std::move(status);
      election.done = true;
      returned_cv_.notify_all();
    });
    // The deadline is enforced here, not by the elector: a renewal stuck in
    // a slow request must not hold the process past the grace period.
    std::unique_lock lock(mu_);
    returned_cv_.wait(lock, all.get_token(), [&] { return election.done; });
    if (!election.done &&
        !clock_.waitUntil(lock, returned_cv_, std::stop_token(), shutdownDeadlineLocked(),
                          [&] { return election.done; })) {
      return expired();
    }
    if (!election.work_stopped) {
      return expired();
    }
    result = election.result;
    lock.unlock();
    election_thread_.join();
    if (result.ok() && options_.leader_election_config.release_on_cancel == ReleaseOnCancel::kYes) {
      election.elector->release();
    }
  } else {
    startRunnables(NeedLeaderElection::kYes, all.get_token());
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock wait_lock(mu);
    cv.wait(wait_lock, all.get_token(), [] { return false; });
    if (!stopGroup(NeedLeaderElection::kYes)) {
      return expired();
    }
  }

  all.request_stop(); // leadership was lost: nothing else stopped it yet
  late.request_stop();
  if (!stopGroup(NeedLeaderElection::kNo)) {
    return expired();
  }
  cache_->stop();
  if (diagnostics_) {
    diagnostics_->stop();
  }
  std::scoped_lock lock(mu_);
  if (!first_error_.ok()) {
    return first_error_;
  }
  return result;
}

} // namespace captf::kube
