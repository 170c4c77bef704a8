#include "manager/kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace captf::kube {

TokenBucket::TokenBucket(double qps, int burst, Clock& clock)
    : qps_(qps), burst_(std::max(1, burst)), clock_(clock), tokens_(burst_), last_(clock.now()) {}

Duration TokenBucket::reserve() {
  std::scoped_lock lock(mu_);
  SteadyTime now = clock_.now();
  double elapsed = std::chrono::duration<double>(now - last_).count();
  if (elapsed > 0) {
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) {
    return Duration::zero();
  }
  // The deficit is paid back at qps: later callers queue behind this one.
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(-tokens_ / qps_));
}

bool TokenBucket::wait(std::stop_token stop) {
  Duration delay = reserve();
  if (delay <= Duration::zero()) {
    return !stop.stop_requested();
  }
  return clock_.sleepFor(delay, std::move(stop));
}

ItemExponentialFailureRateLimiter::ItemExponentialFailureRateLimiter(Duration base,
                                                                     Duration max_delay)
    : base_(base), max_delay_(max_delay) {}

Duration ItemExponentialFailureRateLimiter::when(const ObjectKey& item) {
  std::scoped_lock lock(mu_);
  int exponent = failures_[item]++;
  // Compute in floating point: 2^exponent overflows integers long before
  // the cap matters.
  double delay = static_cast<double>(base_.count()) * std::pow(2.0, exponent);
  if (delay > static_cast<double>(max_delay_.count())) {
    return max_delay_;
  }
  return Duration(static_cast<Duration::rep>(delay));
}

void ItemExponentialFailureRateLimiter::forget(const ObjectKey& item) {
  std::scoped_lock lock(mu_);
  failures_.erase(item);
}

int ItemExponentialFailureRateLimiter::numRequeues(const ObjectKey& item) {
  std::scoped_lock lock(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

Duration MaxOfRateLimiter::when(const ObjectKey& item) {
  Duration longest = Duration::zero();
  for (auto& limiter : limiters_) {
    longest = std::max(longest, limiter->when(item));
  }
  return longest;
}

void MaxOfRateLimiter::forget(const ObjectKey& item) {
  for (auto& limiter : limiters_) {
    limiter->forget(item);
  }
}

int MaxOfRateLimiter::numRequeues(const ObjectKey& item) {
  int most = 0;
  for (auto& limiter : limiters_) {
    most = std::max(most, limiter->numRequeues(item));
  }
  return most;
}

std::unique_ptr<RateLimiter> defaultControllerRateLimiter(Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialFailureRateLimiter>());
  limiters.push_back(std::make_unique<BucketRateLimiter>(clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

} // namespace captf::kube
