#include "manager/lifecycle/defaults.h"

#include <algorithm>
#include <set>

namespace captf::lifecycle {

namespace {

template <class T, class Field>
auto pick(const std::optional<api::JobPolicy>& own, const std::optional<api::JobPolicy>& inherited,
          Field field) -> std::optional<T> {
  if (own && ((*own).*field)) {
    return (*own).*field;
  }
  if (inherited && ((*inherited).*field)) {
    return (*inherited).*field;
  }
  return std::nullopt;
}

// Lays a user's field over the default: set optionals and non-empty
// strings or lists replace it; anything else keeps the default.
template <class T> void overlay(std::optional<T>& out, const std::optional<T>& user) {
  if (user) {
    out = user;
  }
}
template <class T> void overlay(T& out, const T& user) {
  if (!user.empty()) {
    out = user;
  }
}

bool reservedEnvName(std::string_view name) {
  return name.starts_with("TF_") || name.starts_with("KUBE_");
}

api::ResourceRequirements defaultResources() {
  api::ResourceRequirements r;
  r.requests = {{"cpu", api::Quantity{"250m"}}, {"memory", api::Quantity{"512Mi"}}};
  r.limits = {{"memory", api::Quantity{"2Gi"}}};
  return r;
}

api::SecurityContext mergeSecurityContext(const std::optional<api::SecurityContext>& user) {
  api::SecurityContext out;
  out.seccomp_profile = api::ProfileReference{.type = "RuntimeDefault", .localhost_profile = ""};
  out.capabilities = api::Capabilities{.add = {}, .drop = {"ALL"}};
  out.allow_privilege_escalation = false;
  out.read_only_root_filesystem = true;
  if (!user) {
    return out;
  }
  const api::SecurityContext& u = *user;
  overlay(out.capabilities, u.capabilities);
  overlay(out.privileged, u.privileged);
  overlay(out.se_linux_options, u.se_linux_options);
  overlay(out.windows_options, u.windows_options);
  overlay(out.run_as_user, u.run_as_user);
  overlay(out.run_as_group, u.run_as_group);
  overlay(out.run_as_non_root, u.run_as_non_root);
  overlay(out.read_only_root_filesystem, u.read_only_root_filesystem);
  overlay(out.allow_privilege_escalation, u.allow_privilege_escalation);
  overlay(out.proc_mount, u.proc_mount);
  overlay(out.seccomp_profile, u.seccomp_profile);
  overlay(out.app_armor_profile, u.app_armor_profile);
  return out;
}

api::PodSecurityContext
mergePodSecurityContext(const std::optional<api::PodSecurityContext>& user) {
  api::PodSecurityContext out;
  out.seccomp_profile = api::ProfileReference{.type = "RuntimeDefault", .localhost_profile = ""};
  out.fs_group = kRunnerUid;
  if (!user) {
    return out;
  }
  const api::PodSecurityContext& u = *user;
  overlay(out.se_linux_options, u.se_linux_options);
  overlay(out.windows_options, u.windows_options);
  overlay(out.run_as_user, u.run_as_user);
  overlay(out.run_as_group, u.run_as_group);
  overlay(out.run_as_non_root, u.run_as_non_root);
  overlay(out.supplemental_groups, u.supplemental_groups);
  overlay(out.supplemental_groups_policy, u.supplemental_groups_policy);
  overlay(out.fs_group, u.fs_group);
  overlay(out.sysctls, u.sysctls);
  overlay(out.fs_group_change_policy, u.fs_group_change_policy);
  overlay(out.seccomp_profile, u.seccomp_profile);
  overlay(out.app_armor_profile, u.app_armor_profile);
  overlay(out.se_linux_change_policy, u.se_linux_change_policy);
  return out;
}

std::optional<std::chrono::seconds> positiveSeconds(std::optional<std::int64_t> value) {
  if (value && *value > 0) {
    return std::chrono::seconds(*value);
  }
  return std::nullopt;
}

} // namespace

EffectiveJobPolicy resolveJobPolicy(const std::optional<api::JobPolicy>& own,
                                    const std::optional<api::JobPolicy>& inherited) {
  EffectiveJobPolicy out;
  if (auto v = pick<std::int32_t>(own, inherited, &api::JobPolicy::successful_jobs_history_limit)) {
    out.successful_jobs_history_limit = std::max<std::int32_t>(*v, 0);
  }
  if (auto v = pick<std::int32_t>(own, inherited, &api::JobPolicy::failed_jobs_history_limit)) {
    out.failed_jobs_history_limit = std::max<std::int32_t>(*v, 0);
  }
  // 0 means unset (docs/reference/api.md): fall through to the next level.
  const auto deadline = [](const std::optional<api::JobPolicy>& p) -> std::optional<std::int64_t> {
    if (p && p->active_deadline_seconds && *p->active_deadline_seconds > 0) {
      return p->active_deadline_seconds;
    }
    return std::nullopt;
  };
  if (auto v = deadline(own)) {
    out.active_deadline_seconds = *v;
  } else if (auto w = deadline(inherited)) {
    out.active_deadline_seconds = *w;
  }
  if (auto v = pick<std::string>(own, inherited, &api::JobPolicy::service_account_name);
      v && !v->empty()) {
    out.service_account_name = *v;
    out.service_account_overridden = true;
  }
  if (auto v = pick<std::int32_t>(own, inherited, &api::JobPolicy::lock_timeout_seconds)) {
    out.lock_timeout_seconds = std::max<std::int32_t>(*v, 0);
  }

  // imagePullSecrets: union without duplicates, own first.
  std::set<std::string> seen;
  for (const auto* policy : {own ? &*own : nullptr, inherited ? &*inherited : nullptr}) {
    if (policy == nullptr) {
      continue;
    }
    for (const api::LocalObjectReference& ref : policy->image_pull_secrets) {
      if (seen.insert(ref.name).second) {
        out.image_pull_secrets.push_back(ref);
      }
    }
  }

  // env: merged by name, own entries first, then inherited names not used.
  std::set<std::string> names;
  for (const auto* policy : {own ? &*own : nullptr, inherited ? &*inherited : nullptr}) {
    if (policy == nullptr) {
      continue;
    }
    for (const api::EnvVar& var : policy->env) {
      if (!names.insert(var.name).second) {
        continue;
      }
      if (reservedEnvName(var.name)) {
        out.dropped_env.push_back(var.name);
      } else {
        out.env.push_back(var);
      }
    }
  }

  const auto resources =
      pick<api::ResourceRequirements>(own, inherited, &api::JobPolicy::resources);
  out.resources = resources ? *resources : defaultResources();
  out.security_context = mergeSecurityContext(
      pick<api::SecurityContext>(own, inherited, &api::JobPolicy::security_context));
  out.pod_security_context = mergePodSecurityContext(
      pick<api::PodSecurityContext>(own, inherited, &api::JobPolicy::pod_security_context));
  return out;
}

EffectiveSchedule resolveSchedule(const api::TerraformClusterSpec& spec,
                                  std::chrono::seconds default_drift_interval) {
  EffectiveSchedule out;
  out.drift_interval = default_drift_interval;
  if (spec.drift && spec.drift->interval_seconds) {
    out.drift_interval = positiveSeconds(spec.drift->interval_seconds);
  }
  if (spec.drift && spec.drift->action) {
    out.drift_action = *spec.drift->action;
  }
  out.health_samples_disabled = !out.drift_interval.has_value();
  return out;
}

EffectiveSchedule
resolveSchedule(const api::TerraformMachineSpec& spec,
                const std::optional<api::TerraformClusterDefaults>& cluster_defaults,
                std::chrono::seconds default_drift_interval) {
  EffectiveSchedule out;
  out.drift_interval = default_drift_interval;
  if (spec.drift && spec.drift->interval_seconds) {
    out.drift_interval = positiveSeconds(spec.drift->interval_seconds);
  } else if (cluster_defaults && cluster_defaults->drift &&
             cluster_defaults->drift->interval_seconds) {
    out.drift_interval = positiveSeconds(cluster_defaults->drift->interval_seconds);
  }
  out.drift_action = api::DriftAction::kReport;
  if (spec.remediation) {
    out.annotate_machine = spec.remediation->annotate_machine.value_or(false);
    if (spec.remediation->unhealthy_threshold && *spec.remediation->unhealthy_threshold > 0) {
      out.unhealthy_threshold = *spec.remediation->unhealthy_threshold;
    }
    if (out.annotate_machine) {
      out.health_check_interval = positiveSeconds(spec.remediation->health_check_interval_seconds)
                                      .value_or(kDefaultHealthCheckInterval);
    }
  }
  out.health_samples_disabled = !out.drift_interval.has_value() && !out.annotate_machine;
  return out;
}

EffectiveSchedule
resolveSchedule(const api::TerraformMachinePoolSpec& spec,
                const std::optional<api::TerraformClusterDefaults>& cluster_defaults,
                std::chrono::seconds default_drift_interval) {
  EffectiveSchedule out;
  // 0/unset, own or inherited, means the manager default: never disabled.
  std::optional<std::chrono::seconds> interval;
  if (spec.drift && spec.drift->interval_seconds) {
    interval = positiveSeconds(spec.drift->interval_seconds);
  } else if (cluster_defaults && cluster_defaults->drift &&
             cluster_defaults->drift->interval_seconds) {
    interval = positiveSeconds(cluster_defaults->drift->interval_seconds);
  }
  out.drift_interval = interval.value_or(default_drift_interval);
  if (spec.drift && spec.drift->action) {
    out.drift_action = *spec.drift->action;
  }
  out.membership_refresh_interval =
      spec.membership_refresh_interval_seconds && *spec.membership_refresh_interval_seconds > 0
          ? std::chrono::seconds(*spec.membership_refresh_interval_seconds)
          : kDefaultMembershipRefreshInterval;
  return out;
}

api::ApplyPolicy effectiveApplyPolicy(const api::TerraformClusterSpec& spec) {
  return spec.apply_policy.value_or(api::ApplyPolicy::kAutomatic);
}

api::PullPolicy effectivePullPolicy(const api::Source& source) {
  return source.image_pull_policy.value_or(api::PullPolicy::kIfNotPresent);
}

std::string effectiveIdentityName(const std::optional<api::IdentityReference>& own,
                                  const std::optional<api::TerraformClusterSpec>& cluster) {
  if (own && !own->name.empty()) {
    return own->name;
  }
  if (cluster) {
    if (cluster->defaults && cluster->defaults->identity_ref &&
        !cluster->defaults->identity_ref->name.empty()) {
      return cluster->defaults->identity_ref->name;
    }
    return cluster->identity_ref.name;
  }
  return "";
}

} // namespace captf::lifecycle
