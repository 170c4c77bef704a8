#pragma once

// Shared informers: one list+watch per kind keeps an indexed, compact copy of
// the objects and tells registered handlers what changed.
//
// Memory: each object is stored as MessagePack of the transformed object
// (managedFields dropped by default) plus its key, resourceVersion and
// labels; readers decode on demand. That is several times smaller than a
// nlohmann::json tree (see bench/kube/cache_memory_bench.cc and
// docs/decisions/kube-client.md) at the price of a decode per read. Lists
// compact each page as it arrives, so at most one page is held as JSON.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/client.h"
#include "manager/kube/clock.h"
#include "manager/kube/object.h"
#include "manager/kube/selector.h"
#include "manager/kube/watch.h"

namespace captf::kube {

using Labels = std::vector<std::pair<std::string, std::string>>; // sorted by key

// One cached object. Immutable once stored.
struct CachedObject {
  ObjectKey key;
  std::string resource_version;
  Labels labels;
  std::string blob; // MessagePack

  Json object() const;
  // Heap bytes attributable to this entry (an estimate of what it costs).
  size_t bytes() const;
};
using ObjectPtr = std::shared_ptr<const CachedObject>;

ObjectPtr makeCachedObject(const Json& object);
bool matchesLabels(const LabelSelector& selector, const Labels& labels);

// Index functions map an object to the values it is found under.
using IndexFunc = std::function<std::vector<std::string>(const Json&)>;
namespace index {
inline constexpr const char* kNamespace = "namespace";
inline constexpr const char* kOwnerUid = "ownerUID";
std::vector<std::string> byNamespace(const Json& object);
// UIDs of all owners (controller or not).
std::vector<std::string> byOwnerUid(const Json& object);
// The value of label `key`, when present.
IndexFunc byLabel(std::string key);
// The string value at a dotted path, when present.
IndexFunc byField(std::string dotted_path);
} // namespace index

// A thread-safe indexed object store.
class Store {
public:
  Store(); // with the namespace and owner-UID indexes

  // Adds an index and fills it from the current content (decoding each
  // object once). AlreadyExists for a taken name.
  absl::Status addIndex(const std::string& name, IndexFunc fn);

  // Puts `object` (already transformed, decoded form `json`) and returns the
  // previous entry.
  ObjectPtr put(ObjectPtr object, const Json& json);
  ObjectPtr erase(const ObjectKey& key);
  ObjectPtr get(const ObjectKey& key) const;
  std::vector<ObjectPtr> list() const;
  std::vector<ObjectPtr> listNamespace(const std::string& ns) const;
  // NotFound when no index has that name.
  absl::StatusOr<std::vector<ObjectPtr>> byIndex(const std::string& index,
                                                 const std::string& value) const;
  // The values of index `index` that at least one object is found under
  // and that start with `prefix`, sorted; NotFound when no index has that
  // name. Costs the number of distinct values, not of objects.
  absl::StatusOr<std::vector<std::string>> indexValues(const std::string& index,
                                                       std::string_view prefix) const;
  bool hasIndex(const std::string& index) const;
  std::vector<ObjectKey> keys() const;
  size_t size() const;
  // Sum of CachedObject::bytes().
  size_t bytes() const;

private:
  struct Entry {
    ObjectPtr object;
    std::vector<std::vector<std::string>> index_values; // parallel to index_names_
  };
  void indexLocked(const ObjectKey& key, Entry& entry, const Json& json);
  void unindexLocked(const ObjectKey& key, const Entry& entry);

