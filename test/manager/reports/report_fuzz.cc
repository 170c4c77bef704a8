// libFuzzer target for what the manager does with the run reports it
// receives (docs/decisions/run-reports.md). A Job's report token is readable
// by the module's own code, so an authenticated caller is still hostile.
// The bytes are what the report server reads off its calls: gRPC messages,
// each framed as on the wire (a flag byte, a 4-byte big-endian length, a
// serialized ReportRequest). A frame whose flag byte is 0 is a message of
// the current call; any other flag byte ends the call (its payload is
// skipped), and its low bit picks the Job of the next call: one whose
// controller owner gets the Events, or one without (nothing is posted). The
// end of the input ends the last call.
//
// Each call is held to the server's bounds (ReportServerLimits' defaults:
// the same figures ReportServer applies before RunReports::ingest sees a
// batch): a call with a message over max_message_bytes or that does not
// parse (gRPC fails the call), with more than max_events_per_call events
// or more than max_call_bytes bytes (RESOURCE_EXHAUSTED) delivers nothing.
// Each delivered batch goes to two RunReports: one with the manager's
// options and one with tiny bounds (every clip and eviction path).
// Invariants:
//   - no crash, leak or undefined behaviour;
//   - the sequence accepted never goes back while the run is tracked (a
//     run forgotten beyond max_runs starts again), and covers the batch;
//   - the tail kept is at most tail_lines lines of at most line_bytes
//     bytes each, valid UTF-8 (it goes into the run history in status);
//   - at most one Event per event taken, each with a known reason, a
//     valid UTF-8 note, and only on the Job's controller owner.
// Inputs go up to 1 MiB, a call's max_call_bytes (LLVMFuzzerInitialize sets
// -max_len unless given one). Run:
//   build/fuzz/test/manager/reports/reports_ingest_fuzz -max_total_time=600
//       /tmp/report-corpus test/manager/reports/fuzz/corpus
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "captf/runner/v1alpha1/report.pb.h"
#include "manager/kube/events.h"
#include "manager/kube/object.h"
#include "manager/reports/report_server.h"
#include "manager/reports/run_reports.h"
#include "test/fuzz_check.h"

namespace {

namespace pb = captf::runner::v1alpha1;
using captf::fuzz::check;
using captf::fuzz::checkText;
using nlohmann::json;

class CountingEvents final : public captf::kube::EventRecorder {
public:
  void event(const json& regarding, captf::kube::EventType /*type*/, std::string_view reason,
             std::string_view action, std::string_view note) override {
    static const std::set<std::string_view> kReasons = {
        "RunStarted",  "StepStarted",      "StepSucceeded", "StepFailed",
        "PlanSummary", "ResourcesChanged", "RunFinished"};
    check(kReasons.contains(reason), "an Event has a known reason");
    check(action == "Run", "an Event's action is Run");
    check(regarding.value("kind", "") == "TerraformCluster",
          "Events go to the Job's controller owner");
    checkText(note, note.size(), "an Event's note");
    std::scoped_lock lock(mu_);
    ++posted_;
  }
  std::size_t posted() const {
    std::scoped_lock lock(mu_);
    return posted_;
  }

private:
  mutable std::mutex mu_;
  std::size_t posted_ = 0;
};

json job(bool owned) {
  const std::string name = owned ? "tfc-demo-apply-7c9d2" : "stray-job";
  json j = {{"apiVersion", "batch/v1"},
            {"kind", "Job"},
            {"metadata", {{"name", name}, {"namespace", "tenant"}, {"uid", "uid-" + name}}}};
  if (owned) {
    j["metadata"]["ownerReferences"] = {{{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                                         {"kind", "TerraformCluster"},
                                         {"name", "demo"},
                                         {"uid", "tc-uid"},
                                         {"controller", true}}};
  }
  return j;
}

struct Sink {
  captf::reports::RunReportsOptions options;
  CountingEvents events;
  captf::reports::RunReports reports;
  std::uint64_t accepted[2] = {0, 0};

  explicit Sink(captf::reports::RunReportsOptions o) : options(o), reports(events, o) {}

  void deliver(bool owned, const std::vector<pb::ReportRequest>& batch) {
    const json& j = owned ? ownedJob() : strayJob();
    std::uint64_t& last = accepted[owned ? 0 : 1];
    if (!reports.tail(captf::kube::meta::uid(j)).reported) {
      last = 0; // not tracked: never seen, or forgotten beyond max_runs
    }
    const std::size_t before = events.posted();
    const std::uint64_t through = reports.ingest(j, batch);
    std::uint64_t highest = 0;
    for (const pb::ReportRequest& event : batch) {
      highest = std::max(highest, event.sequence());
    }
    check(through >= last, "the accepted sequence never goes back");
    check(through >= highest, "the accepted sequence covers the batch");
    last = through;
    check(events.posted() - before <= batch.size(), "at most one Event per event");
    const captf::reports::ReportedTail tail = reports.tail(captf::kube::meta::uid(j));
    check(tail.lines.size() <= options.tail_lines, "the tail keeps at most tail_lines lines");
    for (const std::string& line : tail.lines) {
      checkText(line, options.line_bytes, "a tail line");
    }
    check(reports.trackedRuns() <= options.max_runs, "at most max_runs runs are tracked");
  }

  static const json& ownedJob() {
    static const json kJob = job(true);
    return kJob;
  }
  static const json& strayJob() {
    static const json kJob = job(false);
    return kJob;
  }
};

std::uint32_t bigEndian32(std::string_view bytes) {
  std::uint32_t value = 0;
  for (const char c : bytes.substr(0, 4)) {
    value = (value << 8) | static_cast<unsigned char>(c);
  }
  return value;
}

} // namespace

// Without a -max_len of its own, a run gets -max_len=1048576.
// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer looks for.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  captf::fuzz::defaultMaxLen(argc, argv, captf::contract::kMaxReportCallBytes);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const captf::reports::ReportServerLimits limits;
  Sink manager_sink(captf::reports::RunReportsOptions{});
  Sink tiny_sink(
      captf::reports::RunReportsOptions{.tail_lines = 2, .line_bytes = 5, .max_runs = 1});

  std::string_view rest(reinterpret_cast<const char*>(data), size);
  bool owned = true;
  std::vector<pb::ReportRequest> batch;
  std::size_t bytes = 0;
  bool refused = false; // the call broke a bound: it delivers nothing
  const auto end_call = [&] {
    if (!refused) {
      manager_sink.deliver(owned, batch);
      tiny_sink.deliver(owned, batch);
    }
    batch.clear();
    bytes = 0;
    refused = false;
  };
  while (rest.size() >= 5) {
    const auto flag = static_cast<unsigned char>(rest[0]);
    const std::size_t length = std::min<std::size_t>(bigEndian32(rest.substr(1)), rest.size() - 5);
    const std::string_view message = rest.substr(5, length);
    rest.remove_prefix(5 + length);
    if (flag != 0) {
      end_call();
      owned = (flag & 1U) == 0;
      continue;
    }
    if (refused) {
      continue;
    }
    pb::ReportRequest event;
    if (message.size() > limits.max_message_bytes ||
        !event.ParseFromArray(message.data(), static_cast<int>(message.size())) ||
        batch.size() >= limits.max_events_per_call) {
      refused = true;
      continue;
    }
    bytes += event.ByteSizeLong();
    if (bytes > limits.max_call_bytes) {
      refused = true;
      continue;
    }
    batch.push_back(std::move(event));
  }
  end_call();
  return 0;
}
