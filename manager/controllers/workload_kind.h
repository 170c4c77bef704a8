#pragma once

// The seam between the one reconcile pass of docs/decisions/manager-reconcile-pass.md
// (WorkloadReconciler, workload_reconciler.h) and the three kinds it runs
// for: a WorkloadPass is one reconcile's working set, a WorkloadKind what a
// kind adds to the pass (its owner and back-reference checks, its inputs,
// its outputs, its dependents on deletion, its side of the cluster operation
// gate, its status fields). The pass itself never names a kind.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "contract/roles.h"
#include "manager/api/codec.h"
#include "manager/api/workspace.h"
#include "manager/controllers/identity.h"
#include "manager/controllers/metrics.h"
#include "manager/controllers/options.h"
#include "manager/controllers/ref_watcher.h"
#include "manager/controllers/workload.h"
#include "manager/kube/cache.h"
#include "manager/kube/client.h"
#include "manager/kube/clock.h"
#include "manager/kube/controller.h"
#include "manager/kube/events.h"
#include "manager/lifecycle/decision.h"
#include "manager/lifecycle/defaults.h"
#include "manager/lifecycle/job_builder.h"
#include "manager/lifecycle/leases.h"
#include "manager/lifecycle/names.h"
#include "manager/reports/run_reports.h"
#include "manager/workspace/inputs.h"
#include "manager/workspace/kind_traits.h"
#include "manager/workspace/locks.h"
#include "manager/workspace/names.h"
#include "manager/workspace/outputs.h"
#include "manager/workspace/secrets.h"
#include "manager/workspace/state.h"

namespace captf::controllers {

struct ReconcilerDeps {
  kube::Cache& cache;   // the informer cache and its indexes
  kube::Client& cached; // cache reads, API writes
  kube::Client& api;    // straight to the API server
  kube::EventRecorder& events;
  kube::Clock& clock;
  CaptfMetrics& metrics;
  const ControllerSettings& settings;
  // Resolves Git sources' refs; null in tests without Git sources.
  RefWatcher* refs = nullptr;
  // The run reports' log tails; null when reports are off.
  reports::RunReports* reports = nullptr;
};

// The main container of every run Job.
inline constexpr char kSourceContainer[] = "source";

// The kind's own object, decoded once at the top of the pass, with the
// status the pass builds and the status as read.
class TypedObject {
public:
  virtual ~TypedObject() = default;
  virtual api::ObjectMeta& meta() = 0;
  virtual const api::WorkspaceSpec& spec() const = 0;
  virtual api::WorkspaceStatus& status() = 0;
  virtual const api::WorkspaceStatus& original() const = 0;
  // The status subresource as the API serves it: what the status patch
  // diffs (original against current).
  virtual nlohmann::json statusJson() const = 0;
  virtual nlohmann::json originalJson() const = 0;
};

// TypedObject of an API type T (api::TerraformCluster, ...).
template <class T> class TypedObjectOf : public TypedObject {
public:
  using Object = T;
  using Status = typename decltype(T::status)::value_type;
  explicit TypedObjectOf(T decoded)
      : object(std::move(decoded)), status_(object.status.value_or(Status{})), original_(status_) {}

  api::ObjectMeta& meta() override { return object.metadata; }
  const api::WorkspaceSpec& spec() const override { return object.spec; }
  api::WorkspaceStatus& status() override { return status_; }
  const api::WorkspaceStatus& original() const override { return original_; }
  nlohmann::json statusJson() const override { return api::toJson(status_); }
  nlohmann::json originalJson() const override { return api::toJson(original_); }

  T object;       // as read (its status is original_)
  Status status_; // what this pass writes
  Status original_;
};

// Decodes `object` into Typed (a TypedObjectOf<T> or a class derived from
// one); an error names the field that does not decode.
template <class Typed>
absl::StatusOr<std::unique_ptr<TypedObject>> decodeAs(const nlohmann::json& object) {
  auto decoded = api::fromJson<typename Typed::Object>(object);
  if (!decoded.ok()) {
    return decoded.status();
  }
  return std::make_unique<Typed>(*std::move(decoded));
}

// One reconcile's working set.
struct WorkloadPass {
  WorkloadPass(kube::Writer& api, kube::EventRecorder& recorder)
      : patcher(api, object), events(&recorder) {}
  WorkloadPass(const WorkloadPass&) = delete;
  WorkloadPass& operator=(const WorkloadPass&) = delete;

