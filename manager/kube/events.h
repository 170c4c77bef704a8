#pragma once

// Kubernetes Events (events.k8s.io/v1) from controllers. Recording never
// blocks a reconcile: events go into a bounded queue drained by a background
// thread, and a full queue drops (and counts) the event. Repeats of the same
// event (same object, type, reason, action, reporting controller) within the
// series window become one Event with a series count that is patched at
// most once per flush interval, instead of one object per occurrence.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include <spdlog/logger.h>

#include "manager/kube/client.h"
#include "manager/kube/clock.h"
#include "manager/kube/metrics.h"

namespace captf::kube {

enum class EventType { kNormal, kWarning };

// Thread-safe.
class EventRecorder {
public:
  virtual ~EventRecorder() = default;
  // Records that `action` on `regarding` (an object with apiVersion, kind
  // and metadata) happened for `reason`. `note` is human-readable, cut to
  // 1 kB. Never blocks; never fails the caller.
  virtual void event(const Json& regarding, EventType type, std::string_view reason,
                     std::string_view action, std::string_view note) = 0;
};

struct EventRecorderOptions {
  std::string reporting_controller; // e.g. "captf.io/manager"
  std::string reporting_instance;   // e.g. the pod name
  size_t queue_capacity = 1000;
  // Repeats later than this after the last occurrence start a new Event
  // (client-go uses 6 minutes).
  Duration series_window = std::chrono::minutes(6);
  // How often pending series counts are written.
  Duration flush_interval = std::chrono::seconds(10);
};

class KubeEventRecorder final : public EventRecorder {
public:
  // `metrics` may be null; otherwise captf_events_dropped_total counts drops.
  KubeEventRecorder(Writer& writer, EventRecorderOptions options, Clock& clock,
                    MetricsRegistry* metrics, std::shared_ptr<spdlog::logger> logger);
  // Flushes what is queued (best effort), then stops the thread.
  ~KubeEventRecorder() override;

  void event(const Json& regarding, EventType type, std::string_view reason,
             std::string_view action, std::string_view note) override;

  // Processes everything queued now and writes pending series (tests; also
  // used on shutdown).
  void flush();

  // Builds the Event object of a first occurrence (exposed for tests).
  static Json makeEvent(const Json& regarding, EventType type, std::string_view reason,
                        std::string_view action, std::string_view note,
                        const EventRecorderOptions& options, WallTime now, uint64_t unique);

private:
  struct Pending {
    Json regarding;
    EventType type;
    std::string reason;
    std::string action;
    std::string note;
    WallTime time;
  };
  struct Series {
    std::string ns;
    std::string name; // of the Event object; empty until created
    int64_t count = 1;
    WallTime last_observed;
    bool dirty = false;
  };

  void loop(std::stop_token stop);
  void process(Pending pending);
  void writeSeries(Series& series);
  static std::string keyOf(const Pending& pending, const std::string& controller);

  Writer& writer_;
  const EventRecorderOptions options_;
  Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;
  Counter* dropped_ = nullptr;

  std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Pending> queue_;
  // The loop is writing a batch it took from queue_; flush() waits on idle_.
  bool in_flight_ = false;
  std::condition_variable idle_;

  std::mutex work_mu_; // serializes process/flush (thread vs flush())
  std::map<std::string, Series> series_;
  uint64_t unique_ = 0;
  // Steady-clock nanoseconds of the last flush; read by the loop without
  // work_mu_ (which may be held across API calls).
  std::atomic<int64_t> last_flush_{0};
  std::jthread thread_;
};

} // namespace captf::kube
