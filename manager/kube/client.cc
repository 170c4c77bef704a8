#include "manager/kube/client.h"

#include "absl/strings/str_cat.h"
#include "contract/status_macros.h"
#include "manager/kube/errors.h"

namespace captf::kube {
namespace {

// Metadata-only reads (ListOptions::metadata_only): the API server answers
// with PartialObjectMetadata(List), metadata and nothing else.
constexpr const char* kAcceptMetadataList =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
constexpr const char* kAcceptMetadata =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

void addDryRun(Query& query, DryRun dry_run) {
  if (dry_run == DryRun::kAll) {
    query.emplace_back("dryRun", "All");
  }
}

void addFieldManager(Query& query, const std::string& field_manager) {
  if (!field_manager.empty()) {
    query.emplace_back("fieldManager", field_manager);
  }
}

absl::Status requireName(const ObjectKey& key, const ApiResource& resource) {
  if (key.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(resource.gvk.kind, ": name is required"));
  }
  if (resource.namespaced && key.ns.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(resource.gvk.kind, " ", key.name, ": namespace is required"));
  }
  return absl::OkStatus();
}

const char* contentType(PatchType type) {
  switch (type) {
  case PatchType::kMerge:
    return "application/merge-patch+json";
  case PatchType::kJsonPatch:
    return "application/json-patch+json";
  case PatchType::kStrategicMerge:
    return "application/strategic-merge-patch+json";
  case PatchType::kApply:
    return "application/apply-patch+yaml"; // JSON is valid YAML
  }
  return "application/merge-patch+json";
}

} // namespace

Query listQuery(const ListOptions& options, bool watch) {
  Query query;
  if (watch) {
    query.emplace_back("watch", "true");
    if (options.allow_watch_bookmarks) {
      query.emplace_back("allowWatchBookmarks", "true");
    }
    if (options.timeout_seconds) {
      query.emplace_back("timeoutSeconds", absl::StrCat(*options.timeout_seconds));
    }
  }
  if (!options.label_selector.empty()) {
    query.emplace_back("labelSelector", options.label_selector);
  }
  if (!options.field_selector.empty()) {
    query.emplace_back("fieldSelector", options.field_selector);
  }
  if (!watch && options.limit > 0) {
    query.emplace_back("limit", absl::StrCat(options.limit));
  }
  if (!watch && !options.continue_token.empty()) {
    query.emplace_back("continue", options.continue_token);
  }
  if (!options.resource_version.empty()) {
    query.emplace_back("resourceVersion", options.resource_version);
  }
  if (!watch && options.resource_version_match != ResourceVersionMatch::kDefault) {
    query.emplace_back(
        "resourceVersionMatch",
        options.resource_version_match == ResourceVersionMatch::kExact ? "Exact" : "NotOlderThan");
  }
  return query;
}

absl::StatusOr<Json> ApiClient::get(const GroupVersionKind& gvk, const ObjectKey& key) {
  auto resource = mapper_.resourceFor(gvk);
  if (!resource.ok()) {
    return resource.status();
  }
  CAPTF_RETURN_IF_ERROR(requireName(key, *resource));
  return rest_.sendJson(restRequest("GET", objectPath(*resource, key.ns, key.name)));
}

absl::StatusOr<ObjectList> ApiClient::list(const GroupVersionKind& gvk,
                                           const ListOptions& options) {
  auto resource = mapper_.resourceFor(gvk);
  if (!resource.ok()) {
    return resource.status();
  }
  RestRequest request =
      restRequest("GET", collectionPath(*resource, options.ns), listQuery(options, false));
  if (options.metadata_only) {
    request.accept = kAcceptMetadataList;
  }
  auto response = rest_.sendJson(request);
  if (!response.ok()) {
    return response.status();
  }
  ObjectList list;
  const Json& metadata = response->value("metadata", Json::object());
  list.resource_version = metadata.value("resourceVersion", "");
  list.continue_token = metadata.value("continue", "");
  if (auto remaining = metadata.find("remainingItemCount");
      remaining != metadata.end() && remaining->is_number_integer()) {
    list.remaining_item_count = remaining->get<int64_t>();
  }
  auto items = response->find("items");
  if (items != response->end() && items->is_array()) {
    list.items.reserve(items->size());
    std::string api_version = gvk.apiVersion();
    for (auto& item : *items) {
      // List items come without apiVersion/kind; fill them in so every
      // object this client hands out is self-describing.
      item["apiVersion"] = api_version;
      item["kind"] = gvk.kind;
      list.items.push_back(std::move(item));
    }
  }
  return list;
}

absl::StatusOr<Json> ApiClient::write(const std::string& method, const Json& object,
                                      const std::string& subresource, DryRun dry_run,
                                      const std::string& field_manager) {
  auto gvk = meta::gvk(object);
  if (!gvk.ok()) {
    return gvk.status();
  }
  auto resource = mapper_.resourceFor(*gvk);
  if (!resource.ok()) {
    return resource.status();
  }
  ObjectKey key = meta::key(object);
  Query query;
  addDryRun(query, dry_run);
  addFieldManager(query, field_manager);
  std::string path;
  if (method == "POST") {
    if (resource->namespaced && key.ns.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(gvk->kind, ": namespace is required"));
    }
    path = collectionPath(*resource, key.ns);
  } else {
    CAPTF_RETURN_IF_ERROR(requireName(key, *resource));
    path = objectPath(*resource, key.ns, key.name, subresource);
  }
  return rest_.sendJson(restRequest(method, path, std::move(query), object.dump()));
}

