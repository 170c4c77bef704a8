#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "manager/kube/cache.h"
#include "manager/kube/errors.h"
#include "manager/kube/informer.h"
#include "test/manager/kube/fakes.h"

namespace captf::kube {
namespace {

using testing::configMap;
using testing::event;
using testing::FakeListerWatcher;

using testing::kConfigMap;

ObjectList listOf(std::vector<Json> items, std::string rv, std::string continue_token = "") {
  ObjectList list;
  list.items = std::move(items);
  list.resource_version = std::move(rv);
  list.continue_token = std::move(continue_token);
  return list;
}

absl::Status gone() {
  return errorFromResponse(410, R"({"kind":"Status","reason":"Expired","code":410})");
}

// Records handler calls as "add ns/name rv", "update ...", "delete ...".
class Recorder {
public:
  EventHandlers handlers() {
    return {[this](const Json& o) { record("add", o); },
            [this](const Json&, const Json& n) { record("update", n); },
            [this](const Json& o) { record("delete", o); }};
  }
  // Blocks until `n` calls were recorded; returns them.
  std::vector<std::string> await(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return calls_.size() >= n; });
    return calls_;
  }
  std::vector<std::string> calls() {
    std::scoped_lock lock(mu_);
    return calls_;
  }

private:
  // Notifies under the lock: a waiter that wakes cannot return (and let the
  // test destroy this Recorder) while the informer's thread is still inside
  // notify_all (a race ThreadSanitizer found, bench/tsan/README.md).
  void record(const char* what, const Json& object) {
    std::scoped_lock lock(mu_);
    calls_.push_back(std::string(what) + " " + meta::key(object).str() + " " +
                     meta::resourceVersion(object));
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> calls_;
};

class InformerTest : public ::testing::Test {
protected:
  SharedInformer& make(InformerOptions options = {}) {
    auto lw = std::make_unique<FakeListerWatcher>();
    lw_ = lw.get();
    informer_ = std::make_unique<SharedInformer>(kConfigMap, std::move(lw), clock_,
                                                 std::move(options), testing::quietLogger());
    return *informer_;
  }

  FakeClock clock_;
  FakeListerWatcher* lw_ = nullptr;
  std::unique_ptr<SharedInformer> informer_;
};

TEST_F(InformerTest, ListsEveryPageThenWatchesFromTheListVersion) {
  auto& informer = make();
  lw_->addList(listOf({configMap("ns", "a", "4"), configMap("ns", "b", "5")}, "10", "next"));
  lw_->addList(listOf({configMap("ns", "c", "6")}, "10"));
  Recorder recorder;
  informer.addEventHandler(recorder.handlers());
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::stop_token()));
  EXPECT_EQ(informer.store().size(), 3U);
  EXPECT_EQ(recorder.await(3).size(), 3U);
  lw_->awaitWatchCalls(1);
  auto lists = lw_->listCalls();
  ASSERT_EQ(lists.size(), 2U);
  EXPECT_EQ(lists[0].limit, 500);
  EXPECT_EQ(lists[0].continue_token, "");
  EXPECT_EQ(lists[1].continue_token, "next");
  auto watch = lw_->watchCalls()[0];
  EXPECT_EQ(watch.resource_version, "10");
  EXPECT_TRUE(watch.allow_watch_bookmarks);
  ASSERT_TRUE(watch.timeout_seconds.has_value());
  EXPECT_GE(*watch.timeout_seconds, 300);
  EXPECT_LT(*watch.timeout_seconds, 600);
}

TEST_F(InformerTest, WatchEventsReachStoreAndHandlersInOrder) {
  auto& informer = make();
  lw_->addList(listOf({configMap("ns", "a", "1")}, "1"));
  lw_->addWatch({{event(WatchEventType::kModified, configMap("ns", "a", "5")),
                  event(WatchEventType::kAdded, configMap("ns", "b", "6")),
                  event(WatchEventType::kDeleted, configMap("ns", "a", "7")),
                  event(WatchEventType::kBookmark, {{"metadata", {{"resourceVersion", "9"}}}})}});
  Recorder recorder;
  informer.addEventHandler(recorder.handlers());
  informer.start();
  lw_->awaitWatchCalls(2);
  EXPECT_EQ(recorder.await(4), (std::vector<std::string>{"add ns/a 1", "update ns/a 5",
                                                         "add ns/b 6", "delete ns/a 7"}));
  EXPECT_EQ(lw_->watchCalls()[1].resource_version, "9") << "bookmarks advance the version";
  EXPECT_EQ(informer.store().size(), 1U);
  EXPECT_EQ(lw_->listCalls().size(), 1U) << "a clean end of a watch does not relist";
}

