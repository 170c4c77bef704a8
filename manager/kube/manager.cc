#include "manager/kube/manager.h"

#include <array>
#include <random>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

Manager::Manager(const RestConfig& config, ManagerOptions options,
                 std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)), logger_(std::move(logger)) {
  identity_ = options_.leader_election_config.identity.empty()
                  ? defaultIdentity()
                  : options_.leader_election_config.identity;
  options_.leader_election_config.identity = identity_;
  if (options_.leader_election_namespace.empty()) {
    options_.leader_election_namespace = config.ns.empty() ? "default" : config.ns;
  }
}

Manager::~Manager() {
  // Controllers unregister from informers before the cache goes.
  controllers_.clear();
  if (cache_) {
    cache_->stop();
  }
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
    if (auto s = validate(check); !s.ok()) {
      return s;
    }
  }
  std::unique_ptr<Manager> manager(new Manager(config, std::move(options), std::move(logger)));
  if (auto s = manager->init(config); !s.ok()) {
    return s;
  }
  return manager;
}

absl::Status Manager::init(const RestConfig& config) {
  auto rest = RestClient::create(config, clock_, &metrics_, logger_);
  if (!rest.ok()) {
    return rest.status();
  }
  rest_ = *std::move(rest);
  mapper_ = std::make_unique<DiscoveryRestMapper>(*rest_, clock_);
  api_ = std::make_unique<ApiClient>(*rest_, *mapper_);
  cache_ = std::make_unique<InformerCache>(InformerCache::apiFactory(*api_), clock_, options_.cache,
                                           &metrics_, logger_);
  client_ = std::make_unique<DelegatingClient>(*cache_, *api_);
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
  add(std::make_unique<RunnableFunc>([&ref](std::stop_token stop) { return ref.run(stop); }),
      NeedLeaderElection::kYes);
  return ref;
}

void Manager::add(std::unique_ptr<Runnable> runnable, NeedLeaderElection need) {
  std::lock_guard lock(mu_);
  runnables_.emplace_back(std::move(runnable), need);
}

void Manager::addCheck(CheckKind kind, std::string name, HealthCheck check) {
  if (diagnostics_) {
    diagnostics_->addCheck(kind, std::move(name), std::move(check));
  }
}

void Manager::startRunnables(NeedLeaderElection group, std::stop_token stop) {
  std::lock_guard lock(mu_);
  auto& threads = threads_[group == NeedLeaderElection::kYes ? 1 : 0];
  for (auto& [runnable, need] : runnables_) {
    if (need != group) {
      continue;
    }
    threads.emplace_back([this, r = runnable.get(), stop] {
      absl::Status status = r->start(stop);
      if (!status.ok()) {
        {
          std::lock_guard error_lock(mu_);
          if (first_error_.ok()) {
            first_error_ = status;
          }
        }
        logger_->error("runnable failed, stopping the manager error=\"{}\"", msg(status));
        failed_.request_stop();
      }
    });
  }
}

absl::Status Manager::run(std::stop_token stop) {
  if (diagnostics_) {
    if (auto s = diagnostics_->start(); !s.ok()) {
      return s;
    }
  }
  // One stop for everything: the caller's, or a failed runnable.
  std::stop_source all;
  std::stop_callback on_stop(stop, [&] { all.request_stop(); });
  std::stop_callback on_failure(failed_.get_token(), [&] { all.request_stop(); });

  cache_->start();
  startRunnables(NeedLeaderElection::kNo, all.get_token());

  absl::Status result = absl::OkStatus();
  if (options_.leader_election == LeaderElectionMode::kEnabled) {
    KubeLeaseLock lock(*api_, options_.leader_election_namespace, options_.leader_election_id);
    LeaderCallbacks callbacks;
    callbacks.on_started_leading = [this, &all](std::stop_token leading) {
      std::stop_source group;
      std::stop_callback a(leading, [&] { group.request_stop(); });
      std::stop_callback b(all.get_token(), [&] { group.request_stop(); });
      startRunnables(NeedLeaderElection::kYes, group.get_token());
      std::mutex mu;
      std::condition_variable_any cv;
      std::unique_lock wait_lock(mu);
      cv.wait(wait_lock, group.get_token(), [] { return false; });
      std::vector<std::jthread> threads;
      {
        std::lock_guard guard(mu_);
        threads.swap(threads_[1]);
      }
      threads.clear(); // joins: leader work stops before the lease is released
    };
    LeaderElector elector(lock, options_.leader_election_config, std::move(callbacks), clock_,
                          logger_);
    result = elector.run(all.get_token());
  } else {
    startRunnables(NeedLeaderElection::kYes, all.get_token());
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock wait_lock(mu);
    cv.wait(wait_lock, all.get_token(), [] { return false; });
  }

  all.request_stop();
  std::vector<std::jthread> threads;
  {
    std::lock_guard lock(mu_);
    for (auto& group : threads_) {
      for (auto& thread : group) {
        threads.push_back(std::move(thread));
      }
      group.clear();
    }
  }
  threads.clear();
  cache_->stop();
  if (diagnostics_) {
    diagnostics_->stop();
  }
  std::lock_guard lock(mu_);
  if (!first_error_.ok()) {
    return first_error_;
  }
  return result;
}

} // namespace captf::kube
