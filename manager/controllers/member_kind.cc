#include "manager/controllers/member_kind.h"

#include <string>

#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"
#include "manager/workspace/outputs.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

// While a dependency gate holds, how often it is looked at again (the
// owner, the Cluster and the TerraformCluster also wake the object; the
// bootstrap Secret, not cached, does not).
constexpr std::chrono::seconds kGateRecheck{10};

using kube::str;

// The API group of a reference that has apiGroup (v1beta2) or apiVersion.
std::string refGroup(const json& ref) {
  std::string group = ref.value("apiGroup", "");
  if (group.empty()) {
    group = kube::GroupVersionKind::fromApiVersion(ref.value("apiVersion", ""), "").group;
  }
  return group;
}

// Cluster.spec.infrastructureRef, when it names a TerraformCluster: its name.
std::optional<std::string> terraformClusterOf(const json& cluster) {
  const json* ref = kube::fieldAt(cluster, "spec.infrastructureRef");
  if (ref == nullptr || !ref->is_object() || ref->value("kind", "") != api::kKindTerraformCluster ||
      refGroup(*ref) != api::kGroup) {
    return std::nullopt;
  }
  return ref->value("name", "");
}

// A dependency gate holds: DependenciesReady, an Event on the transition,
// a recheck.
void gate(WorkloadPass& pass, ConditionStatus status, std::string_view reason,
          const std::string& message) {
  if (pass.set(cond::kDependenciesReady, status, reason, message)) {
    pass.event(kube::EventType::kNormal, reason, message);
  }
  pass.result.requeue_after = kGateRecheck;
}

} // namespace

std::optional<api::TerraformClusterDefaults> MemberState::clusterDefaults() const {
  if (!terraform_cluster) {
    return std::nullopt;
  }
  return terraform_cluster->spec.defaults;
}

