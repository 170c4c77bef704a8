#include "lint/finding.h"

#include <algorithm>
#include <tuple>

namespace captf::lint {

std::string_view severityName(Severity severity) {
  switch (severity) {
  case Severity::kError:
    return "error";
  case Severity::kWarning:
    return "warning";
  case Severity::kInfo:
    return "info";
  }
  return "error";
}

void sortFindings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.file, a.line, a.id, a.message) < std::tie(b.file, b.line, b.id, b.message);
  });
}

void allowWarnings(std::vector<Finding>& findings, const std::set<std::string>& ids) {
  for (Finding& f : findings) {
    if (f.severity == Severity::kWarning && ids.contains(f.id)) {
      f.severity = Severity::kInfo;
      f.message += " (allowed by --allow-warning)";
    }
  }
}

Summary summarize(const std::vector<Finding>& findings) {
  Summary s;
  for (const Finding& f : findings) {
    switch (f.severity) {
    case Severity::kError:
      ++s.error;
      break;
    case Severity::kWarning:
      ++s.warning;
      break;
    case Severity::kInfo:
      ++s.info;
      break;
    }
  }
  return s;
}

int exitCodeFor(const Summary& summary, Strictness strictness) {
  if (summary.error > 0 || (strictness == Strictness::kStrict && summary.warning > 0)) {
    return kExitFindings;
  }
  return kExitOk;
}

} // namespace captf::lint
