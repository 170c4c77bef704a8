#pragma once

// Patch documents for Writer::patch: JSON merge patches (RFC 7386) computed
// from two versions of an object, and JSON patches (RFC 6902) built by
// operation.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/kube/object.h"

namespace captf::kube {

enum class OptimisticLock { kNo, kYes };

// The merge patch that turns `original` into `modified`: changed and added
// members, null for removed ones, arrays replaced whole. With
// OptimisticLock::kYes the patch also carries metadata.resourceVersion of
// `original`, so the API server answers Conflict when the object changed
// since it was read (controller-runtime's MergeFromWithOptimisticLock).
Json createMergePatch(const Json& original, const Json& modified,
                      OptimisticLock lock = OptimisticLock::kNo);

// Applies a merge patch (RFC 7386) to `target`.
Json applyMergePatch(Json target, const Json& patch);

// Escapes one JSON Pointer token ("~" -> "~0", "/" -> "~1"), e.g. for a label
// key such as "cluster.x-k8s.io/cluster-name".
std::string escapePointerToken(std::string_view token);
// "/" + escaped tokens joined by "/".
std::string jsonPointer(const std::vector<std::string>& tokens);

// Builds an RFC 6902 patch. Paths are JSON Pointers (see jsonPointer()).
class JsonPatch {
public:
  JsonPatch& add(std::string path, Json value);
  JsonPatch& remove(std::string path);
  JsonPatch& replace(std::string path, Json value);
  // The API server rejects the whole patch (Invalid) when the test fails:
  // use it to guard a change, e.g. test metadata/resourceVersion.
  JsonPatch& test(std::string path, Json value);
  JsonPatch& move(std::string from, std::string path);
  JsonPatch& copy(std::string from, std::string path);

  bool empty() const { return operations_.empty(); }
  const Json& document() const { return operations_; }

  // The patch from `original` to `modified` (RFC 6902 diff).
  static JsonPatch diff(const Json& original, const Json& modified);

private:
  Json operations_ = Json::array();
};

// Applies an RFC 6902 patch; InvalidArgument when an operation fails.
absl::StatusOr<Json> applyJsonPatch(const Json& target, const Json& patch);

} // namespace captf::kube
