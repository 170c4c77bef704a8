#include "contract/result.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "contract/json_adapter.h"
#include "contract/plan.h"
#include "contract/strings.h"
#include "contract/text.h"

namespace captf::contract {
namespace {

namespace pb = captf::runner::v1alpha1;

struct OperationName {
  pb::Operation value;
  std::string_view name;
};
constexpr std::array<OperationName, 6> kOperations = {{
    {pb::OPERATION_APPLY, "apply"},
    {pb::OPERATION_DESTROY, "destroy"},
    {pb::OPERATION_DRIFT, "drift"},
    {pb::OPERATION_REFRESH, "refresh"},
    {pb::OPERATION_RESTORE, "restore"},
    {pb::OPERATION_PLAN, "plan"},
}};

struct StepNameEntry {
  pb::Step value;
  std::string_view name;
};
constexpr std::array<StepNameEntry, 12> kSteps = {{
    {pb::STEP_PREPARE, "prepare"},
    {pb::STEP_INIT, "init"},
    {pb::STEP_FORCE_UNLOCK, "force-unlock"},
    {pb::STEP_VALIDATE, "validate"},
    {pb::STEP_PLAN, "plan"},
    {pb::STEP_SHOW_JSON, "show-json"},
    {pb::STEP_APPLY, "apply"},
    {pb::STEP_APPLY_REFRESH_ONLY, "apply-refresh-only"},
    {pb::STEP_DESTROY, "destroy"},
    {pb::STEP_STATE_PUSH, "state-push"},
    {pb::STEP_STATE_LIST, "state-list"},
    {pb::STEP_FETCH, "fetch"},
}};

// Valid ranges of the well-known types (outside them the JSON printer fails).
constexpr std::int64_t kMinTimestampSeconds = -62'135'596'800; // 0001-01-01T00:00:00Z
constexpr std::int64_t kMaxTimestampSeconds = 253'402'300'799; // 9999-12-31T23:59:59Z
constexpr std::int64_t kMaxDurationSeconds = 315'576'000'000;  // 10,000 years
constexpr std::int32_t kMaxNanos = 999'999'999;

bool validTimestamp(const google::protobuf::Timestamp& time) {
  return time.seconds() >= kMinTimestampSeconds && time.seconds() <= kMaxTimestampSeconds &&
         time.nanos() >= 0 && time.nanos() <= kMaxNanos;
}

bool validDuration(const google::protobuf::Duration& duration) {
  const std::int64_t seconds = duration.seconds();
  const std::int32_t nanos = duration.nanos();
  return seconds >= -kMaxDurationSeconds && seconds <= kMaxDurationSeconds && nanos >= -kMaxNanos &&
         nanos <= kMaxNanos && !(seconds > 0 && nanos < 0) && !(seconds < 0 && nanos > 0);
}

void bound(std::string* text, std::size_t max_bytes) {
  *text = clipText(sanitizeUtf8(*text), max_bytes);
}

// Bounds every field of `result` (first paragraph of encodeResult).
void normalize(pb::RunResult& result) {
  bound(result.mutable_image(), kMaxImageBytes);
  bound(result.mutable_runtime_version(), kMaxRuntimeVersionBytes);
  if (result.has_error()) {
    pb::RunError& error = *result.mutable_error();
    bound(error.mutable_summary(), kMaxSummaryBytes);
    bound(error.mutable_tail(), kMaxTailBytes);
  }
  if (result.has_plan()) {
    pb::PlanSummary& plan = *result.mutable_plan();
    bound(plan.mutable_plan_hash(), kMaxPlanHashBytes);
    if (std::cmp_greater(plan.resources_size(), kMaxPlanResources)) {
      plan.mutable_resources()->DeleteSubrange(static_cast<int>(kMaxPlanResources),
                                               plan.resources_size() -
                                                   static_cast<int>(kMaxPlanResources));
      plan.set_truncated(true);
    }
    for (std::string& resource : *plan.mutable_resources()) {
      bound(&resource, kMaxPlanResourceBytes);
    }
  }
  if (result.has_drift()) {
    pb::DriftSummary& drift = *result.mutable_drift();
    if (std::cmp_greater(drift.resources_size(), kMaxDriftResources)) {
      drift.mutable_resources()->DeleteSubrange(static_cast<int>(kMaxDriftResources),
                                                drift.resources_size() -
                                                    static_cast<int>(kMaxDriftResources));
      drift.set_truncated(true);
    }
    for (std::string& resource : *drift.mutable_resources()) {
      bound(&resource, kMaxDriftResourceBytes);
    }
  }
  if (std::cmp_greater(result.steps_size(), kMaxSteps)) {
    // Keep the most recent steps: the failing one is last.
    result.mutable_steps()->DeleteSubrange(0, result.steps_size() - static_cast<int>(kMaxSteps));
  }
  for (pb::StepResult& step : *result.mutable_steps()) {
    if (step.has_duration() && !validDuration(step.duration())) {
      step.clear_duration();
    }
  }
  if (result.has_started_at() && !validTimestamp(result.started_at())) {
    result.clear_started_at();
  }
  if (result.has_duration() && !validDuration(result.duration())) {
    result.clear_duration();
  }
}

// Compact proto3 JSON, or "" if the printer refuses (it cannot after
// normalize; the caller falls back to a minimal document).
std::string printJson(const pb::RunResult& result) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = false;
  options.preserve_proto_field_names = false;
  const auto status = google::protobuf::util::MessageToJsonString(result, &out, options);
  if (!status.ok()) {
    return {};
  }
  return out;
}

bool fits(const std::string& document) {
  return !document.empty() && document.size() <= kMaxResultBytes;
}

// Clips `*field` to the longest UTF-8-safe prefix with which the document
// fits; clears it if none does. Returns the document.
std::string clipToFit(pb::RunResult& result, std::string* field) {
  const std::string original = *field;
  std::size_t low = 0;
  std::size_t high = original.size();
  while (low < high) {
    const std::size_t middle = low + (high - low + 1) / 2;
    *field = clipText(original, middle);
    if (fits(printJson(result))) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  *field = clipText(original, low);
  return printJson(result);
}

// The last resort: what is always kept, and nothing else.
pb::RunResult minimal(const pb::RunResult& result) {
  pb::RunResult out;
  out.set_operation(result.operation());
  out.set_exit_code(result.exit_code());
  if (result.has_error()) {
    out.mutable_error()->set_kind(result.error().kind());
    out.mutable_error()->set_step(result.error().step());
  } else if (result.has_succeeded()) {
    out.mutable_succeeded();
  }
  if (result.has_plan()) {
    pb::PlanSummary& plan = *out.mutable_plan();
    plan.set_plan_hash(result.plan().plan_hash());
    plan.set_add(result.plan().add());
    plan.set_change(result.plan().change());
    plan.set_destroy(result.plan().destroy());
    plan.set_import(result.plan().import());
    plan.set_truncated(result.plan().truncated() || result.plan().resources_size() > 0);
  }
  if (result.has_drift()) {
    pb::DriftSummary& drift = *out.mutable_drift();
    drift.set_add(result.drift().add());
    drift.set_change(result.drift().change());
    drift.set_destroy(result.drift().destroy());
    drift.set_truncated(result.drift().truncated() || result.drift().resources_size() > 0);
  }
  return out;
}

absl::Status invalid(std::string_view detail) {
  return absl::InvalidArgumentError(strCat("result document: ", detail));
}

// Protobuf's JSON reader quotes the offending value ("(plan.add): invalid
// value \"...\" for type TYPE_UINT32"), which may be run output. Keep only
// the field path it starts with: names of the schema's fields and list
// indexes (unknown fields are ignored, so the document names none).
std::string protoFieldPath(std::string_view message) {
  if (!message.starts_with('(')) {
    return "";
  }
  const std::size_t close = message.find(')');
  if (close == std::string_view::npos) {
    return "";
  }
  const std::string_view path = message.substr(1, close - 1);
  const bool plain = !path.empty() && std::all_of(path.begin(), path.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '[' ||
           c == ']';
  });
  return plain ? std::string(path) : std::string();
}

absl::Status checkContract(const pb::RunResult& result) {
  std::vector<std::string> errors;
  // Proto3 enums are open: a number outside the enum parses, and would
  // reach status as an empty name. Every enum is checked against its names.
  if (operationName(result.operation()).empty()) {
    errors.emplace_back("operation is missing or unknown");
  }
  switch (result.outcome_case()) {
  case pb::RunResult::OUTCOME_NOT_SET:
    errors.emplace_back("neither succeeded nor error is set");
    break;
  case pb::RunResult::kSucceeded:
    if (result.exit_code() != 0) {
      errors.push_back(strCat("a successful run has exit code ", result.exit_code()));
    }
    break;
  case pb::RunResult::kError: {
    const pb::RunError& error = result.error();
    if (errorKindName(error.kind()).empty()) {
      errors.emplace_back("error.kind is missing or unknown");
    }
    if (error.step() != pb::STEP_UNSPECIFIED && stepName(error.step()).empty()) {
      errors.emplace_back("error.step is unknown");
    }
    if (error.kind() == pb::ERROR_KIND_STEP && error.step() == pb::STEP_UNSPECIFIED) {
      errors.emplace_back("a step error does not name its step");
    }
    if (result.exit_code() == 0) {
      errors.emplace_back("a failed run has exit code 0");
    }
    if (error.summary().size() > kMaxSummaryBytes) {
      errors.push_back(
          strCat("error.summary is ", error.summary().size(), " bytes, over ", kMaxSummaryBytes));
    }
    break;
  }
  }
  if (std::cmp_greater(result.steps_size(), kMaxSteps)) {
    errors.push_back(strCat(result.steps_size(), " steps, over ", kMaxSteps));
  }
  for (int i = 0; i < result.steps_size(); ++i) {
    if (stepName(result.steps(i).step()).empty()) {
      errors.push_back(strCat("steps[", i, "] does not name a known step"));
    }
  }
  // Copied into status.plan as it is (approvals name it), so never clipped.
  if (result.plan().plan_hash().size() > kMaxPlanHashBytes) {
    errors.push_back(strCat("plan.planHash is ", result.plan().plan_hash().size(), " bytes, over ",
                            kMaxPlanHashBytes));
  }
  if (std::cmp_greater(result.plan().resources_size(), kMaxPlanResources)) {
    errors.push_back(
        strCat(result.plan().resources_size(), " plan resources, over ", kMaxPlanResources));
  }
  for (const std::string& resource : result.plan().resources()) {
    if (resource.empty() || resource.size() > kMaxPlanResourceBytes) {
      errors.push_back(strCat("a plan resource is ", resource.size(), " bytes, want 1 to ",
                              kMaxPlanResourceBytes));
      break;
    }
  }
  if (std::cmp_greater(result.drift().resources_size(), kMaxDriftResources)) {
    errors.push_back(
        strCat(result.drift().resources_size(), " drift resources, over ", kMaxDriftResources));
  }
  for (const std::string& resource : result.drift().resources()) {
    if (resource.empty() || resource.size() > kMaxDriftResourceBytes) {
      errors.push_back(strCat("a drift resource is ", resource.size(), " bytes, want 1 to ",
                              kMaxDriftResourceBytes));
      break;
    }
  }
  if (errors.empty()) {
    return absl::OkStatus();
  }
  return invalid(strJoin(errors, "; "));
}

} // namespace

