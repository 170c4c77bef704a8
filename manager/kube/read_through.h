#pragma once

// Reads of kinds the informer cache holds without their payload
// (KindOptions::cache_data = false; docs/decisions/manager-binary.md "Caches"): the
// cache answers with names, labels, annotations and the resourceVersion, and
// this reader puts the payload back from a small memo keyed by uid and
// resourceVersion, or from one GET to the API server when the memo has
// not got that version. The memo's size is bounded in bytes, not by how
// many such objects tenants create (docs/behaviour/security.md "Limits").
//
// An object the cache shows at an older version than the API server's is
// returned as the API server has it (a read never goes back in time).

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "manager/kube/client.h"
#include "manager/kube/metrics.h"

namespace captf::kube {

// Drops what a kind cached without its data does not keep: everything
// outside apiVersion, kind and metadata, and metadata.managedFields.
void stripPayload(Json& object);

class DataReadThrough final : public Reader {
public:
  // `cached` is the informer cache, `live` the API server. Objects of
  // `kinds` get their payload back; other kinds pass through to `cached`.
  // `metrics` may be null; otherwise captf_cache_payload_bytes and
  // captf_cache_payload_reads_total{result="hit|fetched"} are exported.
  DataReadThrough(Reader& cached, Reader& live, std::set<GroupVersionKind> kinds,
                  std::size_t memo_bytes, MetricsRegistry* metrics);

  absl::StatusOr<Json> get(const GroupVersionKind& gvk, const ObjectKey& key) override;
  absl::StatusOr<ObjectList> list(const GroupVersionKind& gvk, const ListOptions& options) override;

  std::size_t memoBytes() const;
  std::int64_t fetched() const;

private:
  struct Entry {
    std::string key; // kind/namespace/name
    std::string uid;
    std::string resource_version;
    Json payload; // the fields stripPayload drops, as the API server had them
    std::size_t bytes = 0;
  };

  // Puts the payload back into `object` (a cached copy); NotFound when the
  // object is gone from the API server.
  absl::Status fill(const GroupVersionKind& gvk, Json& object);
  void remember(const std::string& key, const Json& live_object);

  Reader& cached_;
  Reader& live_;
  std::set<GroupVersionKind> kinds_;
  std::size_t memo_limit_;

  mutable std::mutex mu_;
  std::list<Entry> lru_; // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::size_t memo_bytes_ = 0;
  std::int64_t fetched_ = 0;
  Counter* hits_ = nullptr;
  Counter* fetches_ = nullptr;
};

} // namespace captf::kube
