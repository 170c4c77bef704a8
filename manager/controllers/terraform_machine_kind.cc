#include "manager/controllers/terraform_machine_kind.h"

#include <string>

#include "contract/status_macros.h"
#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_machine.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/member_kind.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/ready.h"
#include "manager/workspace/outputs.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

using kube::str;

// docs/decisions/manager-reconcile-pass.md ("Machine inputs are immutable") and
// docs/behaviour/drift-and-health.md#scheduling (the post-apply refresh).
constexpr workspace::KindTraits kMachineTraits{.immutable_inputs = true,
                                               .post_apply_refresh = true};

// One pass of a TerraformMachine.
class TerraformMachinePass final : public MemberPass<api::TerraformMachine> {
public:
  using MemberPass::MemberPass;

  absl::StatusOr<json> roleInputs(WorkloadPass& pass) override {
    pass.set(cond::kDependenciesReady, ConditionStatus::kTrue, cond::kReasonDependenciesReady, "");
    return contract::toInputsJson(workspace::machineInputs(object_, pass.cluster_name, pass.owner,
                                                           member_.bootstrap, member_.exports));
  }

  // Outputs, the provisioned latch, spec.providerID, addresses, failure
  // domain, interruptible.
  absl::Status reconcileOutputs(WorkloadPass& pass) override {
    const bool latched = pass.latched();
    std::optional<std::string> input_failure_domain;
    if (const json* fd = kube::fieldAt(pass.owner, "spec.failureDomain");
        fd != nullptr && fd->is_string() && !fd->get<std::string>().empty()) {
      input_failure_domain = fd->get<std::string>();
    } else if (pass.durable) {
      const json& v = pass.durable->tfvars.value("failure_domain", json());
      if (v.is_string()) {
        input_failure_domain = v.get<std::string>();
      }
    }
    const workspace::MachineOutputs outputs = workspace::decodeMachineOutputs(
        pass.state.summary.outputs, input_failure_domain, object_.spec.provider_id, latched);
    const bool usable = reportOutputs(pass, kind_.deps().metrics, outputs.verdict, outputs.message);
    if (!latched && workspace::machineProvisioned(!pass.state.inputs_hash.empty(), outputs)) {
      pass.provisioned = true;
      pass.status->initialization = api::Initialization{true};
      pass.event(kube::EventType::kNormal, "Provisioned",
                 "machine provisioned as " + outputs.provider_id.value_or(""));
    }
    if (usable && outputs.provider_id && !object_.spec.provider_id) {
      // Latched once: a later different ID is ProviderIDChanged, never
      // written.
      if (absl::Status s = pass.patcher.patch({{"spec", {{"providerID", *outputs.provider_id}}}});
          !s.ok()) {
        return s;
      }
      object_.spec.provider_id = outputs.provider_id;
      pass.event(kube::EventType::kNormal, "ProviderIDSet",
                 "spec.providerID set to " + *outputs.provider_id);
    }
    if (usable) {
      status_.addresses = outputs.addresses;
      status_.failure_domain = outputs.failure_domain;
      status_.interruptible = outputs.interruptible;
    }
    countPendingSample(pass, outputs.health);
    if (pass.provisioned) {
      const workspace::HealthCondition health = workspace::machineHealthCondition(outputs, true);
      reportHealth(pass, health);
      sample(pass, outputs, health);
      return reconcileRemediation(pass, health);
    }
    if (!latched) {
      pass.set(cond::kInfrastructureHealthy, ConditionStatus::kFalse, cond::kReasonProvisioning,
               "waiting for the outputs of a successful apply");
    }
    return absl::OkStatus();
  }

  // The v1beta1 contract's status.ready mirrors the latch.
  void summarize(WorkloadPass& pass) override { status_.ready = pass.latched(); }

private:
  // One health sample per bookkept reading: Healthy resets the count,
  // unhealthy, degraded and stopped add one, pending, unknown and
  // terminated leave it. An apply whose own reading is definite stands in
  // for its post-apply refresh (lastRefresh = its finish).
  void sample(WorkloadPass& pass, const workspace::MachineOutputs& outputs,
              const workspace::HealthCondition& health) {
    if (pass.health_sample) {
      if (health.reason == cond::kReasonHealthy) {
        status_.unhealthy_samples.reset();
      } else if (health.reason == cond::kReasonInstanceUnhealthy ||
                 health.reason == cond::kReasonInstanceDegraded ||
                 health.reason == cond::kReasonInstanceStopped) {
        status_.unhealthy_samples = status_.unhealthy_samples.value_or(0) + 1;
      }
      const bool definite = outputs.health && outputs.health->state != api::HealthState::kPending &&
                            outputs.health->state != api::HealthState::kUnknown;
      if (*pass.health_sample == api::Operation::kApply && definite &&
          workspace::outputsUsable(outputs.verdict) && pass.health_sample_finished) {
        pass.status->last_refresh = pass.health_sample_finished;
      }
    }
    kind_.deps()
        .metrics.unhealthy_samples.withLabels({pass.id.ns, pass.id.name})
        .set(static_cast<double>(status_.unhealthy_samples.value_or(0)));
  }

