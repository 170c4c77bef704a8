#pragma once

// The durable and per-run inputs Secrets (docs/behaviour/inputs.md) as manifests, and
// reading the durable one back. Manifests are complete Secret objects
// (apiVersion, kind, metadata, type Opaque, base64 `data`) ready to create
// or server-side apply; the caller decides when (docs/behaviour/inputs.md "Written": when an
// apply Job starts — docs/decisions/workspace-inputs-secrets.md).

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "contract/render.h"
#include "manager/workspace/names.h"

namespace captf::workspace {

struct DurableAnnotations {
  // spec.source.image as written (captf.io/image).
  std::string image{};
  // The pinned digest "sha256:<hex>" (captf.io/image-digest); omitted when
  // not known yet.
  std::optional<std::string> image_digest{};
  // The effective identity name (captf.io/identity); omitted when empty.
  std::string identity{};
  // A Git source: the commit the apply runs (captf.io/git-commit); `image`
  // is then contract::gitSourceIdentity.
  std::optional<std::string> git_commit{};
};

// `captf-inputs-<kindshort>-<name>`: data keys exactly main.tf.json and
// terraform.tfvars.json; labels ownerLabels(ref) + clusterctl move label;
// the three annotations; a non-blocking ownerReference to the object.
// Precondition: ref.uid is set.
nlohmann::json durableInputsSecret(const ObjectRef& ref, const contract::RenderedRoot& root,
                                   const DurableAnnotations& annotations);

// What a durable inputs Secret holds.
struct DurableInputs {
  contract::RenderedRoot root{};
  // terraform.tfvars.json parsed.
  nlohmann::json tfvars = nlohmann::json::object();
  DurableAnnotations annotations{};
  // tfvars.control_plane_initialized == true (the cluster latch, docs/behaviour/inputs.md).
  bool control_plane_initialized = false;
  // tfvars.control_plane_endpoint was null or absent (docs/behaviour/outputs.md: an endpoint
  // output is written back only from an apply whose input was null).
  bool control_plane_endpoint_null = true;
};

// Reads a durable inputs Secret. Errors (FailedPrecondition, naming the
// Secret): a missing data key, undecodable base64, tfvars that are not a
// JSON object. Never includes values.
absl::StatusOr<DurableInputs> readDurableInputs(const nlohmann::json& secret);

// Every `data` key of a Secret, base64-decoded. InvalidArgument naming the
// key (never its value) when one does not decode.
absl::StatusOr<std::map<std::string, std::string>> decodeSecretData(const nlohmann::json& secret);

// Merge patch pinning the image digest on the durable inputs Secret
// (docs/behaviour/lifecycle.md): {"metadata":{"annotations":{"captf.io/image-digest": digest}}}.
nlohmann::json imageDigestPatch(std::string_view digest);

// The digest in a pod's `containerStatuses[].imageID`
// ("docker-pullable://reg/repo@sha256:abc…", "reg/repo@sha256:abc…",
// "sha256:abc…"): "sha256:<64 hex>", or nullopt when there is none.
std::optional<std::string> digestFromImageId(std::string_view image_id);

// The per-run Secret `captf-run-<job>` of an apply/destroy/drift/refresh/plan
// run: the same two data keys; labels captf.io/managed=true and the owner
// labels; owned by the Job (controller, non-blocking). Precondition: job_uid
// set (create the Job first; the pod cannot start before the Secret exists).
nlohmann::json runSecret(const ObjectRef& ref, std::string_view job_name, std::string_view job_uid,
                         const contract::RenderedRoot& root);

// The per-run Secret of a restore run: `main.tf.json` = the backend-only
// restore root (contract::renderRestoreRoot), no tfvars. The backup chunks
// themselves are projected next to it from the backup Secrets
// (RestoreInputs in backups.h).
nlohmann::json restoreRunSecret(const ObjectRef& ref, std::string_view job_name,
                                std::string_view job_uid);

} // namespace captf::workspace
