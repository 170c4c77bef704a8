#include "runner/outputs.h"

#include <algorithm>
#include <utility>

#include "contract/outputs.h"

namespace captf::runner {
namespace {

bool withheld(std::string_view name) {
  return std::find(std::begin(kWithheldOutputs), std::end(kWithheldOutputs), name) !=
         std::end(kWithheldOutputs);
}

} // namespace

std::string_view outputsStateName(OutputsState state) {
  switch (state) {
  case OutputsState::kValid:
    return "valid";
  case OutputsState::kPending:
    return "pending";
  case OutputsState::kInvalid:
    return "invalid";
  case OutputsState::kUnreadable:
    return "unreadable";
  }
  return "unreadable";
}

OutputsReport checkOutputs(contract::Role role, const nlohmann::json& output_json) {
  if (!output_json.is_object()) {
    return unreadableOutputs("output -json did not print an object");
  }
  contract::RoleOutputsCheck check = contract::checkRoleOutputs(role, output_json);
  OutputsReport report;
  for (const contract::OutputSpec& spec : contract::roleSpec(role).outputs) {
    const std::string name(spec.name);
    const auto value = check.values.find(name);
    if (value == check.values.end()) {
      continue;
    }
    if (withheld(name)) {
      report.withheld.push_back(name);
    } else {
      report.values[name] = std::move(*value);
    }
  }
  report.pending = std::move(check.pending);
  report.errors = std::move(check.errors);
  if (!report.errors.empty()) {
    report.state = OutputsState::kInvalid;
  } else if (!report.pending.empty()) {
    report.state = OutputsState::kPending;
  } else {
    report.state = OutputsState::kValid;
  }
  return report;
}

OutputsReport unreadableOutputs(std::string reason) {
  OutputsReport report;
  report.state = OutputsState::kUnreadable;
  report.errors.push_back(std::move(reason));
  return report;
}

nlohmann::json outputsJson(const OutputsReport& report, OutputsDetail detail) {
  nlohmann::json out = nlohmann::json::object();
  out["state"] = std::string(outputsStateName(report.state));
  if (detail == OutputsDetail::kStateOnly) {
    return out;
  }
  const auto put = [&out](const char* key, const std::vector<std::string>& list) {
    if (!list.empty()) {
      out[key] = list;
    }
  };
  put("pending", report.pending);
  put("errors", report.errors);
  put("withheld", report.withheld);
  if (detail == OutputsDetail::kFull && !report.values.empty()) {
    out["values"] = report.values;
  }
  return out;
}

} // namespace captf::runner
