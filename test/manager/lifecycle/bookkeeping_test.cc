#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "contract/result.h"
#include "manager/api/keys.h"
#include "manager/lifecycle/bookkeeping.h"

namespace captf::lifecycle {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using workspace::RunOutcome;

enum class Result {
  kNone,
  kSucceeded,
  kStepFailed,
  kInterrupted,
  kBlocked,
  kPlanChanged,
  kGarbage
};

std::optional<std::string> document(Result result) {
  if (result == Result::kNone) {
    return std::nullopt;
  }
  if (result == Result::kGarbage) {
    return std::string("{not a result");
  }
  pb::RunResult r;
  r.set_operation(pb::OPERATION_APPLY);
  r.set_image("reg/x:v1");
  if (result == Result::kSucceeded) {
    r.mutable_succeeded();
    return contract::encodeResult(r);
  }
  r.set_exit_code(1);
  const pb::ErrorKind kind = result == Result::kStepFailed    ? pb::ERROR_KIND_STEP
                             : result == Result::kInterrupted ? pb::ERROR_KIND_INTERRUPTED
                             : result == Result::kBlocked     ? pb::ERROR_KIND_BLOCKED
                                                              : pb::ERROR_KIND_PLAN_CHANGED;
  r.mutable_error()->set_kind(kind);
  if (kind == pb::ERROR_KIND_STEP) {
    r.mutable_error()->set_step(pb::STEP_APPLY);
  }
  r.mutable_error()->set_summary("Error: quota exceeded");
  return contract::encodeResult(r);
}

// Every combination the Job, its pod and the result document can show.
TEST(ClassifyFinishedRunTest, OutcomeAndMarkByWhatTheJobShows) {
  struct Case {
    const char* name;
    Result result;
    bool job_succeeded;
    bool pod_exists;
    bool deadline;
    RunOutcome outcome;
    JobOutcome job_outcome;
    std::optional<std::string_view> mark;
    bool has_report;
  };
  const Case cases[] = {
      {"good result, Job complete", Result::kSucceeded, true, true, false, RunOutcome::kSucceeded,
       JobOutcome::kSucceeded, std::nullopt, true},
      {"good result, Job failed after it", Result::kSucceeded, false, true, false,
       RunOutcome::kFailed, JobOutcome::kFailed, std::nullopt, true},
      {"step failure", Result::kStepFailed, false, true, false, RunOutcome::kFailed,
       JobOutcome::kFailed, std::nullopt, true},
      {"runner reports interrupted", Result::kInterrupted, false, true, false,
       RunOutcome::kInterrupted, JobOutcome::kInterrupted, api::kAnnotationInterrupted, true},
      {"destructive plan blocked", Result::kBlocked, false, true, false, RunOutcome::kBlocked,
       JobOutcome::kBlocked, api::kAnnotationDestructivePlanBlocked, true},
      {"approved plan changed", Result::kPlanChanged, false, true, false, RunOutcome::kPlanChanged,
       JobOutcome::kPlanChanged, api::kAnnotationPlanChanged, true},
      {"no result, pod gone: stopped from outside", Result::kNone, false, false, false,
       RunOutcome::kInterrupted, JobOutcome::kInterrupted, api::kAnnotationInterrupted, false},
      {"no result, pod there: crashed", Result::kNone, false, true, false, RunOutcome::kFailed,
       JobOutcome::kFailed, std::nullopt, false},
      {"no result, pod gone at the deadline", Result::kNone, false, false, true,
       RunOutcome::kFailed, JobOutcome::kFailed, std::nullopt, false},
      {"unreadable result, pod gone", Result::kGarbage, false, false, false, RunOutcome::kFailed,
       JobOutcome::kFailed, std::nullopt, false},
      {"no result, Job complete", Result::kNone, true, false, false, RunOutcome::kSucceeded,
       JobOutcome::kSucceeded, std::nullopt, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FinishedJobFacts facts;
    facts.job = "tc-apply-1";
    facts.operation = api::Operation::kApply;
    facts.job_succeeded = c.job_succeeded;
    facts.pod_exists = c.pod_exists;
    facts.deadline_exceeded = c.deadline;
    facts.termination_message = document(c.result);
    const FinishedRun run = classifyFinishedRun(facts);
    EXPECT_EQ(run.outcome, c.outcome);
    EXPECT_EQ(run.job_outcome, c.job_outcome);
    EXPECT_EQ(run.mark, c.mark);
    EXPECT_EQ(run.report.has_value(), c.has_report);
    EXPECT_EQ(run.last_run.job, "tc-apply-1");
    EXPECT_FALSE(run.plan_unreadable) << "only plan Jobs";
  }
}

TEST(ClassifyFinishedRunTest, APlanJobWithoutAReadableResultIsMarkedUnreadable) {
  FinishedJobFacts facts;
  facts.job = "tc-plan-1";
  facts.operation = api::Operation::kPlan;
  facts.pod_exists = true;
  facts.termination_message = "{not a result";
  const FinishedRun run = classifyFinishedRun(facts);
  EXPECT_TRUE(run.plan_unreadable);
  EXPECT_EQ(run.outcome, RunOutcome::kFailed);
  EXPECT_EQ(run.last_run.operation, api::Operation::kPlan);
}

} // namespace
} // namespace captf::lifecycle
