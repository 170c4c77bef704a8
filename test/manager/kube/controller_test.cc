#include <gtest/gtest.h>

#include "manager/kube/controller.h"
#include "test/manager/kube/fakes.h"

namespace captf::kube {
namespace {

using std::chrono::seconds;
using testing::configMap;
using testing::event;
using testing::FakeListerWatcher;

using testing::kConfigMap;

// Returns scripted results per call and records the requests.
class ScriptedReconciler final : public Reconciler {
public:
  absl::StatusOr<Result> reconcile(const ReconcileContext&, const Request& request) override {
    std::scoped_lock lock(mu_);
    requests.push_back(request);
    if (results.empty()) {
      return Result{};
    }
    auto result = results.front();
    results.erase(results.begin());
    return result;
  }
  std::mutex mu_;
  std::vector<Request> requests;
  std::vector<absl::StatusOr<Result>> results;
};

class ControllerTest : public ::testing::Test {
protected:
  ControllerOptions options() {
    ControllerOptions o;
    o.rate_limiter = std::make_unique<ItemExponentialFailureRateLimiter>();
    return o;
  }
  double metric(const std::string& prefix) {
    std::string text = metrics_.render();
    auto pos = text.find(prefix);
    if (pos == std::string::npos) {
      return -1;
    }
    return std::stod(text.substr(pos + prefix.size()));
  }

  FakeClock clock_;
  MetricsRegistry metrics_;
  ScriptedReconciler reconciler_;
  Controller controller_{"widget", reconciler_, options(),
                         clock_,   &metrics_,   testing::quietLogger()};
  const Request request_{"ns", "a"};
};

TEST_F(ControllerTest, SuccessForgetsTheItem) {
  controller_.queue().addRateLimited(request_);
  controller_.reconcileHandler(request_, std::stop_token());
  EXPECT_EQ(controller_.queue().numRequeues(request_), 0);
  EXPECT_EQ(metric("controller_runtime_reconcile_total{controller=\"widget\",result=\"success\"} "),
            1);
  EXPECT_EQ(metric("controller_runtime_reconcile_time_seconds_count{controller=\"widget\"} "), 1);
}

TEST_F(ControllerTest, ErrorsRetryWithBackoff) {
  reconciler_.results = {absl::UnavailableError("api down"), absl::UnavailableError("api down")};
  controller_.reconcileHandler(request_, std::stop_token());
  controller_.reconcileHandler(request_, std::stop_token());
  EXPECT_EQ(controller_.queue().numRequeues(request_), 2);
  EXPECT_EQ(controller_.queue().waiting(), 1U);
  EXPECT_EQ(metric("controller_runtime_reconcile_errors_total{controller=\"widget\"} "), 2);
  EXPECT_EQ(metric("controller_runtime_reconcile_total{controller=\"widget\",result=\"error\"} "),
            2);
  clock_.advance(std::chrono::milliseconds(5));
  controller_.queue().promoteDue();
  EXPECT_EQ(controller_.queue().len(), 1U) << "first retry after 5 ms";
}

TEST_F(ControllerTest, TerminalErrorsAreNotRetried) {
  reconciler_.results = {terminalError(absl::InvalidArgumentError("spec.module is invalid"))};
  controller_.reconcileHandler(request_, std::stop_token());
  EXPECT_EQ(controller_.queue().waiting(), 0U);
  EXPECT_EQ(controller_.queue().len(), 0U);
  EXPECT_EQ(metric("controller_runtime_terminal_reconcile_errors_total{controller=\"widget\"} "),
            1);
  EXPECT_EQ(metric("controller_runtime_reconcile_errors_total{controller=\"widget\"} "), 1);
  EXPECT_TRUE(isTerminalError(terminalError(absl::OkStatus())));
  EXPECT_FALSE(isTerminalError(absl::InternalError("x")));
}

TEST_F(ControllerTest, RequeueAfterResetsBackoffAndWaits) {
  reconciler_.results = {absl::UnavailableError("api down"), Result{seconds(30), false}};
  controller_.reconcileHandler(request_, std::stop_token());
  EXPECT_EQ(controller_.queue().numRequeues(request_), 1);
  clock_.advance(std::chrono::milliseconds(5));
  controller_.queue().promoteDue();
  auto retry = controller_.queue().get();
  ASSERT_EQ(retry, request_);
  controller_.reconcileHandler(*retry, std::stop_token());
  controller_.queue().done(*retry);
  EXPECT_EQ(controller_.queue().numRequeues(request_), 0);
  clock_.advance(seconds(29));
  controller_.queue().promoteDue();
  EXPECT_EQ(controller_.queue().len(), 0U);
  clock_.advance(seconds(1));
  controller_.queue().promoteDue();
  EXPECT_EQ(controller_.queue().len(), 1U);
  EXPECT_EQ(
      metric("controller_runtime_reconcile_total{controller=\"widget\",result=\"requeue_after\"} "),
      1);
}

TEST_F(ControllerTest, RequeueUsesTheRateLimiter) {
  reconciler_.results = {Result{Duration::zero(), true}};
  controller_.reconcileHandler(request_, std::stop_token());
  EXPECT_EQ(controller_.queue().numRequeues(request_), 1);
  EXPECT_EQ(metric("controller_runtime_reconcile_total{controller=\"widget\",result=\"requeue\"} "),
            1);
}

TEST(PredicatesTest, GenerationLabelsAnnotations) {
  Json a = configMap("ns", "a", "1", {{"x", "1"}});
  a["metadata"]["generation"] = 1;
  Json status_only = a;
  status_only["metadata"]["resourceVersion"] = "2";
  Json spec_change = status_only;
  spec_change["metadata"]["generation"] = 2;
  Json relabel = a;
  relabel["metadata"]["labels"]["x"] = "2";
  Json annotated = a;
  annotated["metadata"]["annotations"] = {{"k", "v"}};

  EXPECT_FALSE(predicates::generationChanged().update(a, status_only));
  EXPECT_TRUE(predicates::generationChanged().update(a, spec_change));
  EXPECT_TRUE(predicates::labelsChanged().update(a, relabel));
  EXPECT_FALSE(predicates::labelsChanged().update(a, annotated));
  EXPECT_TRUE(predicates::annotationsChanged().update(a, annotated));
  EXPECT_TRUE(predicates::resourceVersionChanged().update(a, status_only));
  EXPECT_FALSE(predicates::resourceVersionChanged().update(a, a));

  auto either = predicates::any({predicates::generationChanged(), predicates::labelsChanged()});
  EXPECT_TRUE(either.update(a, relabel));
  EXPECT_FALSE(either.update(a, status_only));
  EXPECT_TRUE(either.create(a)) << "predicates without a create hook accept creates";
  auto both = predicates::all({predicates::generationChanged(), predicates::labelsChanged()});
  EXPECT_FALSE(both.update(a, relabel));
  EXPECT_FALSE(predicates::negate(predicates::generationChanged()).update(a, spec_change));

  auto selector = LabelSelector::parse("x=1");
  auto match = predicates::labelSelector(*selector);
  EXPECT_TRUE(match.create(a));
  EXPECT_FALSE(match.update(a, relabel));
}

// Counts reconciles so a test can wait for them without sleeping.
class CountingReconciler final : public Reconciler {
public:
  absl::StatusOr<Result> reconcile(const ReconcileContext&, const Request& request) override {
    {
      std::scoped_lock lock(mu_);
      keys_.push_back(request.str());
    }
    cv_.notify_all();
    return Result{};
  }
  std::vector<std::string> await(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return keys_.size() >= n; });
    auto keys = keys_;
    std::sort(keys.begin(), keys.end());
    return keys;
  }

private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> keys_;
};

