#include "manager/kube/object.h"

#include <cstdio>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "contract/json_error.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

const Json& emptyObject() {
  static const Json kEmpty = Json::object();
  return kEmpty;
}

const Json* member(const Json& object, const char* key) {
  if (!object.is_object()) {
    return nullptr;
  }
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string stringMember(const Json* object, const char* key) {
  if (object == nullptr) {
    return {};
  }
  const Json* value = member(*object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

} // namespace

std::string GroupVersionKind::apiVersion() const {
  return group.empty() ? version : absl::StrCat(group, "/", version);
}

std::string GroupVersionKind::str() const {
  return absl::StrCat(apiVersion(), ", Kind=", kind);
}

GroupVersionKind GroupVersionKind::fromApiVersion(std::string_view api_version,
                                                  std::string_view kind) {
  GroupVersionKind gvk;
  gvk.kind = std::string(kind);
  if (auto slash = api_version.find('/'); slash != std::string_view::npos) {
    gvk.group = std::string(api_version.substr(0, slash));
    gvk.version = std::string(api_version.substr(slash + 1));
  } else {
    gvk.version = std::string(api_version);
  }
  return gvk;
}

size_t ObjectKeyHash::operator()(const ObjectKey& key) const noexcept {
  size_t h = std::hash<std::string>{}(key.ns);
  return h ^ (std::hash<std::string>{}(key.name) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

namespace meta {

std::string name(const Json& object) {
  return stringMember(member(object, "metadata"), "name");
}
std::string ns(const Json& object) {
  return stringMember(member(object, "metadata"), "namespace");
}
std::string uid(const Json& object) {
  return stringMember(member(object, "metadata"), "uid");
}
std::string resourceVersion(const Json& object) {
  return stringMember(member(object, "metadata"), "resourceVersion");
}

int64_t generation(const Json& object) {
  const Json* metadata = member(object, "metadata");
  const Json* value = metadata != nullptr ? member(*metadata, "generation") : nullptr;
  return value != nullptr && value->is_number_integer() ? value->get<int64_t>() : 0;
}

bool isDeleting(const Json& object) {
  const Json* metadata = member(object, "metadata");
  const Json* value = metadata != nullptr ? member(*metadata, "deletionTimestamp") : nullptr;
  return value != nullptr && value->is_string();
}

ObjectKey key(const Json& object) {
  return {ns(object), name(object)};
}

const Json& labels(const Json& object) {
  const Json* metadata = member(object, "metadata");
  const Json* value = metadata != nullptr ? member(*metadata, "labels") : nullptr;
  return value != nullptr && value->is_object() ? *value : emptyObject();
}

const Json& annotations(const Json& object) {
  const Json* metadata = member(object, "metadata");
  const Json* value = metadata != nullptr ? member(*metadata, "annotations") : nullptr;
  return value != nullptr && value->is_object() ? *value : emptyObject();
}

std::vector<OwnerReference> ownerReferences(const Json& object) {
  std::vector<OwnerReference> out;
  const Json* metadata = member(object, "metadata");
  const Json* refs = metadata != nullptr ? member(*metadata, "ownerReferences") : nullptr;
  if (refs == nullptr || !refs->is_array()) {
    return out;
  }
  for (const Json& ref : *refs) {
    OwnerReference owner;
    owner.api_version = stringMember(&ref, "apiVersion");
    owner.kind = stringMember(&ref, "kind");
    owner.name = stringMember(&ref, "name");
    owner.uid = stringMember(&ref, "uid");
    const Json* controller = member(ref, "controller");
    owner.controller = controller != nullptr && controller->is_boolean() && controller->get<bool>();
    out.push_back(std::move(owner));
  }
  return out;
}

std::optional<OwnerReference> controllerOf(const Json& object) {
  for (auto& owner : ownerReferences(object)) {
    if (owner.controller) {
      return std::move(owner);
    }
  }
  return std::nullopt;
}

absl::StatusOr<GroupVersionKind> gvk(const Json& object) {
  std::string api_version = stringMember(&object, "apiVersion");
  std::string kind = stringMember(&object, "kind");
  if (api_version.empty() || kind.empty()) {
    return absl::InvalidArgumentError("object has no apiVersion or kind");
  }
  return GroupVersionKind::fromApiVersion(api_version, kind);
}

} // namespace meta

const Json* fieldAt(const Json& object, std::string_view dotted_path) {
  const Json* current = &object;
  for (absl::string_view part : absl::StrSplit(av(dotted_path), '.')) {
    if (!current->is_object()) {
      return nullptr;
    }
    auto it = current->find(std::string_view(part.data(), part.size()));
    if (it == current->end()) {
      return nullptr;
    }
    current = &*it;
  }
  return current;
}

std::string formatTime(WallTime time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromChrono(time), absl::UTCTimeZone());
}

std::string formatMicroTime(WallTime time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromChrono(time), absl::UTCTimeZone());
}

absl::StatusOr<WallTime> parseTime(std::string_view text) {
  absl::Time parsed;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, av(text), &parsed, &error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid RFC 3339 time \"", av(text), "\": ", error));
  }
  return absl::ToChronoTime(parsed);
}

absl::StatusOr<Json> parseJson(std::string_view text) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    // The offset and the kind only: a response can hold Secret data, and
    // nlohmann's message quotes what it read.
    return absl::InvalidArgumentError(contract::jsonErrorText(e));
  }
}

} // namespace captf::kube
