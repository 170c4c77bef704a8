#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "contract/result.h"
#include "manager/api/keys.h"
#include "manager/lifecycle/bookkeeping.h"
#include "test/manager/lifecycle/testing.h"

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

// ---- consequencesOf ------------------------------------------------------------

namespace cond = api::conditions;
using api::ConditionStatus;
using api::Operation;

constexpr char kDigest[] =
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// How the run ended, as the runner's result document says (kNoResult: no
// document at all, kGarbage: one that does not decode).
enum class Ending {
  kSucceeded,
  kStepFailed,
  kImageLayout,
  kInterrupted,
  kBlocked,
  kPlanChanged,
  kNoResult,
  kGarbage,
};

pb::Operation pbOperation(Operation op) {
  switch (op) {
  case Operation::kApply:
    return pb::OPERATION_APPLY;
  case Operation::kDestroy:
    return pb::OPERATION_DESTROY;
  case Operation::kDrift:
    return pb::OPERATION_DRIFT;
  case Operation::kRefresh:
    return pb::OPERATION_REFRESH;
  case Operation::kRestore:
    return pb::OPERATION_RESTORE;
  case Operation::kPlan:
    return pb::OPERATION_PLAN;
  }
  return pb::OPERATION_UNSPECIFIED;
}

// One finished Job of a TerraformCluster as the pass sees it: the Job, its
// pod and result document, and the object's facts. Rows and tests change
// what differs from the plain case (a Job of `op` that ended `ending`, pod
// still there with a pinned image, nothing approved, no drift found before).
struct Scenario {
  Scenario(Operation op, Ending how) : ending(how) {
    job.job = "tc-" + std::string(api::enumName(op)) + "-1";
    job.operation = op;
    job.job_succeeded = ending == Ending::kSucceeded;
    job.pod_exists = true;
    doc.set_operation(pbOperation(op));
    doc.set_image("reg/module:v1");
    doc.set_runtime_version("OpenTofu v1.8.0");
    if (ending == Ending::kSucceeded) {
      doc.mutable_succeeded();
    } else {
      doc.set_exit_code(1);
      pb::RunError* error = doc.mutable_error();
      error->set_summary("Error: quota exceeded");
      switch (ending) {
      case Ending::kImageLayout:
        error->set_kind(pb::ERROR_KIND_IMAGE_LAYOUT);
        break;
      case Ending::kInterrupted:
        error->set_kind(pb::ERROR_KIND_INTERRUPTED);
        break;
      case Ending::kBlocked:
        error->set_kind(pb::ERROR_KIND_BLOCKED);
        doc.mutable_plan()->set_plan_hash("sha256:blocked");
        doc.mutable_plan()->add_resources("aws_instance.a");
        doc.mutable_plan()->add_resources("aws_vpc.main");
        break;
      case Ending::kPlanChanged:
        error->set_kind(pb::ERROR_KIND_PLAN_CHANGED);
        doc.mutable_plan()->set_plan_hash("sha256:newplan");
        doc.mutable_plan()->set_add(1);
        break;
      default:
        error->set_kind(pb::ERROR_KIND_STEP);
        error->set_step(pb::STEP_APPLY);
        break;
      }
    }
    facts.kind = "TerraformCluster";
    facts.resource = "terraformcluster";
    facts.id = ObjectIdentity{contract::Role::kCluster, "team-a", "tc"};
    facts.now = testing::at(0);
    facts.job = testing::job({.op = op, .finished = -10});
    facts.job.name = job.job;
    facts.job.inputs_hash = "h2:inputs";
    facts.image_id = std::string("docker-pullable://reg/module@") + kDigest;
    facts.duration_seconds = 42;
    facts.queue_seconds = 3;
    facts.source_image = "reg/module:v1";
  }

  // Classifies the Job and returns what follows.
  Consequences run() {
    if (ending == Ending::kGarbage) {
      job.termination_message = "{not a result";
    } else if (ending != Ending::kNoResult) {
      job.termination_message = contract::encodeResult(doc);
    }
    const FinishedRun finished = classifyFinishedRun(job);
    facts.job.outcome = finished.job_outcome;
    facts.records = {facts.job};
    return consequencesOf(finished, facts);
  }

  Ending ending;
  FinishedJobFacts job;
  pb::RunResult doc;
  RunFacts facts;
};

std::string statusName(ConditionStatus status) {
  return status == ConditionStatus::kTrue    ? "True"
         : status == ConditionStatus::kFalse ? "False"
                                             : "Unknown";
}