absl::StatusOr<Json> ApiClient::create(const Json& object, const CreateOptions& options) {
  return write("POST", object, "", options.dry_run, options.field_manager);
}

absl::StatusOr<Json> ApiClient::update(const Json& object, const UpdateOptions& options) {
  return write("PUT", object, options.subresource, options.dry_run, options.field_manager);
}

absl::StatusOr<Json> ApiClient::patch(const GroupVersionKind& gvk, const ObjectKey& key,
                                      PatchType type, const Json& patch,
                                      const PatchOptions& options) {
  auto resource = mapper_.resourceFor(gvk);
  if (!resource.ok()) {
    return resource.status();
  }
  CAPTF_RETURN_IF_ERROR(requireName(key, *resource));
  if (type == PatchType::kApply && options.field_manager.empty()) {
    return absl::InvalidArgumentError("server-side apply needs a field manager");
  }
  Query query;
  addDryRun(query, options.dry_run);
  addFieldManager(query, options.field_manager);
  if (options.force == Force::kYes) {
    if (type != PatchType::kApply) {
      return absl::InvalidArgumentError("force is only valid for server-side apply");
    }
    query.emplace_back("force", "true");
  }
  return rest_.sendJson(restRequest("PATCH",
                                    objectPath(*resource, key.ns, key.name, options.subresource),
                                    std::move(query), patch.dump(), contentType(type)));
}

absl::StatusOr<Json> ApiClient::apply(const Json& object, const ApplyOptions& options) {
  auto gvk = meta::gvk(object);
  if (!gvk.ok()) {
    return gvk.status();
  }
  return patch(*gvk, meta::key(object), PatchType::kApply, object,
               {.dry_run = options.dry_run,
                .field_manager = options.field_manager,
                .force = options.force,
                .subresource = options.subresource});
}

absl::Status ApiClient::remove(const GroupVersionKind& gvk, const ObjectKey& key,
                               const DeleteOptions& options) {
  auto resource = mapper_.resourceFor(gvk);
  if (!resource.ok()) {
    return resource.status();
  }
  CAPTF_RETURN_IF_ERROR(requireName(key, *resource));
  Json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  switch (options.propagation) {
  case PropagationPolicy::kDefault:
    break;
  case PropagationPolicy::kOrphan:
    body["propagationPolicy"] = "Orphan";
    break;
  case PropagationPolicy::kBackground:
    body["propagationPolicy"] = "Background";
    break;
  case PropagationPolicy::kForeground:
    body["propagationPolicy"] = "Foreground";
    break;
  }
  if (options.preconditions.uid) {
    body["preconditions"]["uid"] = *options.preconditions.uid;
  }
  if (options.preconditions.resource_version) {
    body["preconditions"]["resourceVersion"] = *options.preconditions.resource_version;
  }
  if (options.grace_period_seconds) {
    body["gracePeriodSeconds"] = *options.grace_period_seconds;
  }
  if (options.dry_run == DryRun::kAll) {
    body["dryRun"] = Json::array({"All"});
  }
  auto response =
      rest_.send(restRequest("DELETE", objectPath(*resource, key.ns, key.name), {}, body.dump()));
  return response.status();
}

absl::StatusOr<std::unique_ptr<EventStream>>
ApiClient::watch(const GroupVersionKind& gvk, const ListOptions& options, std::stop_token stop) {
  auto resource = mapper_.resourceFor(gvk);
  if (!resource.ok()) {
    return resource.status();
  }
  // The server ends the watch after timeoutSeconds; the client deadline
  // only catches a server that went silent without closing.
  int64_t server_timeout = options.timeout_seconds.value_or(300);
  ListOptions watch_options = options;
  watch_options.timeout_seconds = server_timeout;
  RestRequest request = restRequest("GET", collectionPath(*resource, options.ns),
                                    listQuery(watch_options, /*watch=*/true));
  request.timeout = std::chrono::seconds(server_timeout + 60);
  std::optional<GroupVersionKind> as;
  if (options.metadata_only) {
    request.accept = kAcceptMetadata;
    as = gvk;
  }
  auto body = rest_.stream(request, std::move(stop));
  if (!body.ok()) {
    return body.status();
  }
  return std::unique_ptr<EventStream>(
      std::make_unique<HttpEventStream>(*std::move(body), std::move(as)));
}

absl::StatusOr<ObjectList> listAll(Reader& reader, const GroupVersionKind& gvk,
                                   ListOptions options) {
  if (options.limit <= 0) {
    options.limit = 500;
  }
  ObjectList all;
  options.continue_token.clear();
  while (true) {
    auto page = reader.list(gvk, options);
    if (!page.ok()) {
      if (isGone(page.status()) && !options.continue_token.empty()) {
        // The snapshot behind the token was compacted: a consistent result
        // now needs one unpaginated list.
        ListOptions full = options;
        full.limit = 0;
        full.continue_token.clear();
        return reader.list(gvk, full);
      }
      return page.status();
    }
    if (all.resource_version.empty()) {
      all.resource_version = page->resource_version;
    }
    for (auto& item : page->items) {
      all.items.push_back(std::move(item));
    }
    if (page->continue_token.empty()) {
      return all;
    }
    options.continue_token = page->continue_token;
  }
}

} // namespace captf::kube
