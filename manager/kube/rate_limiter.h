#pragma once

// Rate limiting: a token bucket (client-side QPS/burst, and the overall
// bucket of the work queue) and the per-item limiters of client-go's
// workqueue package.

#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "manager/kube/clock.h"
#include "manager/kube/object.h"

namespace captf::kube {

// `qps` tokens per second, at most `burst` saved. Thread-safe.
class TokenBucket {
public:
  TokenBucket(double qps, int burst, Clock& clock);
  // Takes a token now and returns how long the caller must wait before
  // using it (0 when one was available). Tokens are handed out in order.
  Duration reserve();
  // reserve() and then sleep on the clock; false when stopped first.
  bool wait(std::stop_token stop);

private:
  const double qps_;
  const double burst_;
  Clock& clock_;
  std::mutex mu_;
  double tokens_;
  SteadyTime last_;
};

// How long to wait before processing an item again. Thread-safe.
class RateLimiter {
public:
  virtual ~RateLimiter() = default;
  // The delay before `item` may be retried; counts a failure.
  virtual Duration when(const ObjectKey& item) = 0;
  // The item succeeded: forget its failures.
  virtual void forget(const ObjectKey& item) = 0;
  virtual int numRequeues(const ObjectKey& item) = 0;
};

// base * 2^failures, capped at max_delay (5 ms .. 1000 s by default).
class ItemExponentialFailureRateLimiter final : public RateLimiter {
public:
  ItemExponentialFailureRateLimiter(Duration base = std::chrono::milliseconds(5),
                                    Duration max_delay = std::chrono::seconds(1000));
  Duration when(const ObjectKey& item) override;
  void forget(const ObjectKey& item) override;
  int numRequeues(const ObjectKey& item) override;

private:
  const Duration base_;
  const Duration max_delay_;
  std::mutex mu_;
  std::unordered_map<ObjectKey, int> failures_;
};

// An overall token bucket shared by all items (10 qps, burst 100 by default).
class BucketRateLimiter final : public RateLimiter {
public:
  BucketRateLimiter(Clock& clock, double qps = 10, int burst = 100) : bucket_(qps, burst, clock) {}
  Duration when(const ObjectKey&) override { return bucket_.reserve(); }
  void forget(const ObjectKey&) override {}
  int numRequeues(const ObjectKey&) override { return 0; }

private:
  TokenBucket bucket_;
};

// The longest delay of several limiters.
class MaxOfRateLimiter final : public RateLimiter {
public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
      : limiters_(std::move(limiters)) {}
  Duration when(const ObjectKey& item) override;
  void forget(const ObjectKey& item) override;
  int numRequeues(const ObjectKey& item) override;

private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// controller-runtime's default: max(per-item 5 ms..1000 s, bucket 10 qps/100).
std::unique_ptr<RateLimiter> defaultControllerRateLimiter(Clock& clock);

} // namespace captf::kube
