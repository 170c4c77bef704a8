#include "manager/controllers/terraform_cluster_kind.h"

#include <string>

#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/api/terraform_cluster.h"
#include "manager/controllers/kinds.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/ready.h"
#include "manager/workspace/outputs.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

constexpr std::chrono::seconds kDependentsRecheck{10};

using kube::str;

bool isClusterOwner(const api::OwnerReference& ref) {
  const auto gvk = kube::GroupVersionKind::fromApiVersion(ref.api_version, ref.kind);
  return gvk.group == api::kClusterApiGroup && ref.kind == "Cluster";
}

// docs/behaviour/approval.md (plan approval) and
// docs/behaviour/lifecycle.md#run-leases-and-the-cluster-operation-gate (the cluster write Lease).
constexpr workspace::KindTraits kClusterTraits{.plan_approval = true, .owns_cluster_lease = true};

// One pass of a TerraformCluster; `deps` are its kind's.
class TerraformClusterPass final : public KindPassOf<api::TerraformCluster> {
public:
  TerraformClusterPass(api::TerraformCluster decoded, const ReconcilerDeps& deps)
      : KindPassOf(std::move(decoded)), deps_(deps) {}

  // The owning Cluster and its spec.infrastructureRef back-reference.
  absl::Status reconcileOwner(WorkloadPass& pass) override {
    const api::TerraformCluster& tc = object_;
    const api::OwnerReference* owner = nullptr;
    for (const api::OwnerReference& ref : tc.metadata.owner_references) {
      if (isClusterOwner(ref)) {
        owner = &ref;
        break;
      }
    }
    if (owner == nullptr) {
      pass.set(cond::kDependenciesReady, ConditionStatus::kUnknown, cond::kReasonWaitingForOwner,
               "waiting for a Cluster to own this TerraformCluster");
      return absl::OkStatus();
    }
    pass.cluster_name = owner->name;
    // CAPI's convention: the owner on every later line of the reconcile.
    pass.log = pass.log.withValues({{"Cluster", kube::objectRef(pass.id.ns, owner->name)}});
    auto cluster = deps_.cached.get(kinds::kCluster, {pass.id.ns, owner->name});
    if (!cluster.ok()) {
      if (!kube::isNotFound(cluster.status())) {
        return cluster.status();
      }
      pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonOwnerNotFound,
               "Cluster " + owner->name + " does not exist");
      return absl::OkStatus();
    }
    pass.cluster = *std::move(cluster);
    pass.owner = pass.cluster;
    const json ref = pass.cluster.value("spec", json::object()).value("infrastructureRef", json());
    std::string group = ref.is_object() ? ref.value("apiGroup", "") : "";
    if (group.empty() && ref.is_object()) {
      group = kube::GroupVersionKind::fromApiVersion(ref.value("apiVersion", ""), "").group;
    }
    std::string mismatch;
    if (!ref.is_object() || group != api::kGroup ||
        ref.value("kind", "") != api::kKindTerraformCluster ||
        ref.value("name", "") != pass.id.name) {
      mismatch = "Cluster " + owner->name + " spec.infrastructureRef does not name this object";
    } else if (!owner->uid.empty() && owner->uid != kube::meta::uid(pass.cluster)) {
      mismatch = "the ownerReference's uid is not Cluster " + owner->name + "'s";
    }
    if (!mismatch.empty()) {
      pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonOwnerMismatch,
               mismatch);
      return absl::OkStatus();
    }
    pass.owner_ok = true;
    pass.set(cond::kDependenciesReady, ConditionStatus::kTrue, cond::kReasonDependenciesReady, "");
    return absl::OkStatus();
  }

  // A TerraformCluster inherits nothing; it names its identity itself.
  std::optional<api::JobPolicy> inheritedJobs(const WorkloadPass& pass) const override {
    (void)pass;
    return std::nullopt;
  }
  std::string identityName(const WorkloadPass& pass) const override {
    (void)pass;
    const auto& ref = object_.spec.identity_ref;
    return lifecycle::effectiveIdentityName(
        ref.name.empty() ? std::nullopt : std::optional<api::IdentityReference>(ref), std::nullopt);
  }
  lifecycle::EffectiveSchedule schedule(const WorkloadPass& pass,
                                        std::chrono::seconds default_interval) const override {
    (void)pass;
    return lifecycle::resolveSchedule(object_.spec, default_interval);
  }

  absl::StatusOr<json> roleInputs(WorkloadPass& pass) override {
    return contract::toInputsJson(workspace::clusterInputs(
        object_, pass.cluster, pass.durable && pass.durable->control_plane_initialized));
  }

  // A user endpoint is recorded before the first apply.
  absl::Status afterInputs(WorkloadPass& pass) override {
    const api::TerraformCluster& tc = object_;
    const auto source = workspace::readEndpointSource(tc.metadata);
    if (workspace::shouldMarkUserEndpoint(source, workspace::clusterEndpoint(pass.cluster),
                                          tc.spec.control_plane_endpoint)) {
      return pass.patcher.setAnnotation(api::kAnnotationEndpointSource,
                                        str(workspace::kEndpointSourceUser));
    }
    return absl::OkStatus();
  }

  // Outputs, the provisioned latch, failure domains, the endpoint write-back.
  absl::Status reconcileOutputs(WorkloadPass& pass) override {
    const bool latched = pass.latched();
    const workspace::ClusterOutputs outputs =
        workspace::decodeClusterOutputs(pass.state.summary.outputs);
    const bool usable = reportOutputs(pass, deps_.metrics, outputs.verdict, outputs.message);
    if (!latched && workspace::clusterProvisioned(!pass.state.inputs_hash.empty(), outputs)) {
      pass.provisioned = true;
      pass.status->initialization = api::Initialization{true};
      pass.event(kube::EventType::kNormal, "Provisioned", "cluster infrastructure provisioned");
    }
    countPendingSample(pass, outputs.health);
    if (pass.provisioned) {
      reportHealth(pass, workspace::healthCondition(outputs.health));
    } else if (!latched) {
      pass.set(cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
               "waiting for the outputs of a successful apply");
    }
    if (usable) {
      if (status_.failure_domains != outputs.failure_domains) {
        status_.failure_domains = outputs.failure_domains;
        pass.event(kube::EventType::kNormal, "FailureDomainsChanged",
                   std::to_string(outputs.failure_domains.size()) + " failure domains");
      }
      const auto write_back = workspace::decideEndpointWriteBack(
          workspace::readEndpointSource(object_.metadata), outputs,
          object_.spec.control_plane_endpoint,
          !pass.durable || pass.durable->control_plane_endpoint_null);
      if (write_back) {
        json patch = {
            {"spec",
             {{"controlPlaneEndpoint",
               {{"host", write_back->endpoint.host}, {"port", write_back->endpoint.port}}}}}};
        if (write_back->mark_module) {
          patch["metadata"]["annotations"][str(api::kAnnotationEndpointSource)] =
              str(workspace::kEndpointSourceModule);
        }
        // Through the patcher: the pass's status patch must not conflict
        // with this write of its own.
        if (absl::Status s = pass.patcher.patch(patch); !s.ok()) {
          return s;
        }
        pass.event(kube::EventType::kNormal, "ControlPlaneEndpointSet",
                   "spec.controlPlaneEndpoint set to " + write_back->endpoint.host + ":" +
                       std::to_string(write_back->endpoint.port) + " from the module output");
      }
    }
    const auto endpoint = workspace::endpointAvailable(pass.provisioned, outputs,
                                                       workspace::clusterEndpoint(pass.cluster));
    pass.set(cond::kEndpointAvailable, endpoint.status, endpoint.reason, endpoint.message);
    return absl::OkStatus();
  }

  // Machines and pools of the Cluster go first.
  absl::StatusOr<bool> deletionBlocked(WorkloadPass& pass) override {
    if (pass.cluster_name.empty()) {
      return false;
    }
    kube::ListOptions options;
    options.ns = pass.id.ns;
    options.label_selector = str(api::kLabelClusterName) + "=" + pass.cluster_name;
    size_t dependents = 0;
    for (const auto* dependent : kinds::kWorkloadKinds) {
      if (dependent == &kinds::kTerraformCluster) {
        continue;
      }
      auto objects = deps_.cached.list(*dependent, options);
      if (!objects.ok()) {
        return objects.status();
      }
      dependents += objects->items.size();
    }
    if (dependents == 0) {
      return false;
    }
    pass.set(cond::kDeletionBlocked, ConditionStatus::kTrue, cond::kReasonDependentsExist,
             std::to_string(dependents) + " TerraformMachines/TerraformMachinePools of Cluster " +
                 pass.cluster_name + " still exist");
    pass.result.requeue_after = kDependentsRecheck;
    return true;
  }

  // The apply policy and the plan approvals are the cluster's only.
  void decisionInput(const WorkloadPass& pass, lifecycle::DecisionInput& in) const override {
    in.apply_policy = lifecycle::effectiveApplyPolicy(object_.spec);
    const auto& annotations = pass.meta->annotations;
    if (auto it = annotations.find(str(api::kAnnotationApproveDestructivePlan));
        it != annotations.end()) {
      in.approve_destructive_plan = it->second;
    }
    if (auto it = annotations.find(str(api::kAnnotationApprovePlan)); it != annotations.end()) {
      in.approve_plan = it->second;
    }
  }

  // Takes the cluster write Lease and counts the machine and pool
  // operations of the Cluster that run now.
  absl::StatusOr<lifecycle::GateInput> gateInput(WorkloadPass& pass,
                                                 const lifecycle::LeaseRequest& lease) override {
    lifecycle::LeaseRequest cluster_lease = lease;
    cluster_lease.kind = lifecycle::LeaseKind::kCluster;
    std::string holder;
    auto verdict = takeLease(deps_.api, deps_.cached, cluster_lease,
                             lifecycle::clusterLeaseName(pass.id.ns, pass.cluster_name), holder);
    if (!verdict.ok()) {
      return verdict.status();
    }
    lifecycle::GateInput gate;
    gate.cluster_lease_verdict = *verdict;
    kube::ListOptions options;
    options.ns = pass.id.ns;
    options.label_selector = str(api::kLabelClusterName) + "=" + pass.cluster_name;
    auto jobs = deps_.cached.list(kinds::kJob, options);
    if (!jobs.ok()) {
      return jobs.status();
    }
    for (const json& job : jobs->items) {
      const std::string kind = kube::meta::labels(job).value(str(api::kLabelOwnerKind), "");
      auto record = lifecycle::jobRecordFromJob(job);
      if (kind != api::kKindTerraformCluster && record.ok() &&
          record->outcome == lifecycle::JobOutcome::kActive &&
          (record->operation == api::Operation::kApply ||
           record->operation == api::Operation::kDestroy ||
           record->operation == api::Operation::kRestore)) {
        ++gate.dependent_operations;
      }
    }
    return gate;
  }

  std::optional<api::PlanPreview>* plan(WorkloadPass& pass) override {
    (void)pass;
    return &status_.plan;
  }

  // The v1beta1 contract's status.ready mirrors the latch.
  void summarize(WorkloadPass& pass) override { status_.ready = pass.latched(); }

private:
  const ReconcilerDeps& deps_;
};

class TerraformClusterKind final : public WorkloadKind {
public:
  explicit TerraformClusterKind(ReconcilerDeps deps) : deps_(deps) {}

  const kube::GroupVersionKind& gvk() const override { return kinds::kTerraformCluster; }
  contract::Role role() const override { return contract::Role::kCluster; }
  const workspace::KindTraits& traits() const override { return kClusterTraits; }
  std::string_view finalizer() const override { return api::kFinalizerTerraformCluster; }
  std::string_view resource() const override { return "terraformcluster"; }

  absl::StatusOr<std::unique_ptr<KindPass>> begin(const json& object) const override {
    return beginPass<TerraformClusterPass>(object, deps_);
  }

private:
  ReconcilerDeps deps_;
};

} // namespace

std::unique_ptr<WorkloadKind> terraformClusterKind(ReconcilerDeps deps) {
  return std::make_unique<TerraformClusterKind>(deps);
}

} // namespace captf::controllers
