#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/result.h"
#include "manager/workspace/result.h"

namespace captf::workspace {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using ::testing::HasSubstr;

pb::RunResult base(pb::Operation operation) {
  pb::RunResult result;
  result.set_operation(operation);
  result.set_image("reg/x:v1");
  result.set_runtime_version("1.12.6");
  auto* step = result.add_steps();
  step->set_step(pb::STEP_INIT);
  step->set_exit_code(0);
  step->mutable_duration()->set_seconds(2);
  step->mutable_duration()->set_nanos(500'000'000);
  return result;
}

TEST(RunResultTest, SuccessfulApply) {
  pb::RunResult result = base(pb::OPERATION_APPLY);
  result.mutable_succeeded();
  result.mutable_changes()->set_add(3);
  const auto report =
      parseRunResult("job-1", api::Operation::kApply, contract::encodeResult(result));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->outcome, RunOutcome::kSucceeded);
  EXPECT_EQ(report->last_run.job, "job-1");
  EXPECT_EQ(report->last_run.operation, api::Operation::kApply);
  ASSERT_EQ(report->last_run.steps.size(), 1U);
  EXPECT_EQ(report->last_run.steps[0].name, "init");
  EXPECT_EQ(report->last_run.steps[0].duration_milliseconds, 2500);
  EXPECT_FALSE(report->last_run.error.has_value());
  EXPECT_EQ(report->runtime_version, "1.12.6");
  EXPECT_EQ(report->image, "reg/x:v1");
  ASSERT_TRUE(report->changes.has_value());
  EXPECT_EQ(report->changes->add(), 3U);
  EXPECT_EQ(jobsTotalResult(report->outcome), "succeeded");
}

TEST(RunResultTest, OutcomesByErrorKind) {
  struct Case {
    pb::ErrorKind kind;
    RunOutcome outcome;
    std::string_view metric;
    bool backoff;
  };
  const Case cases[] = {
      {pb::ERROR_KIND_STEP, RunOutcome::kFailed, "failed", true},
      {pb::ERROR_KIND_IMAGE_LAYOUT, RunOutcome::kFailed, "failed", true},
      {pb::ERROR_KIND_INTERRUPTED, RunOutcome::kInterrupted, "interrupted", false},
      {pb::ERROR_KIND_BLOCKED, RunOutcome::kBlocked, "blocked", false},
      {pb::ERROR_KIND_PLAN_CHANGED, RunOutcome::kPlanChanged, "plan_changed", false},
  };
  for (const Case& c : cases) {
    pb::RunResult result = base(pb::OPERATION_APPLY);
    result.set_exit_code(1);
    result.mutable_error()->set_kind(c.kind);
    if (c.kind == pb::ERROR_KIND_STEP) {
      result.mutable_error()->set_step(pb::STEP_APPLY);
    }
    result.mutable_error()->set_summary("Error: quota exceeded");
    const auto report =
        parseRunResult("job", api::Operation::kApply, contract::encodeResult(result));
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->outcome, c.outcome);
    EXPECT_EQ(jobsTotalResult(report->outcome), c.metric);
    EXPECT_EQ(countsForBackoff(report->outcome), c.backoff);
    ASSERT_TRUE(report->last_run.error.has_value());
    EXPECT_EQ(report->last_run.error->summary, "Error: quota exceeded");
    if (c.kind == pb::ERROR_KIND_STEP) {
      EXPECT_EQ(report->last_run.error->step, "apply");
    }
  }
}

TEST(RunResultTest, DriftAndPlan) {
  pb::RunResult drift = base(pb::OPERATION_DRIFT);
  drift.mutable_succeeded();
  drift.mutable_drift()->set_change(2);
  drift.mutable_drift()->add_resources("aws_instance.a");
  auto report = parseRunResult("d", api::Operation::kDrift, contract::encodeResult(drift));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->drift_found);
  ASSERT_TRUE(report->last_run.drift.has_value());
  EXPECT_EQ(report->last_run.drift->change, 2);
  EXPECT_EQ(report->last_run.drift->add, 0);
  EXPECT_EQ(report->last_run.drift->resources, std::vector<std::string>{"aws_instance.a"});

  pb::RunResult clean = base(pb::OPERATION_DRIFT);
  clean.mutable_succeeded();
  report = parseRunResult("d", api::Operation::kDrift, contract::encodeResult(clean));
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->drift_found);
  EXPECT_FALSE(report->last_run.drift.has_value());

  pb::RunResult plan = base(pb::OPERATION_PLAN);
  plan.mutable_succeeded();
  plan.mutable_plan()->set_plan_hash("p1:abc");
  plan.mutable_plan()->set_destroy(1);
  plan.mutable_plan()->add_resources("aws_lb.x (replace)");
  plan.mutable_plan()->set_truncated(true);
  report = parseRunResult("p", api::Operation::kPlan, contract::encodeResult(plan));
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->plan.has_value());
  EXPECT_EQ(report->plan->job, "p");
  EXPECT_EQ(report->plan->plan_hash, "p1:abc");
  EXPECT_EQ(report->plan->destroy, 1);
  EXPECT_EQ(report->plan->truncated, true);
}

TEST(RunResultTest, NeverTrustsTheMessage) {
  pb::RunResult ok = base(pb::OPERATION_APPLY);
  ok.mutable_succeeded();
  const std::string text = contract::encodeResult(ok);
  struct Case {
    const char* name;
    std::optional<std::string> message;
    api::Operation operation;
    const char* part;
  };
  const Case cases[] = {
      {"absent", std::nullopt, api::Operation::kApply, "no result document"},
      {"empty", std::string(), api::Operation::kApply, "no result document"},
      {"too big", std::string(5000, 'x'), api::Operation::kApply, "4096"},
      {"garbage", std::string("{\"operation\":"), api::Operation::kApply, "JSON"},
      {"not a result", std::string(R"({"operation":"OPERATION_APPLY"})"), api::Operation::kApply,
       "neither succeeded nor error"},
      {"other operation", text, api::Operation::kDestroy, "operation apply"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::optional<std::string_view> message;
    if (c.message) {
      message = *c.message;
    }
    const auto report = parseRunResult("job-9", c.operation, message);
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string got(report.status().message());
    EXPECT_THAT(got, HasSubstr("termination message of Job job-9"));
    EXPECT_THAT(got, HasSubstr(c.part));
  }
  const auto bare = lastRunWithoutResult("job-9", api::Operation::kRefresh);
  EXPECT_EQ(bare.job, "job-9");
  EXPECT_TRUE(bare.steps.empty());
}

// "-0.5s" is 0 seconds and -5e8 nanoseconds: a step duration that is
// negative as a whole is left out, never written as a negative
// durationMilliseconds, which the CRD refuses (found by
// workspace_result_fuzz).
TEST(RunResultTest, LeavesOutANegativeStepDuration) {
  const auto report = parseRunResult(
      "job-9", api::Operation::kApply,
      R"({"operation":"OPERATION_APPLY","succeeded":{},"steps":[{"step":"STEP_INIT","duration":"-0.5s"},{"step":"STEP_APPLY","duration":"1.5s"}]})");
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->last_run.steps.size(), 2U);
  EXPECT_EQ(report->last_run.steps[0].duration_milliseconds, std::nullopt);
  EXPECT_EQ(report->last_run.steps[1].duration_milliseconds, 1500);
}

} // namespace
} // namespace captf::workspace
