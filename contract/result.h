#pragma once

// The result document: the RunResult (captf/runner/v1alpha1/result.proto)
// the runner writes to its termination message as proto3 JSON, and the
// manager reads back. Its promises:
//   - encodeResult never fails and never returns more than kMaxResultBytes;
//   - decodeResult accepts every encodeResult output and rejects anything
//     the manager could not copy into `status.lastRun` with a clear error.

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "captf/runner/v1alpha1/result.pb.h"

namespace captf::contract {

// The kubelet keeps at most this many bytes of a termination message.
inline constexpr std::size_t kMaxResultBytes = 4096;
// status.lastRun.error.summary.
inline constexpr std::size_t kMaxSummaryBytes = 512;
// status.lastRun.steps.
inline constexpr std::size_t kMaxSteps = 16;
// Bounds applied before the size cap so one field cannot starve the others.
inline constexpr std::size_t kMaxTailBytes = 2048;
inline constexpr std::size_t kMaxImageBytes = 512;
inline constexpr std::size_t kMaxRuntimeVersionBytes = 64;
inline constexpr std::size_t kMaxPlanHashBytes = 128;

// API spellings: "apply", "destroy", "drift", "refresh", "restore", "plan".
std::string_view operationName(captf::runner::v1alpha1::Operation operation);
absl::StatusOr<captf::runner::v1alpha1::Operation> parseOperation(std::string_view name);

// "prepare", "init", "force-unlock", "validate", "plan", "show-json",
// "apply", "apply-refresh-only", "destroy", "state-push", "state-list",
// "fetch".
std::string_view stepName(captf::runner::v1alpha1::Step step);
absl::StatusOr<captf::runner::v1alpha1::Step> parseStep(std::string_view name);

// "image-layout", "step", "interrupted", "blocked", "plan-changed".
std::string_view errorKindName(captf::runner::v1alpha1::ErrorKind kind);

// The fallback failure summary: "step <name> exited <code>; see the Job's
// logs".
std::string fallbackSummary(captf::runner::v1alpha1::Step step, int exit_code);

// Encodes `result` as compact proto3 JSON of at most kMaxResultBytes bytes.
//
// First every field is bounded: strings are made valid UTF-8, the summary is
// clipped to kMaxSummaryBytes, the tail, image, runtime version and plan
// hash to their bounds, plan resources to 50 and drift resources to 20
// (setting `truncated`), steps to the last kMaxSteps, and out-of-range
// timestamps and durations are cleared. Then, while the document is too
// large, it drops in this order: the resource-change counts (`changes`), the
// error tail, the plan and drift resource lists (setting `truncated`), the
// step history; then clips the runtime version, the image and finally the
// summary to what fits. The operation, outcome, exit code, error kind and
// step, plan hash and plan and drift counts are always kept.
std::string encodeResult(const captf::runner::v1alpha1::RunResult& result);

// Decodes a termination message. Unknown fields are ignored (a newer runner
// may add some). Errors (InvalidArgument, message starting "result
// document: "): empty input, more than kMaxResultBytes, invalid JSON (with
// its byte offset), a value of the wrong type, and a document that breaks
// the contract: no operation, no outcome, an error without a kind, a step
// error without its step, an enum number outside its enum (operation, error
// kind, a step), an exit code that contradicts the outcome, or lists and
// strings over the bounds above (the summary, the plan hash, resources).
// The image, the runtime version and the error tail are not refused when
// longer than their bounds: whoever copies them into status clips them
// (manager/workspace/result.cc).
absl::StatusOr<captf::runner::v1alpha1::RunResult> decodeResult(std::string_view text);

} // namespace captf::contract
