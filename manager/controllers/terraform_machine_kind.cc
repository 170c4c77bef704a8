#include "manager/controllers/terraform_machine_kind.h"

#include <string>

#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_machine.h"
#include "manager/controllers/kinds.h"
#include "manager/kube/errors.h"
#include "manager/lifecycle/ready.h"
#include "manager/workspace/outputs.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

// While a dependency gate holds, how often it is looked at again (the
// Machine, the Cluster and the TerraformCluster also wake the object; the
// bootstrap Secret, not cached, does not).
constexpr std::chrono::seconds kGateRecheck{10};

std::string str(std::string_view s) {
  return std::string(s);
}

bool isMachineOwner(const api::OwnerReference& ref) {
  const auto gvk = kube::GroupVersionKind::fromApiVersion(ref.api_version, ref.kind);
  return gvk.group == api::kClusterApiGroup && ref.kind == "Machine";
}

// The pass's typed object with what the owner lookup and the gates found.
class MachineObject final : public TypedObjectOf<api::TerraformMachine> {
public:
  using TypedObjectOf::TypedObjectOf;
  // The TerraformCluster the Cluster's infrastructureRef names (nullopt
  // when the Cluster is not Terraform's or it is not found).
  std::optional<api::TerraformCluster> terraform_cluster;
  contract::BootstrapData bootstrap;
  json exports = json::object();
};

MachineObject& typed(WorkloadPass& pass) {
  return static_cast<MachineObject&>(*pass.typed);
}
const MachineObject& typed(const WorkloadPass& pass) {
  return static_cast<const MachineObject&>(*pass.typed);
}

// Cluster.spec.infrastructureRef, when it names a TerraformCluster: its name.
std::optional<std::string> terraformClusterOf(const json& cluster) {
  const json* ref = kube::fieldAt(cluster, "spec.infrastructureRef");
  if (ref == nullptr || !ref->is_object() || ref->value("kind", "") != api::kKindTerraformCluster) {
    return std::nullopt;
  }
  std::string group = ref->value("apiGroup", "");
  if (group.empty()) {
    group = kube::GroupVersionKind::fromApiVersion(ref->value("apiVersion", ""), "").group;
  }
  if (group != api::kGroup) {
    return std::nullopt;
  }
  return ref->value("name", "");
}

class TerraformMachineKind final : public WorkloadKind {
public:
  explicit TerraformMachineKind(ReconcilerDeps deps) : deps_(deps) {}

  const kube::GroupVersionKind& gvk() const override { return kinds::kTerraformMachine; }
  contract::Role role() const override { return contract::Role::kMachine; }
  std::string_view finalizer() const override { return api::kFinalizerTerraformMachine; }
  std::string_view resource() const override { return "terraformmachine"; }
  bool immutableInputs() const override { return true; }

  absl::StatusOr<std::unique_ptr<TypedObject>> decode(const json& object) const override {
    return decodeAs<MachineObject>(object);
  }

