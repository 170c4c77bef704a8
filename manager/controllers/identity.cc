#include "manager/controllers/identity.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "contract/digest.h"
#include "contract/text.h"
#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/metrics.h"
#include "manager/kube/errors.h"
#include "manager/kube/selector.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/job_builder.h"

namespace captf::controllers {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxName = 253;
constexpr char kMirrorPrefix[] = "captf-creds-";

using kube::str;

json ownerRefOf(const json& object) {
  return {{"apiVersion", object.value("apiVersion", "")},
          {"kind", object.value("kind", "")},
          {"name", kube::meta::name(object)},
          {"uid", kube::meta::uid(object)},
          {"blockOwnerDeletion", false},
          {"controller", false}};
}

bool hasOwner(const json& secret, const std::string& uid) {
  const json* refs = kube::fieldAt(secret, "metadata.ownerReferences");
  if (refs == nullptr || !refs->is_array()) {
    return false;
  }
  return std::any_of(refs->begin(), refs->end(),
                     [&](const json& ref) { return ref.value("uid", "") == uid; });
}

} // namespace

std::string_view fileOnlyReasonName(FileOnlyReason reason) {
  switch (reason) {
  case FileOnlyReason::kBinaryValue:
    return "not text";
  case FileOnlyReason::kNotAnEnvName:
    return "not an environment variable name";
  }
  return "unknown";
}

namespace {

// Valid UTF-8 (no overlong form, surrogate or code point past U+10FFFF)
// without a NUL byte.
bool isEnvText(std::string_view value) {
  for (std::size_t i = 0; i < value.size();) {
    if (value[i] == '\0') {
      return false;
    }
    const std::size_t length = contract::utf8SequenceLength(value, i);
    if (length == 0) {
      return false;
    }
    i += length;
  }
  return true;
}

} // namespace

CredentialDelivery deliveryOf(const json& secret) {
  CredentialDelivery delivery;
  const json* data = kube::fieldAt(secret, "data");
  if (data == nullptr || !data->is_object()) {
    return delivery;
  }
  for (const auto& [key, encoded] : data->items()) { // nlohmann orders keys
    delivery.files.push_back(key);
    std::string value;
    if (!encoded.is_string() || !absl::Base64Unescape(encoded.get<std::string>(), &value) ||
        !isEnvText(value)) {
      delivery.file_only.push_back({key, FileOnlyReason::kBinaryValue});
    } else if (!lifecycle::isEnvVarName(key)) {
      delivery.file_only.push_back({key, FileOnlyReason::kNotAnEnvName});
    } else {
      delivery.env.push_back(key);
    }
  }
  return delivery;
}

std::string mirrorSecretName(const std::string& identity) {
  std::string name = kMirrorPrefix + identity;
  if (name.size() > kMaxName) {
    name = kMirrorPrefix + contract::sha256Hex(identity).substr(0, 16);
  }
  return name;
}

std::string sourceHash(const json& data) {
  std::string canonical;
  if (data.is_object()) {
    for (const auto& [key, value] : data.items()) { // nlohmann orders keys
      canonical += key;
      canonical += '\0';
      canonical += value.is_string() ? value.get<std::string>() : value.dump();
      canonical += '\0';
    }
  }
  return "sha256:" + contract::sha256Hex(canonical);
}

absl::StatusOr<bool> namespaceAllowed(const json& allowed, const std::string& ns,
                                      const json& namespace_labels) {
  if (!allowed.is_object()) {
    return false;
  }
  if (const auto list = allowed.find("list"); list != allowed.end() && list->is_array()) {
    for (const json& entry : *list) {
      if (entry.is_string() && entry.get<std::string>() == ns) {
        return true;
      }
    }
  }
  if (const auto selector = allowed.find("selector");
      selector != allowed.end() && selector->is_object()) {
    auto parsed = kube::LabelSelector::fromJson(*selector);
    if (!parsed.ok()) {
      return parsed.status();
    }
    return parsed->matches(namespace_labels.is_object() ? namespace_labels : json::object());
  }
  return false;
}

