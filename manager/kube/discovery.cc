#include "manager/kube/discovery.h"

#include "absl/strings/str_cat.h"
#include "manager/kube/errors.h"

namespace captf::kube {
namespace {

std::string groupVersionPath(const std::string& group, const std::string& version) {
  return group.empty() ? absl::StrCat("/api/", version)
                       : absl::StrCat("/apis/", group, "/", version);
}

} // namespace

StaticRestMapper& StaticRestMapper::add(ApiResource resource) {
  std::scoped_lock lock(mu_);
  resources_[resource.gvk] = std::move(resource);
  return *this;
}

absl::StatusOr<ApiResource> StaticRestMapper::resourceFor(const GroupVersionKind& gvk) {
  std::scoped_lock lock(mu_);
  auto it = resources_.find(gvk);
  if (it == resources_.end()) {
    return absl::NotFoundError(absl::StrCat("no resource for ", gvk.str()));
  }
  return it->second;
}

absl::StatusOr<Json> DiscoveryClient::serverVersion() {
  return rest_.sendJson(restRequest("GET", "/version"));
}

absl::StatusOr<std::vector<std::string>> DiscoveryClient::serverGroupVersions() {
  std::vector<std::string> out;
  auto core = rest_.sendJson(restRequest("GET", "/api"));
  if (!core.ok()) {
    return core.status();
  }
  for (const auto& version : core->value("versions", Json::array())) {
    out.push_back(version.get<std::string>());
  }
  auto groups = rest_.sendJson(restRequest("GET", "/apis"));
  if (!groups.ok()) {
    return groups.status();
  }
  for (const auto& group : groups->value("groups", Json::array())) {
    std::string preferred =
        group.value("preferredVersion", Json::object()).value("groupVersion", "");
    if (!preferred.empty()) {
      out.push_back(preferred);
    }
    for (const auto& version : group.value("versions", Json::array())) {
      std::string gv = version.value("groupVersion", "");
      if (!gv.empty() && gv != preferred) {
        out.push_back(gv);
      }
    }
  }
  return out;
}

absl::StatusOr<std::vector<ApiResource>>
DiscoveryClient::serverResources(const std::string& group, const std::string& version) {
  auto list = rest_.sendJson(restRequest("GET", groupVersionPath(group, version)));
  if (!list.ok()) {
    return list.status();
  }
  std::vector<ApiResource> out;
  std::map<std::string, std::vector<std::string>> subresources;
  for (const auto& item : list->value("resources", Json::array())) {
    std::string name = item.value("name", "");
    if (auto slash = name.find('/'); slash != std::string::npos) {
      subresources[name.substr(0, slash)].push_back(name.substr(slash + 1));
      continue;
    }
    ApiResource resource;
    resource.gvk = {group, version, item.value("kind", "")};
    resource.plural = name;
    resource.namespaced = item.value("namespaced", false);
    for (const auto& verb : item.value("verbs", Json::array())) {
      resource.verbs.push_back(verb.get<std::string>());
    }
    out.push_back(std::move(resource));
  }
  for (auto& resource : out) {
    if (auto it = subresources.find(resource.plural); it != subresources.end()) {
      resource.subresources = it->second;
    }
  }
  return out;
}

DiscoveryRestMapper::DiscoveryRestMapper(RestClient& rest, Clock& clock, Duration refresh_interval)
    : discovery_(rest), clock_(clock), refresh_interval_(refresh_interval) {}

absl::StatusOr<ApiResource> DiscoveryRestMapper::resourceFor(const GroupVersionKind& gvk) {
  std::string key = gvk.apiVersion();
  std::scoped_lock lock(mu_);
  auto lookup = [&](const GroupVersion& gv) -> std::optional<ApiResource> {
    for (const auto& resource : gv.resources) {
      if (resource.gvk.kind == gvk.kind) {
        return resource;
      }
    }
    return std::nullopt;
  };
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    if (auto found = lookup(it->second)) {
      return *found;
    }
    if (clock_.now() - it->second.fetched_at < refresh_interval_) {
      return absl::NotFoundError(absl::StrCat("the server does not serve ", gvk.str()));
    }
  }
  // Discovery is rare (once per group-version), so holding the lock while
  // fetching keeps concurrent first uses from fetching twice.
  auto resources = discovery_.serverResources(gvk.group, gvk.version);
  if (!resources.ok()) {
    if (isNotFound(resources.status())) {
      return absl::NotFoundError(absl::StrCat("the server does not serve ", key));
    }
    return resources.status();
  }
  auto& entry = cache_[key];
  entry.resources = *std::move(resources);
  entry.fetched_at = clock_.now();
  if (auto found = lookup(entry)) {
    return *found;
  }
  return absl::NotFoundError(absl::StrCat("the server does not serve ", gvk.str()));
}

std::string collectionPath(const ApiResource& resource, const std::string& ns) {
  std::string path = groupVersionPath(resource.gvk.group, resource.gvk.version);
  if (resource.namespaced && !ns.empty()) {
    absl::StrAppend(&path, "/namespaces/", pathEscape(ns));
  }
  absl::StrAppend(&path, "/", resource.plural);
  return path;
}

std::string objectPath(const ApiResource& resource, const std::string& ns, const std::string& name,
                       const std::string& subresource) {
  std::string path = absl::StrCat(collectionPath(resource, ns), "/", pathEscape(name));
  if (!subresource.empty()) {
    absl::StrAppend(&path, "/", subresource);
  }
  return path;
}

} // namespace captf::kube
