#pragma once

// Reading and writing API objects as JSON: the Reader/Writer seam that
// reconcilers depend on (served by the API server through ApiClient, or by
// the informer cache for reads), with controller-runtime's operations.

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/kube/discovery.h"
#include "manager/kube/object.h"
#include "manager/kube/rest_client.h"
#include "manager/kube/watch.h"

namespace captf::kube {

enum class DryRun { kNo, kAll };
enum class Force { kNo, kYes };
enum class PropagationPolicy { kDefault, kOrphan, kBackground, kForeground };
enum class PatchType { kMerge, kJsonPatch, kStrategicMerge, kApply };
enum class ResourceVersionMatch { kDefault, kNotOlderThan, kExact };

struct ListOptions {
  std::string ns;             // empty: all namespaces (or cluster-scoped)
  std::string label_selector; // LabelSelector string form
  std::string field_selector; // FieldSelector string form
  int64_t limit = 0;          // page size; 0: everything at once
  std::string continue_token;
  std::string resource_version;
  ResourceVersionMatch resource_version_match = ResourceVersionMatch::kDefault;
  bool allow_watch_bookmarks = false;     // watch only
  std::optional<int64_t> timeout_seconds; // watch only: server-side end
  // Ask the API server for metadata only (PartialObjectMetadata): a list
  // or watch of Secrets then carries no data, whatever tenants put in
  // them. Objects still come back with the listed kind's apiVersion/kind.
  bool metadata_only = false;
};

struct ObjectList {
  std::string resource_version;
  std::string continue_token; // non-empty: more pages
  std::optional<int64_t> remaining_item_count;
  std::vector<Json> items; // each with apiVersion and kind filled in
};

struct CreateOptions {
  DryRun dry_run = DryRun::kNo;
  std::string field_manager;
};

struct UpdateOptions {
  DryRun dry_run = DryRun::kNo;
  std::string field_manager;
  std::string subresource; // "status" for the status subresource
};

struct PatchOptions {
  DryRun dry_run = DryRun::kNo;
  std::string field_manager; // required for PatchType::kApply
  Force force = Force::kNo;  // apply only: take over conflicting fields
  std::string subresource;
};

struct ApplyOptions {
  std::string field_manager; // required
  Force force = Force::kNo;
  DryRun dry_run = DryRun::kNo;
  std::string subresource;
};

struct Preconditions {
  std::optional<std::string> uid;
  std::optional<std::string> resource_version;
};

struct DeleteOptions {
  DryRun dry_run = DryRun::kNo;
  PropagationPolicy propagation = PropagationPolicy::kDefault;
  Preconditions preconditions;
  std::optional<int64_t> grace_period_seconds;
};

// Reads objects. Implementations are thread-safe.
class Reader {
public:
  virtual ~Reader() = default;
  // NotFound (errors.h isNotFound) when absent.
  virtual absl::StatusOr<Json> get(const GroupVersionKind& gvk, const ObjectKey& key) = 0;
  virtual absl::StatusOr<ObjectList> list(const GroupVersionKind& gvk,
                                          const ListOptions& options) = 0;
};

// Writes objects. Objects carry apiVersion, kind and metadata.name (and
// metadata.namespace when namespaced). Thread-safe. Errors are the API
// server's, typed (errors.h): Conflict, AlreadyExists, Invalid, ...
class Writer {
public:
  virtual ~Writer() = default;
  virtual absl::StatusOr<Json> create(const Json& object, const CreateOptions& options = {}) = 0;
  // Replaces the object; Conflict when metadata.resourceVersion is stale.
  virtual absl::StatusOr<Json> update(const Json& object, const UpdateOptions& options = {}) = 0;
  virtual absl::StatusOr<Json> patch(const GroupVersionKind& gvk, const ObjectKey& key,
                                     PatchType type, const Json& patch,
                                     const PatchOptions& options = {}) = 0;
  // Server-side apply of `object` (a partial object: the fields this
  // manager owns).
  virtual absl::StatusOr<Json> apply(const Json& object, const ApplyOptions& options) = 0;
  // NotFound when absent; Conflict when a precondition fails.
  virtual absl::Status remove(const GroupVersionKind& gvk, const ObjectKey& key,
                              const DeleteOptions& options = {}) = 0;

  absl::StatusOr<Json> updateStatus(const Json& object, UpdateOptions options = {}) {
    options.subresource = "status";
    return update(object, options);
  }
};

class Client : public Reader, public Writer {};

// Client straight to the API server. Thread-safe.
class ApiClient final : public Client {
public:
  ApiClient(RestClient& rest, RestMapper& mapper) : rest_(rest), mapper_(mapper) {}

  absl::StatusOr<Json> get(const GroupVersionKind& gvk, const ObjectKey& key) override;
  absl::StatusOr<ObjectList> list(const GroupVersionKind& gvk, const ListOptions& options) override;
  absl::StatusOr<Json> create(const Json& object, const CreateOptions& options = {}) override;
  absl::StatusOr<Json> update(const Json& object, const UpdateOptions& options = {}) override;
  absl::StatusOr<Json> patch(const GroupVersionKind& gvk, const ObjectKey& key, PatchType type,
                             const Json& patch, const PatchOptions& options = {}) override;
  absl::StatusOr<Json> apply(const Json& object, const ApplyOptions& options) override;
  absl::Status remove(const GroupVersionKind& gvk, const ObjectKey& key,
                      const DeleteOptions& options = {}) override;

  // Opens a watch. Uses options.resource_version, selectors, bookmarks and
  // timeout_seconds; the stream ends when `stop` fires.
  absl::StatusOr<std::unique_ptr<EventStream>>
  watch(const GroupVersionKind& gvk, const ListOptions& options, std::stop_token stop);

  RestClient& rest() { return rest_; }
  RestMapper& mapper() { return mapper_; }

private:
  absl::StatusOr<Json> write(const std::string& method, const Json& object,
                             const std::string& subresource, DryRun dry_run,
                             const std::string& field_manager);

  RestClient& rest_;
  RestMapper& mapper_;
};

// Lists every page (options.limit per page, 500 when 0), as client-go's
// pager. When a continue token expires (410) mid-way it falls back to one
// full list, which is consistent again.
absl::StatusOr<ObjectList> listAll(Reader& reader, const GroupVersionKind& gvk,
                                   ListOptions options);

// The query parameters of list/watch options (exposed for tests).
Query listQuery(const ListOptions& options, bool watch);

} // namespace captf::kube