  // With spec.remediation.annotateMachine, keeps cluster.x-k8s.io/remediate-machine
  // on the Machine in step with health (a MachineHealthCheck then replaces
  // it); only a request of our own (captf.io/remediation-requested) is
  // withdrawn.
  absl::Status reconcileRemediation(WorkloadPass& pass, const workspace::HealthCondition& health) {
    if (!pass.schedule.annotate_machine || !pass.owner.is_object()) {
      return absl::OkStatus();
    }
    const std::int32_t samples = status_.unhealthy_samples.value_or(0);
    std::string why;
    if (samples >= pass.schedule.unhealthy_threshold) {
      why = health.reason + " for " + std::to_string(samples) + " consecutive samples";
    } else if (pass.health_sample && health.reason == cond::kReasonInstanceTerminated) {
      why = "the instance is terminated";
    }
    const kube::ObjectKey machine{pass.id.ns, kube::meta::name(pass.owner)};
    // Both writes are guarded by the version of the Machine they were
    // decided on: a request or a withdrawal decided on a copy older than a
    // user's own remediate-machine must not remove it. On a Conflict the
    // decision is made again, once, on the API server's copy, so that a
    // reason seen on one sample only (a terminated instance) is not lost.
    json owner = pass.owner;
    for (int attempt = 0;; ++attempt) {
      const bool requested =
          kube::meta::annotations(owner).contains(str(api::kAnnotationRemediationRequested));
      const bool request = !why.empty() && !requested;
      if (!request && !(requested && health.reason == cond::kReasonHealthy &&
                        !kube::fieldAt(owner, "metadata.deletionTimestamp"))) {
        return absl::OkStatus();
      }
      // A request gets the Machine replaced: it is decided only on the API
      // server's copy of this object. A copy the cache has not yet moved past
      // the pass that withdrew the request still counts the unhealthy samples
      // a healthy one reset, and would request again.
      if (request && attempt == 0) {
        CAPTF_ASSIGN_OR_RETURN(const bool current,
                               isServersCopy(kind_.deps().api, kind_.gvk(), pass.object));
        if (!current) {
          pass.stale = true;
          return absl::OkStatus();
        }
      }
      const json patch = {
          {"metadata",
           {{"annotations",
             {{str(api::kAnnotationRemediateMachine), request ? json("") : json(nullptr)},
              {str(api::kAnnotationRemediationRequested), request ? json(why) : json(nullptr)}}}}}};
      auto written = guardedPatch(kind_.deps().api, kinds::kMachine, owner, patch);
      if (kube::isConflict(written.status()) && attempt == 0) {
        auto live = kind_.deps().api.get(kinds::kMachine, machine);
        if (!live.ok()) {
          return kube::ignoreNotFound(live.status());
        }
        owner = *std::move(live);
        continue;
      }
      if (!written.ok()) {
        return kube::ignoreNotFound(written.status());
      }
      if (request) {
        pass.count(kind_.deps().metrics.remediation_requests_total.withLabels({"requested"}));
        pass.event(kube::EventType::kWarning, "RemediationRequested",
                   "Machine " + machine.name + " marked for remediation: " + why);
      } else {
        pass.count(kind_.deps().metrics.remediation_requests_total.withLabels({"withdrawn"}));
        pass.event(kube::EventType::kNormal, "RemediationWithdrawn",
                   "Machine " + machine.name + " is healthy again");
      }
      return absl::OkStatus();
    }
  }
};

class TerraformMachineKind final : public MemberKind {
public:
  explicit TerraformMachineKind(ReconcilerDeps deps)
      : MemberKind(deps, OwnerTraits{&kinds::kMachine, api::kKindTerraformMachine,
                                     "spec.infrastructureRef", cond::kReasonWaitingForOwnerMachine,
                                     &workspace::machineBootstrapSecretName}) {}

  const kube::GroupVersionKind& gvk() const override { return kinds::kTerraformMachine; }
  contract::Role role() const override { return contract::Role::kMachine; }
  const workspace::KindTraits& traits() const override { return kMachineTraits; }
  std::string_view finalizer() const override { return api::kFinalizerTerraformMachine; }
  std::string_view resource() const override { return "terraformmachine"; }

  absl::StatusOr<std::unique_ptr<KindPass>> begin(const json& object) const override {
    return beginPass<TerraformMachinePass>(object, *this);
  }
};

} // namespace

std::unique_ptr<WorkloadKind> terraformMachineKind(ReconcilerDeps deps) {
  return std::make_unique<TerraformMachineKind>(deps);
}

} // namespace captf::controllers
