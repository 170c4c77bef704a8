#pragma once

// What TerraformMachine and TerraformMachinePool share on the pass
// (workload_kind.h): a Cluster API owner (Machine, MachinePool) that must
// name the object back three ways, the Cluster the object's
// cluster.x-k8s.io/cluster-name label names, the TerraformCluster that
// Cluster's infrastructureRef names (whose spec.defaults the object
// inherits), the dependency gates before rendering (a Terraform cluster, its
// infrastructure, its exports, the owner's bootstrap data), and the member's
// side of the cluster operation gate (wait while the cluster's write Lease
// is held by another Job). docs/decisions/manager-reconcile-pass.md.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/inputs.h"
#include "manager/api/terraform_cluster.h"
#include "manager/controllers/workload_kind.h"

namespace captf::controllers {

// What the owner lookup and the gates found, beside the typed object.
struct MemberState {
  virtual ~MemberState() = default;
  // The TerraformCluster the Cluster's infrastructureRef names (nullopt
  // when the Cluster is not Terraform's or it is not found).
  std::optional<api::TerraformCluster> terraform_cluster;
  contract::BootstrapData bootstrap;
  nlohmann::json exports = nlohmann::json::object();
  // The cluster's failure domain names (its state's failure_domains
  // output, or status.failureDomains of an externally managed one).
  std::vector<std::string> cluster_failure_domains;
};

template <class T> class MemberObject : public TypedObjectOf<T>, public MemberState {
public:
  using TypedObjectOf<T>::TypedObjectOf;
};

// How a kind is owned.
struct OwnerTraits {
  const kube::GroupVersionKind* owner_gvk; // the Cluster API kind that owns it
  std::string_view own_kind;               // "TerraformMachine"
  // Where the owner names its infrastructure ("spec.infrastructureRef").
  std::string_view infrastructure_ref;
  std::string_view waiting_for_owner; // DependenciesReady reason without an owner
  // The owner's bootstrap Secret name (nullopt while unset).
  std::optional<std::string> (*bootstrap_secret)(const nlohmann::json& owner);
};

class MemberKind : public WorkloadKind {
public:
  absl::Status reconcileOwner(WorkloadPass& pass) override;
  std::optional<api::JobPolicy> inheritedJobs(const WorkloadPass& pass) const override;
  std::string identityName(const WorkloadPass& pass) const override;
  absl::StatusOr<bool> inputsReady(WorkloadPass& pass) override;
  absl::StatusOr<lifecycle::GateInput> gateInput(WorkloadPass& pass,
                                                 const lifecycle::LeaseRequest& lease) override;

protected:
  MemberKind(ReconcilerDeps deps, OwnerTraits owner_traits)
      : deps_(deps), owner_traits_(owner_traits) {}

  // The object's own spec.identityRef.
  virtual const std::optional<api::IdentityReference>&
  identityRef(const WorkloadPass& pass) const = 0;

  static MemberState& member(WorkloadPass& pass);
  static const MemberState& member(const WorkloadPass& pass);
  // The TerraformCluster's spec.defaults (nullopt when none or not found).
  static std::optional<api::TerraformClusterDefaults> clusterDefaults(const WorkloadPass& pass);
  // A dependency gate holds: DependenciesReady, an Event on the transition,
  // a recheck.
  static void gate(WorkloadPass& pass, api::ConditionStatus status, std::string_view reason,
                   const std::string& message);

  ReconcilerDeps deps_;
  const OwnerTraits owner_traits_;

private:
  // Reads the cluster's exports and failure domains into member(pass);
  // false while its state cannot be read or its outputs are not valid.
  absl::StatusOr<bool> readClusterOutputs(const api::TerraformCluster& tc,
                                          MemberState& member) const;
};

} // namespace captf::controllers
