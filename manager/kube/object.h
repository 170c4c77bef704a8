#pragma once

// Identities of API objects and accessors for their metadata. Objects are
// nlohmann::json documents; the typed API structs come from manager/api.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "manager/kube/clock.h"

namespace captf::kube {

using Json = nlohmann::json;

struct GroupVersionKind {
  std::string group; // "" for the core group
  std::string version;
  std::string kind;

  // "v1" or "apps/v1".
  std::string apiVersion() const;
  std::string str() const; // "apps/v1, Kind=Deployment"
  bool operator==(const GroupVersionKind&) const = default;
  auto operator<=>(const GroupVersionKind&) const = default;

  // Splits "group/version" (or "version" for the core group).
  static GroupVersionKind fromApiVersion(std::string_view api_version, std::string_view kind);
};

// The (namespace, name) of an object; ns is empty for cluster-scoped ones.
// This is also what a controller reconciles (controller-runtime's Request).
struct ObjectKey {
  std::string ns;
  std::string name;

  std::string str() const { return ns.empty() ? name : ns + "/" + name; }
  bool operator==(const ObjectKey&) const = default;
  auto operator<=>(const ObjectKey&) const = default;
};

struct ObjectKeyHash {
  size_t operator()(const ObjectKey& key) const noexcept;
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
};

// Metadata accessors. They never throw: a missing or mistyped field reads as
// empty (these are read on objects the API server already validated).
namespace meta {
std::string name(const Json& object);
std::string ns(const Json& object);
std::string uid(const Json& object);
std::string resourceVersion(const Json& object);
int64_t generation(const Json& object);
bool isDeleting(const Json& object); // deletionTimestamp set
ObjectKey key(const Json& object);
// The labels or annotations object, or an empty object.
const Json& labels(const Json& object);
const Json& annotations(const Json& object);
std::vector<OwnerReference> ownerReferences(const Json& object);
std::optional<OwnerReference> controllerOf(const Json& object);
// apiVersion + kind of the object; InvalidArgument when either is missing.
absl::StatusOr<GroupVersionKind> gvk(const Json& object);
} // namespace meta

// Reads a field by a dotted path ("spec.nodeName", "metadata.labels.app").
// Returns nullptr when absent.
const Json* fieldAt(const Json& object, std::string_view dotted_path);

// RFC 3339 with second precision (metav1.Time) and with microseconds
// (metav1.MicroTime), always UTC ("Z").
std::string formatTime(WallTime time);
std::string formatMicroTime(WallTime time);
absl::StatusOr<WallTime> parseTime(std::string_view text);

// Parses JSON text into `out`; InvalidArgument with the byte offset on error.
absl::StatusOr<Json> parseJson(std::string_view text);

} // namespace captf::kube

template <> struct std::hash<captf::kube::ObjectKey> : captf::kube::ObjectKeyHash {};