// The owner and its three back-references; the Cluster by the object's own
// cluster-name label; the TerraformCluster it names.
absl::Status MemberKind::reconcileOwner(WorkloadPass& pass, MemberState& member) const {
  const std::string owner_kind = owner_traits_.owner_gvk->kind;
  const api::OwnerReference* owner = nullptr;
  for (const api::OwnerReference& ref : pass.meta->owner_references) {
    if (ref.kind == owner_kind &&
        kube::GroupVersionKind::fromApiVersion(ref.api_version, ref.kind).group ==
            api::kClusterApiGroup) {
      owner = &ref;
      break;
    }
  }
  const auto label = pass.meta->labels.find(str(api::kLabelClusterName));
  const std::string cluster_label =
      label == pass.meta->labels.end() ? std::string() : label->second;
  pass.cluster_name = cluster_label;
  // CAPI's convention: the owners on every later line of the reconcile.
  kube::LogValues owners = kube::LogValues::object();
  if (!cluster_label.empty()) {
    owners["Cluster"] = kube::objectRef(pass.id.ns, cluster_label);
  }
  if (owner != nullptr) {
    owners[owner_kind] = kube::objectRef(pass.id.ns, owner->name);
  }
  pass.log = pass.log.withValues(owners);
  if (owner == nullptr || cluster_label.empty()) {
    // With the label but no owner (gone, or never there) a deletion still
    // destroys from the durable inputs; without the label nothing runs.
    // Other owners but not yet the expected one (a control plane's, a
    // topology's) is False/WaitingForOwnerMachine(Pool): something else
    // claims the object first; no owner at all is Unknown/WaitingForOwner
    // (docs/reference/conditions.md#dependenciesready).
    if (owner == nullptr && !pass.meta->owner_references.empty()) {
      pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, owner_traits_.waiting_for_owner,
               "waiting for a " + owner_kind + " to own this " + str(owner_traits_.own_kind) +
                   "; its other owners do not run it");
    } else {
      pass.set(cond::kDependenciesReady, ConditionStatus::kUnknown, cond::kReasonWaitingForOwner,
               owner == nullptr
                   ? "waiting for a " + owner_kind + " to own this " + str(owner_traits_.own_kind)
                   : "waiting for the cluster.x-k8s.io/cluster-name label");
    }
    return absl::OkStatus();
  }
  auto owner_object = deps_.cached.get(*owner_traits_.owner_gvk, {pass.id.ns, owner->name});
  if (!owner_object.ok()) {
    if (!kube::isNotFound(owner_object.status())) {
      return owner_object.status();
    }
    pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonOwnerNotFound,
             owner_kind + " " + owner->name + " does not exist");
  } else {
    pass.owner = *std::move(owner_object);
  }
  auto cluster = deps_.cached.get(kinds::kCluster, {pass.id.ns, cluster_label});
  if (!cluster.ok() && !kube::isNotFound(cluster.status())) {
    return cluster.status();
  }
  if (cluster.ok()) {
    pass.cluster = *std::move(cluster);
    if (auto name = terraformClusterOf(pass.cluster)) {
      auto tc = deps_.cached.get(kinds::kTerraformCluster, {pass.id.ns, *name});
      if (!tc.ok() && !kube::isNotFound(tc.status())) {
        return tc.status();
      }
      if (tc.ok()) {
        auto decoded = api::fromJson<api::TerraformCluster>(*tc);
        if (decoded.ok()) {
          member.terraform_cluster = *std::move(decoded);
        }
      }
    }
  }
  if (!pass.owner.is_object()) {
    return absl::OkStatus();
  }
  std::string mismatch;
  const json* ref = kube::fieldAt(pass.owner, owner_traits_.infrastructure_ref);
  if (ref == nullptr || !ref->is_object() || refGroup(*ref) != api::kGroup ||
      ref->value("kind", "") != owner_traits_.own_kind || ref->value("name", "") != pass.id.name) {
    mismatch = owner_kind + " " + owner->name + " " + str(owner_traits_.infrastructure_ref) +
               " does not name this object";
  } else if (!owner->uid.empty() && owner->uid != kube::meta::uid(pass.owner)) {
    mismatch = "the ownerReference's uid is not " + owner_kind + " " + owner->name + "'s";
  } else if (const json* name = kube::fieldAt(pass.owner, "spec.clusterName");
             name == nullptr || !name->is_string() || name->get<std::string>() != cluster_label) {
    mismatch = "the cluster.x-k8s.io/cluster-name label " + cluster_label + " is not " +
               owner_kind + " " + owner->name + "'s spec.clusterName";
  }
  if (!mismatch.empty()) {
    pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonOwnerMismatch,
             mismatch);
    return absl::OkStatus();
  }
  if (!pass.cluster.is_object()) {
    pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonOwnerNotFound,
             "Cluster " + cluster_label + " does not exist");
    // Deletion destroys from the durable inputs; nothing else runs.
    pass.owner_ok = pass.deleting;
    return absl::OkStatus();
  }
  pass.owner_ok = true;
  if (traits().immutable_inputs && pass.latched()) {
    // Provisioned immutable inputs are never rebuilt: no gate applies.
    pass.set(cond::kDependenciesReady, ConditionStatus::kTrue, cond::kReasonDependenciesReady, "");
  }
  return absl::OkStatus();
}

std::string MemberKind::identityName(const WorkloadPass& pass, const MemberState& member,
                                     const std::optional<api::IdentityReference>& own_ref) const {
  std::optional<api::TerraformClusterSpec> cluster;
  if (member.terraform_cluster) {
    cluster = member.terraform_cluster->spec;
  }
  std::string name = lifecycle::effectiveIdentityName(own_ref, cluster);
  if (name.empty() && pass.durable) {
    name = pass.durable->annotations.identity; // the cluster is gone: what the apply used
  }
  return name;
}

