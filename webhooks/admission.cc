#include "webhooks/admission.h"

#include <fmt/format.h>

#include "absl/status/status.h"
#include "contract/status_macros.h"
#include "manager/api/codec.h"
#include "manager/api/keys.h"
#include "manager/kube/json_read.h"
#include "webhooks/validators.h"

namespace captf::webhooks {
namespace {

using nlohmann::json;

// ---- decoding ---------------------------------------------------------------

absl::Status objectFrom(const json& req, const char* key, json& out) {
  const auto it = req.find(key);
  if (it == req.end() || it->is_null()) {
    out = nullptr;
    return absl::OkStatus();
  }
  if (!it->is_object()) {
    return kube::jsonShapeError(fmt::format("request.{}", key), "object");
  }
  out = *it;
  return absl::OkStatus();
}

// ---- responses --------------------------------------------------------------

AdmissionResponse allow(const AdmissionRequest& r) {
  return {r.uid, true, nullptr, {}};
}

AdmissionResponse failure(const AdmissionRequest& r, int code, std::string_view reason,
                          std::string message) {
  return {r.uid,
          false,
          {{"apiVersion", "v1"},
           {"kind", "Status"},
           {"metadata", json::object()},
           {"status", "Failure"},
           {"message", std::move(message)},
           {"reason", std::string(reason)},
           {"code", code}},
          {}};
}

std::string objectName(const AdmissionRequest& r, const api::ObjectMeta& meta) {
  return meta.name.empty() ? r.name : meta.name;
}

AdmissionResponse fromErrors(const AdmissionRequest& r, const api::ObjectMeta& meta,
                             const FieldErrorList& errors) {
  if (errors.empty()) {
    return allow(r);
  }
  const std::string name = objectName(r, meta);
  return {r.uid,
          false,
          r.operation == AdmissionOperation::kDelete ? forbiddenStatus(r.kind, name, errors)
                                                     : invalidStatus(r.kind, name, errors),
          {}};
}

template <class T> absl::StatusOr<T> decodeAs(const json& doc, std::string_view which) {
  if (doc.is_null()) {
    return absl::InvalidArgumentError(fmt::format("{} is missing", which));
  }
  absl::StatusOr<T> obj = api::fromJson<T>(doc);
  if (!obj.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("cannot decode {}: {}", which, std::string(obj.status().message())));
  }
  return obj;
}

AdmissionResponse decodeFailure(const AdmissionRequest& r, const absl::Status& s) {
  return failure(r, 400, "BadRequest", std::string(s.message()));
}

// CREATE and UPDATE for a kind whose rules need nothing but the objects.
template <class T, class Create, class Update>
AdmissionResponse validateObjects(const AdmissionRequest& r, Create create, Update update) {
  if (r.operation == AdmissionOperation::kDelete) {
    return allow(r);
  }
  absl::StatusOr<T> obj = decodeAs<T>(r.object, "request.object");
  if (!obj.ok()) {
    return decodeFailure(r, obj.status());
  }
  if (r.operation == AdmissionOperation::kCreate) {
    return fromErrors(r, obj->metadata, create(*obj));
  }
  absl::StatusOr<T> old_obj = decodeAs<T>(r.old_object, "request.oldObject");
  if (!old_obj.ok()) {
    return decodeFailure(r, old_obj.status());
  }
  return fromErrors(r, obj->metadata, update(*old_obj, *obj));
}

template <class T, class Create, class Update>
AdmissionResponse validateTemplate(const AdmissionRequest& r, Create create, Update update) {
  return validateObjects<T>(r, create, [&r, update](const T& old_obj, const T& obj) {
    return update(old_obj, obj, topologyDryRun(r.dry_run, obj.metadata));
  });
}

} // namespace