// "Type=Status/Reason" per condition set, in order.
std::vector<std::string> conditionsOf(const Consequences& c) {
  std::vector<std::string> out;
  out.reserve(c.conditions.size());
  for (const ConditionUpdate& u : c.conditions) {
    out.push_back(std::string(u.type) + "=" + statusName(u.status) + "/" + std::string(u.reason));
  }
  return out;
}

// The Events' reasons in order; a gated one with "?transition" / "?pinned".
std::vector<std::string> eventsOf(const Consequences& c) {
  std::vector<std::string> out;
  for (const RunEvent& e : c.events) {
    std::string reason(e.reason);
    if (e.gate == EventGate::kOnTransition) {
      reason += "?transition";
    } else if (e.gate == EventGate::kOnDigestPinned) {
      reason += "?pinned";
    }
    out.push_back(reason);
  }
  return out;
}

const RunEvent* findEvent(const Consequences& c, std::string_view reason) {
  auto it = std::find_if(c.events.begin(), c.events.end(),
                         [&](const RunEvent& e) { return e.reason == reason; });
  return it == c.events.end() ? nullptr : &*it;
}

// The increment of counter `family` with `labels`, or nullopt.
std::optional<double> counted(const Consequences& c, CounterMetric family,
                              const std::vector<std::string>& labels) {
  for (const auto& change : c.counts) {
    if (change.family == family && change.labels == labels) {
      return change.value;
    }
  }
  return std::nullopt;
}

std::optional<double> observed(const Consequences& c, HistogramMetric family,
                               const std::vector<std::string>& labels) {
  for (const auto& change : c.observations) {
    if (change.family == family && change.labels == labels) {
      return change.value;
    }
  }
  return std::nullopt;
}

struct Count {
  CounterMetric family;
  std::vector<std::string> labels;
  double value = 1;
};

