#pragma once

// Enumerations, shared structures and the workspace spec/status embedded in
// TerraformCluster, TerraformMachine and TerraformMachinePool
// (docs/reference/api.md).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manager/api/codec.h"
#include "manager/api/core_types.h"
#include "manager/api/enum_names.h"
#include "manager/api/time.h"

namespace captf::api {

// ---- enumerations (docs/reference/api.md) ----------------------------------------------------

enum class Operation { kApply, kDestroy, kDrift, kRefresh, kRestore, kPlan };
template <> struct EnumNames<Operation> {
  static constexpr std::array<std::pair<Operation, std::string_view>, 6> kValues{{
      {Operation::kApply, "apply"},
      {Operation::kDestroy, "destroy"},
      {Operation::kDrift, "drift"},
      {Operation::kRefresh, "refresh"},
      {Operation::kRestore, "restore"},
      {Operation::kPlan, "plan"},
  }};
};

enum class ApplyPolicy { kAutomatic, kManual };
template <> struct EnumNames<ApplyPolicy> {
  static constexpr std::array<std::pair<ApplyPolicy, std::string_view>, 2> kValues{{
      {ApplyPolicy::kAutomatic, "Automatic"},
      {ApplyPolicy::kManual, "Manual"},
  }};
};

enum class DriftAction { kReport, kRemediate };
template <> struct EnumNames<DriftAction> {
  static constexpr std::array<std::pair<DriftAction, std::string_view>, 2> kValues{{
      {DriftAction::kReport, "Report"},
      {DriftAction::kRemediate, "Remediate"},
  }};
};

enum class RunErrorKind { kImageLayout, kStep, kInterrupted, kBlocked, kPlanChanged };
template <> struct EnumNames<RunErrorKind> {
  static constexpr std::array<std::pair<RunErrorKind, std::string_view>, 5> kValues{{
      {RunErrorKind::kImageLayout, "image-layout"},
      {RunErrorKind::kStep, "step"},
      {RunErrorKind::kInterrupted, "interrupted"},
      {RunErrorKind::kBlocked, "blocked"},
      {RunErrorKind::kPlanChanged, "plan-changed"},
  }};
};

enum class HealthState { kPending, kRunning, kDegraded, kStopped, kTerminated, kUnknown };
template <> struct EnumNames<HealthState> {
  static constexpr std::array<std::pair<HealthState, std::string_view>, 6> kValues{{
      {HealthState::kPending, "pending"},
      {HealthState::kRunning, "running"},
      {HealthState::kDegraded, "degraded"},
      {HealthState::kStopped, "stopped"},
      {HealthState::kTerminated, "terminated"},
      {HealthState::kUnknown, "unknown"},
  }};
};

enum class Architecture { kAmd64, kArm64, kS390x, kPpc64le };
template <> struct EnumNames<Architecture> {
  static constexpr std::array<std::pair<Architecture, std::string_view>, 4> kValues{{
      {Architecture::kAmd64, "amd64"},
      {Architecture::kArm64, "arm64"},
      {Architecture::kS390x, "s390x"},
      {Architecture::kPpc64le, "ppc64le"},
  }};
};

enum class VariablesFormat { kString, kJson };
template <> struct EnumNames<VariablesFormat> {
  static constexpr std::array<std::pair<VariablesFormat, std::string_view>, 2> kValues{{
      {VariablesFormat::kString, "String"},
      {VariablesFormat::kJson, "JSON"},
  }};
};

enum class PullPolicy { kIfNotPresent, kAlways, kNever };
template <> struct EnumNames<PullPolicy> {
  static constexpr std::array<std::pair<PullPolicy, std::string_view>, 3> kValues{{
      {PullPolicy::kIfNotPresent, "IfNotPresent"},
      {PullPolicy::kAlways, "Always"},
      {PullPolicy::kNever, "Never"},
  }};
};

// ---- shared structures (docs/reference/api.md) ----------------------------------------------

// spec.source.git.ref: exactly one of branch, tag or commit.
struct GitReference {
  std::optional<std::string> branch;
  std::optional<std::string> tag;
  std::optional<std::string> commit;

  friend bool operator==(const GitReference&, const GitReference&) = default;
};

// spec.source.git (docs/decisions/git-sources.md).
struct GitSource {
  std::string url;
  GitReference ref;
  std::string path;
  std::optional<LocalObjectReference> secret_ref;
  std::string runtime_image;

