#include "manager/kube/informer.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

size_t heapBytes(const std::string& s) {
  // libstdc++ keeps up to 15 bytes inline.
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

} // namespace

Json CachedObject::object() const {
  return Json::from_msgpack(blob.begin(), blob.end());
}

size_t CachedObject::bytes() const {
  size_t total = sizeof(CachedObject) + 16 /* shared_ptr control block */;
  total += heapBytes(key.ns) + heapBytes(key.name) + heapBytes(resource_version) + heapBytes(blob);
  total += labels.capacity() * sizeof(Labels::value_type);
  for (const auto& [k, v] : labels) {
    total += heapBytes(k) + heapBytes(v);
  }
  return total;
}

ObjectPtr makeCachedObject(const Json& object) {
  auto cached = std::make_shared<CachedObject>();
  cached->key = meta::key(object);
  cached->resource_version = meta::resourceVersion(object);
  const Json& labels = meta::labels(object);
  cached->labels.reserve(labels.size());
  for (const auto& [key, value] : labels.items()) {
    if (value.is_string()) {
      cached->labels.emplace_back(key, value.get<std::string>());
    }
  }
  // nlohmann objects iterate in key order already; keep the invariant
  // explicit for matchesLabels' binary search.
  std::sort(cached->labels.begin(), cached->labels.end());
  std::vector<uint8_t> packed = Json::to_msgpack(object);
  cached->blob.assign(packed.begin(), packed.end());
  return cached;
}

bool matchesLabels(const LabelSelector& selector, const Labels& labels) {
  if (selector.empty()) {
    return true;
  }
  // LabelSelector matches a JSON object; build one only from these labels.
  Json object = Json::object();
  for (const auto& [key, value] : labels) {
    object[key] = value;
  }
  return selector.matches(object);
}

namespace index {

std::vector<std::string> byNamespace(const Json& object) {
  return {meta::ns(object)};
}

std::vector<std::string> byOwnerUid(const Json& object) {
  std::vector<std::string> out;
  for (const auto& owner : meta::ownerReferences(object)) {
    out.push_back(owner.uid);
  }
  return out;
}

IndexFunc byLabel(std::string key) {
  return [key = std::move(key)](const Json& object) -> std::vector<std::string> {
    const Json& labels = meta::labels(object);
    auto it = labels.find(key);
    if (it == labels.end() || !it->is_string()) {
      return {};
    }
    return {it->get<std::string>()};
  };
}

IndexFunc byField(std::string dotted_path) {
  return [path = std::move(dotted_path)](const Json& object) -> std::vector<std::string> {
    const Json* value = fieldAt(object, path);
    if (value == nullptr || value->is_null()) {
      return {};
    }
    return {value->is_string() ? value->get<std::string>() : value->dump()};
  };
}

} // namespace index

Store::Store() {
  index_names_ = {index::kNamespace, index::kOwnerUid};
  index_funcs_ = {index::byNamespace, index::byOwnerUid};
  indexes_.resize(2);
}

absl::Status Store::addIndex(const std::string& name, IndexFunc fn) {
  std::scoped_lock lock(mu_);
  if (std::find(index_names_.begin(), index_names_.end(), name) != index_names_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("index \"", name, "\" exists"));
  }
  index_names_.push_back(name);
  index_funcs_.push_back(std::move(fn));
  auto& values = indexes_.emplace_back();
  for (auto& [key, entry] : items_) {
    auto computed = index_funcs_.back()(entry.object->object());
    for (const auto& value : computed) {
      values[value].insert(key);
    }
    entry.index_values.push_back(std::move(computed));
  }
  return absl::OkStatus();
}

void Store::indexLocked(const ObjectKey& key, Entry& entry, const Json& json) {
  entry.index_values.resize(index_funcs_.size());
  for (size_t i = 0; i < index_funcs_.size(); ++i) {
    entry.index_values[i] = index_funcs_[i](json);
    for (const auto& value : entry.index_values[i]) {
      indexes_[i][value].insert(key);
    }
  }
}

void Store::unindexLocked(const ObjectKey& key, const Entry& entry) {
  for (size_t i = 0; i < entry.index_values.size(); ++i) {
    for (const auto& value : entry.index_values[i]) {
      auto it = indexes_[i].find(value);
      if (it == indexes_[i].end()) {
        continue;
      }
      it->second.erase(key);
      if (it->second.empty()) {
        indexes_[i].erase(it);
      }
    }
  }
}

