#include "manager/kube/events.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "manager/kube/errors.h"
#include "manager/kube/patch.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

const GroupVersionKind kEventKind{"events.k8s.io", "v1", "Event"};
constexpr size_t kMaxNote = 1024;

std::string truncateUtf8(std::string_view text, size_t max) {
  if (text.size() <= max) {
    return std::string(text);
  }
  size_t end = max;
  // Do not cut inside a UTF-8 sequence.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  return std::string(text.substr(0, end));
}

} // namespace

KubeEventRecorder::KubeEventRecorder(Writer& writer, EventRecorderOptions options, Clock& clock,
                                     MetricsRegistry* metrics,
                                     std::shared_ptr<spdlog::logger> logger)
    : writer_(writer), options_(std::move(options)), clock_(clock), logger_(std::move(logger)) {
  if (metrics != nullptr) {
    dropped_ = &metrics
                    ->counter("captf_events_dropped_total",
                              "Events dropped because the recorder queue was full.", {})
                    .withLabels({});
  }
  last_flush_ = clock_.now().time_since_epoch().count();
  thread_ = std::jthread([this](std::stop_token stop) { loop(std::move(stop)); });
}

KubeEventRecorder::~KubeEventRecorder() {
  thread_.request_stop();
  if (thread_.joinable()) {
    thread_.join();
  }
  // The last batch is best effort; a destructor must not throw.
  try {
    flush();
  } catch (const std::exception&) { // NOLINT(bugprone-empty-catch): nothing to report to
  }
}

void KubeEventRecorder::event(const Json& regarding, EventType type, std::string_view reason,
                              std::string_view action, std::string_view note) {
  Pending pending{
      regarding,       type, std::string(reason), std::string(action), truncateUtf8(note, kMaxNote),
      clock_.wallNow()};
  {
    std::scoped_lock lock(mu_);
    if (queue_.size() >= options_.queue_capacity) {
      if (dropped_ != nullptr) {
        dropped_->inc();
      }
      return;
    }
    queue_.push_back(std::move(pending));
  }
  cv_.notify_one();
}

std::string KubeEventRecorder::keyOf(const Pending& pending, const std::string& controller) {
  const Json& r = pending.regarding;
  return absl::StrCat(r.value("apiVersion", ""), "|", r.value("kind", ""), "|", meta::ns(r), "|",
                      meta::name(r), "|", meta::uid(r), "|",
                      pending.type == EventType::kWarning ? "Warning" : "Normal", "|",
                      pending.reason, "|", pending.action, "|", controller, "|", pending.note);
}

Json KubeEventRecorder::makeEvent(const Json& regarding, EventType type, std::string_view reason,
                                  std::string_view action, std::string_view note,
                                  const EventRecorderOptions& options, WallTime now,
                                  uint64_t unique) {
  std::string ns = meta::ns(regarding);
  if (ns.empty()) {
    ns = "default"; // events about cluster-scoped objects
  }
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  Json reference = {{"apiVersion", regarding.value("apiVersion", "")},
                    {"kind", regarding.value("kind", "")},
                    {"name", meta::name(regarding)}};
  if (!meta::ns(regarding).empty()) {
    reference["namespace"] = meta::ns(regarding);
  }
  if (!meta::uid(regarding).empty()) {
    reference["uid"] = meta::uid(regarding);
  }
  if (!meta::resourceVersion(regarding).empty()) {
    reference["resourceVersion"] = meta::resourceVersion(regarding);
  }
  return {{"apiVersion", kEventKind.apiVersion()},
          {"kind", kEventKind.kind},
          {"metadata",
           {{"namespace", ns},
            {"name", absl::StrFormat("%s.%x%x", meta::name(regarding), nanos, unique)}}},
          {"eventTime", formatMicroTime(now)},
          {"reportingController", options.reporting_controller},
          {"reportingInstance", options.reporting_instance},
          {"action", std::string(action)},
          {"reason", std::string(reason)},
          {"regarding", std::move(reference)},
          {"note", std::string(note)},
          {"type", type == EventType::kWarning ? "Warning" : "Normal"}};
}

void KubeEventRecorder::process(Pending pending) {
  std::string key = keyOf(pending, options_.reporting_controller);
  auto it = series_.find(key);
  if (it != series_.end() && !it->second.name.empty() &&
      pending.time - it->second.last_observed <= options_.series_window) {
    it->second.count++;
    it->second.last_observed = pending.time;
    it->second.dirty = true;
    return;
  }
  Json event = makeEvent(pending.regarding, pending.type, pending.reason, pending.action,
                         pending.note, options_, pending.time, unique_++);
  auto created = writer_.create(event);
  if (!created.ok()) {
    logger_->warn("cannot record event reason={} object={}/{} error=\"{}\"", pending.reason,
                  meta::ns(pending.regarding), meta::name(pending.regarding),
                  msg(created.status()));
    return;
  }
  Series series;
  series.ns = meta::ns(*created);
  series.name = meta::name(*created);
  series.last_observed = pending.time;
  series_[key] = std::move(series);
}

void KubeEventRecorder::writeSeries(Series& series) {
  Json patch = {
      {"series",
       {{"count", series.count}, {"lastObservedTime", formatMicroTime(series.last_observed)}}}};
  auto patched = writer_.patch(kEventKind, {series.ns, series.name}, PatchType::kMerge, patch);
  series.dirty = false;
  if (!patched.ok()) {
    logger_->warn("cannot update event series event={}/{} error=\"{}\"", series.ns, series.name,
                  msg(patched.status()));
    if (isNotFound(patched.status())) {
      series.name.clear(); // expired (events live one hour): start anew next time
    }
  }
}

void KubeEventRecorder::flush() {
  std::deque<Pending> batch;
  {
    // A batch the loop took is written before flush() returns.
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return !in_flight_; });
    batch.swap(queue_);
  }
  std::scoped_lock work(work_mu_);
  for (auto& pending : batch) {
    process(std::move(pending));
  }
  WallTime now = clock_.wallNow();
  for (auto it = series_.begin(); it != series_.end();) {
    if (it->second.dirty) {
      writeSeries(it->second);
    }
    // Forget series past their window: a repeat would start a new Event.
    if (it->second.name.empty() || now - it->second.last_observed > options_.series_window) {
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
  last_flush_ = clock_.now().time_since_epoch().count();
}

void KubeEventRecorder::loop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    SteadyTime next_flush =
        SteadyTime(SteadyTime::duration(last_flush_.load())) + options_.flush_interval;
    clock_.waitUntil(lock, cv_, stop, next_flush, [&] { return !queue_.empty(); });
    if (stop.stop_requested()) {
      break;
    }
    std::deque<Pending> batch;
    batch.swap(queue_);
    // A flush() from now on waits for this batch (see flush).
    in_flight_ = true;
    lock.unlock();
    {
      std::scoped_lock work(work_mu_);
      for (auto& pending : batch) {
        process(std::move(pending));
      }
    }
    lock.lock();
    in_flight_ = false;
    lock.unlock();
    idle_.notify_all();
    if (clock_.now() >= next_flush) {
      flush();
    }
    lock.lock();
  }
}

} // namespace captf::kube
