#include "contract/plan.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "contract/canonical_json.h"
#include "contract/digest.h"
#include "contract/strings.h"
#include "contract/text.h"

namespace captf::contract {
namespace {

namespace pb = captf::runner::v1alpha1;

struct Counts {
  std::uint32_t add = 0;
  std::uint32_t change = 0;
  std::uint32_t destroy = 0;
  std::uint32_t import = 0;
};

Counts countChanges(std::span<const PlannedChange> changes) {
  Counts counts;
  for (const PlannedChange& change : changes) {
    if (change.importing) {
      ++counts.import;
    }
    const auto action = classifyActions(change.actions);
    if (!action.ok()) {
      continue;
    }
    switch (*action) {
    case ChangeAction::kCreate:
      ++counts.add;
      break;
    case ChangeAction::kUpdate:
      ++counts.change;
      break;
    case ChangeAction::kDelete:
      ++counts.destroy;
      break;
    case ChangeAction::kReplace:
      ++counts.add;
      ++counts.destroy;
      break;
    case ChangeAction::kNoOp:
    case ChangeAction::kRead:
    case ChangeAction::kForget:
      break;
    }
  }
  return counts;
}

// A JSON string for an address or key; addresses from a parsed plan are
// valid UTF-8, anything else is sanitized first so hashing cannot fail.
std::string jsonQuoted(std::string_view text) {
  auto canonical = canonicalJson(nlohmann::json(sanitizeUtf8(text)));
  assert(canonical.ok());
  return canonical.ok() ? *std::move(canonical) : std::string("\"\"");
}

} // namespace

std::string_view changeActionName(ChangeAction action) {
  switch (action) {
  case ChangeAction::kNoOp:
    return "no-op";
  case ChangeAction::kCreate:
    return "create";
  case ChangeAction::kUpdate:
    return "update";
  case ChangeAction::kDelete:
    return "delete";
  case ChangeAction::kReplace:
    return "replace";
  case ChangeAction::kRead:
    return "read";
  case ChangeAction::kForget:
    return "forget";
  }
  return "no-op";
}

absl::StatusOr<ChangeAction> classifyActions(std::span<const std::string> actions) {
  if (actions.size() == 1) {
    const std::string& only = actions.front();
    if (only == "no-op") {
      return ChangeAction::kNoOp;
    }
    if (only == "create") {
      return ChangeAction::kCreate;
    }
    if (only == "update") {
      return ChangeAction::kUpdate;
    }
    if (only == "delete") {
      return ChangeAction::kDelete;
    }
    if (only == "read") {
      return ChangeAction::kRead;
    }
    if (only == "forget") {
      return ChangeAction::kForget;
    }
  } else if (actions.size() == 2) {
    const bool delete_create = actions[0] == "delete" && actions[1] == "create";
    const bool create_delete = actions[0] == "create" && actions[1] == "delete";
    if (delete_create || create_delete) {
      return ChangeAction::kReplace;
    }
  }
  std::vector<std::string> printable;
  printable.reserve(actions.size());
  for (const std::string& action : actions) {
    printable.push_back(sanitizeUtf8(action));
  }
  return absl::InvalidArgumentError(
      strCat("unknown change actions [", strJoin(printable, ","), "]"));
}

absl::StatusOr<std::vector<PlannedChange>> plannedChanges(const nlohmann::json& plan) {
  if (!plan.is_object()) {
    return absl::InvalidArgumentError("plan JSON: not an object");
  }
  std::vector<PlannedChange> out;
  const auto resource_changes = plan.find("resource_changes");
  if (resource_changes == plan.end() || resource_changes->is_null()) {
    return out;
  }
  if (!resource_changes->is_array()) {
    return absl::InvalidArgumentError("plan JSON: resource_changes is not a list");
  }
  std::size_t index = 0;
  for (const nlohmann::json& entry : *resource_changes) {
    const std::string where = strCat("plan JSON: resource_changes[", index, "]");
    ++index;
    if (!entry.is_object()) {
      return absl::InvalidArgumentError(strCat(where, ": not an object"));
    }
    const auto address = entry.find("address");
    if (address == entry.end() || !address->is_string() ||
        address->get_ref<const std::string&>().empty()) {
      return absl::InvalidArgumentError(strCat(where, ": address is missing or empty"));
    }
    const auto change = entry.find("change");
    if (change == entry.end() || !change->is_object()) {
      return absl::InvalidArgumentError(strCat(where, ": change is missing"));
    }
    const auto actions = change->find("actions");
    if (actions == change->end() || !actions->is_array()) {
      return absl::InvalidArgumentError(strCat(where, ": change.actions is missing"));
    }
    PlannedChange planned;
    planned.address = address->get<std::string>();
    for (const nlohmann::json& action : *actions) {
      if (!action.is_string()) {
        return absl::InvalidArgumentError(strCat(where, ": change.actions holds a non-string"));
      }
      planned.actions.push_back(action.get<std::string>());
    }
    if (auto classified = classifyActions(planned.actions); !classified.ok()) {
      return absl::InvalidArgumentError(
          strCat(where, " (", planned.address, "): ", classified.status().message()));
    }
    if (const auto deposed = entry.find("deposed");
        deposed != entry.end() && deposed->is_string()) {
      planned.deposed = deposed->get<std::string>();
    }
    if (const auto importing = change->find("importing");
        importing != change->end() && !importing->is_null()) {
      planned.importing = true;
    }
    out.push_back(std::move(planned));
  }
  return out;
}

std::string planHash(std::span<const PlannedChange> changes) {
  std::vector<std::string> entries;
  for (const PlannedChange& change : changes) {
    const auto action = classifyActions(change.actions);
    assert(action.ok());
    if (action.ok() && *action == ChangeAction::kNoOp && !change.importing) {
      continue;
    }
    std::string entry = strCat(jsonQuoted(change.address), "|", strJoin(change.actions, ","));
    if (change.importing) {
      entry += "|import";
    }
    if (!change.deposed.empty()) {
      entry += strCat("|", jsonQuoted(change.deposed));
    }
    entry += '\n';
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end());
  return strCat("p1:", sha256Hex(strJoin(entries, "")));
}

bool isDestructive(const PlannedChange& change) {
  return std::find(change.actions.begin(), change.actions.end(), "delete") != change.actions.end();
}

std::string formatPlanResource(std::string_view address, ChangeAction action) {
  const std::string suffix = strCat(" (", changeActionName(action), ")");
  return clipText(address, kMaxPlanResourceBytes - suffix.size()) + suffix;
}

pb::PlanSummary summarizePlan(std::span<const PlannedChange> changes, std::size_t max_resources) {
  pb::PlanSummary summary;
  summary.set_plan_hash(planHash(changes));
  const Counts counts = countChanges(changes);
  summary.set_add(counts.add);
  summary.set_change(counts.change);
  summary.set_destroy(counts.destroy);
  summary.set_import(counts.import);
  std::vector<std::pair<std::string, ChangeAction>> listed;
  for (const PlannedChange& change : changes) {
    const auto action = classifyActions(change.actions);
    if (!action.ok() || *action == ChangeAction::kNoOp) {
      continue;
    }
    listed.emplace_back(sanitizeUtf8(change.address), *action);
  }
  std::sort(listed.begin(), listed.end());
  for (std::size_t i = 0; i < listed.size() && i < max_resources; ++i) {
    summary.add_resources(formatPlanResource(listed[i].first, listed[i].second));
  }
  summary.set_truncated(listed.size() > max_resources);
  return summary;
}

pb::DriftSummary summarizeDrift(std::span<const PlannedChange> changes, std::size_t max_resources) {
  pb::DriftSummary summary;
  const Counts counts = countChanges(changes);
  summary.set_add(counts.add);
  summary.set_change(counts.change);
  summary.set_destroy(counts.destroy);
  std::set<std::string> addresses;
  for (const PlannedChange& change : changes) {
    const auto action = classifyActions(change.actions);
    if (!action.ok() || *action == ChangeAction::kNoOp) {
      continue;
    }
    addresses.insert(clipText(sanitizeUtf8(change.address), kMaxDriftResourceBytes));
  }
  std::size_t listed = 0;
  for (const std::string& address : addresses) {
    if (listed == max_resources) {
      break;
    }
    summary.add_resources(address);
    ++listed;
  }
  summary.set_truncated(addresses.size() > max_resources);
  return summary;
}

} // namespace captf::contract