  // The owning Machine and its three back-references; the Cluster by the
  // object's own cluster-name label; the TerraformCluster it names.
  absl::Status reconcileOwner(WorkloadPass& pass) override {
    MachineObject& t = typed(pass);
    const api::OwnerReference* owner = nullptr;
    for (const api::OwnerReference& ref : t.object.metadata.owner_references) {
      if (isMachineOwner(ref)) {
        owner = &ref;
        break;
      }
    }
    const auto label = t.object.metadata.labels.find(str(api::kLabelClusterName));
    const std::string cluster_label =
        label == t.object.metadata.labels.end() ? std::string() : label->second;
    if (owner == nullptr || cluster_label.empty()) {
      pass.set(cond::kDependenciesReady, ConditionStatus::kUnknown,
               cond::kReasonWaitingForOwnerMachine,
               owner == nullptr ? "waiting for a Machine to own this TerraformMachine"
                                : "waiting for the cluster.x-k8s.io/cluster-name label");
      // With the label but no owner (gone, or never there) a deletion still
      // destroys from the durable inputs; without the label nothing runs.
      pass.cluster_name = cluster_label;
      return absl::OkStatus();
    }
    pass.cluster_name = cluster_label;
    auto machine = deps_.cached.get(kinds::kMachine, {pass.id.ns, owner->name});
    if (!machine.ok()) {
      if (!kube::isNotFound(machine.status())) {
        return machine.status();
      }
      pass.set(cond::kDependenciesReady, ConditionStatus::kFalse, cond::kReasonOwnerNotFound,
               "Machine " + owner->name + " does not exist");
    } else {
      pass.owner = *std::move(machine);
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
            t.terraform_cluster = *std::move(decoded);
          }
        }
      }
    }
    if (!pass.owner.is_object()) {
      return absl::OkStatus();
    }
    std::string mismatch;
    const json* ref = kube::fieldAt(pass.owner, "spec.infrastructureRef");
    std::string group = ref != nullptr && ref->is_object() ? ref->value("apiGroup", "") : "";
    if (group.empty() && ref != nullptr && ref->is_object()) {
      group = kube::GroupVersionKind::fromApiVersion(ref->value("apiVersion", ""), "").group;
    }
    if (ref == nullptr || !ref->is_object() || group != api::kGroup ||
        ref->value("kind", "") != api::kKindTerraformMachine ||
        ref->value("name", "") != pass.id.name) {
      mismatch = "Machine " + owner->name + " spec.infrastructureRef does not name this object";
    } else if (!owner->uid.empty() && owner->uid != kube::meta::uid(pass.owner)) {
      mismatch = "the ownerReference's uid is not Machine " + owner->name + "'s";
    } else if (const json* name = kube::fieldAt(pass.owner, "spec.clusterName");
               name == nullptr || !name->is_string() || name->get<std::string>() != cluster_label) {
      mismatch = "the cluster.x-k8s.io/cluster-name label " + cluster_label + " is not Machine " +
                 owner->name + "'s spec.clusterName";
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
    if (pass.latched()) {
      // A provisioned machine's inputs are never rebuilt: no gate applies.
      pass.set(cond::kDependenciesReady, ConditionStatus::kTrue, cond::kReasonDependenciesReady,
               "");
    }
    return absl::OkStatus();
  }

  std::optional<api::JobPolicy> inheritedJobs(const WorkloadPass& pass) const override {
    const MachineObject& t = typed(pass);
    if (!t.terraform_cluster || !t.terraform_cluster->spec.defaults) {
      return std::nullopt;
    }
    return t.terraform_cluster->spec.defaults->jobs;
  }
  std::string identityName(const WorkloadPass& pass) const override {
    const MachineObject& t = typed(pass);
    std::optional<api::TerraformClusterSpec> cluster;
    if (t.terraform_cluster) {
      cluster = t.terraform_cluster->spec;
    }
    std::string name = lifecycle::effectiveIdentityName(t.object.spec.identity_ref, cluster);
    if (name.empty() && pass.durable) {
      name = pass.durable->annotations.identity; // the cluster is gone: what the apply used
    }
    return name;
  }
  lifecycle::EffectiveSchedule schedule(const WorkloadPass& pass,
                                        std::chrono::seconds default_interval) const override {
    const MachineObject& t = typed(pass);
    std::optional<api::TerraformClusterDefaults> defaults;
    if (t.terraform_cluster) {
      defaults = t.terraform_cluster->spec.defaults;
    }
    return lifecycle::resolveSchedule(t.object.spec, defaults, default_interval);
  }

  // The dependency gates in their order: a Terraform cluster, its
  // infrastructure, its exports, the Machine's bootstrap data.
  absl::StatusOr<bool> inputsReady(WorkloadPass& pass) override {
    MachineObject& t = typed(pass);
    if (!terraformClusterOf(pass.cluster)) {
      gate(pass, ConditionStatus::kFalse, cond::kReasonClusterNotTerraform,
           "Cluster " + pass.cluster_name + " spec.infrastructureRef is not a TerraformCluster");
      return false;
    }
    const json* provisioned =
        kube::fieldAt(pass.cluster, "status.initialization.infrastructureProvisioned");
    if (!t.terraform_cluster || provisioned == nullptr || !provisioned->is_boolean() ||
        !provisioned->get<bool>()) {
      gate(pass, ConditionStatus::kUnknown, cond::kReasonWaitingForClusterInfrastructure,
           "waiting for the infrastructure of Cluster " + pass.cluster_name);
      return false;
    }
    auto exports = clusterExports(*t.terraform_cluster);
    if (!exports.ok()) {
      return exports.status();
    }
    if (!exports->has_value()) {
      gate(pass, ConditionStatus::kUnknown, cond::kReasonWaitingForClusterExports,
           "the exports of TerraformCluster " + t.terraform_cluster->metadata.name +
               " cannot be read yet");
      return false;
    }
    t.exports = **exports;
    const auto secret_name = workspace::machineBootstrapSecretName(pass.owner);
    if (!secret_name) {
      gate(pass, ConditionStatus::kUnknown, cond::kReasonWaitingForBootstrapData,
           "waiting for Machine " + kube::meta::name(pass.owner) +
               " spec.bootstrap.dataSecretName");
      return false;
    }
    // Bootstrap Secrets are not cached (only managed Secrets are): read
    // from the API server, never logged.
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
    t.bootstrap = *std::move(bootstrap);
    return true;
  }

  absl::StatusOr<json> roleInputs(WorkloadPass& pass) override {
    MachineObject& t = typed(pass);
    pass.set(cond::kDependenciesReady, ConditionStatus::kTrue, cond::kReasonDependenciesReady, "");
    return contract::toInputsJson(
        workspace::machineInputs(t.object, pass.cluster_name, pass.owner, t.bootstrap, t.exports));
  }

  // Outputs, the provisioned latch, spec.providerID, addresses, failure
  // domain, interruptible.
  absl::Status reconcileOutputs(WorkloadPass& pass) override {
    MachineObject& t = typed(pass);
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
        pass.state.summary.outputs, input_failure_domain, t.object.spec.provider_id, latched);
    const bool usable = reportOutputs(pass, deps_.metrics, outputs.verdict, outputs.message);
    if (!latched && workspace::machineProvisioned(!pass.state.inputs_hash.empty(), outputs)) {
      pass.provisioned = true;
      pass.status->initialization = api::Initialization{true};
      pass.event(kube::EventType::kNormal, "Provisioned",
                 "machine provisioned as " + outputs.provider_id.value_or(""));
    }
    if (usable && outputs.provider_id && !t.object.spec.provider_id) {
      // Latched once: a later different ID is ProviderIDChanged, never
      // written.
      if (absl::Status s = pass.patcher.patch({{"spec", {{"providerID", *outputs.provider_id}}}});
          !s.ok()) {
        return s;
      }
      t.object.spec.provider_id = outputs.provider_id;
      pass.event(kube::EventType::kNormal, "ProviderIDSet",
                 "spec.providerID set to " + *outputs.provider_id);
    }
    if (usable) {
      t.status_.addresses = outputs.addresses;
      t.status_.failure_domain = outputs.failure_domain;
      t.status_.interruptible = outputs.interruptible;
    }
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

  // A machine waits while the cluster write Lease is held by another Job.
  absl::StatusOr<lifecycle::GateInput> gateInput(WorkloadPass& pass,
                                                 const lifecycle::LeaseRequest& lease) override {
    auto judged = judgeLease(deps_.api, deps_.cached, pass.id.ns,
                             lifecycle::clusterLeaseName(pass.id.ns, pass.cluster_name), lease.job,
                             lease.now);
    if (!judged.ok()) {
      return judged.status();
    }
    lifecycle::GateInput gate_input;
    gate_input.role = contract::Role::kMachine;
    gate_input.cluster_lease_held_by_other = judged->verdict == lifecycle::LeaseVerdict::kWait;
    return gate_input;
  }

  // The v1beta1 contract's status.ready mirrors the latch.
  void summarize(WorkloadPass& pass) const override { typed(pass).status_.ready = pass.latched(); }