std::string_view operationName(pb::Operation operation) {
  for (const auto& entry : kOperations) {
    if (entry.value == operation) {
      return entry.name;
    }
  }
  return "";
}

absl::StatusOr<pb::Operation> parseOperation(std::string_view name) {
  for (const auto& entry : kOperations) {
    if (entry.name == name) {
      return entry.value;
    }
  }
  return absl::InvalidArgumentError(strCat(
      "unknown operation \"", name, "\": want apply, destroy, drift, refresh, restore or plan"));
}

std::string_view stepName(pb::Step step) {
  for (const auto& entry : kSteps) {
    if (entry.value == step) {
      return entry.name;
    }
  }
  return "";
}

absl::StatusOr<pb::Step> parseStep(std::string_view name) {
  for (const auto& entry : kSteps) {
    if (entry.name == name) {
      return entry.value;
    }
  }
  return absl::InvalidArgumentError(strCat("unknown step \"", name, "\""));
}

std::string_view errorKindName(pb::ErrorKind kind) {
  switch (kind) {
  case pb::ERROR_KIND_IMAGE_LAYOUT:
    return "image-layout";
  case pb::ERROR_KIND_STEP:
    return "step";
  case pb::ERROR_KIND_INTERRUPTED:
    return "interrupted";
  case pb::ERROR_KIND_BLOCKED:
    return "blocked";
  case pb::ERROR_KIND_PLAN_CHANGED:
    return "plan-changed";
  default:
    return "";
  }
}

