#pragma once

// The seam between the one reconcile pass of docs/decisions/manager-reconcile-pass.md
// (WorkloadReconciler, workload_reconciler.h) and the three kinds it runs
// for: a WorkloadPass is one reconcile's working set, a WorkloadKind what
// is fixed for a kind (its GroupVersionKind, role, traits, finalizer), and
// a KindPass, which the kind begins for each pass, what the kind adds to
// that pass (its typed object, its owner and back-reference checks, its
// inputs, its outputs, its dependents on deletion, its side of the cluster
// operation gate, its status fields). The pass itself never names a kind.

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

struct WorkloadPass;

// The kind inside one reconcile (docs/decisions/manager-reconcile-pass.md
// "Kinds"): made by WorkloadKind::begin from the object as read, it owns the
// kind's typed object, the status the pass builds and the status as read,
// and whatever else the kind finds during the pass (a member's owner
// lookup and gates). It implements the kind's hooks of the pass. A KindPass
// belongs to its one pass (one thread); it may read its kind's shared,
// immutable parts (deps, owner traits) through a reference given at begin,
// which outlives the pass.
class KindPass {
public:
  KindPass() = default;
  KindPass(const KindPass&) = delete;
  KindPass& operator=(const KindPass&) = delete;
  KindPass(KindPass&&) = delete;
  KindPass& operator=(KindPass&&) = delete;
  virtual ~KindPass() = default;

  // The typed object's shared parts: the pass reads and writes them through
  // the WorkspaceSpec / WorkspaceStatus bases.
  virtual api::ObjectMeta& meta() = 0;
  virtual const api::WorkspaceSpec& spec() const = 0;
  virtual api::WorkspaceStatus& status() = 0;
  virtual const api::WorkspaceStatus& original() const = 0;
  // The status subresource as the API serves it: what the status patch
  // diffs (original against current).
  virtual nlohmann::json statusJson() const = 0;
  virtual nlohmann::json originalJson() const = 0;

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
  virtual std::optional<api::PlanPreview>* plan(WorkloadPass& pass) {
    (void)pass;
    return nullptr;
  }

  // Status fields of the kind's own before the status patch (status.ready).
  virtual void summarize(WorkloadPass& pass) { (void)pass; }
};

// The typed part of a KindPass over an API type T (api::TerraformCluster,
// ...): the object as read, the status this pass writes and the status as
// read. A kind's pass derives from it and reads its own fields directly.
template <class T> class KindPassOf : public KindPass {
public:
  using Object = T;
  using Status = typename decltype(T::status)::value_type;
  explicit KindPassOf(T decoded)
      : object_(std::move(decoded)), status_(object_.status.value_or(Status{})),
        original_(status_) {}

  api::ObjectMeta& meta() final { return object_.metadata; }
  const api::WorkspaceSpec& spec() const final { return object_.spec; }
  api::WorkspaceStatus& status() final { return status_; }
  const api::WorkspaceStatus& original() const final { return original_; }
  nlohmann::json statusJson() const final { return api::toJson(status_); }
  nlohmann::json originalJson() const final { return api::toJson(original_); }

protected:
  T object_;      // as read (its status is original_)
  Status status_; // what this pass writes
  Status original_;
};

// Decodes `object` as Pass::Object and makes the kind's pass of it,
// Pass(decoded, args...); an error names the field that does not decode.
template <class Pass, class... Args>
absl::StatusOr<std::unique_ptr<KindPass>> beginPass(const nlohmann::json& object, Args&&... args) {
  auto decoded = api::fromJson<typename Pass::Object>(object);
  if (!decoded.ok()) {
    return decoded.status();
  }
  return std::make_unique<Pass>(*std::move(decoded), std::forward<Args>(args)...);
}

// One reconcile's working set.
struct WorkloadPass {
  WorkloadPass(kube::Writer& api, kube::EventRecorder& recorder)
      : patcher(api, object), events(&recorder) {}
  WorkloadPass(const WorkloadPass&) = delete;
  WorkloadPass& operator=(const WorkloadPass&) = delete;

  nlohmann::json object; // as read, at the version of the pass's last own write
  ObjectPatcher patcher; // every write to `object` (workload.h)
  // The kind inside this pass (WorkloadKind::begin): the typed object.
  std::unique_ptr<KindPass> kind;
  // Into `kind`'s typed object.
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
  // KindPass::reconcileOwner resolved: "Cluster", and "Machine" or
  // "MachinePool" for the kinds they own.
  kube::Logger log;

  // Owner (KindPass::reconcileOwner): the Cluster's name, the owner
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

// A kind: what is fixed for all its objects. One instance serves every pass
// of its controller, from several threads: it holds only what is set when
// the controller is built and never written after (deps, traits); what a
// pass finds is its KindPass's, made by begin and owned by that one pass.
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

  // Decodes the object into the kind's pass (an error is terminal: the
  // object is malformed). The pass may keep a reference to this kind.
  virtual absl::StatusOr<std::unique_ptr<KindPass>> begin(const nlohmann::json& object) const = 0;
};

} // namespace captf::controllers
