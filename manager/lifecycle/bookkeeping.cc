#include "manager/lifecycle/bookkeeping.h"

#include "manager/api/keys.h"

namespace captf::lifecycle {

FinishedRun classifyFinishedRun(const FinishedJobFacts& facts) {
  FinishedRun run;
  auto report = workspace::parseRunResult(
      facts.job, facts.operation,
      facts.termination_message ? std::optional<std::string_view>(*facts.termination_message)
                                : std::nullopt);
  if (report.ok()) {
    run.report = *report;
    run.last_run = report->last_run;
    run.outcome = report->outcome;
    if (facts.job_succeeded) {
      run.outcome = workspace::RunOutcome::kSucceeded;
    } else if (run.outcome == workspace::RunOutcome::kSucceeded) {
      run.outcome = workspace::RunOutcome::kFailed; // the Job failed after a good result
    }
  } else {
    run.last_run = workspace::lastRunWithoutResult(facts.job, facts.operation);
    run.outcome =
        facts.job_succeeded ? workspace::RunOutcome::kSucceeded : workspace::RunOutcome::kFailed;
    if (!facts.job_succeeded && !facts.pod_exists && !facts.deadline_exceeded &&
        !facts.termination_message) {
      run.outcome = workspace::RunOutcome::kInterrupted;
    }
    run.plan_unreadable = facts.operation == api::Operation::kPlan;
  }
  switch (run.outcome) {
  case workspace::RunOutcome::kInterrupted:
    run.mark = api::kAnnotationInterrupted;
    run.job_outcome = JobOutcome::kInterrupted;
    break;
  case workspace::RunOutcome::kBlocked:
    run.mark = api::kAnnotationDestructivePlanBlocked;
    run.job_outcome = JobOutcome::kBlocked;
    break;
  case workspace::RunOutcome::kPlanChanged:
    run.mark = api::kAnnotationPlanChanged;
    run.job_outcome = JobOutcome::kPlanChanged;
    break;
  case workspace::RunOutcome::kSucceeded:
    run.job_outcome = JobOutcome::kSucceeded;
    break;
  case workspace::RunOutcome::kFailed:
    run.job_outcome = JobOutcome::kFailed;
    break;
  }
  return run;
}

} // namespace captf::lifecycle
