#include "manager/controllers/terraform_machine_pool_kind.h"

#include <string>

#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/api/terraform_machine_pool.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/member_kind.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"
#include "manager/workspace/inputs.h"
#include "manager/workspace/outputs.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

using kube::str;

constexpr std::string_view kReplicasManager = "captf";

// docs/behaviour/pools.md#membership-refresh-and-convergence,
// docs/behaviour/drift-and-health.md#scheduling (the post-apply refresh) and
// docs/behaviour/lifecycle.md#ready-summarization (a failed re-apply keeps Ready False).
constexpr workspace::KindTraits kPoolTraits{
    .pool_membership = true, .post_apply_refresh = true, .ready_tracks_reapply = true};

// One pass of a TerraformMachinePool.
class TerraformMachinePoolPass final : public MemberPass<api::TerraformMachinePool> {
public:
  using MemberPass::MemberPass;

  absl::StatusOr<json> roleInputs(WorkloadPass& pass) override {
    pass.set(cond::kDependenciesReady, ConditionStatus::kTrue, cond::kReasonDependenciesReady, "");
    reportAutoscaling(pass);
    return contract::toInputsJson(
        workspace::machinePoolInputs(object_, pass.cluster_name, pass.owner, member_.bootstrap,
                                     member_.exports, member_.cluster_failure_domains));
  }

  // Outputs, the provisioned latch, spec.providerID(List), status.replicas
  // and instances, health, and the replica write-back.
  absl::Status reconcileOutputs(WorkloadPass& pass) override {
    const bool latched = pass.latched();
    const workspace::MachinePoolOutputs outputs =
        workspace::decodeMachinePoolOutputs(pass.state.summary.outputs);
    const bool usable = reportOutputs(pass, kind_.deps().metrics, outputs.verdict, outputs.message);
    if (!latched && workspace::machinePoolProvisioned(!pass.state.inputs_hash.empty(), outputs)) {
      pass.provisioned = true;
      pass.status->initialization = api::Initialization{true};
      pass.event(kube::EventType::kNormal, "Provisioned",
                 "machine pool provisioned as " + outputs.provider_id.value_or("") + " with " +
                     std::to_string(outputs.replicas) + " replicas");
    }
    if (usable) {
      if (absl::Status s = reconcileMembers(pass, outputs); !s.ok()) {
        return s;
      }
      status_.replicas = outputs.replicas;
      status_.instances = outputs.instances;
    }
    countPendingSample(pass, outputs.health);
    if (pass.provisioned) {
      reportHealth(pass, workspace::healthCondition(outputs.health));
    } else if (!latched) {
      pass.set(cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
               "waiting for the outputs of a successful apply");
    }
    return reconcileReplicas(pass);
  }

  // Membership converges while spec.providerIDList and status.replicas
  // differ (docs/decisions/manager-machine-pool.md).
  void decisionInput(const WorkloadPass& pass, lifecycle::DecisionInput& in) const override {
    (void)pass;
    in.provider_id_count = static_cast<std::int32_t>(object_.spec.provider_id_list.size());
    in.observed_replicas = status_.replicas;
  }

  // status.ready mirrors the latch; status.replicas is always written
  // (Cluster API reads it).
  void summarize(WorkloadPass& pass) override {
    status_.ready = pass.latched();
    if (!status_.replicas) {
      status_.replicas = 0;
    }
  }

private:
  // AutoscalingActive from the MachinePool's annotations.
  static workspace::AutoscalingReading reportAutoscaling(WorkloadPass& pass) {
    workspace::AutoscalingReading reading = workspace::readAutoscaling(pass.owner);
    switch (reading.state) {
    case workspace::AutoscalingState::kEnabled:
      pass.set(cond::kAutoscalingActive, ConditionStatus::kTrue,
               cond::kReasonReplicasManagedByModule,
               "the module owns the replica count, bounded to [" +
                   std::to_string(reading.autoscaling.min) + ", " +
                   std::to_string(reading.autoscaling.max) + "]");
      break;
    case workspace::AutoscalingState::kDisabled:
      pass.set(cond::kAutoscalingActive, ConditionStatus::kFalse, cond::kReasonAutoscalingDisabled,
               "");
      break;
    case workspace::AutoscalingState::kInvalid:
      if (pass.set(cond::kAutoscalingActive, ConditionStatus::kFalse,
                   cond::kReasonAutoscalingAnnotationsInvalid, reading.message)) {
        pass.event(kube::EventType::kWarning, cond::kReasonAutoscalingAnnotationsInvalid,
                   reading.message);
      }
      break;
    }
    return reading;
  }

