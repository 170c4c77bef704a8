#include "manager/kube/leader_election.h"

#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "contract/status_macros.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

const GroupVersionKind kLeaseKind{"coordination.k8s.io", "v1", "Lease"};

} // namespace

Json KubeLeaseLock::toLeaseSpec(const LeaderElectionRecord& record) {
  Json spec = {{"holderIdentity", record.holder_identity},
               {"leaseDurationSeconds", record.lease_duration.count()},
               {"leaseTransitions", record.leader_transitions}};
  if (record.acquire_time) {
    spec["acquireTime"] = formatMicroTime(*record.acquire_time);
  }
  if (record.renew_time) {
    spec["renewTime"] = formatMicroTime(*record.renew_time);
  }
  return spec;
}

LeaderElectionRecord KubeLeaseLock::fromLeaseSpec(const Json& spec) {
  LeaderElectionRecord record;
  if (!spec.is_object()) {
    return record;
  }
  if (auto it = spec.find("holderIdentity"); it != spec.end() && it->is_string()) {
    record.holder_identity = it->get<std::string>();
  }
  if (auto it = spec.find("leaseDurationSeconds"); it != spec.end() && it->is_number_integer()) {
    record.lease_duration = std::chrono::seconds(it->get<int64_t>());
  }
  if (auto it = spec.find("leaseTransitions"); it != spec.end() && it->is_number_integer()) {
    record.leader_transitions = it->get<int32_t>();
  }
  for (auto [key, field] : {std::pair{"acquireTime", &record.acquire_time},
                            std::pair{"renewTime", &record.renew_time}}) {
    if (auto it = spec.find(key); it != spec.end() && it->is_string()) {
      if (auto time = parseTime(it->get<std::string>()); time.ok()) {
        *field = *time;
      }
    }
  }
  return record;
}

absl::StatusOr<std::optional<LeaderElectionRecord>> KubeLeaseLock::get() {
  auto lease = client_.get(kLeaseKind, {ns_, name_});
  if (!lease.ok()) {
    if (isNotFound(lease.status())) {
      return std::optional<LeaderElectionRecord>();
    }
    return lease.status();
  }
  resource_version_ = meta::resourceVersion(*lease);
  return std::optional<LeaderElectionRecord>(fromLeaseSpec(lease->value("spec", Json::object())));
}

absl::Status KubeLeaseLock::create(const LeaderElectionRecord& record) {
  Json lease = {{"apiVersion", kLeaseKind.apiVersion()},
                {"kind", kLeaseKind.kind},
                {"metadata", {{"namespace", ns_}, {"name", name_}}},
                {"spec", toLeaseSpec(record)}};
  auto created = client_.create(lease);
  if (!created.ok()) {
    return created.status();
  }
  resource_version_ = meta::resourceVersion(*created);
  return absl::OkStatus();
}

absl::Status KubeLeaseLock::update(const LeaderElectionRecord& record) {
  if (resource_version_.empty()) {
    return absl::FailedPreconditionError("lease not read yet");
  }
  Json lease = {
      {"apiVersion", kLeaseKind.apiVersion()},
      {"kind", kLeaseKind.kind},
      {"metadata", {{"namespace", ns_}, {"name", name_}, {"resourceVersion", resource_version_}}},
      {"spec", toLeaseSpec(record)}};
  auto updated = client_.update(lease);
  if (!updated.ok()) {
    return updated.status();
  }
  resource_version_ = meta::resourceVersion(*updated);
  return absl::OkStatus();
}

absl::Status validate(const LeaderElectionConfig& config) {
  if (config.identity.empty()) {
    return absl::InvalidArgumentError("leader election needs an identity");
  }
  if (config.lease_duration <= config.renew_deadline) {
    return absl::InvalidArgumentError("lease duration must be greater than the renew deadline");
  }
  // client-go: renewDeadline > JitterFactor(1.2) * retryPeriod.
  if (config.renew_deadline * 5 <= config.retry_period * 6) {
    return absl::InvalidArgumentError("renew deadline must exceed 1.2 times the retry period");
  }
  if (config.retry_period <= Duration::zero()) {
    return absl::InvalidArgumentError("retry period must be positive");
  }
  return absl::OkStatus();
}

LeaderElector::LeaderElector(LeaseLock& lock, LeaderElectionConfig config,
                             LeaderCallbacks callbacks, Clock& clock,
                             std::shared_ptr<spdlog::logger> logger)
    : lock_(lock), config_(std::move(config)), callbacks_(std::move(callbacks)), clock_(clock),
      logger_(std::move(logger)) {}

bool LeaderElector::isLeader() const {
  std::scoped_lock lock(mu_);
  return observed_ && observed_->holder_identity == config_.identity;
}

std::string LeaderElector::leader() const {
  std::scoped_lock lock(mu_);
  return observed_ ? observed_->holder_identity : std::string();
}

