#pragma once

// Discovery (/version, /api, /apis, per group-version resource lists) and
// the REST mapper that finds the resource path of a kind.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/kube/object.h"
#include "manager/kube/rest_client.h"

namespace captf::kube {

struct ApiResource {
  GroupVersionKind gvk;
  std::string plural; // "deployments"
  bool namespaced = true;
  std::vector<std::string> verbs;
  std::vector<std::string> subresources; // "status", "scale"
};

// Maps a kind to its resource. Thread-safe.
class RestMapper {
public:
  virtual ~RestMapper() = default;
  // NotFound when the server does not serve the kind.
  virtual absl::StatusOr<ApiResource> resourceFor(const GroupVersionKind& gvk) = 0;
};

// A mapper over a fixed table (tests, and kinds known at compile time).
class StaticRestMapper final : public RestMapper {
public:
  StaticRestMapper& add(ApiResource resource);
  absl::StatusOr<ApiResource> resourceFor(const GroupVersionKind& gvk) override;

private:
  std::mutex mu_;
  std::map<GroupVersionKind, ApiResource> resources_;
};

class DiscoveryClient {
public:
  explicit DiscoveryClient(RestClient& rest) : rest_(rest) {}
  // The /version document (gitVersion, major, minor, ...).
  absl::StatusOr<Json> serverVersion();
  // Every served group-version ("v1", "apps/v1", ...), preferred first.
  absl::StatusOr<std::vector<std::string>> serverGroupVersions();
  // The resources of one group-version (subresources folded in).
  absl::StatusOr<std::vector<ApiResource>> serverResources(const std::string& group,
                                                           const std::string& version);

private:
  RestClient& rest_;
};

// Fetches the resource list of a group-version on first use and keeps it;
// a kind missing from a cached list triggers one refetch (a CRD installed
// since), at most once per `refresh_interval` per group-version.
class DiscoveryRestMapper final : public RestMapper {
public:
  DiscoveryRestMapper(RestClient& rest, Clock& clock,
                      Duration refresh_interval = std::chrono::seconds(5));
  absl::StatusOr<ApiResource> resourceFor(const GroupVersionKind& gvk) override;

private:
  struct GroupVersion {
    std::vector<ApiResource> resources;
    SteadyTime fetched_at;
  };
  DiscoveryClient discovery_;
  Clock& clock_;
  const Duration refresh_interval_;
  std::mutex mu_;
  std::map<std::string, GroupVersion> cache_; // key: apiVersion
};

// The collection path of a resource: /api/v1/namespaces/NS/pods or
// /apis/apps/v1/deployments (ns empty: all namespaces, or cluster-scoped).
std::string collectionPath(const ApiResource& resource, const std::string& ns);
// The path of one object, optionally of a subresource ("status").
std::string objectPath(const ApiResource& resource, const std::string& ns, const std::string& name,
                       const std::string& subresource = {});

} // namespace captf::kube
