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

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/inputs.h"
#include "manager/api/terraform_cluster.h"
#include "manager/controllers/workload_kind.h"

namespace captf::controllers {

// What the owner lookup and the gates of one pass found, beside the typed
// object (a MemberPass's own).
struct MemberState {
  // The TerraformCluster the Cluster's infrastructureRef names (nullopt
  // when the Cluster is not Terraform's or it is not found).
  std::optional<api::TerraformCluster> terraform_cluster;
  contract::BootstrapData bootstrap;
  nlohmann::json exports = nlohmann::json::object();
  // The cluster's failure domain names (its state's failure_domains
  // output, or status.failureDomains of an externally managed one).
  std::vector<std::string> cluster_failure_domains;

  // The TerraformCluster's spec.defaults (nullopt when none or not found).
  std::optional<api::TerraformClusterDefaults> clusterDefaults() const;
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

// A member kind: its deps and owner traits, fixed when the controller is
// built, and the member hooks every MemberPass runs with its own
// MemberState. Shared by the passes of several threads: it is never
// written after construction.
class MemberKind : public WorkloadKind {
public:
  const ReconcilerDeps& deps() const { return deps_; }

  // KindPass::reconcileOwner, identityName, inputsReady and gateInput of a
  // member (`own_ref`: the object's own spec.identityRef); what they find
  // goes to `member`.
  absl::Status reconcileOwner(WorkloadPass& pass, MemberState& member) const;
  std::string identityName(const WorkloadPass& pass, const MemberState& member,
                           const std::optional<api::IdentityReference>& own_ref) const;
  absl::StatusOr<bool> inputsReady(WorkloadPass& pass, MemberState& member) const;
  absl::StatusOr<lifecycle::GateInput> gateInput(WorkloadPass& pass,
                                                 const lifecycle::LeaseRequest& lease) const;

protected:
  MemberKind(ReconcilerDeps deps, OwnerTraits owner_traits)
      : deps_(deps), owner_traits_(owner_traits) {}

private:
  // Reads the cluster's exports and failure domains into `member`; false
  // while its state cannot be read or its outputs are not valid.
  absl::StatusOr<bool> readClusterOutputs(const api::TerraformCluster& tc,
                                          MemberState& member) const;

  ReconcilerDeps deps_;
  const OwnerTraits owner_traits_;
};

// The pass of a member kind over its API type T (api::TerraformMachine,
// api::TerraformMachinePool): the typed object and the pass's MemberState,
// with the member hooks of its kind. `kind` outlives the pass.
template <class T> class MemberPass : public KindPassOf<T> {
public:
  MemberPass(T decoded, const MemberKind& kind) : KindPassOf<T>(std::move(decoded)), kind_(kind) {}

  absl::Status reconcileOwner(WorkloadPass& pass) override {
    return kind_.reconcileOwner(pass, member_);
  }
  // The TerraformCluster's spec.defaults.jobs.
  std::optional<api::JobPolicy> inheritedJobs(const WorkloadPass& pass) const override {
    (void)pass;
    const auto defaults = member_.clusterDefaults();
    if (!defaults) {
      return std::nullopt;
    }
    return defaults->jobs;
  }
  std::string identityName(const WorkloadPass& pass) const override {
    return kind_.identityName(pass, member_, this->object_.spec.identity_ref);
  }
  lifecycle::EffectiveSchedule schedule(const WorkloadPass& pass,
                                        std::chrono::seconds default_interval) const override {
    (void)pass;
    return lifecycle::resolveSchedule(this->object_.spec, member_.clusterDefaults(),
                                      default_interval);
  }
  absl::StatusOr<bool> inputsReady(WorkloadPass& pass) override {
    return kind_.inputsReady(pass, member_);
  }
  absl::StatusOr<lifecycle::GateInput> gateInput(WorkloadPass& pass,
                                                 const lifecycle::LeaseRequest& lease) override {
    return kind_.gateInput(pass, lease);
  }

protected:
  const MemberKind& kind_;
  MemberState member_;
};

} // namespace captf::controllers
