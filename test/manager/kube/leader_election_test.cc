#include <thread>

#include <gtest/gtest.h>

#include "manager/kube/errors.h"
#include "manager/kube/leader_election.h"
#include "test/manager/kube/fakes.h"

namespace captf::kube {
namespace {

using std::chrono::seconds;

// One Lease shared by candidates; each candidate has its own lock view
// (resourceVersion), like separate processes.
struct FakeLease {
  std::mutex mu;
  std::optional<LeaderElectionRecord> record;
  int version = 0;
  bool failing = false;
};

class FakeLeaseLock final : public LeaseLock {
public:
  explicit FakeLeaseLock(FakeLease& lease) : lease_(lease) {}
  absl::StatusOr<std::optional<LeaderElectionRecord>> get() override {
    std::scoped_lock lock(lease_.mu);
    if (lease_.failing) {
      return absl::UnavailableError("api down");
    }
    seen_ = lease_.version;
    return lease_.record;
  }
  absl::Status create(const LeaderElectionRecord& record) override {
    std::scoped_lock lock(lease_.mu);
    if (lease_.failing) {
      return absl::UnavailableError("api down");
    }
    if (lease_.record) {
      return absl::AlreadyExistsError("exists");
    }
    lease_.record = record;
    seen_ = ++lease_.version;
    return absl::OkStatus();
  }
  absl::Status update(const LeaderElectionRecord& record) override {
    std::scoped_lock lock(lease_.mu);
    if (lease_.failing) {
      return absl::UnavailableError("api down");
    }
    if (seen_ != lease_.version) {
      return errorFromResponse(409, R"({"kind":"Status","reason":"Conflict","code":409})");
    }
    lease_.record = record;
    seen_ = ++lease_.version;
    return absl::OkStatus();
  }
  std::string describe() const override { return "test/lease"; }

private:
  FakeLease& lease_;
  int seen_ = -1;
};

class LeaderElectionTest : public ::testing::Test {
protected:
  LeaderElectionConfig config(const std::string& identity) {
    LeaderElectionConfig c;
    c.identity = identity;
    return c;
  }
  FakeClock clock_;
  FakeLease lease_;
  FakeLeaseLock lock_a_{lease_};
  FakeLeaseLock lock_b_{lease_};
  LeaderElector a_{lock_a_, config("a"), {}, clock_, testing::quietLogger()};
  LeaderElector b_{lock_b_, config("b"), {}, clock_, testing::quietLogger()};
};

TEST_F(LeaderElectionTest, FirstCandidateCreatesTheLease) {
  EXPECT_TRUE(a_.tryAcquireOrRenew());
  EXPECT_TRUE(a_.isLeader());
  ASSERT_TRUE(lease_.record.has_value());
  EXPECT_EQ(lease_.record->holder_identity, "a");
  EXPECT_EQ(lease_.record->lease_duration, seconds(15));
  EXPECT_EQ(lease_.record->leader_transitions, 0);
  EXPECT_FALSE(b_.tryAcquireOrRenew());
  EXPECT_EQ(b_.leader(), "a");
}

TEST_F(LeaderElectionTest, OthersWaitAFullLeaseDurationOfSilence) {
  ASSERT_TRUE(a_.tryAcquireOrRenew());
  ASSERT_FALSE(b_.tryAcquireOrRenew()); // b starts observing now
  clock_.advance(seconds(10));
  ASSERT_TRUE(a_.tryAcquireOrRenew()); // renewal: the record changes
  clock_.advance(seconds(10));
  EXPECT_FALSE(b_.tryAcquireOrRenew()) << "20 s since b first saw it, but a renewed 10 s ago";
  clock_.advance(seconds(14));
  EXPECT_FALSE(b_.tryAcquireOrRenew()) << "b saw the renewal 14 s ago";
  clock_.advance(seconds(2));
  EXPECT_TRUE(b_.tryAcquireOrRenew());
  EXPECT_EQ(lease_.record->holder_identity, "b");
  EXPECT_EQ(lease_.record->leader_transitions, 1);
  EXPECT_FALSE(a_.tryAcquireOrRenew()) << "a's lease ran out; it reads the lease and sees b";
  EXPECT_FALSE(a_.isLeader());
}

TEST_F(LeaderElectionTest, RenewalKeepsAcquireTimeAndTransitions) {
  ASSERT_TRUE(a_.tryAcquireOrRenew());
  auto acquired = lease_.record->acquire_time;
  clock_.advance(seconds(2));
  ASSERT_TRUE(a_.tryAcquireOrRenew());
  EXPECT_EQ(lease_.record->acquire_time, acquired);
  EXPECT_GT(*lease_.record->renew_time, *acquired);
  EXPECT_EQ(lease_.record->leader_transitions, 0);
}

TEST_F(LeaderElectionTest, ReleaseLetsOthersTakeOverAfterOneSecond) {
  ASSERT_TRUE(a_.tryAcquireOrRenew());
  ASSERT_FALSE(b_.tryAcquireOrRenew());
  ASSERT_TRUE(a_.release());
  EXPECT_EQ(lease_.record->holder_identity, "");
  EXPECT_EQ(lease_.record->lease_duration, seconds(1));
  EXPECT_TRUE(b_.tryAcquireOrRenew()) << "an empty holder may be taken at once";
  EXPECT_EQ(lease_.record->holder_identity, "b");
}

TEST_F(LeaderElectionTest, ValidatesTimings) {
  LeaderElectionConfig c = config("x");
  EXPECT_TRUE(validate(c).ok());
  c.renew_deadline = seconds(15);
  EXPECT_FALSE(validate(c).ok());
  c = config("x");
  c.retry_period = seconds(9);
  EXPECT_FALSE(validate(c).ok());
  EXPECT_FALSE(validate(config("")).ok());
}

TEST_F(LeaderElectionTest, RunLeadsThenLosesWhenRenewalFailsForTheDeadline) {
  std::atomic<bool> leading{false};
  std::atomic<bool> stopped_leading{false};
  std::atomic<bool> leader_stop_seen{false};
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&](std::stop_token stop) {
    leading = true;
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait(lock, stop, [] { return false; });
    leader_stop_seen = true;
  };
  callbacks.on_stopped_leading = [&] { stopped_leading = true; };
  LeaderElector elector(lock_a_, config("a"), std::move(callbacks), clock_, testing::quietLogger());
  absl::Status result;
  std::jthread runner([&](std::stop_token stop) { result = elector.run(stop); });