// A row per operation and way a run ends: the conditions, Events, Job
// marks and counters that follow.
TEST(ConsequencesOfTest, ConditionsEventsMarksAndCountersPerOperationAndEnding) {
  using Tweak = std::function<void(Scenario&)>;
  const Tweak plain = [](Scenario&) {};
  const Tweak pod_gone = [](Scenario& s) {
    s.job.pod_exists = false;
    s.facts.image_id.clear();
  };
  const Tweak deadline = [](Scenario& s) {
    s.job.deadline_exceeded = true;
    s.facts.deadline_exceeded = true;
  };
  const Tweak drifted = [](Scenario& s) {
    s.facts.drift_detected = ConditionStatus::kTrue;
    s.facts.original_drift_reason = std::string(cond::kReasonDriftReported);
    s.facts.last_drift_check = testing::at(-60); // before the Job finished
  };
  const Tweak remediation = [](Scenario& s) {
    s.facts.job.drift_remediation = true;
    s.facts.drift_detected = ConditionStatus::kTrue;
    s.facts.last_drift_check = testing::at(-60);
  };
  const Tweak drift_found = [](Scenario& s) {
    s.doc.mutable_drift()->set_add(1);
    s.doc.mutable_drift()->set_change(2);
    s.doc.mutable_drift()->add_resources("aws_instance.a");
  };
  const std::string tc = "TerraformCluster";
  struct Row {
    const char* name;
    Operation op;
    Ending ending;
    Tweak tweak;
    std::vector<std::string> conditions;
    std::vector<std::string> events;
    std::string result; // captf_jobs_total{result}
    std::vector<std::string_view> marks;
    std::vector<Count> counts; // beside captf_jobs_total
    bool adopt = false;
  };
  const Row rows[] = {
      // apply
      {"apply succeeded",
       Operation::kApply,
       Ending::kSucceeded,
       plain,
       {"ApplyJobSucceeded=True/ApplySucceeded"},
       {"DigestPinned?pinned", "JobSucceeded"},
       "succeeded",
       {},
       {},
       true},
      {"apply succeeded, no image digest",
       Operation::kApply,
       Ending::kSucceeded,
       [](Scenario& s) { s.facts.image_id = "reg/module:v1"; },
       {"ApplyJobSucceeded=True/ApplySucceeded"},
       {"DigestUnknown", "JobSucceeded"},
       "succeeded",
       {},
       {},
       true},
      {"apply succeeded with the destructive approval of its inputs",
       Operation::kApply,
       Ending::kSucceeded,
       [](Scenario& s) { s.facts.approve_destructive_plan = "h2:inputs"; },
       {"ApplyJobSucceeded=True/ApplySucceeded"},
       {"DigestPinned?pinned", "DestructivePlanApprovalConsumed", "JobSucceeded"},
       "succeeded",
       {},
       {{CounterMetric::kDestructivePlanApprovalsConsumedTotal, {tc}}},
       true},
      {"apply succeeded; the destructive approval is of other inputs",
       Operation::kApply,
       Ending::kSucceeded,
       [](Scenario& s) { s.facts.approve_destructive_plan = "h2:other"; },
       {"ApplyJobSucceeded=True/ApplySucceeded"},
       {"DigestPinned?pinned", "JobSucceeded"},
       "succeeded",
       {},
       {},
       true},
      {"approved plan applied",
       Operation::kApply,
       Ending::kSucceeded,
       [](Scenario& s) {
         s.facts.job.approved_plan = "sha256:plan";
         s.facts.approve_plan = "sha256:plan";
       },
       {"ApplyJobSucceeded=True/ApplySucceeded"},
       {"DigestPinned?pinned", "PlanApplied", "JobSucceeded"},
       "succeeded",
       {},
       {{CounterMetric::kPlanApprovalsTotal, {tc, "approved"}}},
       true},
      {"apply succeeded after the check that found drift",
       Operation::kApply,
       Ending::kSucceeded,
       drifted,
       {"DriftDetected=False/NoDrift", "ApplyJobSucceeded=True/ApplySucceeded"},
       {"DigestPinned?pinned", "DriftResolved", "JobSucceeded"},
       "succeeded",
       {},
       {},
       true},
      {"apply older than a newer drift check leaves the drift",
       Operation::kApply,
       Ending::kSucceeded,
       [drifted](Scenario& s) {
         drifted(s);
         s.facts.last_drift_check = testing::at(-5); // after the Job finished (-10)
       },
       {"ApplyJobSucceeded=True/ApplySucceeded"},
       {"DigestPinned?pinned", "JobSucceeded"},
       "succeeded",
       {},
       {},
       true},
      {"apply step failed",
       Operation::kApply,
       Ending::kStepFailed,
       plain,
       {"ApplyJobSucceeded=False/ApplyFailed"},
       {"JobFailed"},
       "failed",
       {},
       {{CounterMetric::kJobErrorsTotal, {tc, "apply", "step", "apply"}}}},
      {"apply image layout invalid",
       Operation::kApply,
       Ending::kImageLayout,
       plain,
       {"ApplyJobSucceeded=False/ImageInvalid"},
       {"JobFailed"},
       "failed",
       {},
       {{CounterMetric::kJobErrorsTotal, {tc, "apply", "image-layout", "none"}}}},
      {"apply at its deadline",
       Operation::kApply,
       Ending::kNoResult,
       deadline,
       {"ApplyJobSucceeded=False/JobDeadlineExceeded"},
       {"JobDeadlineExceeded"},
       "deadline",
       {},
       {{CounterMetric::kJobErrorsTotal, {tc, "apply", "deadline", "none"}}}},
      {"apply crashed (pod there, no result)",
       Operation::kApply,
       Ending::kNoResult,
       plain,
       {"ApplyJobSucceeded=False/ApplyFailed"},
       {"JobFailed"},
       "failed",
       {},
       {{CounterMetric::kJobErrorsTotal, {tc, "apply", "unknown", "none"}}}},
      {"apply stopped from outside (pod gone, no result)",
       Operation::kApply,
       Ending::kNoResult,
       pod_gone,
       {"ApplyJobSucceeded=False/ApplyFailed"},
       {"JobInterrupted"},
       "interrupted",
       {api::kAnnotationInterrupted},
       {{CounterMetric::kJobErrorsTotal, {tc, "apply", "unknown", "none"}}}},
      {"apply interrupted, as the runner reports",
       Operation::kApply,
       Ending::kInterrupted,
       plain,
       {"ApplyJobSucceeded=False/ApplyFailed"},
       {"JobInterrupted"},
       "interrupted",
       {api::kAnnotationInterrupted},
       {{CounterMetric::kJobErrorsTotal, {tc, "apply", "interrupted", "none"}}}},
      {"destructive plan blocked",
       Operation::kApply,
       Ending::kBlocked,
       plain,
       {"ApplyJobSucceeded=False/DestructivePlanBlocked"},
       {"DestructivePlanBlocked"},
       "blocked",
       {api::kAnnotationDestructivePlanBlocked},
       {{CounterMetric::kJobErrorsTotal, {tc, "apply", "blocked", "none"}}}},
      {"approved plan changed",
       Operation::kApply,
       Ending::kPlanChanged,
       [](Scenario& s) { s.facts.job.approved_plan = "sha256:plan"; },
       {"ApplyJobSucceeded=Unknown/PlanChanged"},
       {"PlanChanged"},
       "plan_changed",
       {api::kAnnotationPlanChanged},
       {{CounterMetric::kPlanApprovalsTotal, {tc, "changed"}}}},
      {"remediation apply failed: drift still pending",
       Operation::kApply,
       Ending::kStepFailed,
       remediation,
       {"DriftDetected=True/DriftPending", "ApplyJobSucceeded=False/ApplyFailed"},
       {"JobFailed"},
       "failed",
       {},
       {}},
      // destroy
      {"destroy succeeded",
       Operation::kDestroy,
       Ending::kSucceeded,
       plain,
       {"ApplyJobSucceeded=True/DestroySucceeded"},
       {"JobSucceeded"},
       "succeeded",
       {},
       {}},
      {"destroy step failed",
       Operation::kDestroy,
       Ending::kStepFailed,
       plain,
       {"ApplyJobSucceeded=False/DestroyFailed"},
       {"JobFailed"},
       "failed",
       {},
       {{CounterMetric::kJobErrorsTotal, {tc, "destroy", "step", "apply"}}}},
      {"destroy at its deadline",
       Operation::kDestroy,
       Ending::kNoResult,
       deadline,
       {"ApplyJobSucceeded=False/JobDeadlineExceeded"},
       {"JobDeadlineExceeded"},
       "deadline",
       {},
       {}},
      // plan
      {"plan ready for approval",
       Operation::kPlan,
       Ending::kSucceeded,
       [](Scenario& s) {
         s.doc.mutable_plan()->set_plan_hash("sha256:plan");
         s.doc.mutable_plan()->set_add(2);
       },
       {"ApplyJobSucceeded=Unknown/PlanAwaitingApproval"},
       {"PlanReady"},
       "succeeded",
       {},
       {}},
      {"plan with an unreadable result",
       Operation::kPlan,
       Ending::kGarbage,
       plain,
       {"ApplyJobSucceeded=False/ApplyFailed"},
       {"JobFailed"},
       "failed",
       {api::kAnnotationPlanUnreadable},
       {}},
      {"plan stopped from outside before a result",
       Operation::kPlan,
       Ending::kNoResult,
       pod_gone,
       {"ApplyJobSucceeded=False/ApplyFailed"},
       {"JobInterrupted"},
       "interrupted",
       {api::kAnnotationPlanUnreadable, api::kAnnotationInterrupted},
       {}},
      // drift
      {"drift found, reported",
       Operation::kDrift,
       Ending::kSucceeded,
       drift_found,
       {"DriftJobSucceeded=True/DriftChecked", "DriftDetected=True/DriftReported"},
       {"DriftDetected", "JobSucceeded"},
       "succeeded",
       {},
       {{CounterMetric::kDriftResourcesTotal, {tc, "add"}, 1},
        {CounterMetric::kDriftResourcesTotal, {tc, "change"}, 2},
        {CounterMetric::kDriftResourcesTotal, {tc, "destroy"}, 0}}},
      {"drift found, to remediate",
       Operation::kDrift,
       Ending::kSucceeded,
       [drift_found](Scenario& s) {
         drift_found(s);
         s.facts.drift_action = api::DriftAction::kRemediate;
       },
       {"DriftJobSucceeded=True/DriftChecked", "DriftDetected=True/DriftPending"},
       {"DriftDetected", "JobSucceeded"},
       "succeeded",
       {},
       {}},
      {"no drift any more",
       Operation::kDrift,
       Ending::kSucceeded,
       drifted,
       {"DriftJobSucceeded=True/DriftChecked", "DriftDetected=False/NoDrift"},
       {"DriftResolved?transition", "JobSucceeded"},
       "succeeded",
       {},
       {}},
      {"no drift on the first check",
       Operation::kDrift,
       Ending::kSucceeded,
       [](Scenario& s) {
         s.facts.original_drift_reason = std::string(cond::kReasonDriftNotChecked);
       },
       {"DriftJobSucceeded=True/DriftChecked", "DriftDetected=False/NoDrift"},
       {"JobSucceeded"},
       "succeeded",
       {},
       {}},
      {"drift check failed",
       Operation::kDrift,
       Ending::kStepFailed,
       plain,
       {"DriftJobSucceeded=False/DriftJobFailed"},
       {"JobFailed"},
       "failed",
       {},
       {{CounterMetric::kJobErrorsTotal, {tc, "drift", "step", "apply"}}}},
      {"drift check at its deadline",
       Operation::kDrift,
       Ending::kNoResult,
       deadline,
       {"DriftJobSucceeded=False/DriftJobDeadlineExceeded"},
       {"JobDeadlineExceeded"},
       "deadline",
       {},
       {}},
      // refresh
      {"refresh succeeded",
       Operation::kRefresh,
       Ending::kSucceeded,
       plain,
       {"DriftJobSucceeded=True/DriftChecked"},
       {"JobSucceeded"},
       "succeeded",
       {},
       {}},
      {"refresh stopped from outside",
       Operation::kRefresh,
       Ending::kNoResult,
       pod_gone,
       {"DriftJobSucceeded=False/DriftJobFailed"},
       {"JobInterrupted"},
       "interrupted",
       {api::kAnnotationInterrupted},
       {}},
      // restore
      {"restore succeeded",
       Operation::kRestore,
       Ending::kSucceeded,
       plain,
       {"RestoreJobSucceeded=True/StateRestored"},
       {"StateRestored", "JobSucceeded"},
       "succeeded",
       {},
       {{CounterMetric::kStateRestoresTotal, {tc, "succeeded"}}},
       true},
      {"restore failed",
       Operation::kRestore,
       Ending::kStepFailed,
       plain,
       {"RestoreJobSucceeded=False/RestoreFailed"},
       {"StateRestoreFailed", "JobFailed"},
       "failed",
       {},
       {{CounterMetric::kStateRestoresTotal, {tc, "failed"}}}},
      {"restore interrupted from outside is retried",
       Operation::kRestore,
       Ending::kInterrupted,
       plain,
       {"RestoreJobSucceeded=False/RestoreFailed"},
       {"StateRestoreFailed", "JobInterrupted"},
       "interrupted",
       {api::kAnnotationInterrupted},
       {{CounterMetric::kStateRestoresTotal, {tc, "failed"}}}},
      {"restore at its deadline, reported interrupted, failed (not retried)",
       Operation::kRestore,
       Ending::kInterrupted,
       deadline,
       {"RestoreJobSucceeded=False/RestoreFailed"},
       {"StateRestoreFailed", "JobDeadlineExceeded"},
       "deadline",
       {},
       {{CounterMetric::kStateRestoresTotal, {tc, "failed"}}}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Scenario setup(row.op, row.ending);
    row.tweak(setup);
    const Consequences c = setup.run();
    EXPECT_EQ(conditionsOf(c), row.conditions);
    EXPECT_EQ(eventsOf(c), row.events);
    EXPECT_EQ(c.result, row.result);
    EXPECT_EQ(c.job_marks, row.marks);
    EXPECT_EQ(c.adopt_state, row.adopt);
    const std::string op(api::enumName(row.op));
    EXPECT_EQ(counted(c, CounterMetric::kJobsTotal, {tc, op, row.result}), 1);
    for (const Count& expected : row.counts) {
      EXPECT_EQ(counted(c, expected.family, expected.labels), expected.value)
          << "labels " << ::testing::PrintToString(expected.labels);
    }
    const bool succeeded = row.result == "succeeded";
    EXPECT_EQ(
        std::count_if(c.counts.begin(), c.counts.end(),
                      [](const auto& m) { return m.family == CounterMetric::kJobErrorsTotal; }),
        succeeded ? 0 : 1);
    // Drift and refresh timestamps are exported by the reconciler while
    // scheduled (WorkloadReconcilerTest.TheDriftTimestampExistsOnlyWhile...).
    const bool reading = row.op == Operation::kDrift || row.op == Operation::kRefresh;
    EXPECT_EQ(c.gauges.size(), succeeded && !reading ? 1U : 0U);
    EXPECT_EQ(c.last_run.job, setup.job.job);
  }
}

TEST(ConsequencesOfTest, ApproveHintsNameTheResourceObjectAndValue) {
  const ObjectIdentity id{contract::Role::kMachine, "team-a", "m-1"};
  EXPECT_EQ(approveCommand("terraformmachine", id, api::kAnnotationApprovePlan, "sha256:p"),
            "kubectl -n team-a annotate terraformmachine m-1 captf.io/approve-plan=sha256:p "
            "--overwrite");
  EXPECT_EQ(planAwaitingApprovalMessage("terraformcluster", id, "sha256:p"),
            "plan sha256:p awaits approval: kubectl -n team-a annotate terraformcluster m-1 "
            "captf.io/approve-plan=sha256:p --overwrite");
  EXPECT_EQ(planChangedMessage("terraformcluster", id, "sha256:n"),
            "the approved plan changed; new plan sha256:n awaits approval: kubectl -n team-a "
            "annotate terraformcluster m-1 captf.io/approve-plan=sha256:n --overwrite");
}

TEST(ConsequencesOfTest, ABlockedPlanSaysWhatItReplacesAndHowToApproveTheInputs) {
  Scenario setup(Operation::kApply, Ending::kBlocked);
  const Consequences c = setup.run();
  ASSERT_EQ(c.conditions.size(), 1U);
  EXPECT_EQ(c.conditions[0].message,
            "Job tc-apply-1 stopped before a plan that deletes or replaces aws_instance.a, "
            "aws_vpc.main; approve with kubectl -n team-a annotate terraformcluster tc "
            "captf.io/approve-destructive-plan=h2:inputs --overwrite");
  const RunEvent* event = findEvent(c, "DestructivePlanBlocked");
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(event->type, EventType::kWarning);
  EXPECT_EQ(event->message, "Job tc-apply-1 planned to delete or replace resources; inputs "
                            "h2:inputs need captf.io/approve-destructive-plan");
  EXPECT_EQ(c.plan_change, PlanChange::kKeep);
  EXPECT_TRUE(c.remove_annotations.empty());
}

TEST(ConsequencesOfTest, APlanSetsStatusPlanAndAnAppliedApprovedPlanClearsIt) {
  Scenario plan(Operation::kPlan, Ending::kSucceeded);
  plan.doc.mutable_plan()->set_plan_hash("sha256:plan");
  plan.doc.mutable_plan()->set_add(2);
  plan.doc.mutable_plan()->set_destroy(1);
  const Consequences planned = plan.run();
  ASSERT_EQ(planned.plan_change, PlanChange::kSet);
  EXPECT_EQ(planned.plan.plan_hash, "sha256:plan");
  EXPECT_EQ(planned.plan.inputs_hash, "h2:inputs");
  EXPECT_EQ(planned.plan.job, "tc-plan-1");
  EXPECT_EQ(planned.plan.created_at, testing::at(0));
  const RunEvent* ready = findEvent(planned, "PlanReady");
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->message, "plan sha256:plan of Job tc-plan-1: +2 ~0 -1; approve with kubectl -n "
                            "team-a annotate terraformcluster tc captf.io/approve-plan=sha256:plan "
                            "--overwrite");
  EXPECT_EQ(findEvent(planned, "JobSucceeded"), nullptr) << "a plan Job is not applied";

  Scenario changed(Operation::kApply, Ending::kPlanChanged);
  changed.facts.job.approved_plan = "sha256:plan";
  const Consequences c = changed.run();
  ASSERT_EQ(c.plan_change, PlanChange::kSet);
  EXPECT_EQ(c.plan.plan_hash, "sha256:newplan");
  EXPECT_EQ(c.conditions.at(0).message,
            planChangedMessage("terraformcluster", changed.facts.id, "sha256:newplan"));

  Scenario apply(Operation::kApply, Ending::kSucceeded);
  apply.facts.job.approved_plan = "sha256:plan";
  apply.facts.approve_plan = "sha256:plan";
  apply.facts.approve_destructive_plan = "h2:inputs";
  const Consequences applied = apply.run();
  EXPECT_EQ(applied.plan_change, PlanChange::kClear);
  EXPECT_EQ(applied.remove_annotations,
            (std::vector<std::string_view>{api::kAnnotationApproveDestructivePlan,
                                           api::kAnnotationApprovePlan}));

  // The approval annotation already names another plan: kept, but the plan
  // was applied all the same.
  Scenario newer(Operation::kApply, Ending::kSucceeded);
  newer.facts.job.approved_plan = "sha256:plan";
  newer.facts.approve_plan = "sha256:newer";
  const Consequences kept = newer.run();
  EXPECT_EQ(kept.plan_change, PlanChange::kClear);
  EXPECT_TRUE(kept.remove_annotations.empty());
  EXPECT_EQ(counted(kept, CounterMetric::kPlanApprovalsTotal, {"TerraformCluster", "approved"}), 1);
}

