#pragma once

// An in-memory API server behind the kube::Client seam, for unit tests that
// must control what a reader sees: objects keyed by kind and name, one
// resourceVersion counter, and the API server's write rules that callers
// branch on (AlreadyExists, NotFound, Conflict on a stale resourceVersion
// or a failed delete precondition). Lists filter by namespace and label
// selector (an invalid selector is a BadRequest, as the API server says).
// Server-side apply is not modelled.

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "manager/kube/client.h"
#include "manager/kube/errors.h"
#include "manager/kube/object.h"
#include "manager/kube/selector.h"

namespace captf::kube::testing {

class FakeClient final : public Client {
public:
  // Stores `object` as is (resourceVersion included), bypassing the rules.
  void put(Json object) {
    std::scoped_lock lock(mu_);
    auto id = idOf(object);
    objects_[id] = std::move(object);
  }
  size_t writes() const {
    std::scoped_lock lock(mu_);
    return writes_;
  }

  absl::StatusOr<Json> get(const GroupVersionKind& gvk, const ObjectKey& key) override {
    std::scoped_lock lock(mu_);
    auto it = objects_.find({gvk, key});
    if (it == objects_.end()) {
      return error(404, "NotFound", key.name + " not found");
    }
    return it->second;
  }

  absl::StatusOr<ObjectList> list(const GroupVersionKind& gvk,
                                  const ListOptions& options) override {
    auto selector = LabelSelector::parse(options.label_selector);
    if (!selector.ok()) {
      return error(400, "BadRequest", std::string(selector.status().message()));
    }
    std::scoped_lock lock(mu_);
    ObjectList out;
    out.resource_version = std::to_string(version_);
    for (const auto& [id, object] : objects_) {
      if (id.first == gvk && (options.ns.empty() || id.second.ns == options.ns) &&
          selector->matches(meta::labels(object))) {
        out.items.push_back(object);
      }
    }
    return out;
  }

  absl::StatusOr<Json> create(const Json& object, const CreateOptions& = {}) override {
    std::scoped_lock lock(mu_);
    auto id = idOf(object);
    if (objects_.contains(id)) {
      return error(409, "AlreadyExists", id.second.name + " already exists");
    }
    Json stored = object;
    stored["metadata"]["resourceVersion"] = std::to_string(++version_);
    if (meta::uid(stored).empty()) {
      stored["metadata"]["uid"] = "uid-" + std::to_string(version_);
    }
    ++writes_;
    return objects_[id] = stored;
  }

  absl::StatusOr<Json> update(const Json& object, const UpdateOptions& = {}) override {
    std::scoped_lock lock(mu_);
    auto id = idOf(object);
    auto it = objects_.find(id);
    if (it == objects_.end()) {
      return error(404, "NotFound", id.second.name + " not found");
    }
    const std::string rv = meta::resourceVersion(object);
    if (!rv.empty() && rv != meta::resourceVersion(it->second)) {
      return error(409, "Conflict", "the object has been modified");
    }
    Json stored = object;
    stored["metadata"]["resourceVersion"] = std::to_string(++version_);
    ++writes_;
    return it->second = stored;
  }

  // JSON merge patches (RFC 7386), and strategic merge patches as far as
  // metadata.ownerReferences goes (merged by uid, "$patch": "delete"
  // removes; everything else merges as RFC 7386).
  absl::StatusOr<Json> patch(const GroupVersionKind& gvk, const ObjectKey& key, PatchType type,
                             const Json& patch, const PatchOptions& = {}) override {
    if (type != PatchType::kMerge && type != PatchType::kStrategicMerge) {
      return absl::UnimplementedError("FakeClient patches by merge or strategic merge only");
    }
    std::scoped_lock lock(mu_);
    auto it = objects_.find({gvk, key});
    if (it == objects_.end()) {
      return error(404, "NotFound", key.name + " not found");
    }
    Json rest = patch;
    Json stored = it->second;
    // A resourceVersion in the patch is a precondition, as on the server.
    if (const Json* rv = fieldAt(rest, "metadata.resourceVersion");
        rv != nullptr && rv->is_string() && *rv != meta::resourceVersion(stored)) {
      return error(409, "Conflict", "the object has been modified");
    }
    if (type == PatchType::kStrategicMerge && rest.contains("metadata") &&
        rest["metadata"].contains("ownerReferences")) {
      Json refs = stored["metadata"].value("ownerReferences", Json::array());
      for (const Json& ref : rest["metadata"]["ownerReferences"]) {
        const std::string uid = ref.value("uid", "");
        Json kept = Json::array();
        for (const Json& have : refs) {
          if (have.value("uid", "") != uid) {
            kept.push_back(have);
          }
        }
        if (ref.value("$patch", "") != "delete") {
          kept.push_back(ref);
        }
        refs = kept;
      }
      stored["metadata"]["ownerReferences"] = refs;
      rest["metadata"].erase("ownerReferences");
    }
    stored.merge_patch(rest);
    stored["metadata"]["resourceVersion"] = std::to_string(++version_);
    ++writes_;
    return it->second = stored;
  }
  absl::StatusOr<Json> apply(const Json&, const ApplyOptions&) override {
    return absl::UnimplementedError("FakeClient does not apply");
  }

  absl::Status remove(const GroupVersionKind& gvk, const ObjectKey& key,
                      const DeleteOptions& options = {}) override {
    std::scoped_lock lock(mu_);
    auto it = objects_.find({gvk, key});
    if (it == objects_.end()) {
      return error(404, "NotFound", key.name + " not found");
    }
    const auto& pre = options.preconditions;
    if ((pre.uid && *pre.uid != meta::uid(it->second)) ||
        (pre.resource_version && *pre.resource_version != meta::resourceVersion(it->second))) {
      return error(409, "Conflict", "precondition failed");
    }
    objects_.erase(it);
    ++version_;
    ++writes_;
    return absl::OkStatus();
  }

private:
  using Id = std::pair<GroupVersionKind, ObjectKey>;

  static Id idOf(const Json& object) { return {*meta::gvk(object), meta::key(object)}; }
  // As the API server answers: a metav1.Status.
  static absl::Status error(int code, const char* reason, const std::string& message) {
    const Json status = {
        {"kind", "Status"}, {"code", code}, {"reason", reason}, {"message", message}};
    return errorFromResponse(code, status.dump());
  }

  mutable std::mutex mu_;
  std::map<Id, Json> objects_;
  int64_t version_ = 100;
  size_t writes_ = 0;
};

} // namespace captf::kube::testing