  mutable std::mutex mu_;
  std::unordered_map<ObjectKey, Entry> items_;
  std::vector<std::string> index_names_;
  std::vector<IndexFunc> index_funcs_;
  // index position -> value -> keys
  std::vector<std::unordered_map<std::string, std::unordered_set<ObjectKey>>> indexes_;
  size_t bytes_ = 0;
};

// Where an informer lists and watches. The seam for informer tests.
class ListerWatcher {
public:
  virtual ~ListerWatcher() = default;
  virtual absl::StatusOr<ObjectList> list(const ListOptions& options) = 0;
  virtual absl::StatusOr<std::unique_ptr<EventStream>> watch(const ListOptions& options,
                                                             std::stop_token stop) = 0;
};

// Lists and watches one kind through an ApiClient, scoped by namespace and
// selectors.
class ApiListerWatcher final : public ListerWatcher {
public:
  ApiListerWatcher(ApiClient& client, GroupVersionKind gvk, ListOptions scope)
      : client_(client), gvk_(std::move(gvk)), scope_(std::move(scope)) {}
  absl::StatusOr<ObjectList> list(const ListOptions& options) override;
  absl::StatusOr<std::unique_ptr<EventStream>> watch(const ListOptions& options,
                                                     std::stop_token stop) override;

private:
  ListOptions merged(const ListOptions& options) const;
  ApiClient& client_;
  GroupVersionKind gvk_;
  ListOptions scope_;
};

// Handlers run on the informer's thread, one event at a time, in order:
// they must not block (enqueueing into a work queue is the intended use).
struct EventHandlers {
  std::function<void(const Json& object)> on_add;
  std::function<void(const Json& old_object, const Json& new_object)> on_update;
  // `object` is the last state the informer knew.
  std::function<void(const Json& object)> on_delete;
};

using TransformFunc = std::function<void(Json& object)>;
// Drops metadata.managedFields (controller-runtime's default transform).
void stripManagedFields(Json& object);

struct InformerOptions {
  TransformFunc transform = stripManagedFields;
  // Re-delivers every object as an update (old == new) this often; 0: never.
  Duration resync_period = Duration::zero();
  int64_t page_size = 500;
  // Watch requests ask the server to end them after a random time in
  // [min, 2*min), spreading re-watches (client-go's minWatchTimeout).
  std::chrono::seconds min_watch_timeout{300};
  Duration initial_backoff = std::chrono::milliseconds(800);
  Duration max_backoff = std::chrono::seconds(30);
};

class SharedInformer {
public:
  SharedInformer(GroupVersionKind gvk, std::unique_ptr<ListerWatcher> lister_watcher, Clock& clock,
                 InformerOptions options, std::shared_ptr<spdlog::logger> logger);
  ~SharedInformer();
  SharedInformer(const SharedInformer&) = delete;
  SharedInformer& operator=(const SharedInformer&) = delete;

  // Registers handlers. Objects already cached are delivered to them as
  // adds first, so a late handler misses nothing. Thread-safe.
  uint64_t addEventHandler(EventHandlers handlers);
  void removeEventHandler(uint64_t id);
  absl::Status addIndex(const std::string& name, IndexFunc fn) {
    return store_.addIndex(name, std::move(fn));
  }

  // Starts the list+watch thread (and the resync thread). Idempotent.
  void start();
  // Stops the threads and waits for them. Idempotent.
  void stop();
  // Runs list+watch on the calling thread until `stop` fires (start() runs
  // this on its own thread).
  void run(std::stop_token stop);

  // True once the first list is in the store and delivered to handlers.
  bool hasSynced() const;
  // Blocks until synced or `stop` fires; returns hasSynced().
  bool waitForSync(std::stop_token stop) const;

  const Store& store() const { return store_; }
  const GroupVersionKind& gvk() const { return gvk_; }
  // The resourceVersion the informer is current with.
  std::string lastSyncResourceVersion() const;
  // Number of full lists done (1 after the first sync; more after 410s).
  uint64_t listCount() const { return lists_.load(); }

private:
  absl::Status listAndReplace(std::stop_token stop);
  // Watches once; returns when the watch ended. Sets *relist on 410.
  absl::Status watchOnce(std::stop_token stop, bool* relist);
  void handleEvent(WatchEvent& event);
  void resyncLoop(std::stop_token stop);
  void setResourceVersion(std::string rv);

  void dispatchAdd(const Json& object);
  void dispatchUpdate(const Json& old_object, const Json& new_object);
  void dispatchDelete(const Json& object);

  const GroupVersionKind gvk_;
  std::unique_ptr<ListerWatcher> lister_watcher_;
  Clock& clock_;
  const InformerOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  Store store_;

  // Held while changing the store and delivering the change, so handlers
  // see changes in order and a new handler's replay cannot interleave.
  std::recursive_mutex dispatch_mu_;
  std::map<uint64_t, EventHandlers> handlers_;
  uint64_t next_handler_ = 1;

  mutable std::mutex mu_;
  mutable std::condition_variable_any synced_cv_;
  bool synced_ = false;
  std::string resource_version_;
  std::atomic<uint64_t> lists_{0};

  std::mutex thread_mu_;
  std::jthread thread_;
  std::jthread resync_thread_;
};

} // namespace captf::kube