  friend bool operator==(const GitSource&, const GitSource&) = default;
};

struct Source {
  // Exactly one of image and git.
  std::string image;
  // For the image, or for git.runtimeImage.
  std::optional<PullPolicy> image_pull_policy;
  std::optional<GitSource> git{};

  friend bool operator==(const Source&, const Source&) = default;
};

struct IdentityReference {
  std::string name;

  friend bool operator==(const IdentityReference&, const IdentityReference&) = default;
};

struct JobPolicy {
  std::optional<std::int32_t> successful_jobs_history_limit;
  std::optional<std::int32_t> failed_jobs_history_limit;
  std::optional<std::int64_t> active_deadline_seconds;
  std::optional<std::string> service_account_name;
  std::optional<std::int32_t> lock_timeout_seconds;
  std::vector<LocalObjectReference> image_pull_secrets;
  std::optional<ResourceRequirements> resources;
  std::vector<EnvVar> env;
  std::optional<SecurityContext> security_context;
  std::optional<PodSecurityContext> pod_security_context;

  friend bool operator==(const JobPolicy&, const JobPolicy&) = default;
};

struct VariablesSourceReference {
  std::string name;

  friend bool operator==(const VariablesSourceReference&,
                         const VariablesSourceReference&) = default;
};

struct VariablesSource {
  std::optional<VariablesSourceReference> config_map_ref;
  std::optional<VariablesSourceReference> secret_ref;
  std::optional<bool> optional;
  std::optional<VariablesFormat> format;

  friend bool operator==(const VariablesSource&, const VariablesSource&) = default;
};

struct DriftPolicy {
  std::optional<std::int64_t> interval_seconds;
  std::optional<DriftAction> action;

  friend bool operator==(const DriftPolicy&, const DriftPolicy&) = default;
};

struct MachineDriftPolicy {
  std::optional<std::int64_t> interval_seconds;

  friend bool operator==(const MachineDriftPolicy&, const MachineDriftPolicy&) = default;
};

struct MachinePoolDriftPolicy {
  std::optional<std::int64_t> interval_seconds;
  std::optional<DriftAction> action;

  friend bool operator==(const MachinePoolDriftPolicy&, const MachinePoolDriftPolicy&) = default;
};

struct MachineRemediation {
  std::optional<bool> annotate_machine;
  std::optional<std::int32_t> unhealthy_threshold;
  std::optional<std::int64_t> health_check_interval_seconds;

  friend bool operator==(const MachineRemediation&, const MachineRemediation&) = default;
};

struct AllowedNamespaces {
  std::vector<std::string> list;
  std::optional<LabelSelector> selector;

  friend bool operator==(const AllowedNamespaces&, const AllowedNamespaces&) = default;
};

struct SecretReference {
  std::string name;
  std::string namespace_;

  friend bool operator==(const SecretReference&, const SecretReference&) = default;
};

struct ActiveJob {
  std::string name;
  Operation operation = Operation::kApply;
  std::int32_t attempt = 0;
  std::optional<Time> start_time;

  friend bool operator==(const ActiveJob&, const ActiveJob&) = default;
};

struct RunStep {
  std::string name;
  std::int32_t exit_code = 0;
  std::optional<std::int64_t> duration_milliseconds;

  friend bool operator==(const RunStep&, const RunStep&) = default;
};

struct RunError {
  RunErrorKind kind = RunErrorKind::kStep;
  std::optional<std::string> step;
  std::optional<std::string> summary;

  friend bool operator==(const RunError&, const RunError&) = default;
};

struct DriftSummary {
  std::optional<std::int32_t> add;
  std::optional<std::int32_t> change;
  std::optional<std::int32_t> destroy;
  std::vector<std::string> resources;

  friend bool operator==(const DriftSummary&, const DriftSummary&) = default;
};

struct LastRun {
  std::string job;
  Operation operation = Operation::kApply;
  std::vector<RunStep> steps;
  std::optional<RunError> error;
  std::optional<DriftSummary> drift;

  friend bool operator==(const LastRun&, const LastRun&) = default;
};

struct PlanPreview {
  std::string inputs_hash;
  std::string job;
  std::string plan_hash;
  std::optional<std::int32_t> add;
  std::optional<std::int32_t> change;
  std::optional<std::int32_t> destroy;
  std::vector<std::string> resources;
  std::optional<bool> truncated;
  std::optional<Time> created_at;

