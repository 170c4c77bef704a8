#include "manager/kube/read_through.h"

#include <iterator>
#include <string_view>
#include <utility>

#include "manager/kube/errors.h"
#include "manager/kube/informer.h"

namespace captf::kube {

namespace {

// The payload is everything outside apiVersion, kind and metadata (a
// Secret's type and data, a ConfigMap's data and binaryData): what a
// metadata-only list or watch (ListOptions::metadata_only) leaves out.
bool isPayloadField(std::string_view field) {
  return field != "apiVersion" && field != "kind" && field != "metadata";
}

std::size_t payloadBytes(const Json& payload) {
  std::size_t bytes = 0;
  for (const auto& [field, values] : payload.items()) {
    bytes += field.size();
    if (values.is_string()) {
      bytes += values.get_ref<const std::string&>().size();
    }
    if (!values.is_object()) {
      continue;
    }
    for (const auto& [name, value] : values.items()) {
      bytes += name.size() + (value.is_string() ? value.get_ref<const std::string&>().size() : 0);
    }
  }
  return bytes;
}

Json payloadOf(const Json& object) {
  Json payload = Json::object();
  for (const auto& [field, value] : object.items()) {
    if (isPayloadField(field)) {
      payload[field] = value;
    }
  }
  return payload;
}

std::string memoKey(const GroupVersionKind& gvk, const Json& object) {
  return gvk.kind + "/" + meta::ns(object) + "/" + meta::name(object);
}

} // namespace

void stripPayload(Json& object) {
  stripManagedFields(object);
  for (auto it = object.begin(); it != object.end();) {
    it = isPayloadField(it.key()) ? object.erase(it) : std::next(it);
  }
}

DataReadThrough::DataReadThrough(Reader& cached, Reader& live, std::set<GroupVersionKind> kinds,
                                 std::size_t memo_bytes, MetricsRegistry* metrics)
    : cached_(cached), live_(live), kinds_(std::move(kinds)), memo_limit_(memo_bytes) {
  if (metrics == nullptr) {
    return;
  }
  auto& reads = metrics->counter(
      "captf_cache_payload_reads_total",
      "Reads of an object the cache holds without its payload (Secret data), by where the "
      "payload came from: hit (the memo), fetched (a GET to the API server).",
      {"result"});
  hits_ = &reads.withLabels({"hit"});
  fetches_ = &reads.withLabels({"fetched"});
  metrics->gaugeFunc("captf_cache_payload_bytes",
                     "Bytes of payload (Secret data) remembered for objects the cache holds "
                     "without it; bounded by --secret-data-cache-size.",
                     {}, [this](auto& samples) {
                       std::scoped_lock lock(mu_);
                       samples.push_back({{}, static_cast<double>(memo_bytes_)});
                     });
}

absl::StatusOr<Json> DataReadThrough::get(const GroupVersionKind& gvk, const ObjectKey& key) {
  auto object = cached_.get(gvk, key);
  if (!object.ok() || !kinds_.contains(gvk)) {
    return object;
  }
  if (absl::Status filled = fill(gvk, *object); !filled.ok()) {
    return filled;
  }
  return object;
}

absl::StatusOr<ObjectList> DataReadThrough::list(const GroupVersionKind& gvk,
                                                 const ListOptions& options) {
  auto listed = cached_.list(gvk, options);
  if (!listed.ok() || !kinds_.contains(gvk)) {
    return listed;
  }
  std::vector<Json> items;
  items.reserve(listed->items.size());
  for (Json& item : listed->items) {
    absl::Status filled = fill(gvk, item);
    if (isNotFound(filled)) {
      continue; // deleted since the cache saw it
    }
    if (!filled.ok()) {
      return filled;
    }
    items.push_back(std::move(item));
  }
  listed->items = std::move(items);
  return listed;
}

absl::Status DataReadThrough::fill(const GroupVersionKind& gvk, Json& object) {
  const std::string key = memoKey(gvk, object);
  const std::string uid = meta::uid(object);
  const std::string version = meta::resourceVersion(object);
  {
    std::scoped_lock lock(mu_);
    if (auto found = index_.find(key); found != index_.end()) {
      auto entry = found->second;
      if (entry->uid == uid && entry->resource_version == version) {
        for (const auto& [field, value] : entry->payload.items()) {
          object[field] = value;
        }
        lru_.splice(lru_.begin(), lru_, entry);
        if (hits_ != nullptr) {
          hits_->inc();
        }
        return absl::OkStatus();
      }
    }
  }
  auto live = live_.get(gvk, meta::key(object));
  if (!live.ok()) {
    return live.status();
  }
  stripManagedFields(*live);
  remember(key, *live);
  object = *std::move(live);
  return absl::OkStatus();
}

void DataReadThrough::remember(const std::string& key, const Json& live_object) {
  Entry entry{key, meta::uid(live_object), meta::resourceVersion(live_object),
              payloadOf(live_object), 0};
  entry.bytes = payloadBytes(entry.payload) + key.size();
  std::scoped_lock lock(mu_);
  ++fetched_;
  if (fetches_ != nullptr) {
    fetches_->inc();
  }
  if (auto found = index_.find(key); found != index_.end()) {
    memo_bytes_ -= found->second->bytes;
    lru_.erase(found->second);
    index_.erase(found);
  }
  if (entry.bytes > memo_limit_) {
    return; // read, never remembered
  }
  while (memo_bytes_ + entry.bytes > memo_limit_ && !lru_.empty()) {
    memo_bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  memo_bytes_ += entry.bytes;
  lru_.push_front(std::move(entry));
  index_[key] = lru_.begin();
}

std::size_t DataReadThrough::memoBytes() const {
  std::scoped_lock lock(mu_);
  return memo_bytes_;
}

std::int64_t DataReadThrough::fetched() const {
  std::scoped_lock lock(mu_);
  return fetched_;
}

} // namespace captf::kube
