#pragma once

// The informer cache: a Reader served from shared informers, one per kind,
// created on first use and shared by every controller of the manager.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/client.h"
#include "manager/kube/informer.h"
#include "manager/kube/metrics.h"

namespace captf::kube {

// Per-kind scope of the cache.
struct KindOptions {
  std::string ns;             // empty: CacheOptions::ns
  std::string label_selector; // server-side filter: only these are cached
  std::string field_selector;
  TransformFunc transform; // empty: stripManagedFields
  // false: the cache keeps the object without its payload (stripPayload,
  // after `transform`), and the manager's client reads it through
  // DataReadThrough (read_through.h).
  bool cache_data = true;
};

struct CacheOptions {
  std::string ns; // empty: all namespaces
  Duration resync_period = Duration::zero();
  std::map<GroupVersionKind, KindOptions> by_kind;
  // The bytes of payload DataReadThrough remembers for the kinds cached
  // without it.
  std::size_t payload_memo_bytes = std::size_t{32} << 20;
};

class Cache : public Reader {
public:
  // The shared informer of `gvk`, created on first use (and started when
  // the cache runs). Thread-safe.
  virtual absl::StatusOr<SharedInformer*> informerFor(const GroupVersionKind& gvk) = 0;
  // Adds an index to the kind's informer (creating it). Call before start.
  virtual absl::Status addIndex(const GroupVersionKind& gvk, const std::string& name,
                                IndexFunc fn) = 0;
  // Objects of `gvk` whose index `name` contains `value`.
  virtual absl::StatusOr<std::vector<Json>>
  byIndex(const GroupVersionKind& gvk, const std::string& name, const std::string& value) = 0;
  // The values of index `name` starting with `prefix` that some object of
  // `gvk` is found under, sorted (Store::indexValues).
  virtual absl::StatusOr<std::vector<std::string>>
  indexValues(const GroupVersionKind& gvk, const std::string& name, std::string_view prefix) = 0;
  // Blocks until every informer created so far has synced, or `stop`.
  virtual bool waitForCacheSync(std::stop_token stop) = 0;
};

using ListerWatcherFactory = std::function<std::unique_ptr<ListerWatcher>(
    const GroupVersionKind&, const ListOptions& scope)>;

// Thread-safe.
class InformerCache final : public Cache {
public:
  // `metrics` may be null; otherwise the cache exports captf_cache_objects
  // and captf_cache_bytes per kind.
  InformerCache(ListerWatcherFactory factory, Clock& clock, CacheOptions options,
                MetricsRegistry* metrics, std::shared_ptr<spdlog::logger> logger);
  ~InformerCache() override;

  // Lists and watches through `client`.
  static ListerWatcherFactory apiFactory(ApiClient& client);

  // Starts every informer, and those created later. Returns at once.
  void start();
  void stop();

  absl::StatusOr<SharedInformer*> informerFor(const GroupVersionKind& gvk) override;
  absl::Status addIndex(const GroupVersionKind& gvk, const std::string& name,
                        IndexFunc fn) override;
  absl::StatusOr<std::vector<Json>> byIndex(const GroupVersionKind& gvk, const std::string& name,
                                            const std::string& value) override;
  absl::StatusOr<std::vector<std::string>> indexValues(const GroupVersionKind& gvk,
                                                       const std::string& name,
                                                       std::string_view prefix) override;
  bool waitForCacheSync(std::stop_token stop) override;

  // Reads wait for the kind's first sync (after start()); before start()
  // they fail with FailedPrecondition, like controller-runtime's
  // ErrCacheNotStarted. Lists honour ns, label_selector and field_selector
  // (metadata.name, metadata.namespace, or a field with an index named
  // "field:<path>" added through addIndex); limit and continue are ignored.
  absl::StatusOr<Json> get(const GroupVersionKind& gvk, const ObjectKey& key) override;
  absl::StatusOr<ObjectList> list(const GroupVersionKind& gvk, const ListOptions& options) override;

  // True when every informer created so far has synced. Never blocks.
  bool hasSynced() const;
  // Objects and estimated bytes over all informers.
  size_t objectCount() const;
  size_t objectBytes() const;

private:
  absl::StatusOr<SharedInformer*> syncedInformer(const GroupVersionKind& gvk);

  ListerWatcherFactory factory_;
  Clock& clock_;
  const CacheOptions options_;
  std::shared_ptr<spdlog::logger> logger_;
  mutable std::mutex mu_;
  bool started_ = false;
  std::map<GroupVersionKind, std::unique_ptr<SharedInformer>> informers_;
  std::stop_source stop_;
};

// The index name InformerCache::list uses for a field selector on `path`.
std::string fieldIndexName(const std::string& path);

} // namespace captf::kube