// The dependency gates in their order: a Terraform cluster, its
// infrastructure, its exports, the owner's bootstrap data.
absl::StatusOr<bool> MemberKind::inputsReady(WorkloadPass& pass, MemberState& member) const {
  if (!terraformClusterOf(pass.cluster)) {
    gate(pass, ConditionStatus::kFalse, cond::kReasonClusterNotTerraform,
         "Cluster " + pass.cluster_name + " spec.infrastructureRef is not a TerraformCluster");
    return false;
  }
  const json* provisioned =
      kube::fieldAt(pass.cluster, "status.initialization.infrastructureProvisioned");
  if (!member.terraform_cluster || provisioned == nullptr || !provisioned->is_boolean() ||
      !provisioned->get<bool>()) {
    gate(pass, ConditionStatus::kUnknown, cond::kReasonWaitingForClusterInfrastructure,
         "waiting for the infrastructure of Cluster " + pass.cluster_name);
    return false;
  }
  auto outputs = readClusterOutputs(*member.terraform_cluster, member);
  if (!outputs.ok()) {
    return outputs.status();
  }
  if (!*outputs) {
    gate(pass, ConditionStatus::kUnknown, cond::kReasonWaitingForClusterExports,
         "the exports of TerraformCluster " + member.terraform_cluster->metadata.name +
             " cannot be read yet");
    return false;
  }
  const std::string owner = owner_traits_.owner_gvk->kind + " " + kube::meta::name(pass.owner);
  const auto secret_name = owner_traits_.bootstrap_secret(pass.owner);
  if (!secret_name) {
    gate(pass, ConditionStatus::kUnknown, cond::kReasonWaitingForBootstrapData,
         "waiting for the bootstrap dataSecretName of " + owner);
    return false;
  }
  // Bootstrap Secrets are not cached (only managed Secrets are): read from
  // the API server, never logged.
  auto secret = deps_.api.get(kinds::kSecret, {pass.id.ns, *secret_name});
  if (!secret.ok() && !kube::isNotFound(secret.status())) {
    return secret.status();
  }
  auto bootstrap = workspace::bootstrapData(secret.ok() ? *secret : json());
  if (!bootstrap.ok()) {
    gate(pass, ConditionStatus::kUnknown, cond::kReasonWaitingForBootstrapData,
         "bootstrap Secret " + *secret_name + ": " + std::string(bootstrap.status().message()));
    return false;
  }
  member.bootstrap = *std::move(bootstrap);
  return true;
}

// A member waits while the cluster write Lease is held by another Job.
absl::StatusOr<lifecycle::GateInput>
MemberKind::gateInput(WorkloadPass& pass, const lifecycle::LeaseRequest& lease) const {
  auto judged =
      judgeLease(deps_.api, deps_.cached, pass.id.ns,
                 lifecycle::clusterLeaseName(pass.id.ns, pass.cluster_name), lease.job, lease.now);
  if (!judged.ok()) {
    return judged.status();
  }
  lifecycle::GateInput gate_input;
  gate_input.cluster_lease_held_by_other = judged->verdict == lifecycle::LeaseVerdict::kWait;
  return gate_input;
}

// The cluster's `exports` output and failure domain names; {} and
// status.failureDomains for an externally managed cluster.
absl::StatusOr<bool> MemberKind::readClusterOutputs(const api::TerraformCluster& tc,
                                                    MemberState& member) const {
  if (tc.metadata.annotations.contains(str(api::kAnnotationManagedBy))) {
    member.exports = json::object();
    member.cluster_failure_domains.clear();
    if (tc.status) {
      for (const api::FailureDomain& fd : tc.status->failure_domains) {
        member.cluster_failure_domains.push_back(fd.name);
      }
    }
    return true;
  }
  const std::string suffix = lifecycle::stateSuffix(lifecycle::ObjectIdentity{
      contract::Role::kCluster, tc.metadata.namespace_, tc.metadata.name});
  auto secrets =
      listSecrets(deps_.cached, tc.metadata.namespace_, workspace::stateSelector(suffix));
  if (!secrets.ok()) {
    return secrets.status();
  }
  const workspace::ReadState state = workspace::readState(suffix, *secrets);
  if (state.status != workspace::StateStatus::kRead) {
    return false;
  }
  const workspace::ClusterOutputs outputs = workspace::decodeClusterOutputs(state.summary.outputs);
  if (!workspace::outputsUsable(outputs.verdict)) {
    return false;
  }
  member.exports = outputs.exports;
  member.cluster_failure_domains = workspace::clusterFailureDomainNames(state.summary.outputs);
  return true;
}

} // namespace captf::controllers
