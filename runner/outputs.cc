#include "runner/outputs.h"

#include <algorithm>

#include "contract/strings.h"
#include "contract/types.h"

namespace captf::runner {
namespace {

bool withheld(std::string_view name) {
  return std::find(std::begin(kWithheldOutputs), std::end(kWithheldOutputs), name) !=
         std::end(kWithheldOutputs);
}

// §15: "" is the same as null for provider IDs.
nlohmann::json normalize(std::string_view name, nlohmann::json value) {
  if (name == contract::output::kProviderId && value.is_string() &&
      value.get_ref<const std::string&>().empty()) {
    return nullptr;
  }
  return value;
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
  OutputsReport report;
  for (const contract::OutputSpec& spec : contract::roleSpec(role).outputs) {
    const std::string name(spec.name);
    const auto entry = output_json.find(name);
    nlohmann::json value = nullptr;
    if (entry != output_json.end()) {
      if (!entry->is_object() || !entry->contains("value")) {
        report.errors.push_back(contract::strCat(name, ": output -json has no value for it"));
        continue;
      }
      value = normalize(name, entry->at("value"));
    }
    if (withheld(name)) {
      report.withheld.push_back(name);
    } else {
      report.values[name] = value;
    }
    if (value.is_null()) {
      if (spec.type->nullability == contract::Nullability::kNonNull) {
        report.pending.push_back(name);
      }
      continue;
    }
    contract::checkValue(*spec.type, value, contract::Closure::kOpen, name, report.errors);
  }
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