absl::StatusOr<AdmissionRequest> admissionRequestFromJson(const json& review) {
  if (!review.is_object()) {
    return kube::jsonShapeError("<root>", "an AdmissionReview object");
  }
  std::string api_version;
  std::string kind;
  CAPTF_RETURN_IF_ERROR(kube::readOptionalString(review, "apiVersion", "<root>", api_version));
  CAPTF_RETURN_IF_ERROR(kube::readOptionalString(review, "kind", "<root>", kind));
  if (api_version != "admission.k8s.io/v1" || kind != "AdmissionReview") {
    return absl::InvalidArgumentError(
        fmt::format("expected an admission.k8s.io/v1 AdmissionReview, got apiVersion {} kind {}",
                    quote(api_version), quote(kind)));
  }
  const auto req_it = review.find("request");
  if (req_it == review.end() || !req_it->is_object()) {
    return kube::jsonShapeError("request", "object");
  }
  const json& req = *req_it;
  AdmissionRequest out;
  CAPTF_RETURN_IF_ERROR(kube::readOptionalString(req, "uid", "request", out.uid));
  if (out.uid.empty()) {
    return absl::InvalidArgumentError("request.uid: must be a non-empty string");
  }
  const auto kind_it = req.find("kind");
  if (kind_it == req.end() || !kind_it->is_object()) {
    return kube::jsonShapeError("request.kind", "object");
  }
  for (auto [key, dst] : {std::pair{"group", &out.group}, std::pair{"version", &out.version},
                          std::pair{"kind", &out.kind}}) {
    CAPTF_RETURN_IF_ERROR(kube::readOptionalString(*kind_it, key, "request.kind", *dst));
  }
  for (auto [key, dst] : {std::pair{"subResource", &out.sub_resource}, std::pair{"name", &out.name},
                          std::pair{"namespace", &out.namespace_}}) {
    CAPTF_RETURN_IF_ERROR(kube::readOptionalString(req, key, "request", *dst));
  }
  std::string op;
  CAPTF_RETURN_IF_ERROR(kube::readOptionalString(req, "operation", "request", op));
  if (op == "CREATE") {
    out.operation = AdmissionOperation::kCreate;
  } else if (op == "UPDATE") {
    out.operation = AdmissionOperation::kUpdate;
  } else if (op == "DELETE") {
    out.operation = AdmissionOperation::kDelete;
  } else if (op == "CONNECT") {
    out.operation = AdmissionOperation::kConnect;
  } else {
    return absl::InvalidArgumentError(fmt::format(
        "request.operation: unsupported value {}: want CREATE, UPDATE, DELETE or CONNECT",
        quote(op)));
  }
  if (const auto u = req.find("userInfo"); u != req.end()) {
    CAPTF_RETURN_IF_ERROR(kube::parseUserInfo(*u, "request.userInfo", out.user_info));
  }
  CAPTF_RETURN_IF_ERROR(objectFrom(req, "object", out.object));
  CAPTF_RETURN_IF_ERROR(objectFrom(req, "oldObject", out.old_object));
  if (const auto d = req.find("dryRun"); d != req.end() && !d->is_null()) {
    if (!d->is_boolean()) {
      return kube::jsonShapeError("request.dryRun", "boolean");
    }
    out.dry_run = d->get<bool>();
  }
  if (out.operation == AdmissionOperation::kUpdate &&
      (out.object.is_null() || out.old_object.is_null())) {
    return absl::InvalidArgumentError("UPDATE requests carry request.object and request.oldObject");
  }
  return out;
}

absl::StatusOr<AdmissionRequest> parseAdmissionReview(std::string_view body) {
  absl::StatusOr<json> doc = api::parseJson(body);
  if (!doc.ok()) {
    return doc.status();
  }
  return admissionRequestFromJson(*doc);
}

std::string encodeAdmissionReview(const AdmissionResponse& response) {
  json resp = {{"uid", response.uid}, {"allowed", response.allowed}};
  if (!response.status.is_null()) {
    resp["status"] = response.status;
  }
  if (!response.warnings.empty()) {
    resp["warnings"] = response.warnings;
  }
  const json review = {{"apiVersion", "admission.k8s.io/v1"},
                       {"kind", "AdmissionReview"},
                       {"response", std::move(resp)}};
  return review.dump(-1, ' ', false, json::error_handler_t::replace);
}

AdmissionResponse badRequest(std::string_view uid, std::string_view message) {
  AdmissionRequest r;
  r.uid = std::string(uid);
  return failure(r, 400, "BadRequest", std::string(message));
}

