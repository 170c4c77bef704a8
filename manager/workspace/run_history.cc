#include "manager/workspace/run_history.h"

#include <algorithm>

namespace captf::workspace {

using nlohmann::json;

json withRunRecord(const ObjectRef& ref, const json& existing, const json& record) {
  json runs = json::array();
  if (existing.is_object()) {
    const auto data = existing.find("data");
    if (data != existing.end() && data->is_object()) {
      const auto text = data->find(std::string(kRunHistoryKey));
      if (text != data->end() && text->is_string()) {
        json parsed = json::parse(text->get<std::string>(), nullptr, /*allow_exceptions=*/false);
        if (parsed.is_array()) {
          runs = std::move(parsed);
        }
      }
    }
  }
  const std::string job = record.value("job", "");
  json kept = json::array({record});
  for (const json& run : runs) {
    if (run.is_object() && run.value("job", "") != job) {
      kept.push_back(run);
    }
  }
  std::stable_sort(kept.begin(), kept.end(), [](const json& a, const json& b) {
    return a.value("finishTime", "") > b.value("finishTime", "");
  });
  if (kept.size() > kRunHistoryLimit) {
    kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(kRunHistoryLimit), kept.end());
  }
  json labels = json::object();
  for (const auto& [key, value] : ownerLabels(ref)) {
    labels[key] = value;
  }
  json metadata = {{"name", runHistoryName(ref)},
                   {"namespace", ref.ns},
                   {"labels", labels},
                   {"ownerReferences", json::array({ownerReference(ref)})}};
  if (existing.is_object()) {
    const auto rv = existing.find("metadata");
    if (rv != existing.end() && rv->contains("resourceVersion")) {
      metadata["resourceVersion"] = (*rv)["resourceVersion"];
    }
  }
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", metadata},
          {"data", {{std::string(kRunHistoryKey), kept.dump(2)}}}};
}

} // namespace captf::workspace
