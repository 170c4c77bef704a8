#pragma once

// The controller work queue, with client-go's semantics: an item is queued at
// most once (dirty set), never handed to two workers at once (processing
// set: an item added while processed is queued again on done()), delayed
// adds, per-item rate-limited retries, and shutdown with or without drain.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "manager/kube/clock.h"
#include "manager/kube/metrics.h"
#include "manager/kube/object.h"
#include "manager/kube/rate_limiter.h"

namespace captf::kube {

// The workqueue_* metrics of one queue (labels controller and name).
struct WorkQueueMetrics {
  WorkQueueMetrics(MetricsRegistry& registry, const std::string& name);
  Gauge* depth;
  Counter* adds;
  Counter* retries;
  Histogram* queue_duration;
  Histogram* work_duration;
  Gauge* unfinished_work;
  Gauge* longest_running;
};

// Thread-safe.
class WorkQueue {
public:
  // `metrics` may be null (no metrics).
  WorkQueue(std::string name, Clock& clock, std::unique_ptr<RateLimiter> limiter,
            MetricsRegistry* metrics);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `item` unless it is queued already. Ignored after shutdown.
  void add(const ObjectKey& item);
  // Queues `item` after `delay` (at once when delay <= 0). A later call with
  // an earlier time moves the item earlier; one with a later time is
  // ignored, so a pending requeue-after is never postponed by another.
  void addAfter(const ObjectKey& item, Duration delay);
  // addAfter(item, limiter.when(item)): a retry with backoff.
  void addRateLimited(const ObjectKey& item);
  // Clears the item's failure count (call after a successful reconcile).
  void forget(const ObjectKey& item);
  int numRequeues(const ObjectKey& item);

  // Blocks until an item is ready; nullopt once the queue is shut down
  // (queued items are dropped: whoever runs next lists everything again).
  // Every item returned must be passed to done().
  std::optional<ObjectKey> get();
  void done(const ObjectKey& item);

  // Stops accepting items and wakes all get() callers.
  void shutDown();
  // shutDown(), then waits until every item handed out is done(): the
  // in-flight reconciles finish.
  void shutDownWithDrain();
  bool shuttingDown() const;

  size_t len() const; // queued and ready items
  // Items delayed for later.
  size_t waiting() const;
  // Moves due delayed items into the queue; called by the delay thread, and
  // by tests after advancing a FakeClock.
  void promoteDue();

private:
  struct Delayed {
    SteadyTime ready;
    uint64_t seq;
    ObjectKey item;
    bool operator>(const Delayed& other) const {
      return ready != other.ready ? ready > other.ready : seq > other.seq;
    }
  };

  void addLocked(const ObjectKey& item);
  void delayLoop(std::stop_token stop);
  void updateUnfinishedLocked();

  const std::string name_;
  Clock& clock_;
  std::unique_ptr<RateLimiter> limiter_;
  std::optional<WorkQueueMetrics> metrics_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;       // items or shutdown (get)
  std::condition_variable_any delay_cv_; // delay heap changes
  std::condition_variable_any drain_cv_; // processing set shrank
  std::deque<ObjectKey> queue_;
  std::unordered_set<ObjectKey> dirty_;
  std::unordered_map<ObjectKey, SteadyTime> processing_; // since when
  std::unordered_map<ObjectKey, SteadyTime> added_at_;   // for queue_duration
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed_;
  std::unordered_map<ObjectKey, SteadyTime> delayed_ready_; // earliest per item
  uint64_t seq_ = 0;
  bool shutting_down_ = false;
  bool drain_ = false;
  std::jthread delay_thread_;
};

} // namespace captf::kube
