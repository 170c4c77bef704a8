#include "lint/report/output.h"

#include <set>

#include <nlohmann/json.hpp>

#include "contract/strings.h"

namespace captf::lint {

using contract::strAppend;
using contract::strCat;

namespace {

using ordered_json = nlohmann::ordered_json;

// Go's encoding/json escapes these even though JSON does not require it.
std::string goEscape(const std::string& dumped) {
  std::string out;
  out.reserve(dumped.size());
  for (std::size_t i = 0; i < dumped.size(); ++i) {
    const char c = dumped[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < dumped.size() && dumped[i + 1] == '\x80' &&
               (dumped[i + 2] == '\xA8' || dumped[i + 2] == '\xA9')) {
      out += dumped[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

absl::StatusOr<std::string> dump(const ordered_json& doc) {
  try {
    return goEscape(doc.dump(2)) + "\n";
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(strCat("the JSON encoding failed: ", e.what()));
  }
}

} // namespace

std::string renderText(const Report& report) {
  std::string out;
  if (report.image) {
    std::string platforms;
    for (const std::string& p : report.image->platforms) {
      strAppend(platforms, platforms.empty() ? "" : ", ", p);
    }
    strAppend(out, "image ", report.image->ref, " (", report.image->digest, ") platforms ",
              platforms, "\n");
  }
  for (const Finding& f : report.findings) {
    strAppend(out, severityName(f.severity), " ", f.id, " ", f.file.empty() ? "-" : f.file, ":",
              f.line, " ", f.message, "\n");
  }
  const Summary s = summarize(report.findings);
  strAppend(out, s.error, " error(s), ", s.warning, " warning(s), ", s.info, " info (read ",
            report.file_set, " files)\n");
  return out;
}

absl::StatusOr<std::string> renderJson(const Report& report) {
  ordered_json doc = ordered_json::object();
  if (report.image) {
    doc["image"] = ordered_json{{"ref", report.image->ref},
                                {"digest", report.image->digest},
                                {"platforms", report.image->platforms}};
  } else {
    doc["module"] = report.module;
  }
  doc["contract"] = report.contract;
  doc["role"] = report.role;
  ordered_json findings = ordered_json::array();
  for (const Finding& f : report.findings) {
    ordered_json item = ordered_json::object();
    item["id"] = f.id;
    item["severity"] = std::string(severityName(f.severity));
    item["file"] = f.file;
    item["line"] = f.line;
    item["message"] = f.message;
    findings.push_back(std::move(item));
  }
  doc["findings"] = std::move(findings);
  const Summary s = summarize(report.findings);
  doc["summary"] = ordered_json{{"error", s.error}, {"warning", s.warning}, {"info", s.info}};
  return dump(doc);
}

absl::StatusOr<std::string> renderSarif(const Report& report, std::string_view tool_version) {
  std::set<std::string> rule_ids;
  for (const Finding& f : report.findings) {
    rule_ids.insert(f.id);
  }
  ordered_json rules = ordered_json::array();
  for (const std::string& id : rule_ids) {
    rules.push_back(ordered_json{{"id", id}});
  }
  ordered_json results = ordered_json::array();
  for (const Finding& f : report.findings) {
    ordered_json result = ordered_json::object();
    result["ruleId"] = f.id;
    result["level"] = f.severity == Severity::kError     ? "error"
                      : f.severity == Severity::kWarning ? "warning"
                                                         : "note";
    result["message"] = ordered_json{{"text", f.message}};
    ordered_json location = ordered_json::object();
    if (!f.file.empty()) {
      ordered_json physical = ordered_json::object();
      // Image paths are absolute: no base id.
      physical["artifactLocation"] =
          f.file.starts_with('/') ? ordered_json{{"uri", f.file}}
                                  : ordered_json{{"uri", f.file}, {"uriBaseId", "MODULEROOT"}};
      if (f.line > 0) {
        physical["region"] = ordered_json{{"startLine", f.line}};
      }
      location["physicalLocation"] = std::move(physical);
    } else {
      location["logicalLocations"] = ordered_json::array(
          {report.image ? ordered_json{{"name", report.image->ref}, {"kind", "image"}}
                        : ordered_json{{"name", report.module}, {"kind", "module"}}});
    }
    result["locations"] = ordered_json::array({std::move(location)});
    results.push_back(std::move(result));
  }
  ordered_json run = ordered_json::object();
  run["tool"] = ordered_json{{"driver", ordered_json{{"name", "tfcapi-lint"},
                                                     {"version", std::string(tool_version)},
                                                     {"rules", std::move(rules)}}}};
  run["properties"] = ordered_json{{"contract", report.contract}, {"role", report.role}};
  run["results"] = std::move(results);
  ordered_json doc = ordered_json::object();
  doc["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json";
  doc["version"] = "2.1.0";
  doc["runs"] = ordered_json::array({std::move(run)});
  return dump(doc);
}

} // namespace captf::lint
