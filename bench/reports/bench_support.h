#pragma once

// What the run-report benchmarks share (bench/reports, bench/runner): an
// EventRecorder that counts instead of writing, so a figure is the report
// path and not the API server, and reading a whole file.
#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "manager/kube/events.h"

namespace captf::bench {

class CountingEvents final : public kube::EventRecorder {
public:
  void event(const nlohmann::json&, kube::EventType, std::string_view, std::string_view,
             std::string_view) override {
    count.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<long> count{0};
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace captf::bench
