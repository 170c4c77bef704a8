#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// Findings and the report they form (docs/lint.md).
namespace captf::lint {

enum class Severity { kError, kWarning, kInfo };

// "error", "warning", "info".
std::string_view severityName(Severity severity);

struct Finding {
  std::string id; // "input/required"
  Severity severity = Severity::kError;
  // Relative to the module directory; "" with line 0 means the module as a whole.
  std::string file;
  uint32_t line = 0;
  std::string message;

  friend bool operator==(const Finding&, const Finding&) = default;
};

struct Summary {
  int error = 0;
  int warning = 0;
  int info = 0;
};

// Sorts by file ("" first), line, id, then message.
void sortFindings(std::vector<Finding>& findings);

// --allow-warning: each *warning* whose id is listed becomes info, and its
// message gets " (allowed by --allow-warning)". Errors are never downgraded.
void allowWarnings(std::vector<Finding>& findings, const std::set<std::string>& ids);

Summary summarize(const std::vector<Finding>& findings);

// Exit codes (docs/lint.md#exit-codes).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitUnparsable = 2;
inline constexpr int kExitUsage = 3;

enum class Strictness { kDefault, kStrict };

// kExitFindings when there is an error, or a warning under --strict; info
// never counts.
int exitCodeFor(const Summary& summary, Strictness strictness);

// Image mode: what was checked (the JSON "image" object, the text header).
struct ImageInfo {
  std::string ref;                    // as given
  std::string digest;                 // of the index or image the reference names
  std::vector<std::string> platforms; // the checked ones, "os/arch[/variant]"
};

// A report of either mode.
struct Report {
  std::string module;             // module mode: the positional argument, verbatim
  std::optional<ImageInfo> image; // image mode only
  std::string contract;
  std::string role;
  // "terraform", "opentofu", or "no module".
  std::string file_set;
  std::vector<Finding> findings; // sorted
};

} // namespace captf::lint
