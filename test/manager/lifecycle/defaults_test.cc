#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/lifecycle/defaults.h"

namespace captf::lifecycle {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;

api::EnvVar env(std::string name, std::string value) {
  return api::EnvVar{.name = std::move(name), .value = std::move(value), .value_from = {}};
}

TEST(DefaultsTest, BuiltInJobPolicy) {
  const EffectiveJobPolicy p = resolveJobPolicy(std::nullopt, std::nullopt);
  EXPECT_EQ(p.successful_jobs_history_limit, 3);
  EXPECT_EQ(p.failed_jobs_history_limit, 3);
  EXPECT_EQ(p.active_deadline_seconds, 3600);
  EXPECT_EQ(p.lock_timeout_seconds, 300);
  EXPECT_EQ(p.service_account_name, "captf-runner");
  EXPECT_FALSE(p.service_account_overridden);
  EXPECT_EQ(p.resources.requests.at("cpu").value, "250m");
  EXPECT_EQ(p.resources.requests.at("memory").value, "512Mi");
  EXPECT_EQ(p.resources.limits.at("memory").value, "2Gi");
  EXPECT_FALSE(p.resources.limits.contains("cpu"));
  EXPECT_EQ(p.security_context.seccomp_profile->type, "RuntimeDefault");
  EXPECT_THAT(p.security_context.capabilities->drop, ElementsAre("ALL"));
  EXPECT_EQ(p.security_context.allow_privilege_escalation, false);
  EXPECT_EQ(p.security_context.read_only_root_filesystem, true);
  EXPECT_FALSE(p.security_context.run_as_non_root.has_value());
  EXPECT_EQ(p.pod_security_context.seccomp_profile->type, "RuntimeDefault");
  EXPECT_EQ(p.pod_security_context.fs_group, 65532);
}

TEST(DefaultsTest, InheritanceFieldByField) {
  api::JobPolicy own{};
  own.failed_jobs_history_limit = 5;
  own.active_deadline_seconds = 0; // unset
  own.env = {env("A", "own"), env("TF_LOG", "DEBUG"), env("B", "own")};
  own.image_pull_secrets = {{"pull-a"}, {"pull-b"}};
  own.security_context = api::SecurityContext{};
  own.security_context->run_as_non_root = true;
  own.security_context->capabilities = api::Capabilities{.add = {}, .drop = {"NET_RAW"}};
  api::JobPolicy inherited{};
  inherited.failed_jobs_history_limit = 7;
  inherited.successful_jobs_history_limit = 1;
  inherited.active_deadline_seconds = 900;
  inherited.lock_timeout_seconds = 0;
  inherited.service_account_name = "tenant-runner";
  inherited.env = {env("B", "inherited"), env("C", "inherited"), env("KUBE_CONFIG", "x")};
  inherited.image_pull_secrets = {{"pull-b"}, {"pull-c"}};
  inherited.resources = api::ResourceRequirements{};
  inherited.resources->limits = {{"cpu", api::Quantity{"1"}}};
  inherited.pod_security_context = api::PodSecurityContext{};
  inherited.pod_security_context->fs_group = 1000;
  inherited.pod_security_context->run_as_user = 1000;

  const EffectiveJobPolicy p = resolveJobPolicy(own, inherited);
  EXPECT_EQ(p.failed_jobs_history_limit, 5);
  EXPECT_EQ(p.successful_jobs_history_limit, 1);
  EXPECT_EQ(p.active_deadline_seconds, 900);
  EXPECT_EQ(p.lock_timeout_seconds, 0);
  EXPECT_EQ(p.service_account_name, "tenant-runner");
  EXPECT_TRUE(p.service_account_overridden);
  std::vector<std::string> names{};
  names.reserve(p.env.size());
  for (const api::EnvVar& var : p.env) {
    names.push_back(var.name + "=" + var.value);
  }
  EXPECT_THAT(names, ElementsAre("A=own", "B=own", "C=inherited"));
  EXPECT_THAT(p.dropped_env, ElementsAre("TF_LOG", "KUBE_CONFIG"));
  std::vector<std::string> pulls{};
  pulls.reserve(p.image_pull_secrets.size());
  for (const auto& ref : p.image_pull_secrets) {
    pulls.push_back(ref.name);
  }
  EXPECT_THAT(pulls, ElementsAre("pull-a", "pull-b", "pull-c"));
  // resources: the inherited one whole (no default requests mixed in).
  EXPECT_TRUE(p.resources.requests.empty());
  EXPECT_EQ(p.resources.limits.at("cpu").value, "1");
  // securityContext: own, on top of the defaults; capabilities replaced.
  EXPECT_EQ(p.security_context.run_as_non_root, true);
  EXPECT_THAT(p.security_context.capabilities->drop, ElementsAre("NET_RAW"));
  EXPECT_EQ(p.security_context.read_only_root_filesystem, true);
  EXPECT_EQ(p.security_context.seccomp_profile->type, "RuntimeDefault");
  // podSecurityContext: inherited over the defaults.
  EXPECT_EQ(p.pod_security_context.fs_group, 1000);
  EXPECT_EQ(p.pod_security_context.run_as_user, 1000);
  EXPECT_EQ(p.pod_security_context.seccomp_profile->type, "RuntimeDefault");
}

TEST(DefaultsTest, Schedules) {
  const seconds k_default(1800);
  {
    SCOPED_TRACE("cluster: own interval, 0 disables (and health samples)");
    api::TerraformClusterSpec spec{};
    EXPECT_EQ(resolveSchedule(spec, k_default).drift_interval, k_default);
    EXPECT_EQ(resolveSchedule(spec, k_default).drift_action, api::DriftAction::kReport);
    spec.drift = api::DriftPolicy{.interval_seconds = 0, .action = api::DriftAction::kRemediate};
    const EffectiveSchedule s = resolveSchedule(spec, k_default);
    EXPECT_FALSE(s.drift_interval.has_value());
    EXPECT_TRUE(s.health_samples_disabled);
    EXPECT_EQ(s.drift_action, api::DriftAction::kRemediate);
    // The cluster's own defaults are for its machines only.
    spec.drift.reset();
    spec.defaults = api::TerraformClusterDefaults{};
    spec.defaults->drift = api::MachineDriftPolicy{.interval_seconds = 60};
    EXPECT_EQ(resolveSchedule(spec, k_default).drift_interval, k_default);
  }
  api::TerraformClusterDefaults defaults{};
  defaults.drift = api::MachineDriftPolicy{.interval_seconds = 0};
  {
    SCOPED_TRACE("machine: own, then inherited (0 disables), always Report");
    api::TerraformMachineSpec spec{};
    EXPECT_EQ(resolveSchedule(spec, std::nullopt, k_default).drift_interval, k_default);
    const EffectiveSchedule inherited = resolveSchedule(spec, defaults, k_default);
    EXPECT_FALSE(inherited.drift_interval.has_value());
    EXPECT_TRUE(inherited.health_samples_disabled);
    spec.drift = api::MachineDriftPolicy{.interval_seconds = 600};
    EXPECT_EQ(resolveSchedule(spec, defaults, k_default).drift_interval, seconds(600));
    EXPECT_EQ(resolveSchedule(spec, defaults, k_default).drift_action, api::DriftAction::kReport);
    spec.drift->interval_seconds = 0;
    spec.remediation = api::MachineRemediation{.annotate_machine = true,
                                               .unhealthy_threshold = 0,
                                               .health_check_interval_seconds = std::nullopt};
    const EffectiveSchedule annotated = resolveSchedule(spec, defaults, k_default);
    EXPECT_FALSE(annotated.drift_interval.has_value());
    EXPECT_FALSE(annotated.health_samples_disabled);
    EXPECT_EQ(annotated.health_check_interval, seconds(300));
    EXPECT_EQ(annotated.unhealthy_threshold, 3);
    spec.remediation->health_check_interval_seconds = 120;
    spec.remediation->unhealthy_threshold = 5;
    EXPECT_EQ(resolveSchedule(spec, defaults, k_default).health_check_interval, seconds(120));
    EXPECT_EQ(resolveSchedule(spec, defaults, k_default).unhealthy_threshold, 5);
    spec.remediation->annotate_machine = false;
    EXPECT_FALSE(resolveSchedule(spec, defaults, k_default).health_check_interval.has_value());
  }
  {
    SCOPED_TRACE("pool: never disabled; action never inherited; membership default 60");
    api::TerraformMachinePoolSpec spec{};
    const EffectiveSchedule s = resolveSchedule(spec, defaults, k_default);
    EXPECT_EQ(s.drift_interval, k_default);
    EXPECT_EQ(s.membership_refresh_interval, seconds(60));
    EXPECT_FALSE(s.health_samples_disabled);
    spec.drift =
        api::MachinePoolDriftPolicy{.interval_seconds = 90, .action = api::DriftAction::kRemediate};
    spec.membership_refresh_interval_seconds = 15;
    const EffectiveSchedule own = resolveSchedule(spec, defaults, k_default);
    EXPECT_EQ(own.drift_interval, seconds(90));
    EXPECT_EQ(own.drift_action, api::DriftAction::kRemediate);
    EXPECT_EQ(own.membership_refresh_interval, seconds(15));
    api::TerraformClusterDefaults positive{};
    positive.drift = api::MachineDriftPolicy{.interval_seconds = 240};
    EXPECT_EQ(resolveSchedule(api::TerraformMachinePoolSpec{}, positive, k_default).drift_interval,
              seconds(240));
  }
}

TEST(DefaultsTest, PoliciesAndIdentity) {
  api::TerraformClusterSpec cluster{};
  EXPECT_EQ(effectiveApplyPolicy(cluster), api::ApplyPolicy::kAutomatic);
  cluster.apply_policy = api::ApplyPolicy::kManual;
  EXPECT_EQ(effectiveApplyPolicy(cluster), api::ApplyPolicy::kManual);
  EXPECT_EQ(effectivePullPolicy(api::Source{.image = "x", .image_pull_policy = std::nullopt}),
            api::PullPolicy::kIfNotPresent);
  EXPECT_EQ(
      effectivePullPolicy(api::Source{.image = "x", .image_pull_policy = api::PullPolicy::kAlways}),
      api::PullPolicy::kAlways);

  cluster.identity_ref.name = "cluster-id";
  EXPECT_EQ(effectiveIdentityName(std::nullopt, std::nullopt), "");
  EXPECT_EQ(effectiveIdentityName(std::nullopt, cluster), "cluster-id");
  cluster.defaults = api::TerraformClusterDefaults{};
  cluster.defaults->identity_ref = api::IdentityReference{"default-id"};
  EXPECT_EQ(effectiveIdentityName(std::nullopt, cluster), "default-id");
  EXPECT_EQ(effectiveIdentityName(api::IdentityReference{"own"}, cluster), "own");
}

} // namespace
} // namespace captf::lifecycle