std::string fallbackSummary(pb::Step step, int exit_code) {
  return strCat("step ", stepName(step), " exited ", exit_code, "; see the Job's logs");
}

std::string encodeResult(const pb::RunResult& input) {
  pb::RunResult result = input;
  normalize(result);
  std::string document = printJson(result);
  if (fits(document)) {
    return document;
  }
  // The drop stages, in the order of docs/runner.md#timeouts-signals-and-limits.
  const std::array<std::function<void(pb::RunResult&)>, 4> stages = {
      [](pb::RunResult& r) { r.clear_changes(); },
      [](pb::RunResult& r) {
        if (r.has_error()) {
          r.mutable_error()->clear_tail();
        }
      },
      [](pb::RunResult& r) {
        if (r.has_plan() && r.plan().resources_size() > 0) {
          r.mutable_plan()->clear_resources();
          r.mutable_plan()->set_truncated(true);
        }
        if (r.has_drift() && r.drift().resources_size() > 0) {
          r.mutable_drift()->clear_resources();
          r.mutable_drift()->set_truncated(true);
        }
      },
      [](pb::RunResult& r) { r.clear_steps(); },
  };
  for (const auto& stage : stages) {
    stage(result);
    document = printJson(result);
    if (fits(document)) {
      return document;
    }
  }
  // Free text last, least useful first: the manager knows the image it ran.
  document = clipToFit(result, result.mutable_runtime_version());
  if (fits(document)) {
    return document;
  }
  document = clipToFit(result, result.mutable_image());
  if (fits(document)) {
    return document;
  }
  if (result.has_error()) {
    document = clipToFit(result, result.mutable_error()->mutable_summary());
    if (fits(document)) {
      return document;
    }
  }
  document = printJson(minimal(result));
  assert(fits(document));
  return document;
}

absl::StatusOr<pb::RunResult> decodeResult(std::string_view text) {
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); })) {
    return invalid("the termination message is empty: the runner wrote no result");
  }
  if (text.size() > kMaxResultBytes) {
    return invalid(strCat(text.size(), " bytes, over the ", kMaxResultBytes,
                          "-byte termination message limit"));
  }
  // Syntax first, through the one JSON adapter, for an error with an offset.
  auto parsed = parseJson(text, "result document");
  if (!parsed.ok()) {
    return parsed.status();
  }
  if (!parsed->is_object()) {
    return invalid("not a JSON object");
  }
  pb::RunResult result;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(text.data(), text.size()), &result, options);
  if (!status.ok()) {
    const std::string path = protoFieldPath(std::string(status.message()));
    return invalid(strCat("does not match captf.runner.v1alpha1.RunResult",
                          path.empty() ? std::string() : strCat(" (field ", path, ")")));
  }
  if (auto contract = checkContract(result); !contract.ok()) {
    return contract;
  }
  return result;
}

} // namespace captf::contract
