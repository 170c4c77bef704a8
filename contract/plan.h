#pragma once

// Plans as the contract sees them (docs/behaviour/jobs.md, approval.md): the resource changes
// of `<runtime> show -json <planfile>`, the plan hash an approval names, the
// plan and drift summaries the result document carries, and the
// destructive-plan test of the cluster guard.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/statusor.h"
#include "captf/runner/v1alpha1/result.pb.h"

namespace captf::contract {

inline constexpr std::size_t kMaxPlanResources = 50;
inline constexpr std::size_t kMaxDriftResources = 20;
// Entry length limits of PlanPreview.resources and DriftSummary.resources.
inline constexpr std::size_t kMaxPlanResourceBytes = 600;
inline constexpr std::size_t kMaxDriftResourceBytes = 512;

// The action of one resource change, as the API spells it.
enum class ChangeAction { kNoOp, kCreate, kUpdate, kDelete, kReplace, kRead, kForget };

// "no-op", "create", "update", "delete", "replace", "read", "forget".
std::string_view changeActionName(ChangeAction action);

// One entry of the plan's `resource_changes`.
struct PlannedChange {
  // The full address, module path and instance key included.
  std::string address{};
  // `change.actions` as the plan lists them; ["delete","create"] and
  // ["create","delete"] are both replacements, and their order matters.
  std::vector<std::string> actions{};
  // The deposed object key, or "" for the current object.
  std::string deposed{};
  // Whether the change imports the object (`change.importing`).
  bool importing = false;
};

// Classifies a change's action list. Errors on an empty or unknown list.
absl::StatusOr<ChangeAction> classifyActions(std::span<const std::string> actions);

// Extracts the resource changes from a parsed `show -json` plan. A plan
// without `resource_changes` has none. Errors (InvalidArgument, naming the
// index) on entries without a string `address` or with `change.actions`
// that is not a known action list.
absl::StatusOr<std::vector<PlannedChange>> plannedChanges(const nlohmann::json& plan);

// `p1:<sha256 hex>` over the sorted entries of every change that is not a
// pure no-op (an import with a no-op action counts). Each entry is the
// canonical JSON string of the address, "|", the actions joined by ",",
// then "|import" if importing and "|" plus the canonical JSON of the deposed
// key if deposed, then "\n"; entries are sorted bytewise and concatenated.
// Values never enter the hash: two plans touching the same addresses with
// the same actions hash equally. The empty plan hashes the empty string.
// Changes must have valid action lists (as from plannedChanges).
std::string planHash(std::span<const PlannedChange> changes);

// Whether a change deletes an object: a delete or a replacement in either
// order (what the destructive-plan guard stops on).
bool isDestructive(const PlannedChange& change);

// "<address> (<action>)", at most kMaxPlanResourceBytes (a long address is
// clipped with "...").
std::string formatPlanResource(std::string_view address, ChangeAction action);

// The plan summary of the result document: the hash, counts (replacements
// count as one add and one destroy; imports separately) and up to
// `max_resources` entries "<address> (<action>)" sorted by address
// (pure imports and no-ops are not listed), `truncated` when fewer are
// listed than the plan changes.
captf::runner::v1alpha1::PlanSummary summarizePlan(std::span<const PlannedChange> changes,
                                                   std::size_t max_resources = kMaxPlanResources);

// The drift summary of a drift run: counts as for plans and up to
// `max_resources` sorted, distinct addresses.
captf::runner::v1alpha1::DriftSummary
summarizeDrift(std::span<const PlannedChange> changes,
               std::size_t max_resources = kMaxDriftResources);

} // namespace captf::contract