TEST(ConsequencesOfTest, ASucceededApplyPinsTheDigestAndWritesTheSource) {
  Scenario setup(Operation::kApply, Ending::kSucceeded);
  setup.facts.git_commit = "abc123";
  setup.facts.source = api::SourceStatus{};
  setup.facts.source->latest_commit = "def456";
  setup.facts.source->resolved_at = testing::at(-30);
  setup.facts.source->image_digest = "sha256:old"; // replaced
  const Consequences c = setup.run();
  EXPECT_EQ(c.pin_digest, kDigest);
  const RunEvent* pinned = findEvent(c, "DigestPinned");
  ASSERT_NE(pinned, nullptr);
  EXPECT_EQ(pinned->gate, EventGate::kOnDigestPinned);
  EXPECT_EQ(pinned->message, std::string("image reg/module:v1 pinned to ") + kDigest);
  ASSERT_TRUE(c.source.has_value());
  EXPECT_EQ(c.source->image, "reg/module:v1");
  EXPECT_EQ(c.source->image_digest, kDigest);
  EXPECT_EQ(c.source->runtime_version, "OpenTofu v1.8.0");
  EXPECT_EQ(c.source->commit, "abc123");
  EXPECT_EQ(c.source->latest_commit, "def456");
  EXPECT_EQ(c.source->resolved_at, testing::at(-30));

  // Without a readable result: the spec's image, no runtime version.
  Scenario unread(Operation::kApply, Ending::kNoResult);
  unread.job.job_succeeded = true;
  unread.facts.source_image = "reg/runtime:v2";
  const Consequences u = unread.run();
  ASSERT_TRUE(u.source.has_value());
  EXPECT_EQ(u.source->image, "reg/runtime:v2");
  EXPECT_EQ(u.source->runtime_version, std::nullopt);
  EXPECT_EQ(u.source->commit, std::nullopt);

  // Only a succeeded apply writes status.source or pins.
  for (Operation op : {Operation::kDestroy, Operation::kDrift, Operation::kRestore}) {
    Scenario other(op, Ending::kSucceeded);
    const Consequences o = other.run();
    EXPECT_FALSE(o.source.has_value());
    EXPECT_FALSE(o.pin_digest.has_value());
  }
}

