#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/lifecycle/history.h"
#include "test/manager/lifecycle/testing.h"

namespace captf::lifecycle {
namespace {

using api::Operation;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::job;

json runJob(const std::string& op, const std::string& attempt) {
  return {{"metadata",
           {{"name", "captf-c-c1-" + op + "-a" + attempt + "-abcdef"},
            {"creationTimestamp", "2026-01-01T00:00:00Z"},
            {"labels",
             {{"captf.infrastructure.cluster.x-k8s.io/op", op},
              {"captf.infrastructure.cluster.x-k8s.io/attempt", attempt}}}}}};
}

json withCondition(json job, const std::string& type, const std::string& time) {
  job["status"]["conditions"] =
      json::array({{{"type", "SuccessCriteriaMet"}, {"status", "True"}},
                   {{"type", type}, {"status", "True"}, {"lastTransitionTime", time}}});
  return job;
}

TEST(HistoryTest, JobRecordFromJob) {
  struct Case {
    std::string name{};
    json job{};
    JobOutcome outcome{};
    std::optional<std::string> finished{};
  };
  json annotated = runJob("apply", "3");
  annotated["metadata"]["annotations"] = {{"captf.io/inputs-hash", "h2:abc"},
                                          {"captf.io/drift-remediation", "true"},
                                          {"captf.io/approved-plan", "p1:def"}};
  json restore = runJob("restore", "1");
  restore["metadata"]["annotations"] = {{"captf.io/restore-serial", "42"}};
  json completed = withCondition(runJob("apply", "1"), "Complete", "2026-01-01T00:05:00Z");
  completed["status"]["completionTime"] = "2026-01-01T00:04:59Z";
  const auto failed_with = [](const std::string& mark) {
    json j = withCondition(runJob("apply", "2"), "Failed", "2026-01-01T00:06:00Z");
    j["metadata"]["annotations"] = {{mark, "true"}};
    return j;
  };
  const std::vector<Case> cases = {
      {"active", runJob("drift", "7"), JobOutcome::kActive, std::nullopt},
      {"complete", completed, JobOutcome::kSucceeded, "2026-01-01T00:04:59Z"},
      {"complete without completionTime",
       withCondition(runJob("apply", "1"), "Complete", "2026-01-01T00:05:00Z"),
       JobOutcome::kSucceeded, "2026-01-01T00:05:00Z"},
      {"failed", withCondition(runJob("apply", "2"), "Failed", "2026-01-01T00:06:00Z"),
       JobOutcome::kFailed, "2026-01-01T00:06:00Z"},
      {"interrupted", failed_with("captf.io/interrupted"), JobOutcome::kInterrupted,
       "2026-01-01T00:06:00Z"},
      {"blocked", failed_with("captf.io/destructive-plan-blocked"), JobOutcome::kBlocked,
       "2026-01-01T00:06:00Z"},
      {"plan changed", failed_with("captf.io/plan-changed"), JobOutcome::kPlanChanged,
       "2026-01-01T00:06:00Z"},
      {"annotations", annotated, JobOutcome::kActive, std::nullopt},
      {"completed plan with an unreadable result",
       [&] {
         json j = withCondition(runJob("plan", "1"), "Complete", "2026-01-01T00:05:00Z");
         j["metadata"]["annotations"] = {{"captf.io/plan-unreadable", "true"}};
         return j;
       }(),
       JobOutcome::kFailed, "2026-01-01T00:05:00Z"},
      {"restore", restore, JobOutcome::kActive, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto record = jobRecordFromJob(c.job);
    ASSERT_TRUE(record.ok()) << record.status();
    EXPECT_EQ(record->outcome, c.outcome);
    EXPECT_EQ(record->name, c.job["metadata"]["name"].get<std::string>());
    if (c.finished) {
      ASSERT_TRUE(record->finished.has_value());
      EXPECT_EQ(api::formatTime(*record->finished), *c.finished);
    } else {
      EXPECT_FALSE(record->finished.has_value());
    }
    EXPECT_EQ(api::formatTime(*record->created), "2026-01-01T00:00:00Z");
  }
  auto a = jobRecordFromJob(annotated);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->operation, Operation::kApply);
  EXPECT_EQ(a->attempt, 3);
  EXPECT_EQ(a->inputs_hash, "h2:abc");
  EXPECT_TRUE(a->drift_remediation);
  EXPECT_EQ(a->approved_plan, "p1:def");
  auto r = jobRecordFromJob(restore);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->restore_serial, 42);
  EXPECT_FALSE(r->drift_remediation);
}

TEST(HistoryTest, JobRecordKnowsAFailureAtItsDeadline) {
  json at_deadline = withCondition(runJob("apply", "2"), "Failed", "2026-01-01T00:06:00Z");
  at_deadline["status"]["conditions"][1]["reason"] = "DeadlineExceeded";
  at_deadline["metadata"]["annotations"] = {{"captf.io/interrupted", "true"}};
  json back_off = withCondition(runJob("apply", "3"), "Failed", "2026-01-01T00:06:00Z");
  back_off["status"]["conditions"][1]["reason"] = "BackoffLimitExceeded";
  auto a = jobRecordFromJob(at_deadline);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->outcome, JobOutcome::kInterrupted);
  EXPECT_TRUE(a->deadline_exceeded);
  auto b = jobRecordFromJob(back_off);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->deadline_exceeded);
}

