#include "manager/kube/workqueue.h"

#include <algorithm>

namespace captf::kube {
namespace {

double seconds(Duration d) {
  return std::chrono::duration<double>(d).count();
}

// How often the delay thread refreshes the unfinished-work gauges.
constexpr Duration kGaugeRefresh = std::chrono::milliseconds(500);

} // namespace

WorkQueueMetrics::WorkQueueMetrics(MetricsRegistry& registry, const std::string& name) {
  std::vector<std::string> labels{"controller", "name"};
  std::vector<std::string> values{name, name};
  auto buckets = exponentialBuckets(10e-9, 10, 12);
  depth =
      &registry.gauge("workqueue_depth", "Current depth of workqueue", labels).withLabels(values);
  adds =
      &registry.counter("workqueue_adds_total", "Total number of adds handled by workqueue", labels)
           .withLabels(values);
  retries = &registry
                 .counter("workqueue_retries_total", "Total number of retries handled by workqueue",
                          labels)
                 .withLabels(values);
  queue_duration =
      &registry
           .histogram("workqueue_queue_duration_seconds",
                      "How long in seconds an item stays in workqueue before being requested",
                      labels, buckets)
           .withLabels(values);
  work_duration = &registry
                       .histogram("workqueue_work_duration_seconds",
                                  "How long in seconds processing an item from workqueue takes",
                                  labels, buckets)
                       .withLabels(values);
  unfinished_work =
      &registry
           .gauge("workqueue_unfinished_work_seconds",
                  "How many seconds of work has been done that is in progress and hasn't been "
                  "observed by work_duration. Large values indicate stuck threads. One can deduce "
                  "the number of stuck threads by observing the rate at which this increases.",
                  labels)
           .withLabels(values);
  longest_running =
      &registry
           .gauge("workqueue_longest_running_processor_seconds",
                  "How many seconds has the longest running processor for workqueue been running.",
                  labels)
           .withLabels(values);
}

WorkQueue::WorkQueue(std::string name, Clock& clock, std::unique_ptr<RateLimiter> limiter,
                     MetricsRegistry* metrics)
    : name_(std::move(name)), clock_(clock), limiter_(std::move(limiter)) {
  if (metrics != nullptr) {
    metrics_.emplace(*metrics, name_);
  }
  delay_thread_ = std::jthread([this](std::stop_token stop) { delayLoop(std::move(stop)); });
}

WorkQueue::~WorkQueue() {
  shutDown();
  delay_thread_.request_stop();
}

void WorkQueue::addLocked(const ObjectKey& item) {
  if (shutting_down_ || dirty_.contains(item)) {
    return;
  }
  dirty_.insert(item);
  added_at_.try_emplace(item, clock_.now());
  if (metrics_) {
    metrics_->adds->inc();
  }
  if (processing_.contains(item)) {
    return; // queued again by done()
  }
  queue_.push_back(item);
  if (metrics_) {
    metrics_->depth->set(static_cast<double>(queue_.size()));
  }
  cv_.notify_one();
}

void WorkQueue::add(const ObjectKey& item) {
  std::scoped_lock lock(mu_);
  addLocked(item);
}

void WorkQueue::addAfter(const ObjectKey& item, Duration delay) {
  std::scoped_lock lock(mu_);
  if (shutting_down_) {
    return;
  }
  if (metrics_) {
    metrics_->retries->inc();
  }
  if (delay <= Duration::zero()) {
    addLocked(item);
    return;
  }
  SteadyTime ready = clock_.now() + delay;
  auto [it, inserted] = delayed_ready_.try_emplace(item, ready);
  if (!inserted) {
    if (it->second <= ready) {
      return;
    }
    it->second = ready; // the older heap entry turns stale and is skipped
  }
  delayed_.push({ready, seq_++, item});
  delay_cv_.notify_all();
}

void WorkQueue::addRateLimited(const ObjectKey& item) {
  addAfter(item, limiter_->when(item));
}

void WorkQueue::forget(const ObjectKey& item) {
  limiter_->forget(item);
}

int WorkQueue::numRequeues(const ObjectKey& item) {
  return limiter_->numRequeues(item);
}

std::optional<ObjectKey> WorkQueue::get() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty() || shutting_down_; });
  if (shutting_down_) {
    return std::nullopt;
  }
  ObjectKey item = std::move(queue_.front());
  queue_.pop_front();
  SteadyTime now = clock_.now();
  if (metrics_) {
    metrics_->depth->set(static_cast<double>(queue_.size()));
    if (auto it = added_at_.find(item); it != added_at_.end()) {
      metrics_->queue_duration->observe(seconds(now - it->second));
    }
  }
  added_at_.erase(item);
  processing_.emplace(item, now);
  dirty_.erase(item);
  return item;
}

void WorkQueue::done(const ObjectKey& item) {
  std::scoped_lock lock(mu_);
  auto it = processing_.find(item);
  if (it == processing_.end()) {
    return;
  }
  if (metrics_) {
    metrics_->work_duration->observe(seconds(clock_.now() - it->second));
  }
  processing_.erase(it);
  if (dirty_.contains(item) && !shutting_down_) {
    queue_.push_back(item);
    if (metrics_) {
      metrics_->depth->set(static_cast<double>(queue_.size()));
    }
    cv_.notify_one();
  }
  if (processing_.empty()) {
    drain_cv_.notify_all();
  }
}

void WorkQueue::shutDown() {
  std::scoped_lock lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
  delay_cv_.notify_all();
}

void WorkQueue::shutDownWithDrain() {
  std::unique_lock lock(mu_);
  shutting_down_ = true;
  drain_ = true;
  cv_.notify_all();
  delay_cv_.notify_all();
  drain_cv_.wait(lock, [&] { return processing_.empty(); });
}

bool WorkQueue::shuttingDown() const {
  std::scoped_lock lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::len() const {
  std::scoped_lock lock(mu_);
  return queue_.size();
}

size_t WorkQueue::waiting() const {
  std::scoped_lock lock(mu_);
  return delayed_ready_.size();
}

void WorkQueue::promoteDue() {
  std::scoped_lock lock(mu_);
  SteadyTime now = clock_.now();
  while (!delayed_.empty() && delayed_.top().ready <= now) {
    Delayed next = delayed_.top();
    delayed_.pop();
    auto it = delayed_ready_.find(next.item);
    if (it == delayed_ready_.end() || it->second != next.ready) {
      continue; // superseded by an earlier addAfter
    }
    delayed_ready_.erase(it);
    addLocked(next.item);
  }
}

void WorkQueue::updateUnfinishedLocked() {
  if (!metrics_) {
    return;
  }
  SteadyTime now = clock_.now();
  double total = 0;
  double longest = 0;
  for (const auto& [item, since] : processing_) {
    double s = seconds(now - since);
    total += s;
    longest = std::max(longest, s);
  }
  metrics_->unfinished_work->set(total);
  metrics_->longest_running->set(longest);
}

void WorkQueue::delayLoop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested() && !shutting_down_) {
    SteadyTime now = clock_.now();
    SteadyTime deadline = now + kGaugeRefresh;
    if (!delayed_.empty()) {
      deadline = std::min(deadline, delayed_.top().ready);
    }
    uint64_t seen = seq_;
    clock_.waitUntil(lock, delay_cv_, stop, deadline,
                     [&] { return shutting_down_ || seq_ != seen; });
    if (shutting_down_ || stop.stop_requested()) {
      break;
    }
    updateUnfinishedLocked();
    lock.unlock();
    promoteDue();
    lock.lock();
  }
}

} // namespace captf::kube