TEST(ConsequencesOfTest, AJobThatFailedAfterAGoodResultFailed) {
  Scenario setup(Operation::kApply, Ending::kSucceeded);
  setup.job.job_succeeded = false;
  const Consequences c = setup.run();
  EXPECT_EQ(c.job_outcome, JobOutcome::kFailed);
  EXPECT_EQ(conditionsOf(c), std::vector<std::string>{"ApplyJobSucceeded=False/ApplyFailed"});
  EXPECT_FALSE(c.adopt_state);
  EXPECT_EQ(c.result, "failed");
}

TEST(ConsequencesOfTest, FailureMessagesCarryTheRunnersSummary) {
  Scenario failed(Operation::kApply, Ending::kStepFailed);
  const Consequences c = failed.run();
  EXPECT_EQ(c.conditions.at(0).message, "Job tc-apply-1 failed: Error: quota exceeded");
  EXPECT_EQ(findEvent(c, "JobFailed")->message,
            "apply Job tc-apply-1 failed: Error: quota exceeded");

  Scenario gone(Operation::kApply, Ending::kNoResult);
  gone.job.pod_exists = false;
  const Consequences g = gone.run();
  EXPECT_EQ(g.conditions.at(0).message, "Job tc-apply-1 was interrupted");
  EXPECT_EQ(findEvent(g, "JobInterrupted")->message,
            "apply Job tc-apply-1 was stopped from outside; retrying without backoff");

  Scenario remediation(Operation::kApply, Ending::kBlocked);
  remediation.facts.job.drift_remediation = true;
  const Consequences r = remediation.run();
  EXPECT_EQ(r.conditions.at(0).message,
            "remediation apply tc-apply-1 blocked; the drift is still pending");
}