ObjectPtr Store::put(ObjectPtr object, const Json& json) {
  std::scoped_lock lock(mu_);
  ObjectKey key = object->key;
  auto& entry = items_[key];
  ObjectPtr previous = std::move(entry.object);
  if (previous) {
    unindexLocked(key, entry);
    bytes_ -= previous->bytes();
  }
  bytes_ += object->bytes();
  entry.object = std::move(object);
  indexLocked(key, entry, json);
  return previous;
}

ObjectPtr Store::erase(const ObjectKey& key) {
  std::scoped_lock lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) {
    return nullptr;
  }
  unindexLocked(key, it->second);
  ObjectPtr previous = std::move(it->second.object);
  bytes_ -= previous->bytes();
  items_.erase(it);
  return previous;
}

ObjectPtr Store::get(const ObjectKey& key) const {
  std::scoped_lock lock(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second.object;
}

std::vector<ObjectPtr> Store::list() const {
  std::scoped_lock lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [key, entry] : items_) {
    out.push_back(entry.object);
  }
  return out;
}

std::vector<ObjectPtr> Store::listNamespace(const std::string& ns) const {
  auto found = byIndex(index::kNamespace, ns);
  return found.ok() ? *std::move(found) : std::vector<ObjectPtr>{};
}

absl::StatusOr<std::vector<ObjectPtr>> Store::byIndex(const std::string& index,
                                                      const std::string& value) const {
  std::scoped_lock lock(mu_);
  auto pos = std::find(index_names_.begin(), index_names_.end(), index);
  if (pos == index_names_.end()) {
    return absl::NotFoundError(absl::StrCat("no index \"", index, "\""));
  }
  const auto& values = indexes_[static_cast<size_t>(pos - index_names_.begin())];
  std::vector<ObjectPtr> out;
  auto it = values.find(value);
  if (it == values.end()) {
    return out;
  }
  out.reserve(it->second.size());
  for (const auto& key : it->second) {
    out.push_back(items_.at(key).object);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> Store::indexValues(const std::string& index,
                                                            std::string_view prefix) const {
  std::scoped_lock lock(mu_);
  auto pos = std::find(index_names_.begin(), index_names_.end(), index);
  if (pos == index_names_.end()) {
    return absl::NotFoundError(absl::StrCat("no index \"", index, "\""));
  }
  std::vector<std::string> out;
  for (const auto& [value, keys] : indexes_[static_cast<size_t>(pos - index_names_.begin())]) {
    if (!keys.empty() && value.starts_with(prefix)) {
      out.push_back(value);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Store::hasIndex(const std::string& index) const {
  std::scoped_lock lock(mu_);
  return std::find(index_names_.begin(), index_names_.end(), index) != index_names_.end();
}

std::vector<ObjectKey> Store::keys() const {
  std::scoped_lock lock(mu_);
  std::vector<ObjectKey> out;
  out.reserve(items_.size());
  for (const auto& [key, entry] : items_) {
    out.push_back(key);
  }
  return out;
}

size_t Store::size() const {
  std::scoped_lock lock(mu_);
  return items_.size();
}

size_t Store::bytes() const {
  std::scoped_lock lock(mu_);
  return bytes_;
}

ListOptions ApiListerWatcher::merged(const ListOptions& options) const {
  ListOptions out = options;
  out.ns = scope_.ns;
  out.label_selector = scope_.label_selector;
  out.field_selector = scope_.field_selector;
  out.metadata_only = scope_.metadata_only;
  return out;
}

absl::StatusOr<ObjectList> ApiListerWatcher::list(const ListOptions& options) {
  return client_.list(gvk_, merged(options));
}

absl::StatusOr<std::unique_ptr<EventStream>> ApiListerWatcher::watch(const ListOptions& options,
                                                                     std::stop_token stop) {
  return client_.watch(gvk_, merged(options), std::move(stop));
}

void stripManagedFields(Json& object) {
  if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
    metadata->erase("managedFields");
  }
}

SharedInformer::SharedInformer(GroupVersionKind gvk, std::unique_ptr<ListerWatcher> lister_watcher,
                               Clock& clock, InformerOptions options,
                               std::shared_ptr<spdlog::logger> logger)
    : gvk_(std::move(gvk)), lister_watcher_(std::move(lister_watcher)), clock_(clock),
      options_(std::move(options)), logger_(std::move(logger)) {}

SharedInformer::~SharedInformer() {
  stop();
}

uint64_t SharedInformer::addEventHandler(EventHandlers handlers) {
  std::scoped_lock lock(dispatch_mu_);
  uint64_t id = next_handler_++;
  if (handlers.on_add) {
    for (const auto& object : store_.list()) {
      handlers.on_add(object->object());
    }
  }
  handlers_.emplace(id, std::move(handlers));
  return id;
}

void SharedInformer::removeEventHandler(uint64_t id) {
  std::scoped_lock lock(dispatch_mu_);
  handlers_.erase(id);
}

void SharedInformer::start() {
  std::scoped_lock lock(thread_mu_);
  if (thread_.joinable()) {
    return;
  }
  thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
  if (options_.resync_period > Duration::zero()) {
    resync_thread_ = std::jthread([this](std::stop_token stop) { resyncLoop(std::move(stop)); });
  }
}

void SharedInformer::stop() {
  std::scoped_lock lock(thread_mu_);
  for (auto* thread : {&thread_, &resync_thread_}) {
    if (thread->joinable()) {
      thread->request_stop();
      thread->join();
    }
  }
  synced_cv_.notify_all();
}

bool SharedInformer::hasSynced() const {
  std::scoped_lock lock(mu_);
  return synced_;
}

bool SharedInformer::waitForSync(std::stop_token stop) const {
  std::unique_lock lock(mu_);
  synced_cv_.wait(lock, stop, [&] { return synced_; });
  return synced_;
}

std::string SharedInformer::lastSyncResourceVersion() const {
  std::scoped_lock lock(mu_);
  return resource_version_;
}

void SharedInformer::setResourceVersion(std::string rv) {
  std::scoped_lock lock(mu_);
  resource_version_ = std::move(rv);
}

void SharedInformer::dispatchAdd(const Json& object) {
  for (auto& [id, handlers] : handlers_) {
    if (handlers.on_add) {
      handlers.on_add(object);
    }
  }
}

void SharedInformer::dispatchUpdate(const Json& old_object, const Json& new_object) {
  for (auto& [id, handlers] : handlers_) {
    if (handlers.on_update) {
      handlers.on_update(old_object, new_object);
    }
  }
}

void SharedInformer::dispatchDelete(const Json& object) {
  for (auto& [id, handlers] : handlers_) {
    if (handlers.on_delete) {
      handlers.on_delete(object);
    }
  }
}

absl::Status SharedInformer::listAndReplace(std::stop_token stop) {
  ListOptions options;
  options.limit = options_.page_size;
  // Paginated lists read a consistent snapshot from etcd; the
  // resourceVersion of the first page is that of the whole list.
  //
  // Each page is compacted as soon as it arrives and its JSON trees are
  // freed before the next page is fetched: only one page is ever held as
  // JSON (several KiB of small allocations per object). Holding the whole
  // list as JSON until the end made the heap peak at ~4x the compact cache
  // and, because each compact copy lands between the trees, malloc could
  // not give those pages back after the list (bench/kube/run.sh: 134 MB RSS
  // for a 24 MB cache of 10,000 objects).
  std::vector<ObjectPtr> listed;
  std::string list_rv;
  while (true) {
    if (stop.stop_requested()) {
      return absl::CancelledError("stopped");
    }
    auto page = lister_watcher_->list(options);
    if (!page.ok()) {
      return page.status();
    }
    if (list_rv.empty()) {
      list_rv = page->resource_version;
    }
    listed.reserve(listed.size() + page->items.size());
    for (auto& item : page->items) {
      if (options_.transform) {
        options_.transform(item);
      }
      listed.push_back(makeCachedObject(item));
      item = Json(); // free this tree now, not with the page
    }
    if (page->continue_token.empty()) {
      break;
    }
    options.continue_token = page->continue_token;
  }

  std::scoped_lock dispatch(dispatch_mu_);
  std::unordered_set<ObjectKey> seen;
  seen.reserve(listed.size());
  const size_t listed_count = listed.size();
  for (auto& object : listed) {
    seen.insert(object->key);
    ObjectPtr existing = store_.get(object->key);
    // An unchanged object (same resourceVersion) is not news: a relist after
    // a 410 or a reconnect must not re-trigger every reconcile.
    if (existing && existing->resource_version == object->resource_version) {
      object.reset();
      continue;
    }
    // Decoded again (one object at a time) for the indexes and handlers.
    Json item = object->object();
    ObjectPtr previous = store_.put(std::move(object), item);
    if (previous) {
      dispatchUpdate(previous->object(), item);
    } else {
      dispatchAdd(item);
    }
  }
  listed = {};
  for (const auto& key : store_.keys()) {
    if (!seen.contains(key)) {
      if (ObjectPtr gone = store_.erase(key)) {
        dispatchDelete(gone->object());
      }
    }
  }
  setResourceVersion(list_rv);
  lists_.fetch_add(1);
  {
    std::scoped_lock lock(mu_);
    synced_ = true;
  }
  synced_cv_.notify_all();
  logger_->debug("informer listed kind={} objects={} resourceVersion={}", gvk_.kind, listed_count,
                 list_rv);
  return absl::OkStatus();
}

void SharedInformer::handleEvent(WatchEvent& event) {
  Json& object = event.object;
  if (options_.transform) {
    options_.transform(object);
  }
  std::string rv = meta::resourceVersion(object);
  std::scoped_lock dispatch(dispatch_mu_);
  switch (event.type) {
  case WatchEventType::kAdded:
  case WatchEventType::kModified: {
    ObjectPtr previous = store_.put(makeCachedObject(object), object);
    if (previous) {
      dispatchUpdate(previous->object(), object);
    } else {
      dispatchAdd(object);
    }
    break;
  }
  case WatchEventType::kDeleted: {
    store_.erase(meta::key(object));
    dispatchDelete(object);
    break;
  }
  case WatchEventType::kBookmark:
  case WatchEventType::kError:
    break;
  }
  if (!rv.empty()) {
    setResourceVersion(std::move(rv));
  }
}

absl::Status SharedInformer::watchOnce(std::stop_token stop, bool* relist) {
  ListOptions options;
  options.resource_version = lastSyncResourceVersion();
  options.allow_watch_bookmarks = true;
  std::mt19937_64 rng(std::random_device{}());
  auto min_timeout = options_.min_watch_timeout.count();
  options.timeout_seconds =
      min_timeout +
      static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(1, min_timeout)));
  auto stream = lister_watcher_->watch(options, stop);
  if (!stream.ok()) {
    if (isGone(stream.status())) {
      *relist = true;
    }
    return stream.status();
  }
  while (!stop.stop_requested()) {
    auto event = (*stream)->next();
    if (!event.ok()) {
      return event.status();
    }
    if (!*event) {
      return absl::OkStatus(); // the server ended the watch: watch again
    }
    if ((*event)->type == WatchEventType::kError) {
      auto error = errorFromResponse((*event)->object.value("code", 500), (*event)->object.dump());
      if (isGone(error)) {
        *relist = true;
      }
      return error;
    }
    handleEvent(**event);
  }
  return absl::CancelledError("stopped");
}

void SharedInformer::run(std::stop_token stop) {
  bool need_list = true;
  Duration backoff = options_.initial_backoff;
  while (!stop.stop_requested()) {
    if (need_list) {
      auto status = listAndReplace(stop);
      if (!status.ok()) {
        if (stop.stop_requested()) {
          break;
        }
        logger_->warn("informer list failed kind={} error=\"{}\" retryInSeconds={:.1f}", gvk_.kind,
                      msg(status), std::chrono::duration<double>(backoff).count());
        clock_.sleepFor(backoff, stop);
        backoff = std::min(backoff * 2, options_.max_backoff);
        continue;
      }
      need_list = false;
      backoff = options_.initial_backoff;
    }
    bool relist = false;
    std::string rv_before = lastSyncResourceVersion();
    auto status = watchOnce(stop, &relist);
    if (stop.stop_requested()) {
      break;
    }
    if (relist) {
      // The resourceVersion was compacted away: only a fresh list restores
      // a consistent view.
      logger_->info("informer watch expired, relisting kind={} resourceVersion={}", gvk_.kind,
                    rv_before);
      need_list = true;
      continue;
    }
    if (status.ok()) {
      backoff = options_.initial_backoff;
      continue;
    }
    if (lastSyncResourceVersion() != rv_before) {
      backoff = options_.initial_backoff; // it made progress before failing
    }
    logger_->info("informer watch failed, resuming kind={} resourceVersion={} error=\"{}\"",
                  gvk_.kind, lastSyncResourceVersion(), msg(status));
    clock_.sleepFor(backoff, stop);
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void SharedInformer::resyncLoop(std::stop_token stop) {
  while (clock_.sleepFor(options_.resync_period, stop)) {
    std::scoped_lock dispatch(dispatch_mu_);
    for (const auto& object : store_.list()) {
      Json json = object->object();
      dispatchUpdate(json, json);
    }
  }
}

} // namespace captf::kube