private:
  // One health sample per bookkept reading: Healthy resets the count,
  // unhealthy, degraded and stopped add one, pending, unknown and
  // terminated leave it. An apply whose own reading is definite stands in
  // for its post-apply refresh (lastRefresh = its finish).
  void sample(WorkloadPass& pass, const workspace::MachineOutputs& outputs,
              const workspace::HealthCondition& health) const {
    MachineObject& t = typed(pass);
    if (pass.health_sample) {
      if (health.reason == cond::kReasonHealthy) {
        t.status_.unhealthy_samples.reset();
      } else if (health.reason == cond::kReasonInstanceUnhealthy ||
                 health.reason == cond::kReasonInstanceDegraded ||
                 health.reason == cond::kReasonInstanceStopped) {
        t.status_.unhealthy_samples = t.status_.unhealthy_samples.value_or(0) + 1;
      }
      const bool definite = outputs.health && outputs.health->state != api::HealthState::kPending &&
                            outputs.health->state != api::HealthState::kUnknown;
      if (*pass.health_sample == api::Operation::kApply && definite &&
          workspace::outputsUsable(outputs.verdict) && pass.health_sample_finished) {
        pass.status->last_refresh = pass.health_sample_finished;
      }
    }
    deps_.metrics.unhealthy_samples.withLabels({pass.id.ns, pass.id.name})
        .set(static_cast<double>(t.status_.unhealthy_samples.value_or(0)));
  }

  // With spec.remediation.annotateMachine, keeps cluster.x-k8s.io/remediate-machine
  // on the Machine in step with health (a MachineHealthCheck then replaces
  // it); only a request of our own (captf.io/remediation-requested) is
  // withdrawn.
  absl::Status reconcileRemediation(WorkloadPass& pass,
                                    const workspace::HealthCondition& health) const {
    const MachineObject& t = typed(pass);
    if (!pass.schedule.annotate_machine || !pass.owner.is_object()) {
      return absl::OkStatus();
    }
    const json annotations = kube::meta::annotations(pass.owner);
    const bool requested = annotations.contains(str(api::kAnnotationRemediationRequested));
    const std::int32_t samples = t.status_.unhealthy_samples.value_or(0);
    std::string why;
    if (samples >= pass.schedule.unhealthy_threshold) {
      why = health.reason + " for " + std::to_string(samples) + " consecutive samples";
    } else if (pass.health_sample && health.reason == cond::kReasonInstanceTerminated) {
      why = "the instance is terminated";
    }
    const kube::ObjectKey machine{pass.id.ns, kube::meta::name(pass.owner)};
    if (!why.empty() && !requested) {
      json patch = {{"metadata",
                     {{"annotations",
                       {{str(api::kAnnotationRemediateMachine), ""},
                        {str(api::kAnnotationRemediationRequested), why}}}}}};
      auto written = deps_.api.patch(kinds::kMachine, machine, kube::PatchType::kMerge, patch);
      if (!written.ok()) {
        return kube::isNotFound(written.status()) ? absl::OkStatus() : written.status();
      }
      pass.count(deps_.metrics.remediation_requests_total.withLabels({"requested"}));
      pass.event(kube::EventType::kWarning, "RemediationRequested",
                 "Machine " + machine.name + " marked for remediation: " + why);
    } else if (requested && health.reason == cond::kReasonHealthy &&
               !kube::fieldAt(pass.owner, "metadata.deletionTimestamp")) {
      json patch = {{"metadata",
                     {{"annotations",
                       {{str(api::kAnnotationRemediateMachine), nullptr},
                        {str(api::kAnnotationRemediationRequested), nullptr}}}}}};
      auto written = deps_.api.patch(kinds::kMachine, machine, kube::PatchType::kMerge, patch);
      if (!written.ok()) {
        return kube::isNotFound(written.status()) ? absl::OkStatus() : written.status();
      }
      pass.count(deps_.metrics.remediation_requests_total.withLabels({"withdrawn"}));
      pass.event(kube::EventType::kNormal, "RemediationWithdrawn",
                 "Machine " + machine.name + " is healthy again");
    }
    return absl::OkStatus();
  }

  // A dependency gate holds: DependenciesReady, an Event on the transition,
  // a recheck.
  static void gate(WorkloadPass& pass, ConditionStatus status, std::string_view reason,
                   const std::string& message) {
    if (pass.set(cond::kDependenciesReady, status, reason, message)) {
      pass.event(kube::EventType::kNormal, reason, message);
    }
    pass.result.requeue_after = kGateRecheck;
  }

  // The cluster's `exports` output (nullopt while its state cannot be
  // read or its outputs are not valid); {} for an externally managed one.
  absl::StatusOr<std::optional<json>> clusterExports(const api::TerraformCluster& tc) const {
    if (tc.metadata.annotations.contains(str(api::kAnnotationManagedBy))) {
      return std::optional<json>(json::object());
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
      return std::optional<json>();
    }
    const workspace::ClusterOutputs outputs =
        workspace::decodeClusterOutputs(state.summary.outputs);
    if (!workspace::outputsUsable(outputs.verdict)) {
      return std::optional<json>();
    }
    return std::optional<json>(outputs.exports);
  }

  ReconcilerDeps deps_;
};

} // namespace

std::unique_ptr<WorkloadKind> terraformMachineKind(ReconcilerDeps deps) {
  return std::make_unique<TerraformMachineKind>(deps);
}

} // namespace captf::controllers
