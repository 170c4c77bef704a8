#include "manager/api/workspace.h"

#include "manager/api/describe.h"
#include "manager/api/patterns.h"

namespace captf::api {

template <> struct Describe<GitReference> {
  static constexpr std::string_view kDoc =
      "The Git ref the module is taken from: exactly one of branch, tag or commit. A branch or "
      "tag is resolved to a commit by the manager's ref watcher; a commit is used as is.";
  static auto fields() {
    return std::tuple{
        field("branch", &GitReference::branch)
            .doc("Branch name (without refs/heads/). A new commit on it re-applies a cluster or "
                 "pool within one poll interval; machines report it and keep theirs.")
            .length(1, 255),
        field("tag", &GitReference::tag).doc("Tag name (without refs/tags/).").length(1, 255),
        field("commit", &GitReference::commit)
            .doc("Full 40-digit commit id.")
            .length(40, 40)
            .pattern("^[0-9a-f]{40}$"),
    };
  }
  static void patch(Schema& s) {
    s.validations.push_back(
        CelRule{"[has(self.branch), has(self.tag), has(self.commit)].filter(x, x).size() == 1",
                "exactly one of branch, tag and commit must be set", "", ""});
  }
};

template <> struct Describe<GitSource> {
  static constexpr std::string_view kDoc =
      "A module in a Git repository, run with the runtime of a separate image. The Job fetches "
      "exactly the resolved commit before the runner runs; no git binary is needed.";
  static auto fields() {
    return std::tuple{
        field("url", &GitSource::url)
            .required()
            .doc("Repository URL: https://host/path, ssh://user@host/path or user@host:path. No "
                 "credentials in the URL; they come from secretRef.")
            .length(1, 2048),
        field("ref", &GitSource::ref).required().doc("The branch, tag or commit to use."),
        field("path", &GitSource::path)
            .doc("Directory of the module inside the repository, relative, without '..'; the "
                 "repository root when empty.")
            .length(0, 1024),
        field("secretRef", &GitSource::secret_ref)
            .doc("A Secret in the object's namespace with the credentials: username and password, "
                 "or token (HTTPS); ssh-privatekey and known_hosts (SSH, host keys always "
                 "verified); optionally ca.crt for an HTTPS server with a private CA."),
        field("runtimeImage", &GitSource::runtime_image)
            .required()
            .doc("Image with the runtime (tofu or terraform) at /captf/runtime and optionally a "
                 "provider mirror at /captf/providers; its /captf/module, if any, is not used.")
            .length(1, 512),
    };
  }
};

template <> struct Describe<Source> {
  static constexpr std::string_view kDoc =
      "Where the module comes from: exactly one of image (an OCI image holding the role module at "
      "/captf/module, the runtime at /captf/runtime and optionally a provider mirror at "
      "/captf/providers) and git (a repository at a commit, beside a runtime image).";
  static auto fields() {
    return std::tuple{
        field("image", &Source::image)
            .doc("Image reference, registry/repository:tag or registry/repository@sha256:digest. "
                 "The tag or digest is the module version. The admission webhook checks the "
                 "syntax only; pull secrets come from jobs.imagePullSecrets.")
            .length(1, 512),
        field("git", &Source::git).doc("A module in a Git repository."),
        field("imagePullPolicy", &Source::image_pull_policy)
            .doc("When the kubelet pulls the image (or git.runtimeImage): IfNotPresent (the "
                 "default), Always or Never. Not part of the inputs hash: a change alone starts no "
                 "Job."),
    };
  }
  static void patch(Schema& s) {
    s.validations.push_back(CelRule{"has(self.image) != has(self.git)",
                                    "exactly one of image and git must be set", "", ""});
  }
};

template <> struct Describe<IdentityReference> {
  static constexpr std::string_view kDoc =
      "A reference to a cluster-scoped TerraformClusterIdentity.";
  static auto fields() {
    return std::tuple{
        field("name", &IdentityReference::name)
            .required()
            .doc("Name of the TerraformClusterIdentity.")
            .length(1, 253),
    };
  }
};

template <> struct Describe<JobPolicy> {
  static constexpr std::string_view kDoc =
      "How runner Jobs are built. Every field is optional; defaults are resolved when a Job is "
      "built and never written back. Jobs always have backoffLimit 0 and no TTL.";
  static auto fields() {
    return std::tuple{
        field("successfulJobsHistoryLimit", &JobPolicy::successful_jobs_history_limit)
            .doc("Succeeded Jobs kept per operation (default 3). The newest succeeded Job of each "
                 "operation is kept even at 0.")
            .range(0, 100),
        field("failedJobsHistoryLimit", &JobPolicy::failed_jobs_history_limit)
            .doc("Failed Jobs kept per operation (default 3). The newest failed Job of an "
                 "operation is kept even at 0 while no newer Job of it succeeded. Also bounds the "
                 "retry backoff and the drift-remediation failure cap.")
            .range(0, 100),
        field("activeDeadlineSeconds", &JobPolicy::active_deadline_seconds)
            .doc("Deadline of each Job in seconds (default 3600).")
            .range(1, 86400),
        field("serviceAccountName", &JobPolicy::service_account_name)
            .doc("ServiceAccount of the runner pod (default captf-runner, created by the "
                 "controller). An override must exist and carry the label captf.io/runner=true, "
                 "or no Job is created.")
            .length(1, 253),
        field("lockTimeoutSeconds", &JobPolicy::lock_timeout_seconds)
            .doc("How long the runtime waits for the state lock (-lock-timeout), default 300. "
                 "When this policy also sets activeDeadlineSeconds it must be smaller.")
            .range(0, 3600),
        field("imagePullSecrets", &JobPolicy::image_pull_secrets)
            .doc("Secrets to pull the source image and the runner init image with.")
            .items(1, 10),
        field("resources", &JobPolicy::resources)
            .doc("Resources of the module container. Default: requests cpu 250m and memory "
                 "512Mi, limit memory 2Gi, no CPU limit. Replaced as a whole when set. An "
                 "ephemeral-storage request of the scratch volumes' size limits is added unless "
                 "these resources name ephemeral-storage."),
        field("env", &JobPolicy::env)
            .doc("Extra environment of the module container. Names starting with TF_ or KUBE_ "
                 "are dropped with an event.")
            .items(1, 64),
        field("securityContext", &JobPolicy::security_context)
            .doc("Security context of the module container, applied on top of the defaults "
                 "(seccomp RuntimeDefault, drop ALL capabilities, no privilege escalation, "
                 "read-only root filesystem). What Pod Security baseline forbids is rejected: "
                 "privileged: true, allowPrivilegeEscalation: true, capabilities.add, a procMount "
                 "other than Default, Unconfined seccomp or AppArmor profiles, a SELinux type "
                 "other than container_t, a SELinux user or role, and hostProcess."),
        field("podSecurityContext", &JobPolicy::pod_security_context)
            .doc("Security context of the runner pod. Default: seccomp RuntimeDefault, fsGroup "
                 "65532. Unconfined seccomp or AppArmor profiles, a SELinux type other than "
                 "container_t, a SELinux user or role, hostProcess and sysctls are rejected. Pod "
                 "Security restricted needs runAsNonRoot: true and a non-zero runAsUser here."),
    };
  }
};

template <> struct Describe<VariablesSourceReference> {
  static constexpr std::string_view kDoc =
      "A ConfigMap or Secret in the object's namespace labelled captf.io/variables=true.";
  static auto fields() {
    return std::tuple{
        field("name", &VariablesSourceReference::name)
            .required()
            .doc("Name of the ConfigMap or Secret.")
            .length(1, 253)
            .pattern(kDnsSubdomainPattern),
    };
  }
};

template <> struct Describe<VariablesSource> {
  static constexpr std::string_view kDoc =
      "A ConfigMap or Secret whose every data key becomes a module variable of the same name. "
      "Exactly one of configMapRef and secretRef is set.";
  static auto fields() {
    return std::tuple{
        field("configMapRef", &VariablesSource::config_map_ref)
            .doc("The ConfigMap to read (data and binaryData)."),
        field("secretRef", &VariablesSource::secret_ref)
            .doc("The Secret to read. Variables whose winning value comes from a Secret are "
                 "declared sensitive."),
        field("optional", &VariablesSource::optional)
            .doc("When true a missing or unlabelled source contributes nothing instead of "
                 "blocking the object (default false)."),
        field("format", &VariablesSource::format)
            .doc("String (the default): each value is a string converted by the module's "
                 "declared type. JSON: each value is parsed as JSON."),
    };
  }
  static void patch(Schema& s) {
    s.validations.push_back(CelRule{
        "has(self.configMapRef) != has(self.secretRef)",
        "exactly one of configMapRef and secretRef must be set",
        "",
        "",
    });
  }
};

template <> struct Describe<DriftPolicy> {
  static constexpr std::string_view kDoc = "How and how often drift is checked.";
  static auto fields() {
    return std::tuple{
        field("intervalSeconds", &DriftPolicy::interval_seconds)
            .doc("Seconds between drift checks (default: the manager's --drift-default-interval, "
                 "30m). 0 disables drift checks and every health sample after provisioning.")
            .minimum(0),
        field("action", &DriftPolicy::action)
            .doc("Report (the default) records drift; Remediate re-applies the module."),
    };
  }
};

template <> struct Describe<MachineDriftPolicy> {
  static constexpr std::string_view kDoc =
      "How often machine drift is checked. Machine drift is always reported, never remediated.";
  static auto fields() {
    return std::tuple{
        field("intervalSeconds", &MachineDriftPolicy::interval_seconds)
            .doc("Seconds between drift checks (default: the manager's --drift-default-interval). "
                 "0 disables them and, unless remediation.annotateMachine is true, health "
                 "samples after provisioning.")
            .minimum(0),
    };
  }
};

template <> struct Describe<MachinePoolDriftPolicy> {
  static constexpr std::string_view kDoc = "How and how often pool drift is checked.";
  static auto fields() {
    return std::tuple{
        field("intervalSeconds", &MachinePoolDriftPolicy::interval_seconds)
            .doc("Seconds between drift checks. Unset means the manager's "
                 "--drift-default-interval; pool drift checks cannot be disabled.")
            .minimum(1),
        field("action", &MachinePoolDriftPolicy::action)
            .doc("Report (the default) or Remediate. Never inherited from the cluster."),
    };
  }
};

template <> struct Describe<MachineRemediation> {
  static constexpr std::string_view kDoc =
      "Whether unhealthy instances ask Cluster API to remediate their Machine.";
  static auto fields() {
    return std::tuple{
        field("annotateMachine", &MachineRemediation::annotate_machine)
            .doc("When true, set cluster.x-k8s.io/remediate-machine on the owner Machine after "
                 "unhealthyThreshold consecutive unhealthy samples, or at once for a terminated "
                 "instance. Takes effect only if a MachineHealthCheck selects the Machine."),
        field("unhealthyThreshold", &MachineRemediation::unhealthy_threshold)
            .doc("Consecutive unhealthy samples (completed refresh or drift Jobs) before "
                 "remediation is requested (default 3).")
            .range(1, 100),
        field("healthCheckIntervalSeconds", &MachineRemediation::health_check_interval_seconds)
            .doc("With annotateMachine, seconds between health refreshes of a provisioned "
                 "machine, independent of drift (default 300).")
            .range(60, 86400),
    };
  }
};

template <> struct Describe<AllowedNamespaces> {
  static constexpr std::string_view kDoc =
      "Namespaces whose objects may use the identity: those listed OR those selected. At least "
      "one of list and selector must be set.";
  static auto fields() {
    return std::tuple{
        field("list", &AllowedNamespaces::list)
            .doc("Namespace names.")
            .items(1, 100)
            .itemLength(1, 63)
            .itemPattern(kDnsLabelPattern)
            .listType("set"),
        field("selector", &AllowedNamespaces::selector)
            .doc("A label selector over namespaces; {} matches every namespace, including "
                 "future ones."),
    };
  }
  static void patch(Schema& s) {
    s.validations.push_back(CelRule{
        "has(self.list) || has(self.selector)",
        "at least one of list and selector must be set",
        "",
        "",
    });
  }
};

template <> struct Describe<SecretReference> {
  static constexpr std::string_view kDoc = "A reference to a Secret in any namespace.";
  static auto fields() {
    return std::tuple{
        field("name", &SecretReference::name)
            .required()
            .doc("Name of the Secret.")
            .length(1, 253)
            .pattern(kDnsSubdomainPattern),
        field("namespace", &SecretReference::namespace_)
            .required()
            .doc("Namespace of the Secret.")
            .length(1, 63)
            .pattern(kDnsLabelPattern),
    };
  }
};

template <> struct Describe<ActiveJob> {
  static constexpr std::string_view kDoc = "The runner Job currently running.";
  static auto fields() {
    return std::tuple{
        field("name", &ActiveJob::name).required().doc("Name of the Job.").length(1, 63),
        field("operation", &ActiveJob::operation)
            .required()
            .doc("Operation the Job runs: apply, destroy, drift, refresh, restore or plan."),
        field("attempt", &ActiveJob::attempt)
            .required()
            .doc("The a<N> in the Job name: sequence number of this operation's Jobs (not a "
                 "retry count).")
            .minimum(1),
        field("startTime", &ActiveJob::start_time).doc("When the Job started."),
    };
  }
};

template <> struct Describe<RunStep> {
  static constexpr std::string_view kDoc = "One runtime step of a run.";
  static auto fields() {
    return std::tuple{
        field("name", &RunStep::name)
            .required()
            .doc("Step name: init, validate, plan, apply, apply-refresh-only, ...")
            .length(1, 64),
        field("exitCode", &RunStep::exit_code).required().doc("Exit code of the step."),
        field("durationMilliseconds", &RunStep::duration_milliseconds)
            .doc("How long the step took.")
            .minimum(0),
    };
  }
};

template <> struct Describe<RunError> {
  static constexpr std::string_view kDoc = "Why a run failed.";
  static auto fields() {
    return std::tuple{
        field("kind", &RunError::kind)
            .required()
            .doc("image-layout: the image breaks the image contract; step: a step failed; "
                 "interrupted: stopped from outside (SIGTERM); blocked: a destructive plan "
                 "awaits approval; plan-changed: an approved plan changed."),
        field("step", &RunError::step).doc("The failed step, for kind step.").length(1, 64),
        field("summary", &RunError::summary)
            .doc("The runner's curated description of the failure (never raw output).")
            .length(1, 512),
    };
  }
};

template <> struct Describe<DriftSummary> {
  static constexpr std::string_view kDoc = "What a drift check found.";
  static auto fields() {
    return std::tuple{
        field("add", &DriftSummary::add).doc("Resources to add.").minimum(0),
        field("change", &DriftSummary::change).doc("Resources to change.").minimum(0),
        field("destroy", &DriftSummary::destroy)
            .doc("Resources to destroy, replacements included.")
            .minimum(0),
        field("resources", &DriftSummary::resources)
            .doc("Addresses of drifted resources.")
            .items(1, 20)
            .itemLength(1, 512),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<LastRun> {
  static constexpr std::string_view kDoc =
      "Result of the most recently completed Job, from the runner's termination message.";
  static auto fields() {
    return std::tuple{
        field("job", &LastRun::job).required().doc("Name of the Job.").length(1, 63),
        field("operation", &LastRun::operation).required().doc("Operation the Job ran."),
        field("steps", &LastRun::steps).doc("Runtime steps in order.").items(1, 16),
        field("error", &LastRun::error).doc("Why the run failed; unset when it succeeded."),
        field("drift", &LastRun::drift).doc("Set when a drift run found changes."),
    };
  }
};

template <> struct Describe<PlanPreview> {
  static constexpr std::string_view kDoc =
      "A plan awaiting approval (applyPolicy Manual). Approve it by setting the annotation "
      "captf.io/approve-plan to planHash.";
  static auto fields() {
    return std::tuple{
        field("inputsHash", &PlanPreview::inputs_hash)
            .required()
            .doc("Inputs hash the plan was made for.")
            .length(1, 128),
        field("job", &PlanPreview::job)
            .required()
            .doc("The plan Job, or an approved apply that found the plan changed.")
            .length(1, 63),
        field("planHash", &PlanPreview::plan_hash)
            .required()
            .doc("The value of captf.io/approve-plan that approves this plan.")
            .length(1, 128),
        field("add", &PlanPreview::add).doc("Resources to add.").minimum(0),
        field("change", &PlanPreview::change).doc("Resources to change.").minimum(0),
        field("destroy", &PlanPreview::destroy)
            .doc("Resources to destroy, replacements included.")
            .minimum(0),
        field("resources", &PlanPreview::resources)
            .doc("\"<address> (<action>)\" sorted by address; action is create, update, delete, "
                 "replace, read or forget.")
            .items(1, 50)
            .itemLength(1, 600),
        field("truncated", &PlanPreview::truncated)
            .doc("True when resources lists fewer changes than the plan has."),
        field("createdAt", &PlanPreview::created_at).doc("When the plan was made."),
    };
  }
};

template <> struct Describe<SourceStatus> {
  static constexpr std::string_view kDoc = "What the last Job actually ran.";
  static auto fields() {
    return std::tuple{
        field("image", &SourceStatus::image)
            .doc("Image reference of the last run, as in spec.")
            .length(1, 512),
        field("imageDigest", &SourceStatus::image_digest)
            .doc("Image ID reported by the pod (informational).")
            .length(1, 512),
        field("runtimeVersion", &SourceStatus::runtime_version)
            .doc("Version of the runtime (tofu or terraform) that ran.")
            .length(1, 64),
        field("commit", &SourceStatus::commit)
            .doc("Git sources: the commit the last apply ran.")
            .length(40, 40),
        field("latestCommit", &SourceStatus::latest_commit)
            .doc("Git sources: the commit spec.source.git.ref resolves to now. A machine that "
                 "differs from commit keeps its commit (machines are immutable).")
            .length(40, 40),
        field("resolvedAt", &SourceStatus::resolved_at)
            .doc("Git sources: when the ref watcher last resolved the ref."),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<StateBackup> {
  static constexpr std::string_view kDoc =
      "A state backup. Restore it by setting the annotation captf.io/restore-state to serial.";
  static auto fields() {
    return std::tuple{
        field("serial", &StateBackup::serial)
            .required()
            .doc("State serial; the value for captf.io/restore-state.")
            .minimum(1),
        field("takenAt", &StateBackup::taken_at).required().doc("When the backup was taken."),
        field("bytes", &StateBackup::bytes)
            .required()
            .doc("Compressed size summed over the backup's Secrets.")
            .minimum(1),
    };
  }
};

template <> struct Describe<Initialization> {
  static constexpr std::string_view kDoc = "Cluster API's initialization status.";
  static auto fields() {
    return std::tuple{
        field("provisioned", &Initialization::provisioned)
            .doc("True once the infrastructure is provisioned; latched for the object's life."),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<NodeInfo> {
  static constexpr std::string_view kDoc =
      "Node properties for scale from zero, from the image label io.captf.node-info.";
  static auto fields() {
    return std::tuple{
        field("architecture", &NodeInfo::architecture)
            .doc("CPU architecture: amd64, arm64, s390x or ppc64le."),
        field("operatingSystem", &NodeInfo::operating_system)
            .doc("Operating system, for example linux.")
            .length(1, 64),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<CapacitySource> {
  static constexpr std::string_view kDoc = "Where capacity and nodeInfo were resolved from.";
  static auto fields() {
    return std::tuple{
        field("image", &CapacitySource::image)
            .required()
            .doc("The spec image reference they were resolved from; a different spec image is "
                 "resolved again.")
            .length(1, 512),
    };
  }
};

template <> struct Describe<MachinePoolInstance> {
  static constexpr std::string_view kDoc = "One instance of the pool's scaling group.";
  static auto fields() {
    return std::tuple{
        field("providerID", &MachinePoolInstance::provider_id)
            .required()
            .doc("Provider ID of the instance; equals its Node's spec.providerID.")
            .length(1, 512),
        field("instanceID", &MachinePoolInstance::instance_id)
            .doc("The provider's instance ID.")
            .length(1, 256),
        field("addresses", &MachinePoolInstance::addresses)
            .doc("Addresses of the instance.")
            .items(1, 256),
        field("failureDomain", &MachinePoolInstance::failure_domain)
            .doc("Failure domain of the instance.")
            .length(1, 256),
        field("state", &MachinePoolInstance::state)
            .doc("Health state: pending, running, degraded, stopped, terminated or unknown."),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

CAPTF_API_DEFINE_CODEC(GitReference)
CAPTF_API_DEFINE_CODEC(GitSource)
CAPTF_API_DEFINE_CODEC(Source)
CAPTF_API_DEFINE_CODEC(IdentityReference)
CAPTF_API_DEFINE_CODEC(JobPolicy)
CAPTF_API_DEFINE_CODEC(VariablesSourceReference)
CAPTF_API_DEFINE_CODEC(VariablesSource)
CAPTF_API_DEFINE_CODEC(DriftPolicy)
CAPTF_API_DEFINE_CODEC(MachineDriftPolicy)
CAPTF_API_DEFINE_CODEC(MachinePoolDriftPolicy)
CAPTF_API_DEFINE_CODEC(MachineRemediation)
CAPTF_API_DEFINE_CODEC(AllowedNamespaces)
CAPTF_API_DEFINE_CODEC(SecretReference)
CAPTF_API_DEFINE_CODEC(ActiveJob)
CAPTF_API_DEFINE_CODEC(RunStep)
CAPTF_API_DEFINE_CODEC(RunError)
CAPTF_API_DEFINE_CODEC(DriftSummary)
CAPTF_API_DEFINE_CODEC(LastRun)
CAPTF_API_DEFINE_CODEC(PlanPreview)
CAPTF_API_DEFINE_CODEC(SourceStatus)
CAPTF_API_DEFINE_CODEC(StateBackup)
CAPTF_API_DEFINE_CODEC(Initialization)
CAPTF_API_DEFINE_CODEC(NodeInfo)
CAPTF_API_DEFINE_CODEC(CapacitySource)
CAPTF_API_DEFINE_CODEC(MachinePoolInstance)

} // namespace captf::api