  nlohmann::json object; // as read, at the version of the pass's last own write
  ObjectPatcher patcher; // every write to `object` (workload.h)
  std::unique_ptr<TypedObject> typed;
  // Into `typed`.
  api::ObjectMeta* meta = nullptr;
  const api::WorkspaceSpec* spec = nullptr;
  api::WorkspaceStatus* status = nullptr;
  const api::WorkspaceStatus* original = nullptr;
  kube::EventRecorder* events = nullptr;
  kube::WallTime wall;
  api::Time now;
  std::int64_t generation = 0;
  bool deleting = false;
  // cluster.x-k8s.io/paused on the object, or the owning Cluster's spec.paused.
  bool paused = false;
  // The reconcile's logger (kube::ReconcileContext::log) with the owners
  // WorkloadKind::reconcileOwner resolved: "Cluster", and "Machine" or
  // "MachinePool" for the kinds they own.
  kube::Logger log;

  // Owner (WorkloadKind::reconcileOwner): the Cluster's name, the owner
  // (Cluster, Machine, MachinePool; null when none / gone), the Cluster.
  std::string cluster_name;
  nlohmann::json owner;
  nlohmann::json cluster;
  bool owner_ok = false;

  lifecycle::ObjectIdentity id;
  workspace::ObjectRef ref;
  std::string suffix;

  // Credentials and the effective settings.
  IdentityResult identity;
  ConditionResult rbac;
  lifecycle::EffectiveJobPolicy policy;
  lifecycle::EffectiveSchedule schedule;

  // Jobs.
  std::vector<RunJob> jobs;
  std::vector<std::string> bookkept; // mark after the status patch
  const RunJob* active = nullptr;

  // State and inputs.
  workspace::ReadState state;
  workspace::StateVerdict verdict = workspace::StateVerdict::kNotFound;
  workspace::LockDecision lock;
  std::optional<workspace::DurableInputs> durable;
  std::optional<workspace::RenderedInputs> rendered;
  bool inputs_too_large = false;
  bool inputs_blocked = false; // a dependency keeps inputs from building
  // The source this pass renders and runs: spec.source.image as written, or
  // for a Git source contract::gitSourceIdentity and the commit (the
  // resolved one, or the pinned one of an immutable kind's first apply).
  std::string source_identity;
  std::optional<lifecycle::GitFetch> git;
  // The Git source as the spec names it, without a commit (set whenever the
  // URL parses): a Job of the durable root fetches it at the durable commit.
  std::optional<lifecycle::GitFetch> git_spec;
  bool provisioned = false;
  // A run bookkept this pass that read the instance's health (a succeeded
  // apply, refresh or drift): one health sample, with when it finished.
  std::optional<api::Operation> health_sample;
  std::optional<api::Time> health_sample_finished;

  lifecycle::Decision decision;
  kube::Result result;
  absl::Status error; // returned after the status patch
  // The API server's status of the object is newer than the cached one
  // the pass decided on (runJob checks before creating a Job).
  bool stale = false;

  // Counter increments and histogram observations, made after the status
  // patch (failure counters count transitions, and a transition counts
  // when its status lands).
  std::vector<std::pair<kube::Counter*, double>> counts;
  std::vector<std::pair<kube::Histogram*, double>> observations;

  // Sets a condition of the pass's status; true on a transition (status
  // or reason changed, or new).
  bool set(std::string_view type, api::ConditionStatus status, std::string_view reason,
           const std::string& message);
  bool set(std::string_view type, const ConditionResult& condition);
  void count(kube::Counter& counter, double delta = 1) { counts.emplace_back(&counter, delta); }
  void observe(kube::Histogram& histogram, double value) {
    observations.emplace_back(&histogram, value);
  }
  void event(kube::EventType type, std::string_view reason, const std::string& note) const;
  // The reason of condition `type` in the status as read ("" when none).
  std::string originalReason(std::string_view type) const;
  // The reason of condition `type` in the status being built.
  std::string currentReason(std::string_view type) const;
  // The provisioned latch (status.initialization.provisioned).
  bool latched() const;
  // The run Jobs' records.
  std::vector<lifecycle::JobRecord> records() const;
};

// What every kind's outputs report: OutputsValid of `verdict` (a transition
// to False counts captf_outputs_invalid_total and records OutputsInvalid);
// true when the outputs are usable.
bool reportOutputs(WorkloadPass& pass, CaptfMetrics& metrics, workspace::OutputsVerdict verdict,
                   const std::string& message);
// InfrastructureHealthy of a reading, with InstanceHealthy / InstanceUnhealthy
// on a transition.
void reportHealth(WorkloadPass& pass, const workspace::HealthCondition& health);
// status.pendingRefreshes of a health sample bookkept this pass (none: left
// as it is): one more when it reads `pending`, cleared by any other reading
// (docs/behaviour/drift-and-health.md, "Unhealthy samples"). Provisioned or not: a
// machine whose instance is still pending is not provisioned yet.
void countPendingSample(WorkloadPass& pass, const std::optional<workspace::Health>& health);

// What a kind adds to the pass. One instance serves every pass of its
// controller, from several threads: implementations keep no per-pass
// state outside the WorkloadPass (its TypedObject is the kind's own).
class WorkloadKind {
public:
  virtual ~WorkloadKind() = default;