TEST_F(InformerTest, GoneRelistsAndDeliversOnlyRealChanges) {
  auto& informer = make();
  lw_->addList(listOf(
      {configMap("ns", "a", "1"), configMap("ns", "b", "1"), configMap("ns", "c", "1")}, "1"));
  lw_->addWatch({{event(WatchEventType::kError,
                        {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}})}});
  lw_->addList(listOf(
      {configMap("ns", "a", "1"), configMap("ns", "b", "2"), configMap("ns", "d", "3")}, "20"));
  Recorder recorder;
  informer.addEventHandler(recorder.handlers());
  informer.start();
  lw_->awaitWatchCalls(2);
  auto calls = recorder.await(6);
  EXPECT_EQ(std::vector<std::string>(calls.begin() + 3, calls.end()),
            (std::vector<std::string>{"update ns/b 2", "add ns/d 3", "delete ns/c 1"}));
  EXPECT_EQ(informer.listCount(), 2U);
  EXPECT_EQ(lw_->watchCalls()[1].resource_version, "20");
  EXPECT_EQ(recorder.calls().size(), 6U) << "unchanged a is not re-delivered";
}

TEST_F(InformerTest, GoneWhenOpeningTheWatchRelistsAtOnce) {
  auto& informer = make();
  lw_->addList(listOf({configMap("ns", "a", "1")}, "1"));
  FakeListerWatcher::Watch expired;
  expired.open_error = gone();
  lw_->addWatch(expired);
  lw_->addList(listOf({configMap("ns", "a", "2")}, "2"));
  informer.start();
  lw_->awaitWatchCalls(2);
  EXPECT_EQ(lw_->listCalls().size(), 2U);
  EXPECT_EQ(informer.store().get({"ns", "a"})->resource_version, "2");
}

TEST_F(InformerTest, BrokenWatchBacksOffAndResumesWithoutRelisting) {
  auto& informer = make();
  lw_->addList(listOf({configMap("ns", "a", "1")}, "1"));
  FakeListerWatcher::Watch refused;
  refused.open_error = absl::UnavailableError("connection refused");
  lw_->addWatch(refused);
  FakeListerWatcher::Watch dropped;
  dropped.events = {event(WatchEventType::kModified, configMap("ns", "a", "2"))};
  dropped.end = absl::UnavailableError("connection reset");
  lw_->addWatch(dropped);
  informer.start();

  lw_->awaitWatchCalls(1);
  clock_.awaitWaiters(1); // backing off
  EXPECT_EQ(lw_->watchCalls().size(), 1U);
  clock_.advance(std::chrono::milliseconds(799));
  EXPECT_EQ(lw_->watchCalls().size(), 1U);
  clock_.advance(std::chrono::milliseconds(1));
  lw_->awaitWatchCalls(2);
  EXPECT_EQ(lw_->watchCalls()[1].resource_version, "1");

  clock_.awaitWaiters(1); // the second watch broke after progress
  clock_.advance(std::chrono::milliseconds(800));
  lw_->awaitWatchCalls(3);
  EXPECT_EQ(lw_->watchCalls()[2].resource_version, "2") << "resumes where it was";
  EXPECT_EQ(lw_->listCalls().size(), 1U);
}

TEST_F(InformerTest, AListFailingOnALaterPageChangesNothing) {
  auto& informer = make();
  lw_->addList(listOf({configMap("ns", "a", "1")}, "1", "next"));
  lw_->addList(absl::UnavailableError("connection reset"));
  lw_->addList(listOf({configMap("ns", "a", "1"), configMap("ns", "b", "1")}, "1"));
  Recorder recorder;
  informer.addEventHandler(recorder.handlers());
  informer.start();

  clock_.awaitWaiters(1); // backing off after the second page failed
  EXPECT_EQ(lw_->listCalls().size(), 2U);
  EXPECT_EQ(informer.store().size(), 0U) << "a partial list is not applied";
  EXPECT_TRUE(recorder.calls().empty());
  EXPECT_FALSE(informer.hasSynced());

  clock_.advance(std::chrono::milliseconds(800));
  ASSERT_TRUE(informer.waitForSync(std::stop_token()));
  EXPECT_EQ(recorder.await(2), (std::vector<std::string>{"add ns/a 1", "add ns/b 1"}));
  EXPECT_EQ(lw_->listCalls()[2].continue_token, "") << "the retry starts from the first page";
}

