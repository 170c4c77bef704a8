#pragma once

// The generated reference pages of docs/reference/: flags.md, metrics.md,
// conditions.md and events.md, rendered from the code that defines them
// (docs/decisions/docs-site.md):
// - flags: manager/flags's defineManagerFlags, the manager's own CLI11 app;
// - metrics: the registry of a manager wired as main.cc wires it (offline:
//   nothing connects), listed by MetricsRegistry::describe();
// - conditions: the constants of manager/api/conditions.h, grouped by the
//   catalogue in reference_pages.cc, polarity from manager/lifecycle;
// - events: the Event reasons found at every `event(...)` call of manager/
//   and webhooks/, explained by the catalogue in reference_pages.cc.
// Generation fails (never writes a page that hides a gap) when a constant,
// an Event reason or an indirect reason expression is not in the catalogue,
// or the catalogue names one the code no longer has.

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace captf::docs {

// How a stale page is regenerated, for messages.
inline constexpr char kRegenerate[] = "bash scripts/docs-reference.sh";

struct ReferencePage {
  std::string path; // relative to the repository root
  std::string contents;
};

// All four pages. `source_dir` is the repository (conditions.h and the
// sources the Event scan reads).
absl::StatusOr<std::vector<ReferencePage>> referencePages(const std::filesystem::path& source_dir);

std::string flagsPage();
absl::StatusOr<std::string> metricsPage();
absl::StatusOr<std::string> conditionsPage(const std::string& conditions_header);
// `sources`: path relative to the repository -> contents.
absl::StatusOr<std::string> eventsPage(const std::map<std::string, std::string>& sources,
                                       const std::string& conditions_header);

// --- the pieces, exposed for their tests ---------------------------------

// `inline constexpr std::string_view kName = "value";` of a header:
// name -> value.
std::map<std::string, std::string> stringConstants(const std::string& header);

// One `event(...)` call whose arguments name an EventType.
struct EventSite {
  std::string file;
  std::set<std::string> types; // "Normal", "Warning"
  // Reasons given as literals or as conditions.h constants.
  std::set<std::string> reasons;
  // Reason expressions that are neither (a variable, a function call),
  // whitespace collapsed.
  std::vector<std::string> indirect;
};

// Every Event call site of `sources`, reasons resolved through `constants`.
std::vector<EventSite> scanEventSites(const std::map<std::string, std::string>& sources,
                                      const std::map<std::string, std::string>& constants);

// Comments removed (`//` to the line's end, `/* */`), string and character
// literals kept as they are, line breaks kept.
std::string withoutComments(const std::string& source);

// The condition reasons a source sets: the argument after a condition
// status (`ConditionStatus::kX`, or a ternary of two) in a call or a brace
// list (`pass.set(type, ConditionStatus::kFalse, reason, ...)`,
// `ConditionUpdate{type, ConditionStatus::kTrue, reason, ...}`), and string
// literals assigned to a `.reason` member.
struct ConditionReasonSites {
  // Reasons given as literals or conditions.h constants -> files.
  std::map<std::string, std::set<std::string>> reasons;
  // Reason arguments that are neither, whitespace collapsed.
  std::set<std::string> indirect;
};
ConditionReasonSites scanConditionReasons(const std::map<std::string, std::string>& sources,
                                          const std::map<std::string, std::string>& constants);

} // namespace captf::docs
