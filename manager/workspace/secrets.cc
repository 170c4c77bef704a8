#include "manager/workspace/secrets.h"

#include <cctype>
#include <utility>

#include "contract/digest.h"
#include "contract/json_adapter.h"
#include "contract/roles.h"
#include "contract/status_macros.h"
#include "contract/strings.h"
#include "manager/api/keys.h"
#include "manager/workspace/json_util.h"

namespace captf::workspace {
namespace {

using contract::strCat;
using nlohmann::json;

json labelsJson(const std::map<std::string, std::string>& labels) {
  json out = json::object();
  for (const auto& [key, value] : labels) {
    out[key] = value;
  }
  return out;
}

json rootData(const contract::RenderedRoot& root) {
  return {{std::string(contract::kMainFileName), contract::base64Encode(root.main_tf_json)},
          {std::string(contract::kTfvarsFileName), contract::base64Encode(root.tfvars_json)}};
}

json jobOwner(std::string_view job_name, std::string_view job_uid) {
  return json::array({{{"apiVersion", "batch/v1"},
                       {"kind", "Job"},
                       {"name", job_name},
                       {"uid", job_uid},
                       {"controller", true},
                       {"blockOwnerDeletion", false}}});
}

json secret(std::string_view ns, std::string_view name, json labels, json owners, json data) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels", std::move(labels)},
            {"ownerReferences", std::move(owners)}}},
          {"type", "Opaque"},
          {"data", std::move(data)}};
}

} // namespace

json durableInputsSecret(const ObjectRef& ref, const contract::RenderedRoot& root,
                         const DurableAnnotations& annotations) {
  std::map<std::string, std::string> labels = ownerLabels(ref);
  labels.emplace(api::kLabelClusterctlMove, "");
  json out = secret(ref.ns, durableInputsSecretName(ref), labelsJson(labels),
                    json::array({ownerReference(ref)}), rootData(root));
  json notes = {{std::string(api::kAnnotationImage), annotations.image}};
  if (annotations.image_digest) {
    notes[std::string(api::kAnnotationImageDigest)] = *annotations.image_digest;
  }
  if (!annotations.identity.empty()) {
    notes[std::string(api::kAnnotationIdentity)] = annotations.identity;
  }
  if (annotations.git_commit) {
    notes[std::string(api::kAnnotationGitCommit)] = *annotations.git_commit;
  }
  out["metadata"]["annotations"] = std::move(notes);
  return out;
}

absl::StatusOr<DurableInputs> readDurableInputs(const json& secret_object) {
  const std::string name = internal::nameOf(secret_object);
  DurableInputs out;
  const auto read = [&](std::string_view key, std::string& into) -> absl::Status {
    bool bad = false;
    auto data = internal::secretData(secret_object, key, &bad);
    if (!data) {
      return absl::FailedPreconditionError(strCat("durable inputs Secret ", name,
                                                  bad ? ": the key " : " has no key ", key,
                                                  bad ? " is not valid base64" : ""));
    }
    into = *std::move(data);
    return absl::OkStatus();
  };
  CAPTF_RETURN_IF_ERROR(read(contract::kMainFileName, out.root.main_tf_json));
  CAPTF_RETURN_IF_ERROR(read(contract::kTfvarsFileName, out.root.tfvars_json));
  auto tfvars = contract::parseJson(out.root.tfvars_json, contract::kTfvarsFileName);
  if (!tfvars.ok()) {
    // "<file>: invalid JSON at byte <n>: <kind>", never a quoted value.
    return absl::FailedPreconditionError(
        strCat("durable inputs Secret ", name, ": ", tfvars.status().message()));
  }
  if (!tfvars->is_object()) {
    return absl::FailedPreconditionError(strCat(
        "durable inputs Secret ", name, ": ", contract::kTfvarsFileName, " is not a JSON object"));
  }
  out.tfvars = *std::move(tfvars);
  out.annotations.image = internal::annotation(secret_object, api::kAnnotationImage).value_or("");
  out.annotations.image_digest = internal::annotation(secret_object, api::kAnnotationImageDigest);
  out.annotations.identity =
      internal::annotation(secret_object, api::kAnnotationIdentity).value_or("");
  out.annotations.git_commit = internal::annotation(secret_object, api::kAnnotationGitCommit);
  const auto initialized = out.tfvars.find(std::string(contract::input::kControlPlaneInitialized));
  out.control_plane_initialized =
      initialized != out.tfvars.end() && initialized->is_boolean() && initialized->get<bool>();
  const auto endpoint = out.tfvars.find(std::string(contract::input::kControlPlaneEndpoint));
  out.control_plane_endpoint_null = endpoint == out.tfvars.end() || endpoint->is_null();
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> decodeSecretData(const json& secret) {
  std::map<std::string, std::string> out;
  const json* data = internal::at(secret, "data");
  if (data == nullptr || !data->is_object()) {
    return out;
  }
  for (const auto& [key, value] : data->items()) {
    bool bad = false;
    if (auto decoded = internal::secretData(secret, key, &bad)) {
      out[key] = *std::move(decoded);
    } else if (bad) {
      return absl::InvalidArgumentError(strCat("the key ", key, " is not valid base64"));
    }
  }
  return out;
}

json imageDigestPatch(std::string_view digest) {
  return {{"metadata", {{"annotations", {{std::string(api::kAnnotationImageDigest), digest}}}}}};
}

std::optional<std::string> digestFromImageId(std::string_view image_id) {
  constexpr std::string_view kPrefix = "sha256:";
  constexpr std::size_t kHexLength = 64;
  const std::size_t at = image_id.rfind(kPrefix);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  if (at != 0 && image_id[at - 1] != '@' && image_id[at - 1] != '/') {
    return std::nullopt;
  }
  const std::string_view hex = image_id.substr(at + kPrefix.size());
  if (hex.size() != kHexLength) {
    return std::nullopt;
  }
  for (const char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return std::nullopt;
    }
  }
  return strCat(kPrefix, hex);
}

json runSecret(const ObjectRef& ref, std::string_view job_name, std::string_view job_uid,
               const contract::RenderedRoot& root) {
  return secret(ref.ns, runSecretName(job_name), labelsJson(ownerLabels(ref)),
                jobOwner(job_name, job_uid), rootData(root));
}

json restoreRunSecret(const ObjectRef& ref, std::string_view job_name, std::string_view job_uid) {
  return secret(ref.ns, runSecretName(job_name), labelsJson(ownerLabels(ref)),
                jobOwner(job_name, job_uid),
                {{std::string(contract::kMainFileName),
                  contract::base64Encode(contract::renderRestoreRoot())}});
}

} // namespace captf::workspace
