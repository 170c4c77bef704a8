#pragma once

// The run history of an object (docs/decisions/run-reports.md): the last
// kRunHistoryLimit finished runs in a ConfigMap `captf-runs-<c|m|mp>-<name>`
// owned by the object, so that a failed run can be understood after its
// pod is gone:
//   kubectl get configmap captf-runs-c-<name> -o jsonpath='{.data.runs\.json}'
// `runs.json` is a JSON array, newest first, of records:
//   {"job", "operation", "attempt", "result", "startTime", "finishTime",
//    "durationSeconds", "steps": [{"step", "exitCode", "durationSeconds"}],
//    "changes": {"add", "change", "destroy", "import"},
//    "error": {"kind", "step", "summary"},
//    "logTail": ["…"], "logLinesDropped", "logTailSource": "reports"|"none"}
// Nothing in it is a value of the run: the steps, counts and the curated
// summary come from the termination message, the log lines from the
// runner's reports, redacted by the runner before they were sent.

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "manager/workspace/names.h"

namespace captf::workspace {

inline constexpr std::size_t kRunHistoryLimit = 10;
inline constexpr std::string_view kRunHistoryKey = "runs.json";

// The ConfigMap with `record` added (a record of the same job replaced),
// newest first by finishTime, at most kRunHistoryLimit records. `existing`
// is the current ConfigMap or null; its resourceVersion is kept for the
// update. An unreadable runs.json starts over.
nlohmann::json withRunRecord(const ObjectRef& ref, const nlohmann::json& existing,
                             const nlohmann::json& record);

} // namespace captf::workspace
