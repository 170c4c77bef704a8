#include "manager/reports/run_reports.h"

#include <cstdio>
#include <utility>

#include <google/protobuf/util/time_util.h>

#include "contract/result.h"
#include "contract/strings.h"
#include "contract/text.h"
#include "manager/kube/object.h"

namespace captf::reports {
namespace {

namespace pb = captf::runner::v1alpha1;
using contract::strCat;
using nlohmann::json;

std::string seconds(const google::protobuf::Duration& d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fs",
                static_cast<double>(google::protobuf::util::TimeUtil::DurationToNanoseconds(d)) /
                    1e9);
  return text;
}

// The object the Job is for: its controller owner.
json regardingOf(const json& job) {
  const auto owner = kube::meta::controllerOf(job);
  if (!owner) {
    return {};
  }
  return {{"apiVersion", owner->api_version},
          {"kind", owner->kind},
          {"metadata",
           {{"name", owner->name}, {"namespace", kube::meta::ns(job)}, {"uid", owner->uid}}}};
}

std::string counts(std::uint32_t add, std::uint32_t change, std::uint32_t destroy,
                   std::string_view verbs) {
  if (verbs == "plan") {
    return strCat(add, " to add, ", change, " to change, ", destroy, " to destroy");
  }
  return strCat(add, " added, ", change, " changed, ", destroy, " destroyed");
}

} // namespace

RunReports::RunReports(kube::EventRecorder& events, RunReportsOptions options)
    : events_(events), options_(options) {}

RunReports::Run& RunReports::runOf(const std::string& uid) {
  auto found = runs_.find(uid);
  if (found != runs_.end()) {
    return found->second;
  }
  while (runs_.size() >= options_.max_runs && !order_.empty()) {
    runs_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(uid);
  return runs_[uid];
}

std::uint64_t RunReports::ingest(const json& job, const std::vector<pb::ReportRequest>& events) {
  const std::string uid = kube::meta::uid(job);
  std::vector<const pb::ReportRequest*> fresh;
  Run snapshot;
  {
    std::scoped_lock lock(mu_);
    Run& run = runOf(uid);
    for (const pb::ReportRequest& event : events) {
      if (event.sequence() <= run.sequence) {
        continue; // sent again after a failed call: taken already
      }
      run.sequence = event.sequence();
      if (event.has_opened()) {
        run.operation = std::string(contract::operationName(event.opened().operation()));
        run.image = event.opened().image();
      }
      if (event.has_log_line()) {
        run.dropped += event.log_line().dropped_before();
        std::string text = event.log_line().text();
        if (text.size() > options_.line_bytes) {
          text = contract::clipText(text, options_.line_bytes);
        }
        run.lines.push_back(std::move(text));
        if (run.lines.size() > options_.tail_lines) {
          run.lines.pop_front();
          ++run.dropped;
        }
        continue;
      }
      fresh.push_back(&event);
    }
    snapshot.operation = run.operation;
    snapshot.image = run.image;
    snapshot.sequence = run.sequence;
  }
  for (const pb::ReportRequest* event : fresh) {
    post(job, snapshot, *event);
  }
  return snapshot.sequence;
}

void RunReports::post(const json& job, const Run& run, const pb::ReportRequest& event) {
  const json regarding = regardingOf(job);
  if (regarding.is_null()) {
    return;
  }
  const std::string name = kube::meta::name(job);
  const std::string prefix = strCat(run.operation, " Job ", name, ": ");
  using kube::EventType;
  if (event.has_phase_changed() && event.phase_changed().phase() == pb::RUN_PHASE_RUNNING) {
    const std::string& version = event.phase_changed().runtime_version();
    events_.event(regarding, EventType::kNormal, "RunStarted", "Run",
                  strCat(prefix, "runtime ", version.empty() ? "(version unknown)" : version,
                         " ready, image ", run.image));
  } else if (event.has_step_started()) {
    events_.event(
        regarding, EventType::kNormal, "StepStarted", "Run",
        strCat(prefix, "step ", contract::stepName(event.step_started().step()), " started"));
  } else if (event.has_step_finished()) {
    const pb::StepResult& result = event.step_finished().result();
    const std::string step(contract::stepName(result.step()));
    if (event.step_finished().summary().empty()) {
      events_.event(regarding, EventType::kNormal, "StepSucceeded", "Run",
                    strCat(prefix, "step ", step, " succeeded in ", seconds(result.duration())));
    } else {
      events_.event(regarding, EventType::kWarning, "StepFailed", "Run",
                    strCat(prefix, "step ", step, " failed (exit ", result.exit_code(), ") after ",
                           seconds(result.duration()), ": ", event.step_finished().summary()));
    }
  } else if (event.has_plan_summary()) {
    const pb::PlanSummary& plan = event.plan_summary();
    events_.event(
        regarding, EventType::kNormal, "PlanSummary", "Run",
        strCat(prefix, "plan: ", counts(plan.add(), plan.change(), plan.destroy(), "plan")));
  } else if (event.has_resources_changed()) {
    const pb::ResourceChanges& changes = event.resources_changed();
    events_.event(regarding, EventType::kNormal, "ResourcesChanged", "Run",
                  strCat(prefix, counts(changes.add(), changes.change(), changes.destroy(), "")));
  } else if (event.has_finished()) {
    const pb::RunResult& result = event.finished().result();
    if (result.has_succeeded()) {
      events_.event(regarding, EventType::kNormal, "RunFinished", "Run",
                    strCat(prefix, "succeeded in ", seconds(result.duration())));
    } else {
      const pb::RunError& error = result.error();
      events_.event(regarding, EventType::kWarning, "RunFinished", "Run",
                    strCat(prefix, "failed in ", seconds(result.duration()), " (",
                           contract::errorKindName(error.kind()),
                           error.step() == pb::STEP_UNSPECIFIED
                               ? std::string()
                               : strCat(", step ", contract::stepName(error.step())),
                           "): ", error.summary()));
    }
  }
}

ReportedTail RunReports::tail(const std::string& job_uid) const {
  std::scoped_lock lock(mu_);
  ReportedTail tail;
  const auto found = runs_.find(job_uid);
  if (found == runs_.end()) {
    return tail;
  }
  tail.reported = true;
  tail.lines.assign(found->second.lines.begin(), found->second.lines.end());
  tail.dropped = found->second.dropped;
  return tail;
}

void RunReports::forget(const std::string& job_uid) {
  std::scoped_lock lock(mu_);
  if (runs_.erase(job_uid) > 0) {
    order_.remove(job_uid);
  }
}

std::size_t RunReports::trackedRuns() const {
  std::scoped_lock lock(mu_);
  return runs_.size();
}

} // namespace captf::reports