IdentityResult IdentityResolver::resolve(const json& object, const std::string& identity) {
  IdentityResult result;
  result.identity = identity;
  result.mirrored = conditionResult("Unknown", api::conditions::kReasonMirrorPending,
                                    "waiting for the identity to be allowed");
  const std::string ns = kube::meta::ns(object);
  if (identity.empty()) {
    result.denied = "notfound";
    result.allowed = conditionResult("False", api::conditions::kReasonIdentityNotFound,
                                     "no identityRef resolves");
    return result;
  }
  auto found = cached_.get(kinds::kTerraformClusterIdentity, {"", identity});
  if (!found.ok()) {
    if (kube::isNotFound(found.status())) {
      result.denied = "notfound";
      result.allowed = conditionResult("False", api::conditions::kReasonIdentityNotFound,
                                       "TerraformClusterIdentity " + identity + " does not exist");
      return result;
    }
    result.allowed = conditionResult("Unknown", api::conditions::kReasonIdentityCheckFailed,
                                     "reading TerraformClusterIdentity " + identity + " failed");
    result.transient = found.status();
    return result;
  }
  const json spec = found->value("spec", json::object());
  const json allowed = spec.value("allowedNamespaces", json());
  json namespace_labels = json::object();
  if (allowed.is_object() && allowed.contains("selector")) {
    auto namespace_object = api_.get(kinds::kNamespace, {"", ns});
    if (!namespace_object.ok()) {
      result.allowed = conditionResult("Unknown", api::conditions::kReasonIdentityCheckFailed,
                                       "reading Namespace " + ns + " failed");
      result.transient = namespace_object.status();
      return result;
    }
    namespace_labels = kube::meta::labels(*namespace_object);
  }
  auto is_allowed = namespaceAllowed(allowed, ns, namespace_labels);
  if (!is_allowed.ok()) {
    result.allowed = conditionResult("Unknown", api::conditions::kReasonIdentityCheckFailed,
                                     "evaluating allowedNamespaces of " + identity + " failed");
    result.transient = is_allowed.status();
    return result;
  }
  if (!*is_allowed) {
    result.denied = "namespace";
    result.allowed =
        conditionResult("False", api::conditions::kReasonNamespaceNotAllowed,
                        "TerraformClusterIdentity " + identity + " does not allow namespace " + ns);
    return result;
  }
  const json secret_ref = spec.value("secretRef", json::object());
  const std::string secret_ns = secret_ref.value("namespace", "");
  const std::string secret_name = secret_ref.value("name", "");
  auto source = api_.get(kinds::kSecret, {secret_ns, secret_name});
  if (!source.ok()) {
    if (kube::isNotFound(source.status())) {
      result.allowed = conditionResult("False", api::conditions::kReasonSecretNotFound,
                                       "Secret " + secret_ns + "/" + secret_name + " of identity " +
                                           identity + " does not exist");
      return result;
    }
    result.allowed = conditionResult("Unknown", api::conditions::kReasonIdentityCheckFailed,
                                     "reading the identity's Secret failed");
    result.transient = source.status();
    return result;
  }
  result.allowed = conditionResult("True", api::conditions::kReasonIdentityAllowed, "");
  result.mirrored = mirror(object, identity, *source, result.mirror_name, result.transient);
  if (result.mirrored.isTrue()) {
    result.delivery = deliveryOf(*source);
  }
  return result;
}

