#include "manager/workspace/result.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "contract/plan.h"
#include "contract/result.h"
#include "contract/strings.h"
#include "contract/text.h"

namespace captf::workspace {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using contract::strCat;

absl::Status invalid(std::string_view job_name, std::string_view detail) {
  return absl::InvalidArgumentError(strCat("termination message of Job ", job_name, ": ", detail));
}

std::int32_t count(std::uint32_t value) {
  return static_cast<std::int32_t>(std::min<std::uint32_t>(value, 1'000'000'000U));
}

api::RunErrorKind toApiErrorKind(pb::ErrorKind kind) {
  switch (kind) {
  case pb::ERROR_KIND_IMAGE_LAYOUT:
    return api::RunErrorKind::kImageLayout;
  case pb::ERROR_KIND_INTERRUPTED:
    return api::RunErrorKind::kInterrupted;
  case pb::ERROR_KIND_BLOCKED:
    return api::RunErrorKind::kBlocked;
  case pb::ERROR_KIND_PLAN_CHANGED:
    return api::RunErrorKind::kPlanChanged;
  default:
    return api::RunErrorKind::kStep;
  }
}

} // namespace

api::Operation toApiOperation(pb::Operation operation) {
  switch (operation) {
  case pb::OPERATION_DESTROY:
    return api::Operation::kDestroy;
  case pb::OPERATION_DRIFT:
    return api::Operation::kDrift;
  case pb::OPERATION_REFRESH:
    return api::Operation::kRefresh;
  case pb::OPERATION_RESTORE:
    return api::Operation::kRestore;
  case pb::OPERATION_PLAN:
    return api::Operation::kPlan;
  default:
    return api::Operation::kApply;
  }
}

absl::StatusOr<RunReport> parseRunResult(std::string_view job_name, api::Operation operation,
                                         std::optional<std::string_view> message) {
  if (!message || message->empty()) {
    return invalid(job_name, "no result document (the runner did not write one)");
  }
  auto decoded = contract::decodeResult(*message);
  if (!decoded.ok()) {
    return invalid(job_name, std::string(decoded.status().message()));
  }
  const pb::RunResult& result = *decoded;
  if (toApiOperation(result.operation()) != operation) {
    return invalid(job_name,
                   strCat("the result is for operation ",
                          contract::operationName(result.operation()), ", the Job ran another"));
  }

  RunReport report;
  report.last_run.job = std::string(job_name);
  report.last_run.operation = operation;
  for (const pb::StepResult& step : result.steps()) {
    api::RunStep out;
    out.name = std::string(contract::stepName(step.step()));
    out.exit_code = step.exit_code();
    // Only a duration that is not negative as a whole: "-0.5s" is 0 seconds
    // and -5e8 nanoseconds, and status' durationMilliseconds has minimum 0.
    const std::int64_t milliseconds =
        step.duration().seconds() * 1000 + step.duration().nanos() / 1'000'000;
    if (step.has_duration() && step.duration().seconds() >= 0 && milliseconds >= 0) {
      out.duration_milliseconds = milliseconds;
    }
    report.last_run.steps.push_back(std::move(out));
  }
  if (result.has_error()) {
    const pb::RunError& error = result.error();
    api::RunError out;
    out.kind = toApiErrorKind(error.kind());
    if (error.step() != pb::STEP_UNSPECIFIED) {
      out.step = std::string(contract::stepName(error.step()));
    }
    if (!error.summary().empty()) {
      out.summary =
          contract::clipText(contract::sanitizeUtf8(error.summary()), contract::kMaxSummaryBytes);
    }
    report.error_kind = out.kind;
    switch (out.kind) {
    case api::RunErrorKind::kInterrupted:
      report.outcome = RunOutcome::kInterrupted;
      break;
    case api::RunErrorKind::kBlocked:
      report.outcome = RunOutcome::kBlocked;
      break;
    case api::RunErrorKind::kPlanChanged:
      report.outcome = RunOutcome::kPlanChanged;
      break;
    case api::RunErrorKind::kImageLayout:
    case api::RunErrorKind::kStep:
      report.outcome = RunOutcome::kFailed;
      break;
    }
    report.last_run.error = std::move(out);
  } else {
    report.outcome = RunOutcome::kSucceeded;
  }
  if (result.has_drift() && operation == api::Operation::kDrift) {
    const pb::DriftSummary& drift = result.drift();
    if (drift.add() + drift.change() + drift.destroy() > 0 || drift.resources_size() > 0) {
      api::DriftSummary out;
      out.add = count(drift.add());
      out.change = count(drift.change());
      out.destroy = count(drift.destroy());
      for (const std::string& resource : drift.resources()) {
        if (out.resources.size() == contract::kMaxDriftResources) {
          break;
        }
        if (!resource.empty()) {
          out.resources.push_back(contract::clipText(contract::sanitizeUtf8(resource),
                                                     contract::kMaxDriftResourceBytes));
        }
      }
      report.drift_found = true;
      report.last_run.drift = std::move(out);
    }
  }
  if (result.has_plan() && !result.plan().plan_hash().empty()) {
    const pb::PlanSummary& plan = result.plan();
    api::PlanPreview preview;
    preview.job = std::string(job_name);
    preview.plan_hash = plan.plan_hash();
    preview.add = count(plan.add());
    preview.change = count(plan.change());
    preview.destroy = count(plan.destroy());
    for (const std::string& resource : plan.resources()) {
      if (preview.resources.size() == contract::kMaxPlanResources) {
        preview.truncated = true;
        break;
      }
      if (!resource.empty()) {
        preview.resources.push_back(
            contract::clipText(contract::sanitizeUtf8(resource), contract::kMaxPlanResourceBytes));
      }
    }
    if (plan.truncated()) {
      preview.truncated = true;
    }
    report.plan = std::move(preview);
  }
  if (result.has_changes()) {
    report.changes = result.changes();
  }
  report.runtime_version = contract::clipText(contract::sanitizeUtf8(result.runtime_version()),
                                              contract::kMaxRuntimeVersionBytes);
  report.image =
      contract::clipText(contract::sanitizeUtf8(result.image()), contract::kMaxImageBytes);
  return report;
}

api::LastRun lastRunWithoutResult(std::string_view job_name, api::Operation operation) {
  api::LastRun run;
  run.job = std::string(job_name);
  run.operation = operation;
  return run;
}

std::string_view jobsTotalResult(RunOutcome outcome) {
  switch (outcome) {
  case RunOutcome::kSucceeded:
    return "succeeded";
  case RunOutcome::kFailed:
    return "failed";
  case RunOutcome::kInterrupted:
    return "interrupted";
  case RunOutcome::kBlocked:
    return "blocked";
  case RunOutcome::kPlanChanged:
    return "plan_changed";
  }
  return "failed";
}

bool countsForBackoff(RunOutcome outcome) {
  return outcome == RunOutcome::kFailed;
}

} // namespace captf::workspace