TEST(ConsequencesOfTest, DriftRecordsTheCheckAndRefreshOnlyTheRefresh) {
  Scenario drift(Operation::kDrift, Ending::kSucceeded);
  drift.doc.mutable_drift()->set_destroy(4);
  const Consequences d = drift.run();
  EXPECT_EQ(d.last_refresh, testing::at(0));
  EXPECT_EQ(d.last_drift_check, testing::at(0));
  EXPECT_EQ(d.conditions.at(1).message, "Job tc-drift-1 found drift +0 ~0 -4");
  EXPECT_EQ(counted(d, CounterMetric::kDriftResourcesTotal, {"TerraformCluster", "destroy"}), 4);

  Scenario refresh(Operation::kRefresh, Ending::kSucceeded);
  const Consequences r = refresh.run();
  EXPECT_EQ(r.last_refresh, testing::at(0));
  EXPECT_EQ(r.last_drift_check, std::nullopt);

  Scenario failed(Operation::kDrift, Ending::kStepFailed);
  const Consequences f = failed.run();
  EXPECT_EQ(f.last_refresh, std::nullopt);
  EXPECT_EQ(f.last_drift_check, std::nullopt);
}

TEST(ConsequencesOfTest, TheNewestSucceededReadingIsTheHealthSample) {
  for (Operation op : {Operation::kApply, Operation::kRefresh, Operation::kDrift}) {
    Scenario setup(op, Ending::kSucceeded);
    EXPECT_EQ(setup.run().health_sample, op);
    Scenario older(op, Ending::kSucceeded);
    older.facts.health_sampled = true; // a newer Job of the pass gave it
    EXPECT_EQ(older.run().health_sample, std::nullopt);
  }
  Scenario failed(Operation::kRefresh, Ending::kStepFailed);
  EXPECT_EQ(failed.run().health_sample, std::nullopt);
  Scenario destroy(Operation::kDestroy, Ending::kSucceeded);
  EXPECT_EQ(destroy.run().health_sample, std::nullopt);
}