TEST_F(InformerTest, ListedObjectsReachHandlersTransformed) {
  InformerOptions options;
  options.transform = [](Json& object) {
    stripManagedFields(object);
    object["metadata"]["annotations"]["transformed"] = "yes";
  };
  auto& informer = make(std::move(options));
  Json object = configMap("ns", "a", "1");
  object["metadata"]["managedFields"] = Json::array({{{"manager", "kubectl"}}});
  lw_->addList(listOf({object}, "1"));
  std::vector<Json> added;
  std::mutex mu;
  EventHandlers handlers;
  handlers.on_add = [&](const Json& o) {
    std::scoped_lock lock(mu);
    added.push_back(o);
  };
  informer.addEventHandler(std::move(handlers));
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::stop_token()));
  std::scoped_lock lock(mu);
  ASSERT_EQ(added.size(), 1U);
  EXPECT_FALSE(added[0]["metadata"].contains("managedFields"));
  EXPECT_EQ(added[0]["metadata"]["annotations"]["transformed"], "yes");
  EXPECT_EQ(added[0]["data"]["k"], "v");
  EXPECT_EQ(added[0], informer.store().get({"ns", "a"})->object());
}

TEST_F(InformerTest, LateHandlersGetTheCachedObjectsFirst) {
  auto& informer = make();
  lw_->addList(listOf({configMap("ns", "a", "1"), configMap("ns", "b", "1")}, "1"));
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::stop_token()));
  Recorder late;
  informer.addEventHandler(late.handlers());
  EXPECT_EQ(late.calls().size(), 2U);
}

TEST_F(InformerTest, StripsManagedFieldsAndAccountsBytes) {
  auto& informer = make();
  Json object = configMap("ns", "a", "1");
  object["metadata"]["managedFields"] = Json::array({{{"manager", "kubectl"}}});
  lw_->addList(listOf({object}, "1"));
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::stop_token()));
  auto cached = informer.store().get({"ns", "a"});
  ASSERT_TRUE(cached);
  EXPECT_FALSE(cached->object()["metadata"].contains("managedFields"));
  EXPECT_EQ(cached->object()["data"]["k"], "v");
  EXPECT_GT(informer.store().bytes(), cached->blob.size());
  EXPECT_LT(cached->blob.size(), object.dump().size()) << "MessagePack is smaller than JSON";
}

TEST_F(InformerTest, ResyncRedeliversEveryObject) {
  InformerOptions options;
  options.resync_period = std::chrono::minutes(10);
  auto& informer = make(options);
  lw_->addList(listOf({configMap("ns", "a", "1")}, "1"));
  Recorder recorder;
  informer.addEventHandler(recorder.handlers());
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::stop_token()));
  recorder.await(1);
  clock_.awaitWaiters(1);
  clock_.advance(std::chrono::minutes(10));
  EXPECT_EQ(recorder.await(2)[1], "update ns/a 1");
}

TEST(StoreTest, IndexesFollowUpdatesAndDeletes) {
  Store store;
  auto put = [&](const Json& object) { store.put(makeCachedObject(object), object); };
  Json owned = configMap("ns1", "a", "1", {{"app", "web"}});
  owned["metadata"]["ownerReferences"] =
      Json::array({{{"apiVersion", "v1"}, {"kind", "X"}, {"name", "o"}, {"uid", "u1"}}});
  put(owned);
  put(configMap("ns2", "b", "1", {{"app", "db"}}));
  ASSERT_TRUE(store.addIndex("app", index::byLabel("app")).ok());
  EXPECT_FALSE(store.addIndex("app", index::byLabel("app")).ok());

  EXPECT_EQ(store.byIndex(index::kNamespace, "ns1")->size(), 1U);
  EXPECT_EQ(store.byIndex(index::kOwnerUid, "u1")->front()->key, (ObjectKey{"ns1", "a"}));
  EXPECT_EQ(store.byIndex("app", "db")->front()->key, (ObjectKey{"ns2", "b"}));
  EXPECT_TRUE(absl::IsNotFound(store.byIndex("nope", "x").status()));
  EXPECT_EQ(*store.indexValues("app", ""), (std::vector<std::string>{"db", "web"}));
  EXPECT_EQ(*store.indexValues("app", "w"), (std::vector<std::string>{"web"}));
  EXPECT_TRUE(absl::IsNotFound(store.indexValues("nope", "").status()));

  put(configMap("ns1", "a", "2", {{"app", "db"}})); // label and owner changed
  EXPECT_TRUE(store.byIndex("app", "web")->empty());
  EXPECT_EQ(*store.indexValues("app", ""), (std::vector<std::string>{"db"}))
      << "a value no object is found under any more is gone";
  EXPECT_EQ(store.byIndex("app", "db")->size(), 2U);
  EXPECT_TRUE(store.byIndex(index::kOwnerUid, "u1")->empty());

  size_t bytes = store.bytes();
  store.erase({"ns2", "b"});
  EXPECT_LT(store.bytes(), bytes);
  EXPECT_EQ(store.byIndex("app", "db")->size(), 1U);
  EXPECT_EQ(store.size(), 1U);
}