ConditionResult IdentityResolver::mirror(const json& object, const std::string& identity,
                                         const json& source, std::string& name,
                                         absl::Status& transient) {
  const std::string ns = kube::meta::ns(object);
  name = mirrorSecretName(identity);
  const json data = source.value("data", json::object());
  const std::string hash = sourceHash(data);
  // Every object using the identity in the namespace writes this Secret: a
  // lost race (Conflict, AlreadyExists) reads it again from the API server
  // and retries, as client-go's RetryOnConflict does.
  for (int attempt = 1;; ++attempt) {
    const bool last = attempt == kMirrorWriteAttempts;
    kube::Reader& reader = attempt == 1 ? static_cast<kube::Reader&>(cached_) : api_;
    auto existing = reader.get(kinds::kSecret, {ns, name});
    if (!existing.ok() && !kube::isNotFound(existing.status())) {
      transient = existing.status();
      return conditionResult("False", api::conditions::kReasonMirrorFailed,
                             "reading the mirror failed");
    }
    if (!existing.ok()) {
      json mirror = {
          {"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels",
             {{str(api::kLabelMirrored), "true"},
              {str(api::kLabelManaged), "true"},
              {str(api::kLabelClusterctlMove), ""}}},
            {"annotations",
             {{str(api::kAnnotationSourceHash), hash}, {str(api::kAnnotationIdentity), identity}}},
            {"ownerReferences", json::array({ownerRefOf(object)})}}},
          {"type", "Opaque"},
          {"data", data}};
      auto created = api_.create(mirror);
      if (created.ok()) {
        events_.event(object, kube::EventType::kNormal, "MirrorCreated", "Mirror",
                      absl::StrCat("credential mirror ", name, " created for identity ", identity));
        return conditionResult("True", api::conditions::kReasonMirrored, "");
      }
      // AlreadyExists: another object created it first, or it is a
      // same-named Secret CAPTF does not manage (so not in the cache).
      if (!kube::isAlreadyExists(created.status()) || last) {
        transient = created.status();
        return conditionResult("False", api::conditions::kReasonMirrorFailed,
                               "creating Secret " + name + " failed");
      }
      continue;
    }
    const json& labels = kube::meta::labels(*existing);
    const json& annotations = kube::meta::annotations(*existing);
    if (!labels.contains(str(api::kLabelMirrored)) ||
        annotations.value(str(api::kAnnotationIdentity), "") != identity) {
      return conditionResult("False", api::conditions::kReasonMirrorFailed,
                             absl::StrCat("Secret ", name,
                                          " exists and is not the mirror of identity ", identity,
                                          "; it is never overwritten"));
    }
    const bool stale = annotations.value(str(api::kAnnotationSourceHash), "") != hash;
    const bool owned = hasOwner(*existing, kube::meta::uid(object));
    if (!stale && owned) {
      return conditionResult("True", api::conditions::kReasonMirrored, "");
    }
    absl::StatusOr<json> written;
    if (stale) {
      // New data: a whole update guarded by the resourceVersion.
      json updated = *existing;
      updated["data"] = data;
      updated["metadata"]["annotations"][str(api::kAnnotationSourceHash)] = hash;
      if (!owned) {
        updated["metadata"]["ownerReferences"].push_back(ownerRefOf(object));
      }
      written = api_.update(updated);
    } else {
      // Only the owner reference: a strategic merge patch merges it into
      // the list by uid, so owners added at once never conflict.
      written =
          api_.patch(kinds::kSecret, {ns, name}, kube::PatchType::kStrategicMerge,
                     {{"metadata", {{"ownerReferences", json::array({ownerRefOf(object)})}}}});
    }
    if (written.ok()) {
      return conditionResult("True", api::conditions::kReasonMirrored, "");
    }
    if (!(kube::isConflict(written.status()) || kube::isNotFound(written.status())) || last) {
      transient = written.status();
      return conditionResult("False", api::conditions::kReasonMirrorFailed,
                             "updating Secret " + name + " failed");
    }
  }
}

absl::Status IdentityResolver::release(const json& object, const std::string& identity) {
  if (identity.empty()) {
    return absl::OkStatus();
  }
  const std::string ns = kube::meta::ns(object);
  const std::string name = mirrorSecretName(identity);
  const std::string uid = kube::meta::uid(object);
  // Read from the API server: the cache may not show this object's owner
  // reference yet, and this runs once per object.
  for (int attempt = 1;; ++attempt) {
    const bool last = attempt == kMirrorWriteAttempts;
    auto existing = api_.get(kinds::kSecret, {ns, name});
    if (!existing.ok()) {
      return kube::ignoreNotFound(existing.status());
    }
    if (!kube::meta::labels(*existing).contains(str(api::kLabelMirrored))) {
      return absl::OkStatus();
    }
    json refs = json::array();
    bool found = false;
    if (const json* current = kube::fieldAt(*existing, "metadata.ownerReferences");
        current != nullptr && current->is_array()) {
      for (const json& ref : *current) {
        if (ref.value("uid", "") == uid) {
          found = true;
        } else {
          refs.push_back(ref);
        }
      }
    }
    if (!found) {
      return absl::OkStatus();
    }
    absl::Status written;
    if (refs.empty()) {
      // Guarded by the resourceVersion: an owner added since is kept.
      kube::DeleteOptions options;
      options.preconditions.uid = kube::meta::uid(*existing);
      options.preconditions.resource_version = kube::meta::resourceVersion(*existing);
      written = api_.remove(kinds::kSecret, {ns, name}, options);
      if (written.ok()) {
        events_.event(object, kube::EventType::kNormal, "MirrorRemoved", "Mirror",
                      "credential mirror " + name + " deleted: no object uses it any more");
      }
    } else {
      // Only this owner reference goes, merged by uid (never a conflict).
      const json drop = {{"$patch", "delete"}, {"uid", uid}};
      written = api_.patch(kinds::kSecret, {ns, name}, kube::PatchType::kStrategicMerge,
                           {{"metadata", {{"ownerReferences", json::array({drop})}}}})
                    .status();
    }
    if (written.ok() || kube::isNotFound(written)) {
      return absl::OkStatus();
    }
    if (!kube::isConflict(written) || last) {
      return written;
    }
  }
}

} // namespace captf::controllers
