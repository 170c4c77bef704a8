#pragma once

// The two delete guards (docs/reference/webhooks.md): a TerraformMachine is not
// deleted behind its live owner Machine's back, and a
// TerraformClusterIdentity is not deleted while anything uses it. The
// guards are pure; the facts come from the API server through
// AdmissionLookups (admission.h), parsed with the helpers below.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_cluster_identity.h"
#include "manager/api/terraform_machine.h"
#include "manager/api/terraform_machine_pool.h"
#include "webhooks/field_error.h"

namespace captf::webhooks {

// A Cluster API object reference (v1beta2 ContractVersionedObjectReference;
// a v1beta1 ObjectReference's apiVersion is reduced to its group).
struct ObjectRef {
  std::string api_group;
  std::string kind;
  std::string name;

  friend bool operator==(const ObjectRef&, const ObjectRef&) = default;
};

// The parts of a Cluster API Machine the TerraformMachine guard reads.
struct OwnerMachine {
  std::string name;
  std::string uid;
  std::string cluster_name; // spec.clusterName
  bool deleting = false;    // metadata.deletionTimestamp is set
  ObjectRef infrastructure_ref;
};

// The parts of a Cluster API Cluster the guards read.
struct ClusterInfo {
  std::string namespace_;
  std::string name;
  bool paused = false; // spec.paused
  ObjectRef infrastructure_ref;
};

// Parse a Machine or Cluster (cluster.x-k8s.io v1beta2 or v1beta1) as the
// API server returns it.
[[nodiscard]] absl::StatusOr<OwnerMachine> ownerMachineFromJson(const nlohmann::json& machine);
[[nodiscard]] absl::StatusOr<ClusterInfo> clusterInfoFromJson(const nlohmann::json& cluster);

// The ownerReference to a cluster.x-k8s.io Machine, if the object has one.
[[nodiscard]] const api::OwnerReference* machineOwnerReference(const api::TerraformMachine& obj);

// The back-reference checks of docs/behaviour/lifecycle.md between a TerraformMachine and
// the Machine its ownerRef names. Returns which check failed, or nullopt
// when the Machine really owns the object.
[[nodiscard]] std::optional<std::string> backReferenceMismatch(const api::TerraformMachine& obj,
                                                               const api::OwnerReference& ref,
                                                               const OwnerMachine& machine);

// DELETE of a TerraformMachine. `owner` is the Machine named by its
// Machine ownerRef (nullopt: none, or NotFound); `cluster` is the Cluster
// named by its cluster.x-k8s.io/cluster-name label (nullopt: no label, or
// NotFound). Refuses only while a genuine owner Machine exists and is not
// being deleted, unless clusterctl move deletes it (the
// clusterctl.cluster.x-k8s.io/delete-for-move annotation) from a paused
// Cluster.
[[nodiscard]] FieldErrorList
validateTerraformMachineDelete(const api::TerraformMachine& obj,
                               const std::optional<OwnerMachine>& owner,
                               const std::optional<ClusterInfo>& cluster);

// Every object that can resolve to an identity, across all namespaces.
struct IdentityUsageSnapshot {
  std::vector<api::TerraformCluster> clusters;
  std::vector<api::TerraformMachine> machines;
  std::vector<api::TerraformMachinePool> pools;
  // Cluster API Clusters, to follow a machine's or pool's fallback to its
  // TerraformCluster's identity.
  std::vector<ClusterInfo> capi_clusters;
};

// The first object resolving to `identity` (own identityRef, or for a
// machine or pool the cluster's spec.defaults.identityRef, then its
// spec.identityRef), as `TerraformMachine "ns/name"`; nullopt when none.
// Objects being deleted count: their destroy Jobs still need credentials.
[[nodiscard]] std::optional<std::string> findIdentityUser(std::string_view identity,
                                                          const IdentityUsageSnapshot& snapshot);

// DELETE of a TerraformClusterIdentity: refused while an object uses it or
// while status.namespaces lists credential mirrors.
[[nodiscard]] FieldErrorList
validateTerraformClusterIdentityDelete(const api::TerraformClusterIdentity& obj,
                                       const IdentityUsageSnapshot& snapshot);

} // namespace captf::webhooks
