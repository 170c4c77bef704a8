#pragma once

// Effective settings of a workload object (docs/behaviour/defaults.md): the built-in defaults
// and the cluster → machine/pool inheritance of docs/behaviour/defaults.md, resolved at
// reconcile time and never written back. Pure functions.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_machine.h"
#include "manager/api/terraform_machine_pool.h"
#include "manager/api/workspace.h"

namespace captf::lifecycle {

// docs/behaviour/defaults.md#built-in-defaults built-in defaults.
inline constexpr std::int32_t kDefaultSuccessfulJobsHistoryLimit = 3;
inline constexpr std::int32_t kDefaultFailedJobsHistoryLimit = 3;
inline constexpr std::int64_t kDefaultActiveDeadlineSeconds = 3600;
inline constexpr std::int32_t kDefaultLockTimeoutSeconds = 300;
inline constexpr std::string_view kDefaultRunnerServiceAccount = "captf-runner";
inline constexpr std::chrono::seconds kDefaultDriftInterval{1800};
inline constexpr std::chrono::seconds kDefaultMembershipRefreshInterval{60};
inline constexpr std::int32_t kDefaultUnhealthyThreshold = 3;
inline constexpr std::chrono::seconds kDefaultHealthCheckInterval{300};
inline constexpr std::int64_t kTerminationGracePeriodSeconds = 600;
// Grace minus the margin the runner needs to write its result.
inline constexpr std::int64_t kRunnerStopTimeoutSeconds = 570;
inline constexpr std::int64_t kRunnerUid = 65532;

// A JobPolicy with every default applied (JobPolicy; docs/behaviour/defaults.md).
struct EffectiveJobPolicy {
  std::int32_t successful_jobs_history_limit = kDefaultSuccessfulJobsHistoryLimit;
  std::int32_t failed_jobs_history_limit = kDefaultFailedJobsHistoryLimit;
  std::int64_t active_deadline_seconds = kDefaultActiveDeadlineSeconds;
  std::string service_account_name{kDefaultRunnerServiceAccount};
  // Whether service_account_name is an override (own or inherited) that
  // must exist and carry captf.io/runner=true (docs/reference/api.md), rather than the
  // controller-created default.
  bool service_account_overridden = false;
  std::int32_t lock_timeout_seconds = kDefaultLockTimeoutSeconds;
  std::vector<api::LocalObjectReference> image_pull_secrets{};
  // Main container only. Default: requests cpu 250m, memory 512Mi; limit
  // memory 2Gi; no CPU limit. A policy's `resources` replaces it whole.
  api::ResourceRequirements resources{};
  // jobs.env without the entries whose names start with TF_ or KUBE_.
  std::vector<api::EnvVar> env{};
  // Names of the dropped TF_/KUBE_ entries (reported with an event, never
  // their values).
  std::vector<std::string> dropped_env{};
  // Main container: defaults (seccomp RuntimeDefault, drop ALL,
  // allowPrivilegeEscalation false, readOnlyRootFilesystem true) with the
  // policy's fields applied on top; a policy's `capabilities` replaces the
  // default drop list whole. runAsNonRoot is not defaulted.
  api::SecurityContext security_context{};
  // Pod: seccomp RuntimeDefault, fsGroup 65532, the policy's fields on top.
  api::PodSecurityContext pod_security_context{};
};

// docs/behaviour/defaults.md: `own` field by field, then `inherited` (a TerraformCluster's
// spec.defaults.jobs; pass nullopt for a TerraformCluster itself, which
// never inherits), then the built-in default. env: merged by name, own
// entries first, then inherited ones whose name is unused; TF_/KUBE_ names
// dropped. imagePullSecrets: union without duplicates, own first.
// resources, securityContext, podSecurityContext: the first one set wins
// whole, then is applied over the built-in default. 0 for
// activeDeadlineSeconds means unset.
EffectiveJobPolicy resolveJobPolicy(const std::optional<api::JobPolicy>& own,
                                    const std::optional<api::JobPolicy>& inherited);

// The settings that drive scheduling (docs/behaviour/defaults.md, drift-and-health.md).
struct EffectiveSchedule {
  // nullopt: drift checks disabled (cluster or machine interval 0). Pools
  // are never disabled.
  std::optional<std::chrono::seconds> drift_interval{};
  // Machines always Report.
  api::DriftAction drift_action = api::DriftAction::kReport;
  // Pools only: membershipRefreshIntervalSeconds (0/unset ⇒ 60).
  std::optional<std::chrono::seconds> membership_refresh_interval{};
  // Machines only: spec.remediation.
  bool annotate_machine = false;
  std::int32_t unhealthy_threshold = kDefaultUnhealthyThreshold;
  // Set only for a machine with annotateMachine (refresh at this cadence
  // once provisioned, independent of drift).
  std::optional<std::chrono::seconds> health_check_interval{};
  // Whether post-provisioning health samples stop with drift disabled:
  // true for a cluster with interval 0, and for a machine with interval 0
  // and annotateMachine false.
  bool health_samples_disabled = false;
};

// `default_drift_interval` is --drift-default-interval (30m).
EffectiveSchedule resolveSchedule(const api::TerraformClusterSpec& spec,
                                  std::chrono::seconds default_drift_interval);
// `cluster_defaults`: the owning TerraformCluster's spec.defaults (nullopt
// when unknown, e.g. the cluster is gone).
EffectiveSchedule
resolveSchedule(const api::TerraformMachineSpec& spec,
                const std::optional<api::TerraformClusterDefaults>& cluster_defaults,
                std::chrono::seconds default_drift_interval);
EffectiveSchedule
resolveSchedule(const api::TerraformMachinePoolSpec& spec,
                const std::optional<api::TerraformClusterDefaults>& cluster_defaults,
                std::chrono::seconds default_drift_interval);

// spec.applyPolicy, Automatic when unset.
api::ApplyPolicy effectiveApplyPolicy(const api::TerraformClusterSpec& spec);

// spec.source.imagePullPolicy, IfNotPresent when unset.
api::PullPolicy effectivePullPolicy(const api::Source& source);

// docs/behaviour/identities.md: own identityRef, then the cluster's spec.defaults.identityRef,
// then the cluster's spec.identityRef. "" when none resolves. A
// TerraformCluster uses its own spec.identityRef.
std::string effectiveIdentityName(const std::optional<api::IdentityReference>& own,
                                  const std::optional<api::TerraformClusterSpec>& cluster);

} // namespace captf::lifecycle
