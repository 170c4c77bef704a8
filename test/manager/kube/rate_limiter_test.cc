#include <gtest/gtest.h>

#include "manager/kube/rate_limiter.h"

namespace captf::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ItemExponentialFailureRateLimiterTest, DoublesFrom5msUpTo1000s) {
  ItemExponentialFailureRateLimiter limiter;
  ObjectKey item{"ns", "a"};
  EXPECT_EQ(limiter.when(item), milliseconds(5));
  EXPECT_EQ(limiter.when(item), milliseconds(10));
  EXPECT_EQ(limiter.when(item), milliseconds(20));
  EXPECT_EQ(limiter.numRequeues(item), 3);
  for (int i = 0; i < 100; ++i) {
    limiter.when(item);
  }
  EXPECT_EQ(limiter.when(item), seconds(1000));
  // Items are independent.
  EXPECT_EQ(limiter.when({"ns", "b"}), milliseconds(5));
  limiter.forget(item);
  EXPECT_EQ(limiter.numRequeues(item), 0);
  EXPECT_EQ(limiter.when(item), milliseconds(5));
}

TEST(TokenBucketTest, BurstThenPacedByQps) {
  FakeClock clock;
  TokenBucket bucket(10, 3, clock);
  EXPECT_EQ(bucket.reserve(), Duration::zero());
  EXPECT_EQ(bucket.reserve(), Duration::zero());
  EXPECT_EQ(bucket.reserve(), Duration::zero());
  EXPECT_EQ(bucket.reserve(), milliseconds(100));
  EXPECT_EQ(bucket.reserve(), milliseconds(200)) << "later callers queue behind earlier ones";
  clock.advance(seconds(10));
  EXPECT_EQ(bucket.reserve(), Duration::zero()) << "refilled, but never beyond the burst";
  EXPECT_EQ(bucket.reserve(), Duration::zero());
  EXPECT_EQ(bucket.reserve(), Duration::zero());
  EXPECT_GT(bucket.reserve(), Duration::zero());
}

TEST(MaxOfRateLimiterTest, TakesTheLongestDelay) {
  FakeClock clock;
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(
      std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(1), seconds(10)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(clock, 1, 1));
  MaxOfRateLimiter limiter(std::move(limiters));
  ObjectKey item{"", "x"};
  EXPECT_EQ(limiter.when(item), milliseconds(1));
  EXPECT_EQ(limiter.when(item), seconds(1)) << "the bucket is empty now";
  EXPECT_EQ(limiter.numRequeues(item), 2);
  limiter.forget(item);
  EXPECT_EQ(limiter.numRequeues(item), 0);
}

TEST(DefaultControllerRateLimiterTest, StartsAt5ms) {
  FakeClock clock;
  auto limiter = defaultControllerRateLimiter(clock);
  EXPECT_EQ(limiter->when({"a", "b"}), milliseconds(5));
  EXPECT_EQ(limiter->when({"a", "b"}), milliseconds(10));
}

} // namespace
} // namespace captf::kube