bool LeaderElector::tryAcquireOrRenew() {
  WallTime now = clock_.wallNow();
  SteadyTime steady_now = clock_.now();
  LeaderElectionRecord desired;
  desired.holder_identity = config_.identity;
  desired.lease_duration = std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration);
  desired.acquire_time = now;
  desired.renew_time = now;

  std::unique_lock lock(mu_);
  auto lease_valid = [&] {
    return observed_ && observed_at_ + observed_->lease_duration > steady_now;
  };
  bool leader = observed_ && observed_->holder_identity == config_.identity;

  // Fast path: the leader renews assuming its last observation is current.
  if (leader && lease_valid()) {
    desired.acquire_time = observed_->acquire_time;
    desired.leader_transitions = observed_->leader_transitions;
    if (lock_.update(desired).ok()) {
      observed_ = desired;
      observed_at_ = steady_now;
      return true;
    }
    logger_->info("optimistic lease renewal failed, reading it lease={}", lock_.describe());
  }

  auto current = lock_.get();
  if (!current.ok()) {
    logger_->warn("cannot read the lease lease={} error=\"{}\"", lock_.describe(),
                  msg(current.status()));
    return false;
  }
  if (!*current) {
    if (auto s = lock_.create(desired); !s.ok()) {
      logger_->info("cannot create the lease lease={} error=\"{}\"", lock_.describe(), msg(s));
      return false;
    }
    observed_ = desired;
    observed_at_ = steady_now;
    return true;
  }
  // Any change of the record restarts the expiry clock: expiry is judged by
  // how long this candidate has seen the same record, never by the
  // holder's timestamps.
  if (!observed_ || !(**current == *observed_)) {
    observed_ = **current;
    observed_at_ = steady_now;
  }
  leader = observed_->holder_identity == config_.identity;
  if (!observed_->holder_identity.empty() && lease_valid() && !leader) {
    return false;
  }
  if (leader) {
    desired.acquire_time = observed_->acquire_time;
    desired.leader_transitions = observed_->leader_transitions;
  } else {
    desired.leader_transitions = observed_->leader_transitions + 1;
  }
  if (auto s = lock_.update(desired); !s.ok()) {
    logger_->info("cannot update the lease lease={} error=\"{}\"", lock_.describe(), msg(s));
    return false;
  }
  observed_ = desired;
  observed_at_ = steady_now;
  return true;
}

bool LeaderElector::release() {
  std::scoped_lock lock(mu_);
  if (!observed_ || observed_->holder_identity != config_.identity) {
    return true;
  }
  WallTime now = clock_.wallNow();
  LeaderElectionRecord released;
  released.leader_transitions = observed_->leader_transitions;
  released.lease_duration = std::chrono::seconds(1);
  released.acquire_time = now;
  released.renew_time = now;
  if (auto s = lock_.update(released); !s.ok()) {
    logger_->warn("cannot release the lease lease={} error=\"{}\"", lock_.describe(), msg(s));
    return false;
  }
  observed_ = released;
  observed_at_ = clock_.now();
  return true;
}

absl::Status LeaderElector::run(std::stop_token stop) {
  CAPTF_RETURN_IF_ERROR(validate(config_));
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.0, 1.2);
  logger_->info("attempting to acquire the leader lease lease={} identity={}", lock_.describe(),
                config_.identity);
  while (!stop.stop_requested()) {
    if (tryAcquireOrRenew()) {
      break;
    }
    std::string holder = leader();
    if (holder != reported_leader_) {
      reported_leader_ = holder;
      logger_->info("new leader observed lease={} leader={}", lock_.describe(), holder);
      if (callbacks_.on_new_leader) {
        callbacks_.on_new_leader(holder);
      }
    }
    auto delay = std::chrono::duration_cast<Duration>(config_.retry_period * (1.0 + jitter(rng)));
    clock_.sleepFor(delay, stop);
  }
  if (stop.stop_requested()) {
    return absl::OkStatus();
  }
  logger_->info("successfully acquired the lease lease={} identity={}", lock_.describe(),
                config_.identity);
  reported_leader_ = config_.identity;
  if (callbacks_.on_new_leader) {
    callbacks_.on_new_leader(config_.identity);
  }

  std::stop_source leading;
  std::jthread leader_thread;
  if (callbacks_.on_started_leading) {
    leader_thread =
        std::jthread([this, token = leading.get_token()] { callbacks_.on_started_leading(token); });
  }
  bool lost = false;
  while (!stop.stop_requested() && !lost) {
    if (!clock_.sleepFor(config_.retry_period, stop)) {
      break;
    }
    SteadyTime round_deadline = clock_.now() + config_.renew_deadline;
    bool renewed = false;
    while (!stop.stop_requested()) {
      if (tryAcquireOrRenew()) {
        renewed = true;
        break;
      }
      if (clock_.now() >= round_deadline) {
        break;
      }
      clock_.sleepFor(std::min<Duration>(config_.retry_period, round_deadline - clock_.now()),
                      stop);
    }
    if (!renewed && !stop.stop_requested()) {
      lost = true;
    }
  }
  leading.request_stop();
  if (leader_thread.joinable()) {
    leader_thread.join();
  }
  if (lost) {
    logger_->error("leader election lost lease={} identity={}", lock_.describe(), config_.identity);
  } else if (config_.release_on_cancel == ReleaseOnCancel::kYes) {
    release();
  }
  if (callbacks_.on_stopped_leading) {
    callbacks_.on_stopped_leading();
  }
  if (lost) {
    return absl::AbortedError("leader election lost");
  }
  return absl::OkStatus();
}

} // namespace captf::kube