  clock_.awaitWaiters(1); // acquired, sleeping before the first renewal
  EXPECT_TRUE(elector.isLeader());
  {
    std::scoped_lock lock(lease_.mu);
    lease_.failing = true;
  }
  // The first renewal is due after 2 s; from then on renewals fail every
  // 2 s until the 10 s renew deadline has passed: 6 sleeps in all.
  for (int i = 0; i < 6; ++i) {
    clock_.awaitWaiters(1);
    clock_.advance(seconds(2));
  }
  runner.join();
  EXPECT_TRUE(leading);
  EXPECT_TRUE(leader_stop_seen) << "leader work is stopped before run() returns";
  EXPECT_TRUE(stopped_leading);
  EXPECT_EQ(result.code(), absl::StatusCode::kAborted);
}

TEST_F(LeaderElectionTest, RunReleasesOnStop) {
  LeaderElector elector(lock_a_, config("a"), {}, clock_, testing::quietLogger());
  absl::Status result = absl::UnknownError("not run");
  std::jthread runner([&](std::stop_token stop) { result = elector.run(stop); });
  clock_.awaitWaiters(1);
  runner.request_stop();
  runner.join();
  EXPECT_TRUE(result.ok()) << result;
  EXPECT_EQ(lease_.record->holder_identity, "");
}

TEST(KubeLeaseLockTest, LeaseSpecRoundTrips) {
  LeaderElectionRecord record;
  record.holder_identity = "me";
  record.lease_duration = seconds(15);
  record.acquire_time = WallTime(std::chrono::microseconds(1'700'000'000'123'456));
  record.renew_time = WallTime(std::chrono::microseconds(1'700'000'005'000'001));
  record.leader_transitions = 3;
  Json spec = KubeLeaseLock::toLeaseSpec(record);
  EXPECT_EQ(spec["acquireTime"], "2023-11-14T22:13:20.123456Z");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(KubeLeaseLock::fromLeaseSpec(spec), record);
}

} // namespace
} // namespace captf::kube