class CacheTest : public ::testing::Test {
protected:
  CacheTest()
      : cache_(
            [this](const GroupVersionKind&, const ListOptions& scope) {
              scopes_.push_back(scope);
              auto lw = std::make_unique<FakeListerWatcher>();
              Json labelled = configMap("ns1", "a", "1", {{"app", "web"}});
              labelled["data"]["k"] = "indexed";
              lw->addList(listOf({labelled, configMap("ns1", "b", "1", {{"app", "db"}}),
                                  configMap("ns2", "a", "1")},
                                 "1"));
              return lw;
            },
            clock_, CacheOptions{.ns = "", .resync_period = Duration::zero(), .by_kind = {}},
            nullptr, testing::quietLogger()) {}

  FakeClock clock_;
  std::vector<ListOptions> scopes_;
  InformerCache cache_;
};

// Stopping the cache while a handler is delivering an event that reads the
// cache (a mapping listing the objects to wake) returns: stop() must not
// hold the cache's lock while it joins the informers' threads.
TEST_F(CacheTest, StopsWhileAHandlerReadsTheCache) {
  auto informer = cache_.informerFor(kConfigMap);
  ASSERT_TRUE(informer.ok());
  std::mutex mu;
  std::condition_variable cv;
  bool delivering = false;
  bool stopping = false;
  bool listed = false;
  EventHandlers handlers;
  handlers.on_add = [&](const Json&) {
    std::unique_lock lock(mu);
    if (listed) {
      return;
    }
    delivering = true;
    cv.notify_all();
    cv.wait(lock, [&] { return stopping; });
    lock.unlock();
    // Give stop() the time to take whatever it takes.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (void)cache_.list(kConfigMap, {});
    lock.lock();
    listed = true;
  };
  (*informer)->addEventHandler(std::move(handlers));
  cache_.start();
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return delivering; });
    stopping = true;
    cv.notify_all();
  }
  cache_.stop(); // hung here when stop() held the lock
  std::scoped_lock lock(mu);
  EXPECT_TRUE(listed);
}

TEST_F(CacheTest, ReadsNeedAStartedCache) {
  EXPECT_EQ(cache_.get(kConfigMap, {"ns1", "a"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CacheTest, GetAndListWithSelectors) {
  cache_.start();
  auto got = cache_.get(kConfigMap, {"ns1", "a"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(meta::name(*got), "a");
  EXPECT_TRUE(isNotFound(cache_.get(kConfigMap, {"ns1", "zz"}).status()));

  ListOptions in_ns1;
  in_ns1.ns = "ns1";
  EXPECT_EQ(cache_.list(kConfigMap, in_ns1)->items.size(), 2U);

  ListOptions web;
  web.label_selector = "app=web";
  auto webs = cache_.list(kConfigMap, web);
  ASSERT_TRUE(webs.ok());
  ASSERT_EQ(webs->items.size(), 1U);
  EXPECT_EQ(meta::key(webs->items[0]), (ObjectKey{"ns1", "a"}));

  ListOptions named;
  named.field_selector = "metadata.name=a";
  EXPECT_EQ(cache_.list(kConfigMap, named)->items.size(), 2U);
  named.ns = "ns2";
  EXPECT_EQ(cache_.list(kConfigMap, named)->items.size(), 1U);

  ListOptions by_data;
  by_data.field_selector = "data.k=indexed";
  EXPECT_EQ(cache_.list(kConfigMap, by_data).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(cache_.addIndex(kConfigMap, fieldIndexName("data.k"), index::byField("data.k")).ok());
  auto indexed = cache_.list(kConfigMap, by_data);
  ASSERT_TRUE(indexed.ok()) << indexed.status();
  ASSERT_EQ(indexed->items.size(), 1U);
  EXPECT_EQ(meta::name(indexed->items[0]), "a");

  auto owned = cache_.byIndex(kConfigMap, index::kNamespace, "ns2");
  ASSERT_TRUE(owned.ok());
  EXPECT_EQ(owned->size(), 1U);
  EXPECT_EQ(cache_.objectCount(), 3U);
  EXPECT_TRUE(cache_.hasSynced());
  ASSERT_EQ(scopes_.size(), 1U) << "one informer per kind, shared";
}

} // namespace
} // namespace captf::kube
