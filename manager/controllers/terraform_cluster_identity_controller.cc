#include "manager/controllers/terraform_cluster_identity_controller.h"

#include <algorithm>
#include <set>
#include <string>

#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/api/terraform_cluster_identity.h"
#include "manager/controllers/identity.h"
#include "manager/controllers/kinds.h"
#include "manager/kube/errors.h"
#include "manager/kube/object.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/ready.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

using kube::str;

// An owner reference to one of CAPTF's kinds (what a legacy version put on
// the source Secret).
bool isCaptfOwner(const json& ref) {
  return kube::GroupVersionKind::fromApiVersion(ref.value("apiVersion", ""), "").group ==
         api::kGroup;
}

} // namespace

absl::StatusOr<kube::Result>
TerraformClusterIdentityReconciler::reconcile(const kube::ReconcileContext& ctx,
                                              const kube::Request& request) {
  auto object = deps_.cached.get(kinds::kTerraformClusterIdentity, {"", request.name});
  if (!object.ok()) {
    return kube::isNotFound(object.status()) ? absl::StatusOr<kube::Result>(kube::Result{})
                                             : object.status();
  }
  auto decoded = api::fromJson<api::TerraformClusterIdentity>(*object);
  if (!decoded.ok()) {
    return kube::terminalError(decoded.status());
  }
  const api::TerraformClusterIdentity& identity = *decoded;
  const std::string& name = identity.metadata.name;
  const api::TerraformClusterIdentityStatus original =
      identity.status.value_or(api::TerraformClusterIdentityStatus{});
  api::TerraformClusterIdentityStatus status = original;
  const auto now =
      api::Time{std::chrono::time_point_cast<std::chrono::seconds>(deps_.clock.wallNow())};

  // The source Secret, read from the API server (never cached, never
  // logged, never written but for a legacy owner reference).
  const api::SecretReference& ref = identity.spec.secret_ref;
  const std::string source_name = ref.namespace_ + "/" + ref.name;
  auto source = deps_.api.get(kinds::kSecret, {ref.namespace_, ref.name});
  if (!source.ok() && !kube::isNotFound(source.status())) {
    return source.status();
  }
  const bool found = source.ok();
  const bool transition =
      lifecycle::setCondition(
          status.conditions, cond::kReady, found ? ConditionStatus::kTrue : ConditionStatus::kFalse,
          found ? cond::kReasonSecretFound : cond::kReasonSecretNotFound,
          found ? "" : "Secret " + source_name + " does not exist", identity.metadata.generation,
          now) == lifecycle::ConditionChange::kTransition;
  if (found) {
    json refs = json::array();
    bool legacy = false;
    if (const json* owners = kube::fieldAt(*source, "metadata.ownerReferences");
        owners != nullptr && owners->is_array()) {
      for (const json& owner : *owners) {
        if (isCaptfOwner(owner)) {
          legacy = true;
        } else {
          refs.push_back(owner);
        }
      }
    }
    if (legacy) {
      // Guarded by the resourceVersion: an owner added since is kept.
      const json patch = {
          {"metadata",
           {{"resourceVersion", kube::meta::resourceVersion(*source)}, {"ownerReferences", refs}}}};
      auto written = deps_.api.patch(kinds::kSecret, {ref.namespace_, ref.name},
                                     kube::PatchType::kMerge, patch);
      if (!written.ok()) {
        return written.status();
      }
      deps_.events.event(
          *object, kube::EventType::kNormal, "LegacyOwnerReferenceRemoved", "Cleanup",
          "removed the owner references an earlier version put on Secret " + source_name);
    }
  }

  // The mirrors: kept where the identity allows the namespace, rewritten
  // when the source changed, deleted where it no longer allows it.
  kube::ListOptions mirrors_options;
  mirrors_options.label_selector = str(api::kLabelMirrored);
  auto mirrors = deps_.cached.list(kinds::kSecret, mirrors_options);
  if (!mirrors.ok()) {
    return mirrors.status();
  }
  const json allowed = object->value("spec", json::object()).value("allowedNamespaces", json());
  const json data = found ? source->value("data", json::object()) : json::object();
  const std::string hash = sourceHash(data);
  std::set<std::string> holding;
  absl::Status failed = absl::OkStatus();
  for (const json& mirror : mirrors->items) {
    if (kube::meta::annotations(mirror).value(str(api::kAnnotationIdentity), "") != name) {
      continue;
    }
    const std::string ns = kube::meta::ns(mirror);
    json labels = json::object();
    if (allowed.is_object() && allowed.contains("selector")) {
      // Namespaces are cached (this controller watches them).
      auto namespace_object = deps_.cached.get(kinds::kNamespace, {"", ns});
      if (!namespace_object.ok() && !kube::isNotFound(namespace_object.status())) {
        return namespace_object.status();
      }
      if (namespace_object.ok()) {
        labels = kube::meta::labels(*namespace_object);
      }
    }
    auto is_allowed = namespaceAllowed(allowed, ns, labels);
    if (!is_allowed.ok()) {
      return kube::terminalError(is_allowed.status());
    }
    const kube::ObjectKey key{ns, kube::meta::name(mirror)};
    if (!*is_allowed) {
      // Revoked: the copy goes at once, whatever still refers to it; the
      // objects there get IdentityAllowed=False on their next pass.
      kube::DeleteOptions options;
      options.preconditions.uid = kube::meta::uid(mirror);
      absl::Status removed = deps_.api.remove(kinds::kSecret, key, options);
      if (!removed.ok() && !kube::isNotFound(removed)) {
        failed.Update(removed);
        holding.insert(ns);
        continue;
      }
      deps_.events.event(*object, kube::EventType::kNormal, "MirrorRevoked", "Revoke",
                         "credential mirror " + key.str() + " deleted: namespace " + ns +
                             " is no longer allowed");
      continue;
    }
    holding.insert(ns);
    if (found &&
        kube::meta::annotations(mirror).value(str(api::kAnnotationSourceHash), "") != hash) {
      // Rotated: a byte-for-byte copy of the new data, guarded by the
      // resourceVersion (a using object may be writing it too). A merge
      // patch keeps keys it does not name, so a key the source dropped is
      // removed with null.
      json new_data = data;
      if (const json* old_data = kube::fieldAt(mirror, "data");
          old_data != nullptr && old_data->is_object()) {
        for (const auto& [key_name, value] : old_data->items()) {
          if (!data.contains(key_name)) {
            new_data[key_name] = nullptr;
          }
        }
      }
      const json patch = {{"metadata",
                           {{"resourceVersion", kube::meta::resourceVersion(mirror)},
                            {"annotations", {{str(api::kAnnotationSourceHash), hash}}}}},
                          {"data", new_data}};
      auto written = deps_.api.patch(kinds::kSecret, key, kube::PatchType::kMerge, patch);
      if (!written.ok() && !kube::isNotFound(written.status()) &&
          !kube::isConflict(written.status())) {
        failed.Update(written.status());
        continue;
      }
      if (written.ok()) {
        deps_.events.event(*object, kube::EventType::kNormal, "MirrorUpdated", "Mirror",
                           "credential mirror " + key.str() + " updated from Secret " +
                               source_name);
      } else {
        failed.Update(absl::AbortedError("mirror " + key.str() + " changed while updating it"));
      }
    }
  }
  status.namespaces.assign(holding.begin(), holding.end());

  json copy = *object;
  ObjectPatcher patcher(deps_.api, copy);
  if (absl::Status s = patcher.patchStatus(api::toJson(original), api::toJson(status)); !s.ok()) {
    return kube::isNotFound(s) ? absl::StatusOr<kube::Result>(kube::Result{}) : s;
  }
  if (transition) {
    deps_.events.event(*object, found ? kube::EventType::kNormal : kube::EventType::kWarning,
                       found ? "IdentitySecretFound" : "IdentitySecretNotFound", "Resolve",
                       found ? "Secret " + source_name + " found"
                             : "Secret " + source_name + " does not exist");
  }
  if (!failed.ok()) {
    ctx.log.info("identity mirrors not all reconciled",
                 {{"failure", std::string(failed.message())}});
    return failed;
  }
  // The source Secret is not watched: a rotation is found at the next resync.
  return kube::Result{};
}

} // namespace captf::controllers
