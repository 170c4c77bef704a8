#pragma once

// Time as a seam: every component that waits or stamps takes a Clock&, so
// unit tests drive time with FakeClock instead of sleeping.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <vector>

namespace captf::kube {

using SteadyTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;
using Duration = std::chrono::nanoseconds;

class Clock {
public:
  virtual ~Clock() = default;

  // Monotonic time: deadlines, backoff, durations.
  virtual SteadyTime now() const = 0;
  // Wall time: timestamps written to the API (Lease renewTime, Event time).
  virtual WallTime wallNow() const = 0;

  // Waits on `cv` until `done()` holds, `deadline` passes on this clock, or
  // `stop` is requested; returns done(). `lock` must hold the mutex that
  // guards the state done() reads; it is held again on return. Whoever
  // changes that state notifies `cv`. Thread-safe.
  virtual bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                         std::stop_token stop, SteadyTime deadline,
                         const std::function<bool()>& done) = 0;

  // Sleeps until `deadline` or until `stop` is requested. Returns false when
  // stopped.
  bool sleepUntil(SteadyTime deadline, std::stop_token stop);
  bool sleepFor(Duration duration, std::stop_token stop) {
    return sleepUntil(now() + duration, std::move(stop));
  }
};

// The process clocks (std::chrono steady and system clocks). Stateless.
class RealClock final : public Clock {
public:
  SteadyTime now() const override { return std::chrono::steady_clock::now(); }
  WallTime wallNow() const override { return std::chrono::system_clock::now(); }
  bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                 std::stop_token stop, SteadyTime deadline,
                 const std::function<bool()>& done) override;
};

// The shared stateless RealClock.
Clock& realClock();

// A clock that moves only when a test calls advance(). Waiters blocked in
// waitUntil() wake when advance() passes their deadline. Thread-safe.
class FakeClock final : public Clock {
public:
  explicit FakeClock(WallTime wall_start = WallTime(std::chrono::seconds(1'700'000'000)));

  SteadyTime now() const override;
  WallTime wallNow() const override;
  bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                 std::stop_token stop, SteadyTime deadline,
                 const std::function<bool()>& done) override;

  // Moves both clocks forward and wakes every waiter.
  void advance(Duration duration);
  // Number of threads blocked in waitUntil() whose deadline is still ahead.
  size_t waiters() const;
  // Blocks (on a condition variable, not by sleeping) until at least `count`
  // threads wait in waitUntil() for a deadline still ahead: lets a test
  // advance time only after the component under test went to sleep again
  // (a waiter whose deadline has passed but which has not woken up yet does
  // not count).
  void awaitWaiters(size_t count) const;

private:
  struct Waiter {
    std::mutex mu; // guards alive; taken before the waiter's own mutex
    bool alive = true;
    SteadyTime deadline;
    std::mutex* user_mu = nullptr;
    std::condition_variable_any* cv = nullptr;
  };

  mutable std::mutex mu_;
  mutable std::condition_variable waiters_changed_;
  Duration offset_{0};
  SteadyTime steady_start_;
  WallTime wall_start_;
  std::vector<std::shared_ptr<Waiter>> waiters_;

  size_t pendingLocked() const;
};

} // namespace captf::kube
