#pragma once

// What the controllers' unit tests share: a cache over the in-memory API
// server (kube::testing::FakeClient), the manager's client shape (cache
// reads, API writes) and an Event recorder that keeps the reasons.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "manager/kube/cache.h"
#include "manager/kube/client.h"
#include "manager/kube/events.h"
#include "test/manager/kube/fake_client.h"

namespace captf::controllers {

using nlohmann::json;

// The cache: the API server's store, except for objects pinned to an older
// copy (what an informer shows before it sees a write). No index holds
// anything; a test that needs index values derives and overrides them.
class StoreCache : public kube::Cache {
public:
  explicit StoreCache(kube::testing::FakeClient& store) : store_(store) {}

  void pin(json object) { pinned_ = std::move(object); }

  absl::StatusOr<json> get(const kube::GroupVersionKind& gvk, const kube::ObjectKey& key) override {
    if (pinned_.is_object() && kube::meta::gvk(pinned_).ok() && *kube::meta::gvk(pinned_) == gvk &&
        kube::meta::key(pinned_) == key) {
      return pinned_;
    }
    return store_.get(gvk, key);
  }
  absl::StatusOr<kube::ObjectList> list(const kube::GroupVersionKind& gvk,
                                        const kube::ListOptions& options) override {
    return store_.list(gvk, options);
  }
  absl::StatusOr<kube::SharedInformer*> informerFor(const kube::GroupVersionKind&) override {
    return absl::UnimplementedError("no informers in this test");
  }
  absl::Status addIndex(const kube::GroupVersionKind&, const std::string&,
                        kube::IndexFunc) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<json>> byIndex(const kube::GroupVersionKind&, const std::string&,
                                            const std::string&) override {
    return std::vector<json>{};
  }
  absl::StatusOr<std::vector<std::string>>
  indexValues(const kube::GroupVersionKind&, const std::string&, std::string_view) override {
    return std::vector<std::string>{};
  }
  bool waitForCacheSync(std::stop_token) override { return true; }

private:
  kube::testing::FakeClient& store_;
  json pinned_;
};

// What the manager's client is: cache reads, API writes.
class CachedClient final : public kube::Client {
public:
  CachedClient(kube::Cache& cache, kube::Client& api) : cache_(cache), api_(api) {}
  absl::StatusOr<json> get(const kube::GroupVersionKind& gvk, const kube::ObjectKey& key) override {
    return cache_.get(gvk, key);
  }
  absl::StatusOr<kube::ObjectList> list(const kube::GroupVersionKind& gvk,
                                        const kube::ListOptions& options) override {
    return cache_.list(gvk, options);
  }
  absl::StatusOr<json> create(const json& object, const kube::CreateOptions& options) override {
    return api_.create(object, options);
  }
  absl::StatusOr<json> update(const json& object, const kube::UpdateOptions& options) override {
    return api_.update(object, options);
  }
  absl::StatusOr<json> patch(const kube::GroupVersionKind& gvk, const kube::ObjectKey& key,
                             kube::PatchType type, const json& patch,
                             const kube::PatchOptions& options) override {
    return api_.patch(gvk, key, type, patch, options);
  }
  absl::StatusOr<json> apply(const json& object, const kube::ApplyOptions& options) override {
    return api_.apply(object, options);
  }
  absl::Status remove(const kube::GroupVersionKind& gvk, const kube::ObjectKey& key,
                      const kube::DeleteOptions& options) override {
    return api_.remove(gvk, key, options);
  }

private:
  kube::Cache& cache_;
  kube::Client& api_;
};

class Reasons final : public kube::EventRecorder {
public:
  void event(const json&, kube::EventType, std::string_view reason, std::string_view,
             std::string_view note) override {
    reasons.emplace_back(reason);
    notes.emplace_back(note);
  }
  std::vector<std::string> reasons;
  std::vector<std::string> notes; // one per reason, in order
};

} // namespace captf::controllers
