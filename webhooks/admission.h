#pragma once

// The admission adapter: admission.k8s.io/v1 AdmissionReview decoding and
// encoding, and AdmissionHandler, which routes a request to the validators
// of its kind and operation. Transport (the HTTPS server on :9443) is not
// here: it hands the request body to parseAdmissionReview and writes back
// encodeAdmissionReview(handler.handle(request)).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "webhooks/access_review.h"
#include "webhooks/delete_guards.h"

namespace captf::webhooks {

enum class AdmissionOperation { kCreate, kUpdate, kDelete, kConnect };

struct AdmissionRequest {
  std::string uid;
  // request.kind
  std::string group;
  std::string version;
  std::string kind;
  std::string sub_resource;
  std::string name;
  std::string namespace_;
  AdmissionOperation operation = AdmissionOperation::kCreate;
  UserInfo user_info;
  // null when the review carries none (oldObject on CREATE, object on DELETE).
  nlohmann::json object;
  nlohmann::json old_object;
  bool dry_run = false;
};

// Parses an AdmissionReview v1 request body. Never throws and never
// crashes on any input: malformed JSON gives InvalidArgument with the byte
// offset; a well-formed document of the wrong shape gives InvalidArgument
// naming the offending field ("request.uid: expected string").
[[nodiscard]] absl::StatusOr<AdmissionRequest> parseAdmissionReview(std::string_view body);
[[nodiscard]] absl::StatusOr<AdmissionRequest>
admissionRequestFromJson(const nlohmann::json& review);

struct AdmissionResponse {
  std::string uid; // echoes request.uid
  bool allowed = true;
  // A metav1.Status when denied; null when allowed.
  nlohmann::json status;
  std::vector<std::string> warnings;
};

// The AdmissionReview v1 response document.
[[nodiscard]] std::string encodeAdmissionReview(const AdmissionResponse& response);

// A response for a body parseAdmissionReview rejected: denied with 400
// BadRequest and the parse error; uid empty (the request had none usable).
[[nodiscard]] AdmissionResponse badRequest(std::string_view uid, std::string_view message);

// Facts the delete guards need from the API server. Implemented by the
// Kubernetes client (manager/kube) with the manager's own credentials;
// tests inject fakes. NotFound is not an error: it is nullopt. Must be safe
// to call from several webhook threads at once.
class AdmissionLookups {
public:
  virtual ~AdmissionLookups() = default;
  // The cluster.x-k8s.io Machine `namespace_name`/`name`.
  virtual absl::StatusOr<std::optional<OwnerMachine>> getMachine(std::string_view namespace_name,
                                                                 std::string_view name) = 0;
  // The cluster.x-k8s.io Cluster `namespace_name`/`name`.
  virtual absl::StatusOr<std::optional<ClusterInfo>> getCluster(std::string_view namespace_name,
                                                                std::string_view name) = 0;
  // Every TerraformCluster, TerraformMachine, TerraformMachinePool and
  // Cluster in every namespace.
  virtual absl::StatusOr<IdentityUsageSnapshot> identityUsage() = 0;
};

// Routes requests to the validators. Stateless apart from its injected
// collaborators: one handler serves all threads.
class AdmissionHandler {
public:
  AdmissionHandler(AdmissionLookups& lookups, AccessReviewer& reviewer)
      : lookups_(lookups), reviewer_(reviewer) {}

  [[nodiscard]] AdmissionResponse handle(const AdmissionRequest& request) const;

private:
  AdmissionLookups& lookups_;
  AccessReviewer& reviewer_;
};

} // namespace captf::webhooks
