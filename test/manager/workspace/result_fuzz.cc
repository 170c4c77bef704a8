// libFuzzer target for the result document a finished Job leaves in its
// termination message (docs/decisions/contract-result-document.md): the
// runner's container writes it, so the module's own code can write anything
// there. The bytes go to contract::decodeResult and to
// workspace::parseRunResult, which turns them into status.lastRun,
// status.plan and status.source. Invariants:
//   - no crash, leak or undefined behaviour;
//   - an error never quotes the document (test/fuzz_check.h's canary);
//   - what parseRunResult returns fits the CRD's status schema (counts,
//     lengths, minimums, valid UTF-8), since an out-of-schema value makes
//     the API server refuse the whole status write;
//   - a decoded document encodes again within kMaxResultBytes and decodes
//     to the same operation and outcome (contract/result.h's promises).
// Inputs are at most 4096 bytes, what the kubelet keeps of a termination
// message (LLVMFuzzerInitialize sets -max_len unless given one). Run:
//   build/fuzz/test/manager/workspace/workspace_result_fuzz -max_total_time=600
//       /tmp/result-corpus test/manager/workspace/fuzz/result_corpus
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "contract/plan.h"
#include "contract/result.h"
#include "manager/workspace/result.h"
#include "test/fuzz_check.h"

namespace {

using captf::fuzz::check;
using captf::fuzz::checkNoCanary;
using captf::fuzz::checkText;
namespace contract = captf::contract;
namespace workspace = captf::workspace;
namespace api = captf::api;

constexpr std::string_view kJob = "tfm-web-apply-7c9d2";

// status.lastRun, status.plan and status.source's runtimeVersion and image
// against the CRD's bounds (config/crd/bases).
void checkReport(const workspace::RunReport& report) {
  const api::LastRun& run = report.last_run;
  check(run.job == kJob, "lastRun.job is the Job's name");
  check(run.steps.size() <= contract::kMaxSteps, "lastRun.steps has at most 16 items");
  for (const api::RunStep& step : run.steps) {
    check(!step.name.empty(), "a step has a name");
    checkText(step.name, 64, "lastRun.steps[].name");
    check(!step.duration_milliseconds || *step.duration_milliseconds >= 0,
          "lastRun.steps[].durationMilliseconds is not negative");
  }
  if (run.error) {
    if (run.error->step) {
      check(!run.error->step->empty(), "lastRun.error.step is not empty");
      checkText(*run.error->step, 64, "lastRun.error.step");
    }
    if (run.error->summary) {
      check(!run.error->summary->empty(), "lastRun.error.summary is not empty");
      checkText(*run.error->summary, contract::kMaxSummaryBytes, "lastRun.error.summary");
    }
    check(report.outcome != workspace::RunOutcome::kSucceeded, "an error is not a success");
  } else {
    check(report.outcome == workspace::RunOutcome::kSucceeded, "no error is a success");
  }
  if (run.drift) {
    check(run.drift->resources.size() <= contract::kMaxDriftResources,
          "lastRun.drift.resources has at most 20 items");
    for (const std::string& resource : run.drift->resources) {
      check(!resource.empty(), "a drift resource is not empty");
      checkText(resource, contract::kMaxDriftResourceBytes, "lastRun.drift.resources[]");
    }
    for (const auto& count : {run.drift->add, run.drift->change, run.drift->destroy}) {
      check(!count || *count >= 0, "a drift count is not negative");
    }
  }
  if (report.plan) {
    const api::PlanPreview& plan = *report.plan;
    check(!plan.plan_hash.empty(), "plan.planHash is not empty");
    checkText(plan.plan_hash, contract::kMaxPlanHashBytes, "plan.planHash");
    check(plan.resources.size() <= contract::kMaxPlanResources,
          "plan.resources has at most 50 items");
    for (const std::string& resource : plan.resources) {
      check(!resource.empty(), "a plan resource is not empty");
      checkText(resource, contract::kMaxPlanResourceBytes, "plan.resources[]");
    }
    for (const auto& count : {plan.add, plan.change, plan.destroy}) {
      check(!count || *count >= 0, "a plan count is not negative");
    }
  }
  checkText(report.runtime_version, contract::kMaxRuntimeVersionBytes, "source.runtimeVersion");
  checkText(report.image, contract::kMaxImageBytes, "source.image");
}

} // namespace

// Without a -max_len of its own, a run gets -max_len=4096.
// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer looks for.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  captf::fuzz::defaultMaxLen(argc, argv, contract::kMaxResultBytes);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = contract::decodeResult(text);
  if (!decoded.ok()) {
    checkNoCanary(decoded.status(), "decodeResult's error");
  } else {
    const std::string again = contract::encodeResult(*decoded);
    check(again.size() <= contract::kMaxResultBytes, "encodeResult stays within 4096 bytes");
    auto redecoded = contract::decodeResult(again);
    check(redecoded.ok(), "decodeResult accepts what encodeResult wrote");
    check(redecoded->operation() == decoded->operation() &&
              redecoded->outcome_case() == decoded->outcome_case(),
          "the operation and the outcome survive encoding");
  }
  // The Job's operation: the document's own when it has one (the path
  // bookkeeping takes), else apply; and once another one (a mismatch).
  const api::Operation operation =
      decoded.ok() ? workspace::toApiOperation(decoded->operation()) : api::Operation::kApply;
  for (const api::Operation op : {operation, api::Operation::kPlan}) {
    auto report = workspace::parseRunResult(kJob, op, text);
    if (report.ok()) {
      check(decoded.ok(), "parseRunResult takes only what decodeResult takes");
      checkReport(*report);
    } else {
      checkNoCanary(report.status(), "parseRunResult's error");
    }
  }
  return 0;
}