// End to end through an informer and worker threads.
TEST(ControllerRunTest, WatchesMapEventsToRequests) {
  FakeClock clock;
  auto owned_lw = std::make_unique<FakeListerWatcher>();
  auto* script = owned_lw.get();
  Json child = configMap("ns", "child", "1");
  child["metadata"]["generation"] = 1;
  child["metadata"]["ownerReferences"] = Json::array({{{"apiVersion", "example.io/v1"},
                                                       {"kind", "Widget"},
                                                       {"name", "parent"},
                                                       {"uid", "u"},
                                                       {"controller", true}},
                                                      {{"apiVersion", "v1"},
                                                       {"kind", "Other"},
                                                       {"name", "x"},
                                                       {"uid", "o"},
                                                       {"controller", false}}});
  ObjectList list;
  list.resource_version = "1";
  list.items = {child};
  script->addList(list);

  SharedInformer informer(kConfigMap, std::move(owned_lw), clock, {}, testing::quietLogger());
  CountingReconciler reconciler;
  MetricsRegistry metrics;
  ControllerOptions options;
  options.max_concurrent_reconciles = 2;
  Controller controller("widget", reconciler, std::move(options), clock, &metrics,
                        testing::quietLogger());
  controller.watchOwned(informer, {"example.io", "v1", "Widget"}, OwnerMatch::kControllerOnly,
                        {predicates::generationChanged()});
  controller.watchMapped(informer, [](const Json& object) {
    return std::vector<Request>{{"mapped", meta::name(object)}};
  });
  informer.start();
  std::jthread runner([&](std::stop_token stop) { EXPECT_TRUE(controller.run(stop).ok()); });

  // The initial add reaches the controlling owner and the mapping.
  EXPECT_EQ(reconciler.await(2), (std::vector<std::string>{"mapped/child", "ns/parent"}));
  // A status-only update: the generation predicate drops it for the owner.
  Json status_update = child;
  status_update["metadata"]["resourceVersion"] = "2";
  script->addWatch({{event(WatchEventType::kModified, status_update)}});
  script->awaitWatchCalls(2); // the update was dispatched
  EXPECT_EQ(reconciler.await(3),
            (std::vector<std::string>{"mapped/child", "mapped/child", "ns/parent"}));
  EXPECT_NE(
      metrics.render().find("workqueue_adds_total{controller=\"widget\",name=\"widget\"} 3\n"),
      std::string::npos)
      << metrics.render();
  runner.request_stop();
  runner.join();
  informer.stop();
  EXPECT_NE(metrics.render().find(
                "controller_runtime_max_concurrent_reconciles{controller=\"widget\"} 2"),
            std::string::npos);
}

} // namespace
} // namespace captf::kube