  // spec.providerID (the group) and spec.providerIDList (its members)
  // follow the outputs, in one patch.
  absl::Status reconcileMembers(WorkloadPass& pass, const workspace::MachinePoolOutputs& outputs) {
    json spec = json::object();
    if (outputs.provider_id && outputs.provider_id != object_.spec.provider_id) {
      spec["providerID"] = *outputs.provider_id;
    }
    if (outputs.provider_id_list != object_.spec.provider_id_list) {
      spec["providerIDList"] = outputs.provider_id_list;
    }
    if (spec.empty()) {
      return absl::OkStatus();
    }
    const std::size_t before = object_.spec.provider_id_list.size();
    if (absl::Status s = pass.patcher.patch({{"spec", spec}}); !s.ok()) {
      return s;
    }
    if (spec.contains("providerID") && outputs.provider_id) {
      // A pool's group ID may change (docs/reference/events.md).
      pass.event(kube::EventType::kNormal, "ProviderIDSet",
                 "spec.providerID set to " + *outputs.provider_id);
    }
    if (outputs.provider_id) {
      object_.spec.provider_id = outputs.provider_id;
    }
    object_.spec.provider_id_list = outputs.provider_id_list;
    if (before != outputs.provider_id_list.size()) {
      pass.event(kube::EventType::kNormal, "MembersChanged",
                 "spec.providerIDList has " + std::to_string(outputs.provider_id_list.size()) +
                     " members (was " + std::to_string(before) + ")");
    }
    return absl::OkStatus();
  }

  // With autoscaling: claim cluster.x-k8s.io/replicas-managed-by on the
  // MachinePool (when absent or "false") and, while the claim is ours,
  // write the module's observed count to MachinePool.spec.replicas; without
  // it: withdraw a claim of ours. At most one MachinePool patch a pass.
  absl::Status reconcileReplicas(WorkloadPass& pass) const {
    if (!pass.owner.is_object()) {
      return absl::OkStatus();
    }
    const workspace::AutoscalingReading reading = reportAutoscaling(pass);
    const json annotations = kube::meta::annotations(pass.owner);
    const std::string key = str(api::kAnnotationReplicasManagedBy);
    const std::optional<std::string> claim =
        annotations.contains(key) && annotations[key].is_string()
            ? std::optional<std::string>(annotations[key].get<std::string>())
            : std::nullopt;
    json patch = json::object();
    std::string note;
    if (reading.state == workspace::AutoscalingState::kEnabled) {
      const bool ours = claim == kReplicasManager;
      if (!claim || *claim == "false") {
        patch["metadata"]["annotations"][key] = kReplicasManager;
      } else if (!ours) {
        // Another manager owns the count: never overwritten, never fought.
        return absl::OkStatus();
      }
      const json* desired = kube::fieldAt(pass.owner, "spec.replicas");
      if (status_.replicas && (desired == nullptr || !desired->is_number_integer() ||
                               desired->get<std::int64_t>() != *status_.replicas)) {
        patch["spec"]["replicas"] = *status_.replicas;
        note = (desired != nullptr && desired->is_number_integer()
                    ? std::to_string(desired->get<std::int64_t>())
                    : std::string("unset")) +
               " → " + std::to_string(*status_.replicas);
      }
    } else if (claim == kReplicasManager) {
      patch["metadata"]["annotations"][key] = nullptr;
    }
    if (patch.empty()) {
      return absl::OkStatus();
    }
    // Guarded: a claim or a count decided on a cached MachinePool that
    // another manager has claimed since must not overwrite its claim.
    const kube::ObjectKey pool{pass.id.ns, kube::meta::name(pass.owner)};
    auto written = guardedPatch(kind_.deps().api, kinds::kMachinePool, pass.owner, patch);
    if (!written.ok()) {
      return kube::ignoreNotFound(written.status());
    }
    pass.owner = *std::move(written);
    if (!note.empty()) {
      pass.event(kube::EventType::kNormal, "ReplicasWrittenBack",
                 "MachinePool " + pool.name + " spec.replicas " + note);
    }
    return absl::OkStatus();
  }
};

class TerraformMachinePoolKind final : public MemberKind {
public:
  explicit TerraformMachinePoolKind(ReconcilerDeps deps)
      : MemberKind(deps, OwnerTraits{&kinds::kMachinePool, api::kKindTerraformMachinePool,
                                     "spec.template.spec.infrastructureRef",
                                     cond::kReasonWaitingForOwnerMachinePool,
                                     &workspace::machinePoolBootstrapSecretName}) {}

  const kube::GroupVersionKind& gvk() const override { return kinds::kTerraformMachinePool; }
  contract::Role role() const override { return contract::Role::kMachinePool; }
  const workspace::KindTraits& traits() const override { return kPoolTraits; }
  std::string_view finalizer() const override { return api::kFinalizerTerraformMachinePool; }
  std::string_view resource() const override { return "terraformmachinepool"; }

  absl::StatusOr<std::unique_ptr<KindPass>> begin(const json& object) const override {
    return beginPass<TerraformMachinePoolPass>(object, *this);
  }
};

} // namespace

std::unique_ptr<WorkloadKind> terraformMachinePoolKind(ReconcilerDeps deps) {
  return std::make_unique<TerraformMachinePoolKind>(deps);
}

} // namespace captf::controllers
