#pragma once

// AdmissionLookups served by the API server through captf_kube: Machines
// and Clusters by GET, identity usage by paginated lists. The
// SubjectAccessReviews go through kube::KubeAccessReviewer
// (manager/kube/authorization.h) on behalf of the requesting user (user,
// uid, groups and extra from the AdmissionReview's userInfo).

#include "manager/kube/client.h"
#include "webhooks/admission.h"

namespace captf::webhooks {

// Thread-safe (the kube client is).
class KubeAdmissionLookups final : public AdmissionLookups {
public:
  explicit KubeAdmissionLookups(kube::Reader& reader) : reader_(reader) {}

  absl::StatusOr<std::optional<OwnerMachine>> getMachine(std::string_view namespace_name,
                                                         std::string_view name) override;
  absl::StatusOr<std::optional<ClusterInfo>> getCluster(std::string_view namespace_name,
                                                        std::string_view name) override;
  absl::StatusOr<IdentityUsageSnapshot> identityUsage() override;

private:
  kube::Reader& reader_;
};

// The kinds the lookups read, for a kube::StaticRestMapper (so the webhook
// needs no discovery): the seven CAPTF kinds and Cluster API's Machine and
// Cluster (v1beta2).
void addAdmissionResources(kube::StaticRestMapper& mapper);

} // namespace captf::webhooks