  virtual const kube::GroupVersionKind& gvk() const = 0;
  virtual contract::Role role() const = 0;
  // What the kind's lifecycle does differently, as data the pass hands to lifecycle and
  // workspace (manager/workspace/kind_traits.h); the pass never tests the role for it.
  virtual const workspace::KindTraits& traits() const = 0;
  virtual std::string_view finalizer() const = 0;
  // The kubectl resource ("terraformcluster"), for commands in messages.
  virtual std::string_view resource() const = 0;

  // Decodes the object (an error is terminal: the object is malformed).
  virtual absl::StatusOr<std::unique_ptr<TypedObject>>
  decode(const nlohmann::json& object) const = 0;

  // The owner and its back-references (docs/decisions/manager-reconcile-pass.md
  // "Owners"): fills cluster_name, owner, cluster and owner_ok, and
  // DependenciesReady when the owner is missing or mismatched. An error is
  // a read that failed.
  virtual absl::Status reconcileOwner(WorkloadPass& pass) = 0;

  // Inheritance (docs/reference/api.md, `spec.defaults`): the jobs policy the object
  // inherits (nullopt: none), the identity it resolves, its schedule.
  virtual std::optional<api::JobPolicy> inheritedJobs(const WorkloadPass& pass) const = 0;
  virtual std::string identityName(const WorkloadPass& pass) const = 0;
  virtual lifecycle::EffectiveSchedule schedule(const WorkloadPass& pass,
                                                std::chrono::seconds default_interval) const = 0;

  // Inputs. A kind with traits().immutable_inputs (TerraformMachine) builds
  // its inputs only until it is provisioned and then runs every later
  // operation from the durable inputs Secret and the pinned image digest.
  // The dependency gates before rendering, in their order: false when one
  // holds (it set its condition and requeue). Runs before variablesFrom.
  virtual absl::StatusOr<bool> inputsReady(WorkloadPass& pass) {
    (void)pass;
    return true;
  }
  // The role's contract inputs (contract::toInputsJson of its struct).
  virtual absl::StatusOr<nlohmann::json> roleInputs(WorkloadPass& pass) = 0;
  // After a successful render.
  virtual absl::Status afterInputs(WorkloadPass& pass) {
    (void)pass;
    return absl::OkStatus();
  }

  // Outputs of readable state: OutputsValid, the provisioned latch
  // (pass.provisioned), InfrastructureHealthy and the kind's status fields
  // and write-backs.
  virtual absl::Status reconcileOutputs(WorkloadPass& pass) = 0;

  // Deleting: whether dependents still exist (the kind set
  // DeletionBlocked=True and the requeue).
  virtual absl::StatusOr<bool> deletionBlocked(WorkloadPass& pass) {
    (void)pass;
    return false;
  }

  // The kind's part of the decision input (apply policy, approvals, pool
  // membership).
  virtual void decisionInput(const WorkloadPass& pass, lifecycle::DecisionInput& in) const {
    (void)pass;
    (void)in;
  }

  // The kind's side of the cluster operation gate, after the object's run
  // Lease is held (`lease` is that request). The pass sets the result's
  // traits.
  virtual absl::StatusOr<lifecycle::GateInput> gateInput(WorkloadPass& pass,
                                                         const lifecycle::LeaseRequest& lease) = 0;
  // status.plan when the kind has it (traits().plan_approval), else nullptr.
  virtual std::optional<api::PlanPreview>* plan(WorkloadPass& pass) const {
    (void)pass;
    return nullptr;
  }

  // Status fields of the kind's own before the status patch (status.ready).
  virtual void summarize(WorkloadPass& pass) const { (void)pass; }
};

} // namespace captf::controllers