TEST(ConsequencesOfTest, DurationsStepsChangesAttemptsAndTheLastSuccess) {
  Scenario setup(Operation::kApply, Ending::kSucceeded);
  pb::StepResult* step = setup.doc.add_steps();
  step->set_step(pb::STEP_APPLY);
  step->mutable_duration()->set_seconds(2);
  step->mutable_duration()->set_nanos(500'000'000);
  setup.doc.mutable_changes()->set_add(3);
  setup.doc.mutable_changes()->set_import(1);
  Consequences c = setup.run();
  const std::vector<std::string> kind_op = {"TerraformCluster", "apply"};
  EXPECT_EQ(
      observed(c, HistogramMetric::kJobDurationSeconds, {"TerraformCluster", "apply", "succeeded"}),
      42);
  EXPECT_EQ(observed(c, HistogramMetric::kJobQueueSeconds, kind_op), 3);
  EXPECT_EQ(
      observed(c, HistogramMetric::kJobStepDurationSeconds, {"TerraformCluster", "apply", "apply"}),
      2.5);
  EXPECT_EQ(observed(c, HistogramMetric::kJobAttempts, kind_op), 1);
  // A step the metrics do not name (the Git fetch) is counted as other.
  Scenario fetched(Operation::kApply, Ending::kSucceeded);
  pb::StepResult* fetch = fetched.doc.add_steps();
  fetch->set_step(pb::STEP_FETCH);
  fetch->mutable_duration()->set_seconds(4);
  EXPECT_EQ(observed(fetched.run(), HistogramMetric::kJobStepDurationSeconds,
                     {"TerraformCluster", "apply", "other"}),
            4);
  EXPECT_EQ(metricStepLabel("state-push"), "state-push");
  EXPECT_EQ(metricStepLabel("none"), "none");
  EXPECT_EQ(metricStepLabel("fetch"), "other");
  EXPECT_EQ(metricStepLabel("a-step-of-a-newer-runner"), "other");
  EXPECT_EQ(counted(c, CounterMetric::kResourcesChangedTotal, {"TerraformCluster", "apply", "add"}),
            3);
  EXPECT_EQ(
      counted(c, CounterMetric::kResourcesChangedTotal, {"TerraformCluster", "apply", "import"}),
      1);
  ASSERT_EQ(c.gauges.size(), 1U);
  EXPECT_EQ(c.gauges[0].family, GaugeMetric::kLastSuccessTimestampSeconds);
  EXPECT_EQ(c.gauges[0].labels,
            (std::vector<std::string>{"TerraformCluster", "team-a", "tc", "apply"}));
  EXPECT_EQ(c.gauges[0].value, 1'767'225'600);

  // Two failures before this success: its third attempt. Times that did not
  // parse observe no duration.
  Scenario third(Operation::kApply, Ending::kSucceeded);
  third.facts.job.attempt = 3;
  third.facts.duration_seconds.reset();
  third.facts.queue_seconds.reset();
  const FinishedRun run = classifyFinishedRun([&] {
    third.job.termination_message = contract::encodeResult(third.doc);
    return third.job;
  }());
  third.facts.job.outcome = run.job_outcome;
  third.facts.records = {
      third.facts.job,
      testing::job({.op = Operation::kApply,
                    .attempt = 2,
                    .outcome = JobOutcome::kFailed,
                    .finished = -100}),
      testing::job({.op = Operation::kApply,
                    .attempt = 1,
                    .outcome = JobOutcome::kFailed,
                    .finished = -200}),
      testing::job({.op = Operation::kDrift, .attempt = 1, .outcome = JobOutcome::kFailed})};
  c = consequencesOf(run, third.facts);
  EXPECT_EQ(observed(c, HistogramMetric::kJobAttempts, kind_op), 3);
  EXPECT_EQ(
      observed(c, HistogramMetric::kJobDurationSeconds, {"TerraformCluster", "apply", "succeeded"}),
      std::nullopt);
  EXPECT_EQ(observed(c, HistogramMetric::kJobQueueSeconds, kind_op), std::nullopt);
}

} // namespace
} // namespace captf::lifecycle
