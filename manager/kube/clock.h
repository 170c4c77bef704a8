#pragma once

// Time as a seam: every component that waits or stamps takes a Clock&, so
// unit tests drive time with FakeClock instead of sleeping.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string_view>
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

// The API server's wall clock as this process last saw it: now() and
// waitUntil() are `local`'s; wallNow() is `local`'s wall time plus an
// offset learned from the Date header of the server's responses
// (observe()). Every time the manager compares with a time the server or
// another node wrote (a Job's creationTimestamp, a Lease's renewTime) and
// every time it writes is then on the server's clock, so a manager whose
// own clock is off does not take a running Job for one past its deadline
// (docs/decisions/kube-client.md, "Whose clock"). Thread-safe.
class ServerClock final : public Clock {
public:
  explicit ServerClock(Clock& local) : local_(local) {}

  SteadyTime now() const override { return local_.now(); }
  WallTime wallNow() const override { return local_.wallNow() + offset(); }
  bool waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                 std::stop_token stop, SteadyTime deadline,
                 const std::function<bool()>& done) override {
    return local_.waitUntil(lock, cv, std::move(stop), deadline, done);
  }

  // The local wall time, without the offset: what a caller of observe()
  // reads before sending and after the answer.
  WallTime localNow() const { return local_.wallNow(); }
  // A response's Date header (IMF-fixdate, whole seconds), the request sent
  // at `sent` and its answer read by `received` (localNow()). The server
  // wrote the header between the two, so the offset lies within
  // [date - received, date + 1 s - sent]: the offset moves to that window's
  // middle only when it lies outside (a clock off, or stepped), so clocks
  // in step keep an offset of 0. A window wider than 2 s (a slow answer)
  // or a header that does not parse tells nothing and is ignored.
  void observe(std::string_view date, WallTime sent, WallTime received);
  Duration offset() const { return Duration(offset_ns_.load(std::memory_order_relaxed)); }

private:
  Clock& local_;
  std::atomic<Duration::rep> offset_ns_{0};
};

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