AdmissionResponse AdmissionHandler::handle(const AdmissionRequest& r) const {
  // The status subresource is not validated (status writes keep working
  // while the webhook is down); CONNECT never reaches these kinds.
  if (!r.sub_resource.empty() || r.operation == AdmissionOperation::kConnect) {
    return allow(r);
  }
  if (r.group != api::kGroup || r.version != api::kVersion) {
    return failure(r, 400, "BadRequest",
                   fmt::format("this webhook validates {}/{} only, not {}/{} {}", api::kGroup,
                               api::kVersion, r.group, r.version, r.kind));
  }
  if (r.kind == api::kKindTerraformCluster) {
    return validateObjects<api::TerraformCluster>(r, validateTerraformClusterCreate,
                                                  validateTerraformClusterUpdate);
  }
  if (r.kind == api::kKindTerraformMachinePool) {
    return validateObjects<api::TerraformMachinePool>(r, validateTerraformMachinePoolCreate,
                                                      validateTerraformMachinePoolUpdate);
  }
  if (r.kind == api::kKindTerraformClusterTemplate) {
    return validateTemplate<api::TerraformClusterTemplate>(
        r, validateTerraformClusterTemplateCreate, validateTerraformClusterTemplateUpdate);
  }
  if (r.kind == api::kKindTerraformMachineTemplate) {
    return validateTemplate<api::TerraformMachineTemplate>(
        r, validateTerraformMachineTemplateCreate, validateTerraformMachineTemplateUpdate);
  }
  if (r.kind == api::kKindTerraformMachinePoolTemplate) {
    return validateTemplate<api::TerraformMachinePoolTemplate>(
        r, validateTerraformMachinePoolTemplateCreate, validateTerraformMachinePoolTemplateUpdate);
  }
  if (r.kind == api::kKindTerraformMachine) {
    if (r.operation != AdmissionOperation::kDelete) {
      return validateObjects<api::TerraformMachine>(r, validateTerraformMachineCreate,
                                                    validateTerraformMachineUpdate);
    }
    absl::StatusOr<api::TerraformMachine> obj =
        decodeAs<api::TerraformMachine>(r.old_object, "request.oldObject");
    if (!obj.ok()) {
      return decodeFailure(r, obj.status());
    }
    std::optional<OwnerMachine> owner;
    if (const api::OwnerReference* ref = machineOwnerReference(*obj)) {
      auto m = lookups_.getMachine(obj->metadata.namespace_, ref->name);
      if (!m.ok()) {
        return failure(r, 500, "InternalError",
                       fmt::format("cannot check the owner Machine {}: {}", quote(ref->name),
                                   std::string(m.status().message())));
      }
      owner = *m;
    }
    std::optional<ClusterInfo> cluster;
    const auto& meta = obj->metadata;
    const auto label = meta.labels.find(std::string(api::kLabelClusterName));
    if (meta.annotations.contains(std::string(api::kAnnotationDeleteForMove)) &&
        label != meta.labels.end()) {
      auto c = lookups_.getCluster(meta.namespace_, label->second);
      if (!c.ok()) {
        return failure(r, 500, "InternalError",
                       fmt::format("cannot check the Cluster {}: {}", quote(label->second),
                                   std::string(c.status().message())));
      }
      cluster = *c;
    }
    return fromErrors(r, obj->metadata, validateTerraformMachineDelete(*obj, owner, cluster));
  }
  if (r.kind == api::kKindTerraformClusterIdentity) {
    if (r.operation == AdmissionOperation::kDelete) {
      absl::StatusOr<api::TerraformClusterIdentity> obj =
          decodeAs<api::TerraformClusterIdentity>(r.old_object, "request.oldObject");
      if (!obj.ok()) {
        return decodeFailure(r, obj.status());
      }
      absl::StatusOr<IdentityUsageSnapshot> usage = lookups_.identityUsage();
      if (!usage.ok()) {
        return failure(r, 500, "InternalError",
                       fmt::format("cannot check which objects use the identity: {}",
                                   std::string(usage.status().message())));
      }
      return fromErrors(r, obj->metadata, validateTerraformClusterIdentityDelete(*obj, *usage));
    }
    absl::StatusOr<api::TerraformClusterIdentity> obj =
        decodeAs<api::TerraformClusterIdentity>(r.object, "request.object");
    if (!obj.ok()) {
      return decodeFailure(r, obj.status());
    }
    FieldErrorList errors;
    bool secret_changed = true;
    if (r.operation == AdmissionOperation::kUpdate) {
      absl::StatusOr<api::TerraformClusterIdentity> old_obj =
          decodeAs<api::TerraformClusterIdentity>(r.old_object, "request.oldObject");
      if (!old_obj.ok()) {
        return decodeFailure(r, old_obj.status());
      }
      errors = validateTerraformClusterIdentityUpdate(*old_obj, *obj);
      secret_changed = old_obj->spec.secret_ref != obj->spec.secret_ref;
    } else {
      errors = validateTerraformClusterIdentityCreate(*obj);
    }
    if (secret_changed) {
      const api::SecretReference& ref = obj->spec.secret_ref;
      absl::StatusOr<AccessDecision> decision =
          reviewer_.review(secretGetAccessReview(r.user_info, ref.namespace_, ref.name));
      if (!decision.ok()) {
        return failure(r, 500, "InternalError",
                       fmt::format("cannot check access to Secret {}: {}",
                                   quote(ref.namespace_ + "/" + ref.name),
                                   std::string(decision.status().message())));
      }
      if (const auto e = secretAccessError(*decision, r.user_info, ref)) {
        errors.push_back(*e);
      }
    }
    return fromErrors(r, obj->metadata, errors);
  }
  return failure(r, 400, "BadRequest", fmt::format("unsupported kind {}", quote(r.kind)));
}

} // namespace captf::webhooks
