#include "manager/kube/cache.h"

#include "absl/strings/str_cat.h"
#include "manager/kube/errors.h"
#include "manager/kube/read_through.h"

namespace captf::kube {

std::string fieldIndexName(const std::string& path) {
  return absl::StrCat("field:", path);
}

InformerCache::InformerCache(ListerWatcherFactory factory, Clock& clock, CacheOptions options,
                             MetricsRegistry* metrics, std::shared_ptr<spdlog::logger> logger)
    : factory_(std::move(factory)), clock_(clock), options_(std::move(options)),
      logger_(std::move(logger)) {
  if (metrics != nullptr) {
    metrics->gaugeFunc(
        "captf_cache_objects", "Objects held by the informer cache, per kind.", {"kind"},
        [this](auto& samples) {
          std::scoped_lock lock(mu_);
          for (const auto& [gvk, informer] : informers_) {
            samples.push_back({{gvk.kind}, static_cast<double>(informer->store().size())});
          }
        });
    metrics->gaugeFunc(
        "captf_cache_bytes",
        "Estimated heap bytes of the objects held by the informer cache, per kind.", {"kind"},
        [this](auto& samples) {
          std::scoped_lock lock(mu_);
          for (const auto& [gvk, informer] : informers_) {
            samples.push_back({{gvk.kind}, static_cast<double>(informer->store().bytes())});
          }
        });
  }
}

InformerCache::~InformerCache() {
  stop();
}

ListerWatcherFactory InformerCache::apiFactory(ApiClient& client) {
  return [&client](const GroupVersionKind& gvk, const ListOptions& scope) {
    return std::make_unique<ApiListerWatcher>(client, gvk, scope);
  };
}

void InformerCache::start() {
  std::scoped_lock lock(mu_);
  started_ = true;
  for (auto& [gvk, informer] : informers_) {
    informer->start();
  }
}

void InformerCache::stop() {
  stop_.request_stop();
  // Not under mu_: stopping joins the informers' threads, and an event
  // handler running on one of them may read the cache (a mapping that lists
  // the objects to wake), which takes mu_. Holding it here deadlocked the
  // manager's shutdown whenever an event was being delivered at the time.
  std::vector<SharedInformer*> informers;
  {
    std::scoped_lock lock(mu_);
    for (auto& [gvk, informer] : informers_) {
      informers.push_back(informer.get());
    }
  }
  for (SharedInformer* informer : informers) {
    informer->stop();
  }
}

absl::StatusOr<SharedInformer*> InformerCache::informerFor(const GroupVersionKind& gvk) {
  std::scoped_lock lock(mu_);
  auto it = informers_.find(gvk);
  if (it != informers_.end()) {
    return it->second.get();
  }
  KindOptions kind;
  if (auto found = options_.by_kind.find(gvk); found != options_.by_kind.end()) {
    kind = found->second;
  }
  ListOptions scope;
  scope.ns = kind.ns.empty() ? options_.ns : kind.ns;
  scope.label_selector = kind.label_selector;
  scope.field_selector = kind.field_selector;
  InformerOptions informer_options;
  informer_options.resync_period = options_.resync_period;
  if (kind.transform) {
    informer_options.transform = kind.transform;
  }
  if (!kind.cache_data) {
    // Listed and watched as metadata: the payload never crosses the wire
    // into this process until a pass reads it (DataReadThrough).
    scope.metadata_only = true;
    informer_options.transform = [then = informer_options.transform](Json& object) {
      then(object);
      stripPayload(object);
    };
  }
  auto informer = std::make_unique<SharedInformer>(gvk, factory_(gvk, scope), clock_,
                                                   std::move(informer_options), logger_);
  SharedInformer* raw = informer.get();
  informers_.emplace(gvk, std::move(informer));
  if (started_) {
    raw->start();
  }
  return raw;
}

absl::Status InformerCache::addIndex(const GroupVersionKind& gvk, const std::string& name,
                                     IndexFunc fn) {
  auto informer = informerFor(gvk);
  if (!informer.ok()) {
    return informer.status();
  }
  return (*informer)->addIndex(name, std::move(fn));
}

absl::StatusOr<SharedInformer*> InformerCache::syncedInformer(const GroupVersionKind& gvk) {
  {
    std::scoped_lock lock(mu_);
    if (!started_) {
      return absl::FailedPreconditionError("the cache is not started");
    }
  }
  auto informer = informerFor(gvk);
  if (!informer.ok()) {
    return informer.status();
  }
  if (!(*informer)->waitForSync(stop_.get_token())) {
    return absl::CancelledError("the cache stopped before it synced");
  }
  return informer;
}

absl::StatusOr<std::vector<Json>> InformerCache::byIndex(const GroupVersionKind& gvk,
                                                         const std::string& name,
                                                         const std::string& value) {
  auto informer = syncedInformer(gvk);
  if (!informer.ok()) {
    return informer.status();
  }
  auto found = (*informer)->store().byIndex(name, value);
  if (!found.ok()) {
    return found.status();
  }
  std::vector<Json> out;
  out.reserve(found->size());
  for (const auto& object : *found) {
    out.push_back(object->object());
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> InformerCache::indexValues(const GroupVersionKind& gvk,
                                                                    const std::string& name,
                                                                    std::string_view prefix) {
  auto informer = syncedInformer(gvk);
  if (!informer.ok()) {
    return informer.status();
  }
  return (*informer)->store().indexValues(name, prefix);
}

bool InformerCache::waitForCacheSync(std::stop_token stop) {
  std::vector<SharedInformer*> informers;
  {
    std::scoped_lock lock(mu_);
    for (auto& [gvk, informer] : informers_) {
      informers.push_back(informer.get());
    }
  }
  for (auto* informer : informers) {
    if (!informer->waitForSync(stop)) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<Json> InformerCache::get(const GroupVersionKind& gvk, const ObjectKey& key) {
  auto informer = syncedInformer(gvk);
  if (!informer.ok()) {
    return informer.status();
  }
  ObjectPtr object = (*informer)->store().get(key);
  if (!object) {
    ApiError error;
    error.http_code = 404;
    error.reason = Reason::kNotFound;
    error.reason_text = "NotFound";
    error.kind = gvk.kind;
    error.name = key.name;
    error.message = absl::StrCat(gvk.kind, " \"", key.str(), "\" not found in the cache");
    return toStatus(error);
  }
  return object->object();
}

absl::StatusOr<ObjectList> InformerCache::list(const GroupVersionKind& gvk,
                                               const ListOptions& options) {
  auto informer = syncedInformer(gvk);
  if (!informer.ok()) {
    return informer.status();
  }
  auto labels = LabelSelector::parse(options.label_selector);
  if (!labels.ok()) {
    return labels.status();
  }
  auto fields = FieldSelector::parse(options.field_selector);
  if (!fields.ok()) {
    return fields.status();
  }
  const Store& store = (*informer)->store();
  std::string ns = options.ns;
  const FieldSelector::Requirement* by_name = nullptr;
  const FieldSelector::Requirement* by_index = nullptr;
  for (const auto& requirement : fields->requirements()) {
    bool is_meta =
        requirement.field == "metadata.name" || requirement.field == "metadata.namespace";
    if (!is_meta && !store.hasIndex(fieldIndexName(requirement.field))) {
      return absl::InvalidArgumentError(absl::StrCat("field selector on \"", requirement.field,
                                                     "\" needs an index named \"",
                                                     fieldIndexName(requirement.field), "\""));
    }
    if (!requirement.equals) {
      continue;
    }
    if (requirement.field == "metadata.namespace") {
      if (!ns.empty() && ns != requirement.value) {
        ObjectList none;
        none.resource_version = (*informer)->lastSyncResourceVersion();
        return none;
      }
      ns = requirement.value;
    } else if (requirement.field == "metadata.name") {
      by_name = &requirement;
    } else if (by_index == nullptr) {
      by_index = &requirement;
    }
  }

  // Narrow the candidates with the cheapest equality; check everything on
  // each candidate afterwards.
  std::vector<ObjectPtr> candidates;
  if (by_name != nullptr && !ns.empty()) {
    if (ObjectPtr object = store.get({ns, by_name->value})) {
      candidates.push_back(std::move(object));
    }
  } else if (by_index != nullptr) {
    auto found = store.byIndex(fieldIndexName(by_index->field), by_index->value);
    if (!found.ok()) {
      return found.status();
    }
    candidates = *std::move(found);
  } else {
    candidates = ns.empty() ? store.list() : store.listNamespace(ns);
  }

  ObjectList out;
  out.resource_version = (*informer)->lastSyncResourceVersion();
  for (const auto& object : candidates) {
    if (!ns.empty() && object->key.ns != ns) {
      continue;
    }
    if (!matchesLabels(*labels, object->labels)) {
      continue;
    }
    Json json = object->object();
    if (!fields->empty() && !fields->matches(json)) {
      continue;
    }
    out.items.push_back(std::move(json));
  }
  return out;
}

bool InformerCache::hasSynced() const {
  std::scoped_lock lock(mu_);
  for (const auto& [gvk, informer] : informers_) {
    if (!informer->hasSynced()) {
      return false;
    }
  }
  return true;
}

size_t InformerCache::objectCount() const {
  std::scoped_lock lock(mu_);
  size_t total = 0;
  for (const auto& [gvk, informer] : informers_) {
    total += informer->store().size();
  }
  return total;
}

size_t InformerCache::objectBytes() const {
  std::scoped_lock lock(mu_);
  size_t total = 0;
  for (const auto& [gvk, informer] : informers_) {
    total += informer->store().bytes();
  }
  return total;
}

} // namespace captf::kube