TEST(HistoryTest, JobRecordFromJobRejectsForeignJobs) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json::object(), "metadata.name"},
      {runJob("deploy", "1"), "not an operation"},
      {runJob("apply", "0"), "not a positive integer"},
      {runJob("apply", "x"), "not a positive integer"},
      {runJob("apply", ""), "not a positive integer"},
      {runJob("apply", "99999999999"), "not a positive integer"},
  };
  for (const auto& [job, message] : cases) {
    auto record = jobRecordFromJob(job);
    ASSERT_FALSE(record.ok());
    EXPECT_EQ(record.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(record.status().message(), HasSubstr(message));
  }
}

TEST(HistoryTest, AttemptsAndNewest) {
  const std::vector<JobRecord> jobs = {
      job({.op = Operation::kRefresh, .attempt = 40, .outcome = JobOutcome::kSucceeded}),
      job({.op = Operation::kRefresh, .attempt = 38, .outcome = JobOutcome::kFailed}),
      job({.op = Operation::kRefresh, .attempt = 39, .outcome = JobOutcome::kSucceeded}),
      job({.op = Operation::kApply, .attempt = 2, .outcome = JobOutcome::kActive}),
  };
  EXPECT_EQ(nextAttempt(jobs, Operation::kRefresh), 41);
  EXPECT_EQ(nextAttempt(jobs, Operation::kApply), 3);
  EXPECT_EQ(nextAttempt(jobs, Operation::kDrift), 1);
  EXPECT_EQ(newestWith(jobs, Operation::kRefresh, JobOutcome::kSucceeded)->attempt, 40);
  EXPECT_EQ(newestWith(jobs, Operation::kRefresh, JobOutcome::kFailed)->attempt, 38);
  EXPECT_EQ(newestWith(jobs, Operation::kDrift, JobOutcome::kFailed), nullptr);
  EXPECT_EQ(newestFinished(jobs, Operation::kApply), nullptr);
  EXPECT_EQ(activeJob(jobs)->operation, Operation::kApply);
  std::vector<JobRecord> sorted = jobs;
  sortNewestFirst(sorted);
  EXPECT_EQ(sorted.front().outcome, JobOutcome::kActive);
}

TEST(HistoryTest, Pruning) {
  using O = JobOutcome;
  struct Case {
    std::string name{};
    std::vector<std::pair<std::int32_t, O>> refreshes; // attempt, outcome
    std::int32_t successful_limit{};
    std::int32_t failed_limit{};
    std::vector<std::string> pruned{};
  };
  const std::vector<Case> cases = {
      {"within limits", {{1, O::kSucceeded}, {2, O::kFailed}}, 3, 3, {}},
      {"oldest successes beyond the limit",
       {{1, O::kSucceeded}, {2, O::kSucceeded}, {3, O::kSucceeded}, {4, O::kSucceeded}},
       2,
       3,
       {"job-refresh-1", "job-refresh-2"}},
      {"limit 0 keeps the newest success",
       {{1, O::kSucceeded}, {2, O::kSucceeded}},
       0,
       0,
       {"job-refresh-1"}},
      {"limit 0 keeps the newest failure while no newer success exists",
       {{1, O::kSucceeded}, {2, O::kFailed}, {3, O::kFailed}},
       0,
       0,
       {"job-refresh-2"}},
      {"a newer success releases the newest failure",
       {{1, O::kFailed}, {2, O::kSucceeded}},
       0,
       0,
       {"job-refresh-1"}},
      {"every non-success counts as failed; active Jobs stay",
       {{1, O::kInterrupted},
        {2, O::kBlocked},
        {3, O::kFailed},
        {4, O::kPlanChanged},
        {5, O::kActive}},
       3,
       2,
       {"job-refresh-1", "job-refresh-2"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<JobRecord> jobs;
    jobs.reserve(c.refreshes.size());
    for (const auto& [attempt, outcome] : c.refreshes) {
      jobs.push_back(job({.op = Operation::kRefresh,
                          .attempt = attempt,
                          .outcome = outcome,
                          .finished = -10000 + attempt * 100}));
    }
    EXPECT_EQ(jobsToPrune(jobs, c.successful_limit, c.failed_limit), c.pruned);
  }
}

TEST(HistoryTest, PruningIsPerOperation) {
  std::vector<JobRecord> jobs{};
  for (int i = 1; i <= 3; ++i) {
    jobs.push_back(job({.op = Operation::kApply, .attempt = i, .finished = -9000 + i}));
    jobs.push_back(job({.op = Operation::kDrift, .attempt = i, .finished = -8000 + i}));
  }
  EXPECT_THAT(jobsToPrune(jobs, 1, 1),
              ElementsAre("job-apply-1", "job-apply-2", "job-drift-1", "job-drift-2"));
  EXPECT_THAT(jobsToPrune(jobs, 3, 3), IsEmpty());
}

} // namespace
} // namespace captf::lifecycle