  friend bool operator==(const PlanPreview&, const PlanPreview&) = default;
};

struct SourceStatus {
  std::optional<std::string> image;
  std::optional<std::string> image_digest;
  std::optional<std::string> runtime_version;
  // Git sources: the commit the last apply ran, and what spec.source.git.ref
  // resolves to now (the ref watcher), with when it last did.
  std::optional<std::string> commit{};
  std::optional<std::string> latest_commit{};
  std::optional<Time> resolved_at{};

  friend bool operator==(const SourceStatus&, const SourceStatus&) = default;
};

struct StateBackup {
  std::int64_t serial = 0;
  Time taken_at;
  std::int64_t bytes = 0;

  friend bool operator==(const StateBackup&, const StateBackup&) = default;
};

struct Initialization {
  std::optional<bool> provisioned;

  friend bool operator==(const Initialization&, const Initialization&) = default;
};

struct NodeInfo {
  std::optional<Architecture> architecture;
  std::optional<std::string> operating_system;

  friend bool operator==(const NodeInfo&, const NodeInfo&) = default;
};

struct CapacitySource {
  std::string image;

  friend bool operator==(const CapacitySource&, const CapacitySource&) = default;
};

struct MachinePoolInstance {
  std::string provider_id;
  std::optional<std::string> instance_id;
  std::vector<MachineAddress> addresses;
  std::optional<std::string> failure_domain;
  std::optional<HealthState> state;

  friend bool operator==(const MachinePoolInstance&, const MachinePoolInstance&) = default;
};

// ---- workspace (docs/reference/api.md) -------------------------------------------------------

// The spec fields every workload kind shares. identityRef is declared per
// kind: TerraformCluster requires it, machines and pools may inherit it.
struct WorkspaceSpec {
  Source source;
  std::optional<JobPolicy> jobs;
  // A JSON object (or null when unset).
  nlohmann::json variables;
  std::vector<VariablesSource> variables_from;

  friend bool operator==(const WorkspaceSpec&, const WorkspaceSpec&) = default;
};

struct WorkspaceStatus {
  std::vector<Condition> conditions;
  std::optional<Initialization> initialization;
  std::optional<std::int64_t> observed_generation;
  std::optional<ActiveJob> active_job;
  std::optional<LastRun> last_run;
  std::optional<Time> last_drift_check;
  std::optional<Time> last_refresh;
  std::optional<std::int32_t> pending_refreshes;
  std::optional<std::int64_t> observed_state_serial;
  std::optional<std::string> state_secret_suffix;
  std::optional<SourceStatus> source;
  std::vector<StateBackup> state_backups;

  friend bool operator==(const WorkspaceStatus&, const WorkspaceStatus&) = default;
};

CAPTF_API_DECLARE_CODEC(GitReference);
CAPTF_API_DECLARE_CODEC(GitSource);
CAPTF_API_DECLARE_CODEC(Source);
CAPTF_API_DECLARE_CODEC(IdentityReference);
CAPTF_API_DECLARE_CODEC(JobPolicy);
CAPTF_API_DECLARE_CODEC(VariablesSourceReference);
CAPTF_API_DECLARE_CODEC(VariablesSource);
CAPTF_API_DECLARE_CODEC(DriftPolicy);
CAPTF_API_DECLARE_CODEC(MachineDriftPolicy);
CAPTF_API_DECLARE_CODEC(MachinePoolDriftPolicy);
CAPTF_API_DECLARE_CODEC(MachineRemediation);
CAPTF_API_DECLARE_CODEC(AllowedNamespaces);
CAPTF_API_DECLARE_CODEC(SecretReference);
CAPTF_API_DECLARE_CODEC(ActiveJob);
CAPTF_API_DECLARE_CODEC(RunStep);
CAPTF_API_DECLARE_CODEC(RunError);
CAPTF_API_DECLARE_CODEC(DriftSummary);
CAPTF_API_DECLARE_CODEC(LastRun);
CAPTF_API_DECLARE_CODEC(PlanPreview);
CAPTF_API_DECLARE_CODEC(SourceStatus);
CAPTF_API_DECLARE_CODEC(StateBackup);
CAPTF_API_DECLARE_CODEC(Initialization);
CAPTF_API_DECLARE_CODEC(NodeInfo);
CAPTF_API_DECLARE_CODEC(CapacitySource);
CAPTF_API_DECLARE_CODEC(MachinePoolInstance);

} // namespace captf::api
