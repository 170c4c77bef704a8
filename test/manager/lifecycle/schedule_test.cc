#include <gtest/gtest.h>

#include "manager/lifecycle/schedule.h"
#include "test/manager/lifecycle/testing.h"

namespace captf::lifecycle {
namespace {

using api::Operation;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::job;
using testing::kNow;

TEST(ScheduleTest, BackoffDelay) {
  struct Case {
    std::int32_t failures{};
    std::int32_t limit{};
    Seconds delay{};
  };
  const Case cases[] = {
      {0, 3, seconds(0)},
      {-1, 3, seconds(0)},
      // The default sequence: 1m, 2m, then 10m.
      {1, 3, minutes(1)},
      {2, 3, minutes(2)},
      {3, 3, minutes(10)},
      {4, 3, minutes(10)},
      // A larger limit doubles up to the cap.
      {3, 10, minutes(4)},
      {4, 10, minutes(8)},
      {5, 10, minutes(10)},
      {9, 10, minutes(10)},
      {40, 100, minutes(10)},
      // Limits 0 and 1: the cap from the first failure.
      {1, 1, minutes(10)},
      {1, 0, minutes(10)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.failures << " failures, limit " << c.limit);
    EXPECT_EQ(backoffDelay(c.failures, c.limit), c.delay);
  }
}

TEST(ScheduleTest, ConsecutiveFailuresSkipNonCountingOutcomes) {
  const std::vector<JobRecord> jobs = {
      job({.op = Operation::kApply, .attempt = 1, .outcome = JobOutcome::kFailed}),
      job({.op = Operation::kApply, .attempt = 2, .outcome = JobOutcome::kSucceeded}),
      job({.op = Operation::kApply, .attempt = 3, .outcome = JobOutcome::kFailed}),
      job({.op = Operation::kApply, .attempt = 4, .outcome = JobOutcome::kInterrupted}),
      job({.op = Operation::kApply, .attempt = 5, .outcome = JobOutcome::kBlocked}),
      job({.op = Operation::kApply, .attempt = 6, .outcome = JobOutcome::kFailed}),
      job({.op = Operation::kApply, .attempt = 7, .outcome = JobOutcome::kPlanChanged}),
      job({.op = Operation::kApply, .attempt = 8, .outcome = JobOutcome::kActive}),
      job({.op = Operation::kDrift, .attempt = 9, .outcome = JobOutcome::kFailed}),
  };
  EXPECT_EQ(consecutiveFailures(jobs, Operation::kApply), 2);
  EXPECT_EQ(consecutiveFailures(jobs, Operation::kDrift), 1);
  EXPECT_EQ(consecutiveFailures(jobs, Operation::kRefresh), 0);
}

TEST(ScheduleTest, RetryNotBefore) {
  struct Case {
    std::string name{};
    std::vector<JobRecord> jobs{};
    std::optional<TimePoint> expected{};
  };
  const std::vector<Case> cases = {
      {"no Jobs", {}, std::nullopt},
      {"a success", {job({.outcome = JobOutcome::kSucceeded, .finished = -5})}, std::nullopt},
      {"one failure 10s ago: 1m after it",
       {job({.outcome = JobOutcome::kFailed, .finished = -10})},
       kNow + seconds(50)},
      {"two failures: 2m after the newest",
       {job({.attempt = 1, .outcome = JobOutcome::kFailed, .finished = -100}),
        job({.attempt = 2, .outcome = JobOutcome::kFailed, .finished = -10})},
       kNow + seconds(110)},
      {"newest interrupted: no backoff",
       {job({.attempt = 1, .outcome = JobOutcome::kFailed, .finished = -100}),
        job({.attempt = 2, .outcome = JobOutcome::kInterrupted, .finished = -10})},
       std::nullopt},
      {"newest blocked: waits on its approval, not on backoff",
       {job({.attempt = 1, .outcome = JobOutcome::kFailed, .finished = -100}),
        job({.attempt = 2, .outcome = JobOutcome::kBlocked, .finished = -10})},
       std::nullopt},
      {"failure after an interruption still counts the earlier one",
       {job({.attempt = 1, .outcome = JobOutcome::kFailed, .finished = -300}),
        job({.attempt = 2, .outcome = JobOutcome::kInterrupted, .finished = -200}),
        job({.attempt = 3, .outcome = JobOutcome::kFailed, .finished = -10})},
       kNow + seconds(110)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(retryNotBefore(c.jobs, Operation::kApply, 3), c.expected);
  }
}

// An apply that never finishes inside its deadline is interrupted each
// time; it is retried at once twice, then waits the 10-minute cap, so it
// does not loop back to back forever.
TEST(ScheduleTest, RunsThatKeepHittingTheirDeadlineBackOff) {
  const auto deadline = [](std::int32_t attempt, std::int64_t finished) {
    return job({.attempt = attempt,
                .outcome = JobOutcome::kInterrupted,
                .finished = finished,
                .deadline = true});
  };
  struct Case {
    std::string name{};
    std::vector<JobRecord> jobs{};
    std::int32_t limit = 3;
    std::optional<TimePoint> expected{};
  };
  const std::vector<Case> cases = {
      {"one deadline: at once", {deadline(1, -10)}, 3, std::nullopt},
      {"two in a row: at once", {deadline(1, -100), deadline(2, -10)}, 3, std::nullopt},
      {"three in a row: the cap after the newest",
       {deadline(1, -200), deadline(2, -100), deadline(3, -10)},
       3,
       kNow + seconds(590)},
      {"a success ends the streak",
       {deadline(1, -300), deadline(2, -200), job({.attempt = 3, .finished = -150}),
        deadline(4, -100), deadline(5, -10)},
       3,
       std::nullopt},
      {"an interruption from outside ends the streak",
       {deadline(1, -300), deadline(2, -200),
        job({.attempt = 3, .outcome = JobOutcome::kInterrupted, .finished = -150}),
        deadline(4, -100), deadline(5, -10)},
       3,
       std::nullopt},
      {"a newest interruption from outside runs at once after a streak",
       {deadline(1, -300), deadline(2, -200), deadline(3, -100),
        job({.attempt = 4, .outcome = JobOutcome::kInterrupted, .finished = -10})},
       3,
       std::nullopt},
      {"limit 1 keeps one: the cap from the first deadline",
       {deadline(1, -10)},
       1,
       kNow + seconds(590)},
      {"limit 2: at once once, then the cap",
       {deadline(1, -100), deadline(2, -10)},
       2,
       kNow + seconds(590)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(retryNotBefore(c.jobs, Operation::kApply, c.limit), c.expected);
  }
  EXPECT_EQ(deadlineStreak(cases[2].jobs, Operation::kApply), 3);
  EXPECT_EQ(deadlineStreak(cases[3].jobs, Operation::kApply), 2);
  EXPECT_EQ(deadlineStreak(cases[2].jobs, Operation::kDestroy), 0);
}

TEST(ScheduleTest, PendingRefreshDelay) {
  EXPECT_EQ(pendingRefreshDelay(0), seconds(30));
  EXPECT_EQ(pendingRefreshDelay(1), seconds(30));
  EXPECT_EQ(pendingRefreshDelay(2), minutes(1));
  EXPECT_EQ(pendingRefreshDelay(3), minutes(2));
  EXPECT_EQ(pendingRefreshDelay(4), minutes(4));
  EXPECT_EQ(pendingRefreshDelay(5), minutes(5));
  EXPECT_EQ(pendingRefreshDelay(1000), minutes(5));
}

TEST(ScheduleTest, Jitter) {
  EXPECT_EQ(Jitter{0.0}.of(minutes(30)), seconds(0));
  EXPECT_EQ(Jitter{0.5}.of(minutes(30)), seconds(90));
  EXPECT_EQ(Jitter{0.999}.of(minutes(30)), seconds(179));
  EXPECT_EQ(Jitter{2.0}.of(minutes(30)), seconds(180)); // clamped
  // Deterministic per UID, in [0, 1), and spread.
  const Jitter a = jitterFor("0f8e4a52-3c1d-4e55-9a4b-1e2f3a4b5c6d");
  EXPECT_EQ(a.fraction, jitterFor("0f8e4a52-3c1d-4e55-9a4b-1e2f3a4b5c6d").fraction);
  EXPECT_GE(a.fraction, 0.0);
  EXPECT_LT(a.fraction, 1.0);
  double low = 1.0;
  double high = 0.0;
  for (int i = 0; i < 64; ++i) {
    const double f = jitterFor("uid-" + std::to_string(i)).fraction;
    EXPECT_GE(f, 0.0);
    EXPECT_LT(f, 1.0);
    low = std::min(low, f);
    high = std::max(high, f);
  }
  EXPECT_LT(low, 0.2);
  EXPECT_GT(high, 0.8);
}

} // namespace
} // namespace captf::lifecycle
