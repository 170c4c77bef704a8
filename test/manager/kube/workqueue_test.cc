#include <thread>

#include <gtest/gtest.h>

#include "manager/kube/workqueue.h"

namespace captf::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class WorkQueueTest : public ::testing::Test {
protected:
  FakeClock clock_;
  MetricsRegistry metrics_;
  WorkQueue queue_{"test", clock_, std::make_unique<ItemExponentialFailureRateLimiter>(),
                   &metrics_};

  double metric(const std::string& line_prefix) {
    std::string text = metrics_.render();
    auto pos = text.find(line_prefix);
    if (pos == std::string::npos) {
      return -1;
    }
    auto end = text.find('\n', pos);
    return std::stod(text.substr(pos + line_prefix.size(), end - pos - line_prefix.size()));
  }
};

TEST_F(WorkQueueTest, DeduplicatesQueuedItems) {
  queue_.add({"ns", "a"});
  queue_.add({"ns", "a"});
  queue_.add({"ns", "b"});
  EXPECT_EQ(queue_.len(), 2U);
  EXPECT_EQ(queue_.get(), (ObjectKey{"ns", "a"}));
  EXPECT_EQ(queue_.get(), (ObjectKey{"ns", "b"}));
  EXPECT_EQ(metric("workqueue_adds_total{controller=\"test\",name=\"test\"} "), 2);
}

TEST_F(WorkQueueTest, ItemAddedWhileProcessingIsQueuedOnDone) {
  queue_.add({"ns", "a"});
  auto item = queue_.get();
  ASSERT_TRUE(item);
  queue_.add({"ns", "a"});
  EXPECT_EQ(queue_.len(), 0U) << "never handed to two workers at once";
  queue_.done(*item);
  EXPECT_EQ(queue_.len(), 1U);
  EXPECT_EQ(queue_.get(), (ObjectKey{"ns", "a"}));
}

TEST_F(WorkQueueTest, AddAfterWaitsForTheClock) {
  queue_.addAfter({"ns", "a"}, seconds(10));
  EXPECT_EQ(queue_.waiting(), 1U);
  clock_.advance(seconds(9));
  queue_.promoteDue();
  EXPECT_EQ(queue_.len(), 0U);
  clock_.advance(seconds(1));
  EXPECT_EQ(queue_.get(), (ObjectKey{"ns", "a"})) << "promoted by the delay thread";
  EXPECT_EQ(queue_.waiting(), 0U);
}

TEST_F(WorkQueueTest, EarlierAddAfterWinsLaterIsIgnored) {
  queue_.addAfter({"ns", "a"}, seconds(60));
  queue_.addAfter({"ns", "a"}, seconds(5));
  queue_.addAfter({"ns", "a"}, seconds(30));
  clock_.advance(seconds(5));
  queue_.promoteDue();
  ASSERT_EQ(queue_.len(), 1U);
  auto item = queue_.get();
  queue_.done(*item);
  clock_.advance(seconds(60));
  queue_.promoteDue();
  EXPECT_EQ(queue_.len(), 0U) << "the superseded entries do not fire again";
}

TEST_F(WorkQueueTest, RateLimitedRetriesBackOffAndForgetResets) {
  ObjectKey item{"ns", "a"};
  queue_.addRateLimited(item); // 5 ms
  queue_.addRateLimited(item); // 10 ms: later, ignored while 5 ms pending
  EXPECT_EQ(queue_.numRequeues(item), 2);
  clock_.advance(milliseconds(5));
  queue_.promoteDue();
  EXPECT_EQ(queue_.len(), 1U);
  queue_.done(*queue_.get());
  queue_.addRateLimited(item); // 20 ms
  clock_.advance(milliseconds(19));
  queue_.promoteDue();
  EXPECT_EQ(queue_.len(), 0U);
  clock_.advance(milliseconds(1));
  queue_.promoteDue();
  EXPECT_EQ(queue_.len(), 1U);
  queue_.forget(item);
  EXPECT_EQ(queue_.numRequeues(item), 0);
  EXPECT_EQ(metric("workqueue_retries_total{controller=\"test\",name=\"test\"} "), 3);
}

TEST_F(WorkQueueTest, ShutDownWakesGetAndRejectsAdds) {
  std::thread waiter([&] { EXPECT_FALSE(queue_.get().has_value()); });
  queue_.shutDown();
  waiter.join();
  queue_.add({"ns", "a"});
  EXPECT_EQ(queue_.len(), 0U);
  EXPECT_TRUE(queue_.shuttingDown());
}

TEST_F(WorkQueueTest, ShutDownWithDrainWaitsForInFlightItems) {
  queue_.add({"ns", "a"});
  auto item = queue_.get();
  ASSERT_TRUE(item);
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    queue_.shutDownWithDrain();
    drained = true;
  });
  // The drainer can only finish after done(); nothing here depends on time.
  EXPECT_FALSE(queue_.get().has_value());
  EXPECT_FALSE(drained.load());
  queue_.done(*item);
  drainer.join();
  EXPECT_TRUE(drained.load());
}

TEST_F(WorkQueueTest, MetricsTrackDepthAndDurations) {
  queue_.add({"ns", "a"});
  queue_.add({"ns", "b"});
  EXPECT_EQ(metric("workqueue_depth{controller=\"test\",name=\"test\"} "), 2);
  clock_.advance(milliseconds(3));
  auto item = queue_.get();
  EXPECT_EQ(metric("workqueue_depth{controller=\"test\",name=\"test\"} "), 1);
  clock_.advance(milliseconds(7));
  queue_.done(*item);
  EXPECT_EQ(metric("workqueue_queue_duration_seconds_count{controller=\"test\",name=\"test\"} "),
            1);
  EXPECT_DOUBLE_EQ(
      metric("workqueue_queue_duration_seconds_sum{controller=\"test\",name=\"test\"} "), 0.003);
  EXPECT_DOUBLE_EQ(
      metric("workqueue_work_duration_seconds_sum{controller=\"test\",name=\"test\"} "), 0.007);
}

} // namespace
} // namespace captf::kube
