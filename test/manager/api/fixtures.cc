#include "test/manager/api/fixtures.h"

namespace captf::api::testing {
namespace {

Time at(std::int64_t seconds) {
  return Time{std::chrono::sys_seconds{std::chrono::seconds{seconds}}};
}

ObjectMeta fullMeta(std::string name) {
  ObjectMeta m;
  m.name = std::move(name);
  m.generate_name = "gen-";
  m.namespace_ = "team-a";
  m.uid = "0b6e3a2c-6f0e-4a43-9a55-4a0b3c6f7d10";
  m.resource_version = "12345";
  m.generation = 3;
  m.creation_timestamp = at(1700000000);
  m.deletion_timestamp = at(1700000600);
  m.deletion_grace_period_seconds = 30;
  m.labels = {{"cluster.x-k8s.io/cluster-name", "prod"}};
  m.annotations = {{"note", "x"}};
  m.owner_references = {{"cluster.x-k8s.io/v1beta2", "Machine", "prod-md-0-abc",
                         "9d8c7b6a-0000-4000-8000-000000000001", true, true}};
  m.finalizers = {"terraformmachine.infrastructure.cluster.x-k8s.io"};
  return m;
}

SecurityContext fullSecurityContext() {
  SecurityContext sc;
  sc.capabilities = Capabilities{{}, {"ALL"}};
  sc.capabilities->add = {"NET_BIND_SERVICE"};
  sc.privileged = false;
  sc.se_linux_options = SELinuxOptions{"u", "r", "t", "s0"};
  sc.windows_options = WindowsSecurityContextOptions{"gmsa", "{}", "runner", false};
  sc.run_as_user = 65532;
  sc.run_as_group = 65532;
  sc.run_as_non_root = true;
  sc.read_only_root_filesystem = true;
  sc.allow_privilege_escalation = false;
  sc.proc_mount = "Default";
  sc.seccomp_profile = ProfileReference{"Localhost", "profiles/runner.json"};
  sc.app_armor_profile = ProfileReference{"Localhost", "runner"};
  return sc;
}

PodSecurityContext fullPodSecurityContext() {
  PodSecurityContext p;
  p.se_linux_options = SELinuxOptions{"u", "r", "t", "s0"};
  p.windows_options = WindowsSecurityContextOptions{"gmsa", "{}", "runner", true};
  p.run_as_user = 65532;
  p.run_as_group = 65532;
  p.run_as_non_root = true;
  p.supplemental_groups = {1000, 2000};
  p.supplemental_groups_policy = "Merge";
  p.fs_group = 65532;
  p.sysctls = {{"net.ipv4.ip_local_port_range", "1024 65535"}};
  p.fs_group_change_policy = "OnRootMismatch";
  p.seccomp_profile = ProfileReference{"Localhost", "profiles/pod.json"};
  p.app_armor_profile = ProfileReference{"Localhost", "pod"};
  p.se_linux_change_policy = "MountOption";
  return p;
}

JobPolicy fullJobPolicy() {
  JobPolicy j;
  j.successful_jobs_history_limit = 2;
  j.failed_jobs_history_limit = 4;
  j.active_deadline_seconds = 1800;
  j.service_account_name = "custom-runner";
  j.lock_timeout_seconds = 120;
  j.image_pull_secrets = {{"regcred"}};
  j.resources = ResourceRequirements{
      {{"memory", {"2Gi"}}}, {{"cpu", {"250m"}}, {"memory", {"512Mi"}}}, {{"gpu", "first"}}};
  EnvVarSource from;
  from.field_ref = ObjectFieldSelector{"v1", "metadata.name"};
  from.resource_field_ref = ResourceFieldSelector{"module", "limits.memory", Quantity{"1Mi"}};
  from.config_map_key_ref = KeySelector{"settings", "region", true};
  from.secret_key_ref = KeySelector{"tokens", "api", false};
  j.env = {{"HTTPS_PROXY", "http://proxy:3128", std::nullopt}, {"FROM", "", from}};
  j.security_context = fullSecurityContext();
  j.pod_security_context = fullPodSecurityContext();
  return j;
}

WorkspaceSpec fullWorkspaceSpec(std::string image) {
  WorkspaceSpec w;
  w.source = Source{std::move(image), PullPolicy::kAlways};
  // Every field encoded once (admission refuses image and git together).
  GitSource git;
  git.url = "https://git.example.com/org/modules.git";
  git.ref = GitReference{"main", "v1.2.3", std::string(40, 'c')};
  git.path = "cluster";
  git.secret_ref = LocalObjectReference{"git-credentials"};
  git.runtime_image = "registry.example.com/runtimes/tofu:1.12.6";
  w.source.git = git;
  w.jobs = fullJobPolicy();
  w.variables = {{"region", "eu-west-1"}, {"sizes", {{"small", 1}, {"large", 4}}}};
  w.variables_from = {
      VariablesSource{VariablesSourceReference{"common"}, std::nullopt, true,
                      VariablesFormat::kJson},
      VariablesSource{std::nullopt, VariablesSourceReference{"secret-vars"}, false,
                      VariablesFormat::kString},
  };
  return w;
}

void fillWorkspaceStatus(WorkspaceStatus& s) {
  s.conditions = {{"Ready", ConditionStatus::kTrue, 3, at(1700000100), "Ready", ""},
                  {"DriftDetected", ConditionStatus::kFalse, 3, at(1700000200), "NoDrift",
                   "drift Job found nothing"}};
  s.initialization = Initialization{true};
  s.observed_generation = 3;
  s.active_job = ActiveJob{"prod-apply-a2-1a2b3c", Operation::kApply, 2, at(1700000300)};
  RunError err{RunErrorKind::kStep, "apply", "provider returned 403"};
  DriftSummary drift{1, 2, 0, {"aws_instance.this"}};
  s.last_run = LastRun{"prod-drift-a1-ffeedd",
                       Operation::kDrift,
                       {{"init", 0, 1200}, {"plan", 2, 3400}},
                       err,
                       drift};
  s.last_drift_check = at(1700000400);
  s.last_refresh = at(1700000500);
  s.pending_refreshes = 2;
  s.observed_state_serial = 17;
  s.state_secret_suffix = "0123456789abcdef-c";
  s.source =
      SourceStatus{"registry.example.com/modules/cluster:v1.2.3",
                   "registry.example.com/modules/cluster@sha256:" + std::string(64, 'a'), "1.12.6"};
  s.source->commit = std::string(40, 'c');
  s.source->latest_commit = std::string(40, 'd');
  s.source->resolved_at = at(1700000600);
  s.state_backups = {{17, at(1700000000), 2048}, {16, at(1699990000), 1990}};
}

TerraformClusterSpec fullClusterSpec() {
  TerraformClusterSpec spec;
  static_cast<WorkspaceSpec&>(spec) =
      fullWorkspaceSpec("registry.example.com/modules/cluster:v1.2.3");
  spec.control_plane_endpoint = ApiEndpoint{"api.prod.example.com", 6443};
  spec.identity_ref = IdentityReference{"aws-prod"};
  spec.drift = DriftPolicy{900, DriftAction::kRemediate};
  spec.apply_policy = ApplyPolicy::kManual;
  spec.defaults = TerraformClusterDefaults{IdentityReference{"aws-workers"}, fullJobPolicy(),
                                           MachineDriftPolicy{0}};
  return spec;
}

TerraformMachineSpec fullMachineSpec() {
  TerraformMachineSpec spec;
  static_cast<WorkspaceSpec&>(spec) =
      fullWorkspaceSpec("registry.example.com/modules/machine@sha256:" + std::string(64, 'b'));
  spec.provider_id = "aws:///eu-west-1a/i-0123456789abcdef0";
  spec.identity_ref = IdentityReference{"aws-prod"};
  spec.drift = MachineDriftPolicy{600};
  spec.remediation = MachineRemediation{true, 5, 120};
  return spec;
}

TerraformMachinePoolSpec fullPoolSpec() {
  TerraformMachinePoolSpec spec;
  static_cast<WorkspaceSpec&>(spec) = fullWorkspaceSpec("localhost:5000/modules/pool:v0.1.0");
  spec.provider_id = "aws:///eu-west-1/asg-prod-pool";
  spec.provider_id_list = {"aws:///eu-west-1a/i-1", "aws:///eu-west-1b/i-2"};
  spec.identity_ref = IdentityReference{"aws-prod"};
  spec.drift = MachinePoolDriftPolicy{300, DriftAction::kReport};
  spec.membership_refresh_interval_seconds = 120;
  return spec;
}

TemplateObjectMeta fullTemplateMeta() {
  return TemplateObjectMeta{{{"tier", "prod"}}, {{"team", "platform"}}};
}

} // namespace

TerraformCluster fullTerraformCluster() {
  TerraformCluster c;
  c.metadata = fullMeta("prod");
  c.spec = fullClusterSpec();
  TerraformClusterStatus status;
  fillWorkspaceStatus(status);
  status.ready = true;
  status.failure_domains = {{"eu-west-1a", true, {{"zone", "a"}}}};
  status.plan =
      PlanPreview{"h2:abc", "prod-plan-a1-123456", "p1:def", 1, 0, 1, {"aws_lb.api (replace)"},
                  true,     at(1700000700)};
  c.status = status;
  return c;
}

TerraformMachine fullTerraformMachine() {
  TerraformMachine m;
  m.metadata = fullMeta("prod-md-0-abc");
  m.spec = fullMachineSpec();
  TerraformMachineStatus status;
  fillWorkspaceStatus(status);
  status.addresses = {{MachineAddressType::kInternalIP, "10.0.0.5"},
                      {MachineAddressType::kHostname, "ip-10-0-0-5"}};
  status.failure_domain = "eu-west-1a";
  status.interruptible = true;
  status.unhealthy_samples = 2;
  status.ready = true;
  m.status = status;
  return m;
}

TerraformMachinePool fullTerraformMachinePool() {
  TerraformMachinePool p;
  p.metadata = fullMeta("prod-pool");
  p.spec = fullPoolSpec();
  TerraformMachinePoolStatus status;
  fillWorkspaceStatus(status);
  status.ready = true;
  status.replicas = 0;
  status.instances = {{"aws:///eu-west-1a/i-1",
                       "i-1",
                       {{MachineAddressType::kInternalIP, "10.0.1.1"}},
                       "eu-west-1a",
                       HealthState::kRunning}};
  p.status = status;
  return p;
}

TerraformClusterTemplate fullTerraformClusterTemplate() {
  TerraformClusterTemplate t;
  t.metadata = fullMeta("prod-cluster");
  t.spec.template_.metadata = fullTemplateMeta();
  t.spec.template_.spec = fullClusterSpec();
  return t;
}

TerraformMachineTemplate fullTerraformMachineTemplate() {
  TerraformMachineTemplate t;
  t.metadata = fullMeta("prod-workers");
  t.spec.template_.metadata = fullTemplateMeta();
  t.spec.template_.spec = fullMachineSpec();
  TerraformMachineTemplateStatus status;
  status.conditions = {{"CapacityResolved", ConditionStatus::kTrue, 1, at(1700000000),
                        "CapacityResolved", "cpu and memory from io.captf.capacity"}};
  status.node_info = NodeInfo{Architecture::kArm64, "linux"};
  status.capacity_source = CapacitySource{"registry.example.com/modules/machine:v1"};
  status.capacity = {{"cpu", {"4"}}, {"memory", {"16Gi"}}};
  t.status = status;
  return t;
}

TerraformMachinePoolTemplate fullTerraformMachinePoolTemplate() {
  TerraformMachinePoolTemplate t;
  t.metadata = fullMeta("prod-pool");
  t.spec.template_.metadata = fullTemplateMeta();
  t.spec.template_.spec = fullPoolSpec();
  return t;
}

TerraformClusterIdentity fullTerraformClusterIdentity() {
  TerraformClusterIdentity i;
  i.metadata = fullMeta("aws-prod");
  i.metadata.namespace_.clear();
  i.spec.secret_ref = SecretReference{"aws-prod-credentials", "captf-system"};
  LabelSelector selector;
  selector.match_labels = {{"captf.io/tenant", "true"}};
  selector.match_expressions = {{"env", "In", {"prod", "staging"}}};
  i.spec.allowed_namespaces = AllowedNamespaces{{"team-a", "team-b"}, selector};
  TerraformClusterIdentityStatus status;
  status.conditions = {{"Ready", ConditionStatus::kTrue, 1, at(1700000000), "SecretFound", ""}};
  status.namespaces = {"team-a"};
  i.status = status;
  return i;
}

TerraformCluster minimalTerraformCluster() {
  TerraformCluster c;
  c.metadata.name = "prod";
  c.metadata.namespace_ = "team-a";
  c.spec.source.image = "registry.example.com/modules/cluster:v1.0.0";
  c.spec.identity_ref.name = "aws-prod";
  return c;
}

TerraformMachine minimalTerraformMachine() {
  TerraformMachine m;
  m.metadata.name = "prod-md-0-abc";
  m.metadata.namespace_ = "team-a";
  m.spec.source.image = "registry.example.com/modules/machine:v1.0.0";
  return m;
}

TerraformMachinePool minimalTerraformMachinePool() {
  TerraformMachinePool p;
  p.metadata.name = "prod-pool";
  p.metadata.namespace_ = "team-a";
  p.spec.source.image = "registry.example.com/modules/pool:v1.0.0";
  return p;
}

TerraformClusterTemplate minimalTerraformClusterTemplate() {
  TerraformClusterTemplate t;
  t.metadata.name = "prod";
  t.metadata.namespace_ = "team-a";
  t.spec.template_.spec = minimalTerraformCluster().spec;
  return t;
}

TerraformMachineTemplate minimalTerraformMachineTemplate() {
  TerraformMachineTemplate t;
  t.metadata.name = "prod-workers";
  t.metadata.namespace_ = "team-a";
  t.spec.template_.spec = minimalTerraformMachine().spec;
  return t;
}

TerraformMachinePoolTemplate minimalTerraformMachinePoolTemplate() {
  TerraformMachinePoolTemplate t;
  t.metadata.name = "prod-pool";
  t.metadata.namespace_ = "team-a";
  t.spec.template_.spec = minimalTerraformMachinePool().spec;
  return t;
}

TerraformClusterIdentity minimalTerraformClusterIdentity() {
  TerraformClusterIdentity i;
  i.metadata.name = "aws-prod";
  i.spec.secret_ref = SecretReference{"aws-prod-credentials", "captf-system"};
  return i;
}

} // namespace captf::api::testing
