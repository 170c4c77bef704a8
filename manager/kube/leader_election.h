#pragma once

// Leader election on a coordination.k8s.io/v1 Lease, with client-go's
// algorithm: a candidate takes the lease only when the holder has not
// renewed it for a full lease duration as observed on the candidate's own
// clock (so clock skew between nodes does not matter); the leader renews
// every retry period and gives up when it could not renew for the renew
// deadline, which is shorter than the lease duration, so it stops acting
// before anyone else may take over.

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/client.h"
#include "manager/kube/clock.h"

namespace captf::kube {

struct LeaderElectionRecord {
  std::string holder_identity;
  std::chrono::seconds lease_duration{0};
  std::optional<WallTime> acquire_time;
  std::optional<WallTime> renew_time;
  int32_t leader_transitions = 0;
  bool operator==(const LeaderElectionRecord&) const = default;
};

// The lock object. Implementations remember the resourceVersion of the last
// get() so update() is a compare-and-swap. Thread-compatible (used by one
// elector).
class LeaseLock {
public:
  virtual ~LeaseLock() = default;
  // nullopt when the lease does not exist.
  virtual absl::StatusOr<std::optional<LeaderElectionRecord>> get() = 0;
  // AlreadyExists when someone created it first.
  virtual absl::Status create(const LeaderElectionRecord& record) = 0;
  // Conflict when the lease changed since get().
  virtual absl::Status update(const LeaderElectionRecord& record) = 0;
  virtual std::string describe() const = 0;
};

// A Lease object through the Client.
class KubeLeaseLock final : public LeaseLock {
public:
  KubeLeaseLock(Client& client, std::string ns, std::string name)
      : client_(client), ns_(std::move(ns)), name_(std::move(name)) {}
  absl::StatusOr<std::optional<LeaderElectionRecord>> get() override;
  absl::Status create(const LeaderElectionRecord& record) override;
  absl::Status update(const LeaderElectionRecord& record) override;
  std::string describe() const override { return ns_ + "/" + name_; }

  static Json toLeaseSpec(const LeaderElectionRecord& record);
  static LeaderElectionRecord fromLeaseSpec(const Json& spec);

private:
  Client& client_;
  const std::string ns_;
  const std::string name_;
  std::string resource_version_;
};

enum class ReleaseOnCancel { kNo, kYes };

struct LeaderElectionConfig {
  std::string identity; // unique per process, e.g. hostname_uuid
  Duration lease_duration = std::chrono::seconds(15);
  Duration renew_deadline = std::chrono::seconds(10);
  Duration retry_period = std::chrono::seconds(2);
  ReleaseOnCancel release_on_cancel = ReleaseOnCancel::kYes;
};

absl::Status validate(const LeaderElectionConfig& config);

struct LeaderCallbacks {
  // Runs on its own thread when leadership is gained; `stop` fires when it
  // is lost or the elector stops. Must return soon after.
  std::function<void(std::stop_token stop)> on_started_leading;
  // Runs (on the elector's thread) after leadership ended, for any reason.
  std::function<void()> on_stopped_leading;
  // Runs when a different leader is observed.
  std::function<void(const std::string& identity)> on_new_leader;
};

class LeaderElector {
public:
  LeaderElector(LeaseLock& lock, LeaderElectionConfig config, LeaderCallbacks callbacks,
                Clock& clock, std::shared_ptr<spdlog::logger> logger);

  // Campaigns until leading, leads until leadership is lost or `stop`
  // fires, then returns. Returns OK when stopped (after releasing the lease
  // when configured), Aborted when leadership was lost.
  absl::Status run(std::stop_token stop);

  // One attempt to acquire or renew: the state machine step, public for
  // tests. True when this candidate holds the lease afterwards.
  bool tryAcquireOrRenew();
  // Gives the lease up if held (holder cleared, duration 1 s).
  bool release();

  bool isLeader() const;
  std::string leader() const;

private:
  LeaseLock& lock_;
  const LeaderElectionConfig config_;
  LeaderCallbacks callbacks_;
  Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;

  mutable std::mutex mu_;
  std::optional<LeaderElectionRecord> observed_;
  SteadyTime observed_at_{};
  std::string reported_leader_;
};

} // namespace captf::kube
