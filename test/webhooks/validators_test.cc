#include <functional>
#include <string>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/manager/api/fixtures.h"
#include "test/webhooks/field_errors.h"
#include "webhooks/validators.h"

namespace captf::webhooks {
namespace {

namespace t = api::testing;
using nlohmann::json;
using Strings = std::vector<std::string>;
using testing::strings;

template <class T> struct Case {
  const char* name;
  std::function<void(T&)> mutate;
  Strings want;
};

template <class T>
void runCreateCases(const std::vector<Case<T>>& cases, T (*make)(),
                    FieldErrorList (*validate)(const T&)) {
  for (const Case<T>& c : cases) {
    T obj = make();
    c.mutate(obj);
    EXPECT_EQ(strings(validate(obj)), c.want) << c.name;
  }
}

// ---- source image -------------------------------------------------------------

TEST(ValidatorsTest, SourceImage) {
  runCreateCases<api::TerraformMachine>(
      {
          {"valid tag", [](auto&) {}, {}},
          {"valid digest",
           [](auto& m) { m.spec.source.image = "r.example.com/m@sha256:" + std::string(64, 'f'); },
           {}},
          {"no version",
           [](auto& m) { m.spec.source.image = "r.example.com/m"; },
           {"spec.source.image: Invalid value: \"r.example.com/m\": must name a tag (:v1.2.3) or "
            "a digest (@sha256:...): the tag or digest is the module version"}},
          {"uppercase",
           [](auto& m) { m.spec.source.image = "r.example.com/Mod:v1"; },
           {"spec.source.image: Invalid value: \"r.example.com/Mod:v1\": repository path "
            "component \"Mod\" must be lowercase"}},
      },
      t::minimalTerraformMachine, validateTerraformMachineCreate);
  api::TerraformMachineTemplate tmpl = t::minimalTerraformMachineTemplate();
  tmpl.spec.template_.spec.source.image = "bad image";
  EXPECT_EQ(strings(validateTerraformMachineTemplateCreate(tmpl)),
            Strings{"spec.template.spec.source.image: Invalid value: \"bad image\": must not "
                    "contain whitespace, control or non-ASCII characters"});
}

// ---- source git -----------------------------------------------------------------

api::GitSource gitSource() {
  api::GitSource git;
  git.url = "https://git.example.com/org/modules.git";
  git.ref.branch = "main";
  git.path = "machine";
  git.runtime_image = "r.example.com/runtime:v1";
  return git;
}

TEST(ValidatorsTest, SourceGit) {
  runCreateCases<api::TerraformMachine>(
      {
          {"branch",
           [](auto& m) {
             m.spec.source.image.clear();
             m.spec.source.git = gitSource();
           },
           {}},
          {"scp-like url and a commit",
           [](auto& m) {
             m.spec.source.image.clear();
             m.spec.source.git = gitSource();
             m.spec.source.git->url = "git@git.example.com:org/modules.git";
             m.spec.source.git->ref = {};
             m.spec.source.git->ref.commit = std::string(40, 'a');
           },
           {}},
          {"both image and git",
           [](auto& m) { m.spec.source.git = gitSource(); },
           {"spec.source: Forbidden: exactly one of image and git may be set"}},
          {"neither",
           [](auto& m) { m.spec.source.image.clear(); },
           {"spec.source: Required value: exactly one of image and git must be set"}},
          {"every git field wrong at once",
           [](auto& m) {
             m.spec.source.image.clear();
             m.spec.source.git = gitSource();
             m.spec.source.git->url = "http://git.example.com/r.git";
             m.spec.source.git->ref.branch = "a..b";
             m.spec.source.git->path = "../etc";
             m.spec.source.git->runtime_image = "r.example.com/runtime";
           },
           {"spec.source.git.url: Invalid value: \"http://git.example.com/r.git\": URL scheme "
            "\"http\" is not supported (https or ssh)",
            "spec.source.git.ref.branch: Invalid value: \"a..b\": branch name has \"..\" or "
            "\"@{\"",
            R"(spec.source.git.path: Invalid value: "../etc": path has a ".." component)",
            "spec.source.git.runtimeImage: Invalid value: \"r.example.com/runtime\": must name a "
            "tag (:v1.2.3) or a digest (@sha256:...): the tag or digest is the module version"}},
          {"two refs",
           [](auto& m) {
             m.spec.source.image.clear();
             m.spec.source.git = gitSource();
             m.spec.source.git->ref.tag = "v1";
           },
           {"spec.source.git.ref: Forbidden: exactly one of branch, tag and commit may be set"}},
          {"an absolute path",
           [](auto& m) {
             m.spec.source.image.clear();
             m.spec.source.git = gitSource();
             m.spec.source.git->path = "/machine";
           },
           {"spec.source.git.path: Invalid value: \"/machine\": path is absolute; write it "
            "relative to the repository root"}},
      },
      t::minimalTerraformMachine, validateTerraformMachineCreate);
}

TEST(ValidatorsTest, AMachinesGitSourceIsImmutableLikeItsImage) {
  api::TerraformMachine old_machine = t::minimalTerraformMachine();
  old_machine.spec.source.image.clear();
  old_machine.spec.source.git = gitSource();
  api::TerraformMachine new_machine = old_machine;
  new_machine.spec.source.git->ref.branch = "next";
  const FieldErrorList errors = validateTerraformMachineUpdate(old_machine, new_machine);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(toString(errors[0]).rfind("spec.source: ", 0), 0u) << toString(errors[0]);
}

// ---- variables ----------------------------------------------------------------

TEST(ValidatorsTest, VariableNames) {
  runCreateCases<api::TerraformMachine>(
      {
          {"plain names",
           [](auto& m) {
             m.spec.variables = {{"region", "x"}, {"_a-b_1", 1}};
           },
           {}},
          {"not an identifier",
           [](auto& m) {
             m.spec.variables = {{"1st", "x"}};
           },
           {"spec.variables[1st]: Invalid value: \"1st\": a variable name must be a Terraform "
            "identifier: a letter or \"_\" followed by letters, digits, \"_\" or \"-\" (regex "
            "^[a-zA-Z_][a-zA-Z0-9_-]*$)"}},
          {"reserved prefix",
           [](auto& m) {
             m.spec.variables = {{"captf_tags", "x"}};
           },
           {"spec.variables[captf_tags]: Invalid value: \"captf_tags\": names starting with "
            "\"captf_\" are reserved for the module contract's inputs"}},
          {"contract input of the role",
           [](auto& m) {
             m.spec.variables = {{"machine_name", "x"}};
           },
           {"spec.variables[machine_name]: Invalid value: \"machine_name\": is a contract input "
            "of the machine role, set by the controller; it cannot be a user variable"}},
          {"another role's input is fine",
           [](auto& m) {
             m.spec.variables = {{"control_plane_endpoint", "x"}};
           },
           {}},
          {"meta-argument",
           [](auto& m) {
             m.spec.variables = {{"for_each", "x"}};
           },
           {"spec.variables[for_each]: Invalid value: \"for_each\": is a module meta-argument "
            "(source, version, providers, count, for_each, depends_on, lifecycle, locals) and "
            "cannot be a variable name"}},
          {"every bad key at once",
           [](auto& m) {
             m.spec.variables = {{"count", 1}, {"captf_x", 1}, {"ok", 1}};
           },
           {"spec.variables[captf_x]: Invalid value: \"captf_x\": names starting with \"captf_\" "
            "are reserved for the module contract's inputs",
            "spec.variables[count]: Invalid value: \"count\": is a module meta-argument (source, "
            "version, providers, count, for_each, depends_on, lifecycle, locals) and cannot be a "
            "variable name"}},
          {"empty object",
           [](auto& m) { m.spec.variables = json::object(); },
           {"spec.variables: Invalid value: must have at least 1 variable when set; omit "
            "variables instead of setting {}"}},
      },
      t::minimalTerraformMachine, validateTerraformMachineCreate);

  api::TerraformCluster cluster = t::minimalTerraformCluster();
  cluster.spec.variables = {{"machine_name", "ok for a cluster"}, {"kubernetes_version", "1"}};
  EXPECT_EQ(strings(validateTerraformClusterCreate(cluster)),
            Strings{"spec.variables[kubernetes_version]: Invalid value: \"kubernetes_version\": "
                    "is a contract input of the cluster role, set by the controller; it cannot "
                    "be a user variable"});

  api::TerraformMachinePool pool = t::minimalTerraformMachinePool();
  pool.spec.variables = {{"replicas", 3}};
  EXPECT_EQ(strings(validateTerraformMachinePoolCreate(pool)),
            Strings{"spec.variables[replicas]: Invalid value: \"replicas\": is a contract input "
                    "of the machinepool role, set by the controller; it cannot be a user "
                    "variable"});
}

TEST(ValidatorsTest, VariableCount) {
  api::TerraformCluster cluster = t::minimalTerraformCluster();
  cluster.spec.variables = json::object();
  for (int i = 0; i < 256; ++i) {
    cluster.spec.variables["v" + std::to_string(i)] = i;
  }
  EXPECT_TRUE(validateTerraformClusterCreate(cluster).empty());
  cluster.spec.variables["v256"] = 1;
  EXPECT_EQ(strings(validateTerraformClusterCreate(cluster)),
            Strings{"spec.variables: Too many: 257: must have at most 256 items"});
}

TEST(ValidatorsTest, VariablesFromNamesExactlyOneSource) {
  using api::VariablesSource;
  using api::VariablesSourceReference;
  runCreateCases<api::TerraformMachinePool>(
      {
          {"configMap",
           [](auto& p) {
             p.spec.variables_from = {VariablesSource{VariablesSourceReference{"a"}, {}, {}, {}}};
           },
           {}},
          {"neither",
           [](auto& p) {
             p.spec.variables_from = {VariablesSource{}, VariablesSource{}};
           },
           {"spec.variablesFrom[0]: Required value: exactly one of configMapRef and secretRef "
            "must be set",
            "spec.variablesFrom[1]: Required value: exactly one of configMapRef and secretRef "
            "must be set"}},
          {"both",
           [](auto& p) {
             p.spec.variables_from = {
                 VariablesSource{VariablesSourceReference{"a"}, {}, {}, {}},
                 VariablesSource{
                     VariablesSourceReference{"a"}, VariablesSourceReference{"b"}, {}, {}}};
           },
           {"spec.variablesFrom[1].secretRef: Forbidden: exactly one of configMapRef and "
            "secretRef must be set; use a separate variablesFrom entry for each source"}},
      },
      t::minimalTerraformMachinePool, validateTerraformMachinePoolCreate);
}

// ---- jobs ---------------------------------------------------------------------

TEST(ValidatorsTest, JobSecurityContext) {
  runCreateCases<api::TerraformMachine>(
      {
          {"hardening allowed",
           [](auto& m) {
             m.spec.jobs = api::JobPolicy{};
             m.spec.jobs->security_context = api::SecurityContext{};
             m.spec.jobs->security_context->privileged = false;
             m.spec.jobs->security_context->allow_privilege_escalation = false;
             m.spec.jobs->security_context->capabilities = api::Capabilities{{}, {"ALL"}};
           },
           {}},
          {"privileged, escalation and added capabilities",
           [](auto& m) {
             m.spec.jobs = api::JobPolicy{};
             m.spec.jobs->security_context = api::SecurityContext{};
             m.spec.jobs->security_context->privileged = true;
             m.spec.jobs->security_context->allow_privilege_escalation = true;
             m.spec.jobs->security_context->capabilities = api::Capabilities{{"NET_ADMIN"}, {}};
           },
           {"spec.jobs.securityContext.privileged: Forbidden: runner Jobs never run privileged",
            "spec.jobs.securityContext.allowPrivilegeEscalation: Forbidden: runner Jobs never "
            "allow privilege escalation",
            "spec.jobs.securityContext.capabilities.add: Forbidden: runner Jobs cannot add "
            "capabilities; only drop is allowed"}},
      },
      t::minimalTerraformMachine, validateTerraformMachineCreate);

  api::TerraformCluster cluster = t::minimalTerraformCluster();
  cluster.spec.defaults = api::TerraformClusterDefaults{};
  cluster.spec.defaults->jobs = api::JobPolicy{};
  cluster.spec.defaults->jobs->security_context = api::SecurityContext{};
  cluster.spec.defaults->jobs->security_context->privileged = true;
  EXPECT_EQ(strings(validateTerraformClusterCreate(cluster)),
            Strings{"spec.defaults.jobs.securityContext.privileged: Forbidden: runner Jobs never "
                    "run privileged"});

  api::TerraformClusterTemplate tmpl = t::minimalTerraformClusterTemplate();
  tmpl.spec.template_.spec.jobs = api::JobPolicy{};
  tmpl.spec.template_.spec.jobs->security_context = api::SecurityContext{};
  tmpl.spec.template_.spec.jobs->security_context->allow_privilege_escalation = true;
  EXPECT_EQ(strings(validateTerraformClusterTemplateCreate(tmpl)),
            Strings{"spec.template.spec.jobs.securityContext.allowPrivilegeEscalation: "
                    "Forbidden: runner Jobs never allow privilege escalation"});
}

// What Pod Security baseline forbids, one case a field (docs/reference/webhooks.md).
TEST(ValidatorsTest, JobSecurityContextsRefuseWhatBaselineForbids) {
  using api::PodSecurityContext;
  using api::ProfileReference;
  using api::SecurityContext;
  using api::SELinuxOptions;
  using api::WindowsSecurityContextOptions;
  const auto container = [](const std::function<void(SecurityContext&)>& set) {
    return [set](api::TerraformMachine& m) {
      m.spec.jobs = api::JobPolicy{};
      m.spec.jobs->security_context = SecurityContext{};
      set(*m.spec.jobs->security_context);
    };
  };
  const auto pod = [](const std::function<void(PodSecurityContext&)>& set) {
    return [set](api::TerraformMachine& m) {
      m.spec.jobs = api::JobPolicy{};
      m.spec.jobs->pod_security_context = PodSecurityContext{};
      set(*m.spec.jobs->pod_security_context);
    };
  };
  const auto se_linux = [](std::string user, std::string role, std::string type) {
    return SELinuxOptions{std::move(user), std::move(role), std::move(type), "s0:c1,c2"};
  };
  const auto host_process = [] {
    WindowsSecurityContextOptions w;
    w.host_process = true;
    return w;
  };
  const std::string seccomp =
      "Forbidden: runner Jobs never run without a seccomp filter; use RuntimeDefault (the "
      "default) or Localhost";
  const std::string app_armor =
      "Forbidden: runner Jobs never run without an AppArmor profile; use RuntimeDefault or "
      "Localhost";
  const std::string se_linux_type =
      "Forbidden: runner Jobs run with the container runtime's SELinux type: only its default, "
      "container_t, may be set; other types, such as spc_t, are not confined like a container";
  const std::string user_role =
      "Forbidden: runner Jobs never set a SELinux user or role; only level may be set";
  const std::string windows = "Forbidden: runner Jobs never run as Windows HostProcess "
                              "containers, which have the node's privileges";
  const std::string root = "Invalid value: 0: is root while runAsNonRoot is true, so the "
                           "container would never start; use a non-zero UID such as 65532";
  runCreateCases<api::TerraformMachine>(
      {
          {"what baseline and restricted admit",
           [&](api::TerraformMachine& m) {
             container([&](SecurityContext& c) {
               c.proc_mount = "Default";
               c.seccomp_profile = ProfileReference{"Localhost", "profiles/runner.json"};
               c.app_armor_profile = ProfileReference{"RuntimeDefault", ""};
               c.se_linux_options = se_linux("", "", "container_t");
               c.run_as_non_root = true;
               c.run_as_user = 65532;
             })(m);
             m.spec.jobs->pod_security_context = PodSecurityContext{};
             auto& p = *m.spec.jobs->pod_security_context;
             p.seccomp_profile = ProfileReference{"RuntimeDefault", ""};
             p.app_armor_profile = ProfileReference{"Localhost", "runner"};
             p.se_linux_options = se_linux("", "", "");
             p.windows_options = WindowsSecurityContextOptions{};
             p.windows_options->host_process = false;
             p.run_as_non_root = true;
             p.run_as_user = 0; // the container's 65532 wins
           },
           {}},
          {"container procMount Unmasked",
           container([](SecurityContext& c) { c.proc_mount = "Unmasked"; }),
           {"spec.jobs.securityContext.procMount: Forbidden: runner Jobs use the Default /proc "
            "mount, which masks the kernel's sensitive /proc paths"}},
          {"container seccomp Unconfined",
           container([](SecurityContext& c) {
             c.seccomp_profile = ProfileReference{"Unconfined", ""};
           }),
           {"spec.jobs.securityContext.seccompProfile.type: " + seccomp}},
          {"pod seccomp Unconfined",
           pod([](PodSecurityContext& p) {
             p.seccomp_profile = ProfileReference{"Unconfined", ""};
           }),
           {"spec.jobs.podSecurityContext.seccompProfile.type: " + seccomp}},
          {"container AppArmor Unconfined",
           container([](SecurityContext& c) {
             c.app_armor_profile = ProfileReference{"Unconfined", ""};
           }),
           {"spec.jobs.securityContext.appArmorProfile.type: " + app_armor}},
          {"pod AppArmor Unconfined",
           pod([](PodSecurityContext& p) {
             p.app_armor_profile = ProfileReference{"Unconfined", ""};
           }),
           {"spec.jobs.podSecurityContext.appArmorProfile.type: " + app_armor}},
          {"container SELinux type spc_t",
           container([&](SecurityContext& c) { c.se_linux_options = se_linux("", "", "spc_t"); }),
           {"spec.jobs.securityContext.seLinuxOptions.type: " + se_linux_type}},
          {"pod SELinux type container_engine_t",
           pod([&](PodSecurityContext& p) {
             p.se_linux_options = se_linux("", "", "container_engine_t");
           }),
           {"spec.jobs.podSecurityContext.seLinuxOptions.type: " + se_linux_type}},
          {"container SELinux user",
           container(
               [&](SecurityContext& c) { c.se_linux_options = se_linux("system_u", "", ""); }),
           {"spec.jobs.securityContext.seLinuxOptions.user: " + user_role}},
          {"pod SELinux role",
           pod([&](PodSecurityContext& p) { p.se_linux_options = se_linux("", "system_r", ""); }),
           {"spec.jobs.podSecurityContext.seLinuxOptions.role: " + user_role}},
          {"container HostProcess",
           container([&](SecurityContext& c) { c.windows_options = host_process(); }),
           {"spec.jobs.securityContext.windowsOptions.hostProcess: " + windows}},
          {"pod HostProcess",
           pod([&](PodSecurityContext& p) { p.windows_options = host_process(); }),
           {"spec.jobs.podSecurityContext.windowsOptions.hostProcess: " + windows}},
          {"pod sysctls",
           pod([](PodSecurityContext& p) {
             p.sysctls = {api::Sysctl{"net.ipv4.ip_unprivileged_port_start", "0"}};
           }),
           {"spec.jobs.podSecurityContext.sysctls: Forbidden: runner pods set no sysctls"}},
          {"container runAsUser 0 with runAsNonRoot",
           container([](SecurityContext& c) {
             c.run_as_non_root = true;
             c.run_as_user = 0;
           }),
           {"spec.jobs.securityContext.runAsUser: " + root}},
          {"pod runAsUser 0 under the container's runAsNonRoot",
           [&](api::TerraformMachine& m) {
             container([](SecurityContext& c) { c.run_as_non_root = true; })(m);
             m.spec.jobs->pod_security_context = PodSecurityContext{};
             m.spec.jobs->pod_security_context->run_as_user = 0;
           },
           {"spec.jobs.podSecurityContext.runAsUser: " + root}},
      },
      t::minimalTerraformMachine, validateTerraformMachineCreate);

  // Every place a jobs policy lives: spec.defaults.jobs and templates.
  api::TerraformCluster cluster = t::minimalTerraformCluster();
  cluster.spec.defaults = api::TerraformClusterDefaults{};
  cluster.spec.defaults->jobs = api::JobPolicy{};
  cluster.spec.defaults->jobs->pod_security_context = PodSecurityContext{};
  cluster.spec.defaults->jobs->pod_security_context->seccomp_profile =
      ProfileReference{"Unconfined", ""};
  EXPECT_EQ(strings(validateTerraformClusterCreate(cluster)),
            Strings{"spec.defaults.jobs.podSecurityContext.seccompProfile.type: " + seccomp});
  api::TerraformMachinePoolTemplate tmpl = t::minimalTerraformMachinePoolTemplate();
  tmpl.spec.template_.spec.jobs = api::JobPolicy{};
  tmpl.spec.template_.spec.jobs->security_context = SecurityContext{};
  tmpl.spec.template_.spec.jobs->security_context->proc_mount = "Unmasked";
  EXPECT_THAT(strings(validateTerraformMachinePoolTemplateCreate(tmpl)),
              ::testing::ElementsAre(::testing::StartsWith(
                  "spec.template.spec.jobs.securityContext.procMount: Forbidden: ")));
}

TEST(ValidatorsTest, LockTimeoutBelowDeadline) {
  auto with_jobs = [](std::optional<std::int32_t> lock, std::optional<std::int64_t> deadline) {
    return [lock, deadline](api::TerraformMachinePool& p) {
      p.spec.jobs = api::JobPolicy{};
      p.spec.jobs->lock_timeout_seconds = lock;
      p.spec.jobs->active_deadline_seconds = deadline;
    };
  };
  runCreateCases<api::TerraformMachinePool>(
      {
          {"lock below deadline", with_jobs(299, 300), {}},
          {"only lock", with_jobs(3600, std::nullopt), {}},
          {"only deadline", with_jobs(std::nullopt, 1), {}},
          {"equal",
           with_jobs(300, 300),
           {"spec.jobs.lockTimeoutSeconds: Invalid value: 300: must be less than "
            "activeDeadlineSeconds (300) of the same policy, or the Job's deadline ends the run "
            "while it still waits for the state lock"}},
          {"above",
           with_jobs(600, 60),
           {"spec.jobs.lockTimeoutSeconds: Invalid value: 600: must be less than "
            "activeDeadlineSeconds (60) of the same policy, or the Job's deadline ends the run "
            "while it still waits for the state lock"}},
      },
      t::minimalTerraformMachinePool, validateTerraformMachinePoolCreate);

  // Per policy only: the cluster's defaults never combine with its own jobs.
  api::TerraformCluster cluster = t::minimalTerraformCluster();
  cluster.spec.jobs = api::JobPolicy{};
  cluster.spec.jobs->active_deadline_seconds = 60;
  cluster.spec.defaults = api::TerraformClusterDefaults{};
  cluster.spec.defaults->jobs = api::JobPolicy{};
  cluster.spec.defaults->jobs->lock_timeout_seconds = 600;
  EXPECT_TRUE(validateTerraformClusterCreate(cluster).empty());
}

// ---- TerraformCluster -----------------------------------------------------------

TEST(ValidatorsTest, ClusterRequiresIdentity) {
  api::TerraformCluster cluster = t::minimalTerraformCluster();
  cluster.spec.identity_ref.name.clear();
  EXPECT_EQ(strings(validateTerraformClusterCreate(cluster)),
            Strings{"spec.identityRef: Required value: a TerraformCluster must name its "
                    "TerraformClusterIdentity; machines and pools fall back to it"});
}

TEST(ValidatorsTest, ClusterEndpointImmutableOnceItHasAHost) {
  const api::TerraformCluster none = t::minimalTerraformCluster();
  api::TerraformCluster set = none;
  set.spec.control_plane_endpoint = api::ApiEndpoint{"api.example.com", 6443};
  api::TerraformCluster moved = set;
  moved.spec.control_plane_endpoint->port = 443;
  api::TerraformCluster cleared = set;
  cleared.spec.control_plane_endpoint.reset();
  api::TerraformCluster port_only = none;
  port_only.spec.control_plane_endpoint = api::ApiEndpoint{"", 6443};

  EXPECT_TRUE(validateTerraformClusterUpdate(none, set).empty());
  EXPECT_TRUE(validateTerraformClusterUpdate(port_only, set).empty());
  EXPECT_TRUE(validateTerraformClusterUpdate(set, set).empty());
  const Strings want{"spec.controlPlaneEndpoint: Invalid value: is immutable once it has a host "
                     "(it is \"api.example.com:6443\"); the endpoint of a running cluster cannot "
                     "move"};
  EXPECT_EQ(strings(validateTerraformClusterUpdate(set, moved)), want);
  EXPECT_EQ(strings(validateTerraformClusterUpdate(set, cleared)), want);

  // Everything else of a cluster is mutable.
  api::TerraformCluster changed = set;
  changed.spec.source.image = "registry.example.com/modules/cluster:v2.0.0";
  changed.spec.identity_ref.name = "other";
  changed.spec.variables = {{"region", "x"}};
  changed.spec.apply_policy = api::ApplyPolicy::kManual;
  EXPECT_TRUE(validateTerraformClusterUpdate(set, changed).empty());
}

// ---- TerraformMachine -------------------------------------------------------------

TEST(ValidatorsTest, MachineImmutableFields) {
  constexpr const char* kWhy =
      "is immutable: a TerraformMachine is never changed in place; change the "
      "TerraformMachineTemplate and let Cluster API roll out new Machines";
  const api::TerraformMachine old_obj = t::minimalTerraformMachine();
  const std::vector<Case<api::TerraformMachine>> cases = {
      {"unchanged", [](auto&) {}, {}},
      {"mutable fields",
       [](auto& m) {
         m.spec.jobs = api::JobPolicy{};
         m.spec.jobs->active_deadline_seconds = 10;
         m.spec.drift = api::MachineDriftPolicy{0};
         m.spec.remediation = api::MachineRemediation{true, 3, 300};
         m.metadata.labels["x"] = "y";
       },
       {}},
      {"source",
       [](auto& m) { m.spec.source.image = "registry.example.com/modules/machine:v2"; },
       {std::string("spec.source: Invalid value: ") + kWhy}},
      {"pull policy is part of source",
       [](auto& m) { m.spec.source.image_pull_policy = api::PullPolicy::kAlways; },
       {std::string("spec.source: Invalid value: ") + kWhy}},
      {"identity unset to set",
       [](auto& m) { m.spec.identity_ref = api::IdentityReference{"x"}; },
       {std::string("spec.identityRef: Invalid value: ") + kWhy +
        " (this includes setting it when it was unset)"}},
      {"variables and variablesFrom",
       [](auto& m) {
         m.spec.variables = {{"a", 1}};
         m.spec.variables_from = {
             api::VariablesSource{api::VariablesSourceReference{"v"}, {}, {}, {}}};
       },
       {std::string("spec.variables: Invalid value: ") + kWhy,
        std::string("spec.variablesFrom: Invalid value: ") + kWhy}},
      {"providerID set once", [](auto& m) { m.spec.provider_id = "aws:///i-1"; }, {}},
  };
  for (const auto& c : cases) {
    api::TerraformMachine obj = old_obj;
    c.mutate(obj);
    EXPECT_EQ(strings(validateTerraformMachineUpdate(old_obj, obj)), c.want) << c.name;
  }

  api::TerraformMachine with_id = old_obj;
  with_id.spec.provider_id = "aws:///i-1";
  api::TerraformMachine changed_id = with_id;
  changed_id.spec.provider_id = "aws:///i-2";
  api::TerraformMachine cleared_id = with_id;
  cleared_id.spec.provider_id.reset();
  EXPECT_EQ(strings(validateTerraformMachineUpdate(with_id, changed_id)),
            Strings{"spec.providerID: Invalid value: \"aws:///i-2\": can only change from unset "
                    "to set; it is already \"aws:///i-1\""});
  EXPECT_EQ(strings(validateTerraformMachineUpdate(with_id, cleared_id)),
            Strings{"spec.providerID: Invalid value: \"\": can only change from unset to set; "
                    "it is already \"aws:///i-1\""});
}

TEST(ValidatorsTest, UpdatesRatchetErrorsTheStoredObjectAlreadyHad) {
  // A stored object that breaks a rule (for example one added later) can
  // still get its finalizer removed or its labels changed.
  api::TerraformMachinePool stored = t::minimalTerraformMachinePool();
  stored.spec.source.image = "r.example.com/NoTag";
  api::TerraformMachinePool relabelled = stored;
  relabelled.metadata.finalizers.clear();
  EXPECT_TRUE(validateTerraformMachinePoolUpdate(stored, relabelled).empty());
  // Touching the offending field is validated again.
  api::TerraformMachinePool edited = stored;
  edited.spec.source.image = "r.example.com/StillBad";
  EXPECT_EQ(validateTerraformMachinePoolUpdate(stored, edited).size(), 1U);
}

TEST(ValidatorsTest, PoolIsFullyMutable) {
  const api::TerraformMachinePool old_obj = t::fullTerraformMachinePool();
  api::TerraformMachinePool obj = old_obj;
  obj.spec.source.image = "registry.example.com/modules/pool:v9";
  obj.spec.identity_ref = api::IdentityReference{"other"};
  obj.spec.variables = {{"size", 3}};
  obj.spec.variables_from.clear();
  obj.spec.provider_id = "other";
  obj.spec.provider_id_list = {"a"};
  obj.spec.jobs.reset();
  EXPECT_TRUE(validateTerraformMachinePoolUpdate(old_obj, obj).empty());
}

// ---- templates ----------------------------------------------------------------------

TEST(ValidatorsTest, TemplateSpecImmutableExceptTopologyDryRun) {
  const api::TerraformMachineTemplate old_obj = t::minimalTerraformMachineTemplate();
  api::TerraformMachineTemplate changed = old_obj;
  changed.spec.template_.spec.source.image = "registry.example.com/modules/machine:v2";
  api::TerraformMachineTemplate relabelled = old_obj;
  relabelled.spec.template_.metadata = api::TemplateObjectMeta{{{"a", "b"}}, {}};

  EXPECT_TRUE(
      validateTerraformMachineTemplateUpdate(old_obj, relabelled, TopologyDryRun::kNo).empty());
  EXPECT_EQ(strings(validateTerraformMachineTemplateUpdate(old_obj, changed, TopologyDryRun::kNo)),
            Strings{"spec.template.spec: Invalid value: is immutable: create a new "
                    "TerraformMachineTemplate and point the MachineDeployment, control plane or "
                    "ClusterClass at it instead"});
  EXPECT_TRUE(
      validateTerraformMachineTemplateUpdate(old_obj, changed, TopologyDryRun::kYes).empty());

  api::TerraformClusterTemplate ct = t::minimalTerraformClusterTemplate();
  api::TerraformClusterTemplate ct2 = ct;
  ct2.spec.template_.spec.identity_ref.name = "other";
  EXPECT_EQ(strings(validateTerraformClusterTemplateUpdate(ct, ct2, TopologyDryRun::kNo)),
            Strings{"spec.template.spec: Invalid value: is immutable: create a new "
                    "TerraformClusterTemplate and point the ClusterClass at it instead"});

  api::TerraformMachinePoolTemplate pt = t::minimalTerraformMachinePoolTemplate();
  api::TerraformMachinePoolTemplate pt2 = pt;
  pt2.spec.template_.spec.variables = {{"a", 1}};
  EXPECT_EQ(strings(validateTerraformMachinePoolTemplateUpdate(pt, pt2, TopologyDryRun::kNo)),
            Strings{"spec.template.spec: Invalid value: is immutable: create a new "
                    "TerraformMachinePoolTemplate and point the ClusterClass at it instead"});
  EXPECT_TRUE(validateTerraformMachinePoolTemplateUpdate(pt, pt2, TopologyDryRun::kYes).empty());
}

// A ClusterClass's patches may supply the identity: a template without one
// is accepted, a TerraformCluster without one is not.
TEST(ValidatorsTest, AClusterTemplateMayLeaveTheIdentityToTheClass) {
  api::TerraformClusterTemplate tmpl = t::minimalTerraformClusterTemplate();
  tmpl.spec.template_.spec.identity_ref.name.clear();
  EXPECT_TRUE(validateTerraformClusterTemplateCreate(tmpl).empty());
  api::TerraformCluster cluster = t::minimalTerraformCluster();
  cluster.spec.identity_ref.name.clear();
  EXPECT_FALSE(validateTerraformClusterCreate(cluster).empty());
}

TEST(ValidatorsTest, TopologyDryRunNeedsBothSignals) {
  api::ObjectMeta annotated;
  annotated.annotations["topology.cluster.x-k8s.io/dry-run"] = "";
  EXPECT_EQ(topologyDryRun(true, annotated), TopologyDryRun::kYes);
  EXPECT_EQ(topologyDryRun(false, annotated), TopologyDryRun::kNo);
  EXPECT_EQ(topologyDryRun(true, api::ObjectMeta{}), TopologyDryRun::kNo);
}

// ---- TerraformClusterIdentity ---------------------------------------------------------

TEST(ValidatorsTest, IdentityAllowedNamespaces) {
  runCreateCases<api::TerraformClusterIdentity>(
      {
          {"unset", [](auto&) {}, {}},
          {"list",
           [](auto& i) {
             i.spec.allowed_namespaces = api::AllowedNamespaces{{"a"}, {}};
           },
           {}},
          {"selector everything",
           [](auto& i) {
             i.spec.allowed_namespaces = api::AllowedNamespaces{{}, api::LabelSelector{}};
           },
           {}},
          {"empty object",
           [](auto& i) { i.spec.allowed_namespaces = api::AllowedNamespaces{}; },
           {"spec.allowedNamespaces: Required value: at least one of list and selector must be "
            "set; omit allowedNamespaces to allow no namespace, or use selector: {} to allow "
            "all"}},
      },
      t::minimalTerraformClusterIdentity, validateTerraformClusterIdentityCreate);
}

TEST(ValidatorsTest, ReportsEveryErrorAtOnce) {
  api::TerraformCluster cluster = t::minimalTerraformCluster();
  cluster.spec.source.image = "NOPE";
  cluster.spec.variables = {{"captf_a", 1}};
  cluster.spec.variables_from = {api::VariablesSource{}};
  cluster.spec.jobs = api::JobPolicy{};
  cluster.spec.jobs->lock_timeout_seconds = 10;
  cluster.spec.jobs->active_deadline_seconds = 5;
  EXPECT_EQ(validateTerraformClusterCreate(cluster).size(), 4U);
}

} // namespace
} // namespace captf::webhooks
