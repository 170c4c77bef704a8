#include "manager/api/core_types.h"

#include "manager/api/describe.h"

namespace captf::api {

template <> struct Describe<OwnerReference> {
  static constexpr std::string_view kDoc = "An object that owns this one.";
  static auto fields() {
    return std::tuple{
        field("apiVersion", &OwnerReference::api_version).required(),
        field("kind", &OwnerReference::kind).required(),
        field("name", &OwnerReference::name).required(),
        field("uid", &OwnerReference::uid).required(),
        field("controller", &OwnerReference::controller),
        field("blockOwnerDeletion", &OwnerReference::block_owner_deletion),
    };
  }
};

template <> struct Describe<ObjectMeta> {
  static constexpr std::string_view kDoc = "Standard object metadata.";
  static auto fields() {
    return std::tuple{
        field("name", &ObjectMeta::name),
        field("generateName", &ObjectMeta::generate_name),
        field("namespace", &ObjectMeta::namespace_),
        field("uid", &ObjectMeta::uid),
        field("resourceVersion", &ObjectMeta::resource_version),
        field("generation", &ObjectMeta::generation),
        field("creationTimestamp", &ObjectMeta::creation_timestamp),
        field("deletionTimestamp", &ObjectMeta::deletion_timestamp),
        field("deletionGracePeriodSeconds", &ObjectMeta::deletion_grace_period_seconds),
        field("labels", &ObjectMeta::labels),
        field("annotations", &ObjectMeta::annotations),
        field("ownerReferences", &ObjectMeta::owner_references),
        field("finalizers", &ObjectMeta::finalizers),
    };
  }
};

template <> struct Describe<Condition> {
  static constexpr std::string_view kDoc =
      "One aspect of the object's current state (metav1.Condition).";
  static auto fields() {
    return std::tuple{
        field("type", &Condition::type)
            .required()
            .doc("Type of the condition in CamelCase, for example Ready.")
            .maxLength(316)
            .pattern(
                R"(^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$)"),
        field("status", &Condition::status)
            .required()
            .doc("Status of the condition: True, False or Unknown."),
        field("observedGeneration", &Condition::observed_generation)
            .doc("The .metadata.generation the condition was set against.")
            .minimum(0),
        field("lastTransitionTime", &Condition::last_transition_time)
            .required()
            .doc("When the condition last changed from one status to another."),
        field("reason", &Condition::reason)
            .required()
            .doc("A CamelCase reason for the last transition.")
            .length(1, 1024)
            .pattern(R"(^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$)"),
        field("message", &Condition::message)
            .required()
            .doc("A human-readable message about the transition; may be empty.")
            .maxLength(32768),
    };
  }
};

template <> struct Describe<LabelSelectorRequirement> {
  static constexpr std::string_view kDoc = "A selector requirement: a key, an operator and values.";
  static auto fields() {
    return std::tuple{
        field("key", &LabelSelectorRequirement::key)
            .required()
            .doc("The label key the selector applies to."),
        field("operator", &LabelSelectorRequirement::operator_)
            .required()
            .doc("The key's relation to the values: In, NotIn, Exists or DoesNotExist."),
        field("values", &LabelSelectorRequirement::values)
            .doc("Values for In and NotIn (non-empty); empty for Exists and DoesNotExist.")
            .listType("atomic"),
    };
  }
};

template <> struct Describe<LabelSelector> {
  static constexpr std::string_view kDoc =
      "A label query over objects. The requirements are ANDed; an empty selector matches "
      "everything.";
  static auto fields() {
    return std::tuple{
        field("matchLabels", &LabelSelector::match_labels)
            .doc("Labels that must all be present with exactly these values."),
        field("matchExpressions", &LabelSelector::match_expressions)
            .doc("Label selector requirements, all of which must hold.")
            .listType("atomic"),
    };
  }
  static void patch(Schema& s) { s.map_type = "atomic"; }
};

template <> struct Describe<LocalObjectReference> {
  static constexpr std::string_view kDoc = "A reference to an object in the same namespace.";
  static auto fields() {
    return std::tuple{
        field("name", &LocalObjectReference::name)
            .required()
            .doc("Name of the referenced object.")
            .length(1, 253),
    };
  }
  static void patch(Schema& s) { s.map_type = "atomic"; }
};

template <> struct Describe<ObjectFieldSelector> {
  static constexpr std::string_view kDoc = "Selects a field of the pod.";
  static auto fields() {
    return std::tuple{
        field("apiVersion", &ObjectFieldSelector::api_version)
            .doc("Version of the schema the field path is written in; defaults to v1."),
        field("fieldPath", &ObjectFieldSelector::field_path)
            .required()
            .doc("Path of the field to select, for example metadata.name."),
    };
  }
  static void patch(Schema& s) { s.map_type = "atomic"; }
};

template <> struct Describe<ResourceFieldSelector> {
  static constexpr std::string_view kDoc =
      "Selects a resource of a container: limits.cpu, requests.memory, ...";
  static auto fields() {
    return std::tuple{
        field("containerName", &ResourceFieldSelector::container_name)
            .doc("Container name; the current container when empty."),
        field("resource", &ResourceFieldSelector::resource).required().doc("Resource to select."),
        field("divisor", &ResourceFieldSelector::divisor)
            .doc("Output format of the exposed resources; defaults to 1."),
    };
  }
  static void patch(Schema& s) { s.map_type = "atomic"; }
};

template <> struct Describe<KeySelector> {
  static constexpr std::string_view kDoc = "Selects a key of a ConfigMap or Secret.";
  static auto fields() {
    return std::tuple{
        field("name", &KeySelector::name).doc("Name of the ConfigMap or Secret."),
        field("key", &KeySelector::key).required().doc("The key to select."),
        field("optional", &KeySelector::optional)
            .doc("Whether the object or its key may be missing."),
    };
  }
  static void patch(Schema& s) { s.map_type = "atomic"; }
};

template <> struct Describe<EnvVarSource> {
  static constexpr std::string_view kDoc = "A source for an environment variable's value.";
  static auto fields() {
    return std::tuple{
        field("fieldRef", &EnvVarSource::field_ref).doc("Selects a field of the pod."),
        field("resourceFieldRef", &EnvVarSource::resource_field_ref)
            .doc("Selects a resource of the container."),
        field("configMapKeyRef", &EnvVarSource::config_map_key_ref)
            .doc("Selects a key of a ConfigMap."),
        field("secretKeyRef", &EnvVarSource::secret_key_ref)
            .doc("Selects a key of a Secret in the object's namespace."),
    };
  }
};

template <> struct Describe<EnvVar> {
  static constexpr std::string_view kDoc = "An environment variable of the module container.";
  static auto fields() {
    return std::tuple{
        field("name", &EnvVar::name)
            .required()
            .doc("Name of the variable. Names starting with TF_ or KUBE_ are dropped with an "
                 "event and never applied.")
            .minLength(1),
        field("value", &EnvVar::value).doc("The value; $(VAR) references are expanded."),
        field("valueFrom", &EnvVar::value_from)
            .doc("Source of the value; cannot be used when value is not empty."),
    };
  }
};

template <> struct Describe<ResourceClaim> {
  static constexpr std::string_view kDoc = "A resource claim of the pod used by the container.";
  static auto fields() {
    return std::tuple{
        field("name", &ResourceClaim::name)
            .required()
            .doc("Name of an entry in the pod's resourceClaims."),
        field("request", &ResourceClaim::request)
            .doc("Name of one request of the claim; empty means all of it."),
    };
  }
};

template <> struct Describe<ResourceRequirements> {
  static constexpr std::string_view kDoc = "Compute resources of a container.";
  static auto fields() {
    return std::tuple{
        field("limits", &ResourceRequirements::limits)
            .doc("Maximum amount of compute resources allowed."),
        field("requests", &ResourceRequirements::requests)
            .doc("Minimum amount of compute resources required."),
        field("claims", &ResourceRequirements::claims)
            .doc("Dynamically allocated resources used by the container.")
            .listMapKey("name"),
    };
  }
};

template <> struct Describe<Capabilities> {
  static constexpr std::string_view kDoc = "POSIX capabilities to add or drop.";
  static auto fields() {
    return std::tuple{
        field("add", &Capabilities::add)
            .doc("Capabilities to add. Rejected by the admission webhook: runner Jobs never "
                 "gain capabilities.")
            .listType("atomic"),
        field("drop", &Capabilities::drop)
            .doc("Capabilities to drop. Setting capabilities replaces the default drop list "
                 "(ALL) wholesale.")
            .listType("atomic"),
    };
  }
};

template <> struct Describe<SELinuxOptions> {
  static constexpr std::string_view kDoc = "SELinux labels applied to the container.";
  static auto fields() {
    return std::tuple{
        field("user", &SELinuxOptions::user).doc("SELinux user label."),
        field("role", &SELinuxOptions::role).doc("SELinux role label."),
        field("type", &SELinuxOptions::type).doc("SELinux type label."),
        field("level", &SELinuxOptions::level).doc("SELinux level label."),
    };
  }
};

template <> struct Describe<WindowsSecurityContextOptions> {
  static constexpr std::string_view kDoc = "Windows-specific options.";
  static auto fields() {
    return std::tuple{
        field("gmsaCredentialSpecName", &WindowsSecurityContextOptions::gmsa_credential_spec_name)
            .doc("Name of the GMSA credential spec to use."),
        field("gmsaCredentialSpec", &WindowsSecurityContextOptions::gmsa_credential_spec)
            .doc("Contents of the GMSA credential spec."),
        field("runAsUserName", &WindowsSecurityContextOptions::run_as_user_name)
            .doc("User name to run the entrypoint as."),
        field("hostProcess", &WindowsSecurityContextOptions::host_process)
            .doc("Whether to run as a Windows HostProcess container."),
    };
  }
};

template <> struct Describe<ProfileReference> {
  static constexpr std::string_view kDoc = "A seccomp or AppArmor profile.";
  static auto fields() {
    return std::tuple{
        field("type", &ProfileReference::type)
            .required()
            .doc("Kind of profile: RuntimeDefault, Localhost or Unconfined."),
        field("localhostProfile", &ProfileReference::localhost_profile)
            .doc("Profile on the node to use; only with type Localhost."),
    };
  }
};

template <> struct Describe<SecurityContext> {
  static constexpr std::string_view kDoc = "Security options of the module container.";
  static auto fields() {
    return std::tuple{
        field("capabilities", &SecurityContext::capabilities)
            .doc("Capabilities to add or drop. Defaults to dropping ALL; a value replaces that "
                 "default wholesale. capabilities.add is rejected."),
        field("privileged", &SecurityContext::privileged)
            .doc("Run the container privileged. true is rejected by the admission webhook."),
        field("seLinuxOptions", &SecurityContext::se_linux_options)
            .doc("SELinux context of the container."),
        field("windowsOptions", &SecurityContext::windows_options)
            .doc("Windows-specific settings."),
        field("runAsUser", &SecurityContext::run_as_user).doc("UID to run the entrypoint as."),
        field("runAsGroup", &SecurityContext::run_as_group).doc("GID to run the entrypoint as."),
        field("runAsNonRoot", &SecurityContext::run_as_non_root)
            .doc("Require the container to run as a non-root user."),
        field("readOnlyRootFilesystem", &SecurityContext::read_only_root_filesystem)
            .doc("Mount the root filesystem read-only. Defaults to true."),
        field("allowPrivilegeEscalation", &SecurityContext::allow_privilege_escalation)
            .doc("Whether a process can gain more privileges than its parent. Defaults to "
                 "false; true is rejected by the admission webhook."),
        field("procMount", &SecurityContext::proc_mount).doc("Type of /proc mount to use."),
        field("seccompProfile", &SecurityContext::seccomp_profile)
            .doc("Seccomp profile. Defaults to RuntimeDefault."),
        field("appArmorProfile", &SecurityContext::app_armor_profile).doc("AppArmor profile."),
    };
  }
};

template <> struct Describe<Sysctl> {
  static constexpr std::string_view kDoc = "A namespaced kernel parameter to set.";
  static auto fields() {
    return std::tuple{
        field("name", &Sysctl::name).required().doc("Name of the property."),
        field("value", &Sysctl::value).required().doc("Value of the property."),
    };
  }
};

template <> struct Describe<PodSecurityContext> {
  static constexpr std::string_view kDoc = "Security options of the runner pod.";
  static auto fields() {
    return std::tuple{
        field("seLinuxOptions", &PodSecurityContext::se_linux_options)
            .doc("SELinux context of all containers."),
        field("windowsOptions", &PodSecurityContext::windows_options)
            .doc("Windows-specific settings."),
        field("runAsUser", &PodSecurityContext::run_as_user).doc("UID to run the entrypoints as."),
        field("runAsGroup", &PodSecurityContext::run_as_group)
            .doc("GID to run the entrypoints as."),
        field("runAsNonRoot", &PodSecurityContext::run_as_non_root)
            .doc("Require the containers to run as a non-root user."),
        field("supplementalGroups", &PodSecurityContext::supplemental_groups)
            .doc("Additional groups of the first process of each container.")
            .listType("atomic"),
        field("supplementalGroupsPolicy", &PodSecurityContext::supplemental_groups_policy)
            .doc("How supplemental groups of the first process are calculated."),
        field("fsGroup", &PodSecurityContext::fs_group)
            .doc("Group owning mounted volumes. Defaults to 65532 (the runner's UID)."),
        field("sysctls", &PodSecurityContext::sysctls)
            .doc("Namespaced sysctls for the pod.")
            .listType("atomic"),
        field("fsGroupChangePolicy", &PodSecurityContext::fs_group_change_policy)
            .doc("How volume ownership is changed: OnRootMismatch or Always."),
        field("seccompProfile", &PodSecurityContext::seccomp_profile)
            .doc("Seccomp profile. Defaults to RuntimeDefault."),
        field("appArmorProfile", &PodSecurityContext::app_armor_profile).doc("AppArmor profile."),
        field("seLinuxChangePolicy", &PodSecurityContext::se_linux_change_policy)
            .doc("How the SELinux label is applied to volumes."),
    };
  }
};

template <> struct Describe<ApiEndpoint> {
  static constexpr std::string_view kDoc = "An endpoint to reach the Kubernetes API server.";
  static auto fields() {
    return std::tuple{
        field("host", &ApiEndpoint::host)
            .doc("Hostname or IP address of the endpoint.")
            .length(1, 512),
        field("port", &ApiEndpoint::port).doc("Port of the endpoint.").range(1, 65535),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

template <> struct Describe<FailureDomain> {
  static constexpr std::string_view kDoc = "A failure domain the cluster's machines can use.";
  static auto fields() {
    return std::tuple{
        field("name", &FailureDomain::name)
            .required()
            .doc("Name of the failure domain.")
            .length(1, 256),
        field("controlPlane", &FailureDomain::control_plane)
            .doc("Whether the failure domain is suitable for control plane machines."),
        field("attributes", &FailureDomain::attributes)
            .doc("Free-form attributes of the failure domain."),
    };
  }
};

template <> struct Describe<MachineAddress> {
  static constexpr std::string_view kDoc = "An address of the machine.";
  static auto fields() {
    return std::tuple{
        field("type", &MachineAddress::type)
            .required()
            .doc("Address type: Hostname, ExternalIP, InternalIP, ExternalDNS or InternalDNS."),
        field("address", &MachineAddress::address).required().doc("The address.").length(1, 256),
    };
  }
};

template <> struct Describe<TemplateObjectMeta> {
  static constexpr std::string_view kDoc =
      "Labels and annotations copied onto the objects created from the template.";
  static auto fields() {
    return std::tuple{
        field("labels", &TemplateObjectMeta::labels).doc("Labels to set on created objects."),
        field("annotations", &TemplateObjectMeta::annotations)
            .doc("Annotations to set on created objects."),
    };
  }
  static void patch(Schema& s) { s.min_properties = 1; }
};

CAPTF_API_DEFINE_CODEC(OwnerReference)
CAPTF_API_DEFINE_CODEC(ObjectMeta)
CAPTF_API_DEFINE_CODEC(Condition)
CAPTF_API_DEFINE_CODEC(LabelSelectorRequirement)
CAPTF_API_DEFINE_CODEC(LabelSelector)
CAPTF_API_DEFINE_CODEC(LocalObjectReference)
CAPTF_API_DEFINE_CODEC(ObjectFieldSelector)
CAPTF_API_DEFINE_CODEC(ResourceFieldSelector)
CAPTF_API_DEFINE_CODEC(KeySelector)
CAPTF_API_DEFINE_CODEC(EnvVarSource)
CAPTF_API_DEFINE_CODEC(EnvVar)
CAPTF_API_DEFINE_CODEC(ResourceClaim)
CAPTF_API_DEFINE_CODEC(ResourceRequirements)
CAPTF_API_DEFINE_CODEC(Capabilities)
CAPTF_API_DEFINE_CODEC(SELinuxOptions)
CAPTF_API_DEFINE_CODEC(WindowsSecurityContextOptions)
CAPTF_API_DEFINE_CODEC(ProfileReference)
CAPTF_API_DEFINE_CODEC(SecurityContext)
CAPTF_API_DEFINE_CODEC(Sysctl)
CAPTF_API_DEFINE_CODEC(PodSecurityContext)
CAPTF_API_DEFINE_CODEC(ApiEndpoint)
CAPTF_API_DEFINE_CODEC(FailureDomain)
CAPTF_API_DEFINE_CODEC(MachineAddress)
CAPTF_API_DEFINE_CODEC(TemplateObjectMeta)

} // namespace captf::api
