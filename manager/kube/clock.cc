#include "manager/kube/clock.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "manager/kube/strings.h"

namespace captf::kube {

bool Clock::sleepUntil(SteadyTime deadline, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  waitUntil(lock, cv, stop, deadline, [] { return false; });
  return !stop.stop_requested();
}

bool RealClock::waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                          std::stop_token stop, SteadyTime deadline,
                          const std::function<bool()>& done) {
  return cv.wait_until(lock, stop, deadline, done);
}

Clock& realClock() {
  static RealClock clock;
  return clock;
}

void ServerClock::observe(std::string_view date, WallTime sent, WallTime received) {
  absl::Time parsed;
  std::string error;
  if (!absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", av(date), absl::UTCTimeZone(), &parsed,
                       &error)) {
    return;
  }
  const WallTime server = absl::ToChronoTime(parsed);
  const Duration low = server - received;
  const Duration high = server + std::chrono::seconds(1) - sent;
  if (high - low > std::chrono::seconds(2)) {
    return;
  }
  const Duration current = offset();
  if (current < low || current > high) {
    offset_ns_.store((low + (high - low) / 2).count(), std::memory_order_relaxed);
  }
}

FakeClock::FakeClock(WallTime wall_start)
    : steady_start_(std::chrono::steady_clock::time_point(std::chrono::hours(1))),
      wall_start_(wall_start) {}

SteadyTime FakeClock::now() const {
  std::scoped_lock lock(mu_);
  return steady_start_ + offset_;
}

WallTime FakeClock::wallNow() const {
  std::scoped_lock lock(mu_);
  return wall_start_ + std::chrono::duration_cast<WallTime::duration>(offset_);
}

bool FakeClock::waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                          std::stop_token stop, SteadyTime deadline,
                          const std::function<bool()>& done) {
  auto waiter = std::make_shared<Waiter>();
  waiter->user_mu = lock.mutex();
  waiter->deadline = deadline;
  waiter->cv = &cv;
  {
    std::scoped_lock clock_lock(mu_);
    waiters_.push_back(waiter);
  }
  waiters_changed_.notify_all();
  // advance() takes the waiter's mutex before notifying, so a check of now()
  // made under `lock` cannot miss a concurrent advance().
  cv.wait(lock, stop, [&] { return done() || now() >= deadline; });
  // Unregister without holding `lock`: advance() locks waiter->mu and then
  // the user mutex, so holding the user mutex here would invert that order.
  lock.unlock();
  {
    std::scoped_lock waiter_lock(waiter->mu);
    waiter->alive = false;
  }
  {
    std::scoped_lock clock_lock(mu_);
    std::erase(waiters_, waiter);
  }
  waiters_changed_.notify_all();
  lock.lock();
  return done();
}

void FakeClock::advance(Duration duration) {
  std::vector<std::shared_ptr<Waiter>> waiters;
  {
    std::scoped_lock lock(mu_);
    offset_ += duration;
    waiters = waiters_;
  }
  waiters_changed_.notify_all();
  for (const auto& waiter : waiters) {
    std::scoped_lock waiter_lock(waiter->mu);
    if (!waiter->alive) {
      continue;
    }
    { std::scoped_lock user_lock(*waiter->user_mu); }
    waiter->cv->notify_all();
  }
}

size_t FakeClock::pendingLocked() const {
  SteadyTime now = steady_start_ + offset_;
  return static_cast<size_t>(std::count_if(waiters_.begin(), waiters_.end(),
                                           [&](const auto& w) { return w->deadline > now; }));
}

size_t FakeClock::waiters() const {
  std::scoped_lock lock(mu_);
  return pendingLocked();
}

void FakeClock::awaitWaiters(size_t count) const {
  std::unique_lock lock(mu_);
  waiters_changed_.wait(lock, [&] { return pendingLocked() >= count; });
}

} // namespace captf::kube
