#pragma once

// Kubernetes (core/v1, meta/v1) and Cluster API (v1beta2) types that CAPTF's
// API embeds. Only the fields CAPTF's objects can carry are modelled; each
// has the same JSON name and meaning as upstream.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "manager/api/codec.h"
#include "manager/api/enum_names.h"
#include "manager/api/quantity.h"
#include "manager/api/time.h"

namespace captf::api {

// ---- meta/v1 --------------------------------------------------------------

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;

  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

// metav1.ObjectMeta of a top-level object. managedFields and selfLink are
// not modelled: CAPTF writes objects with patches, never by PUT of a
// decoded copy, so nothing is lost.
struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;
  std::optional<std::int64_t> deletion_grace_period_seconds;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;

  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

enum class ConditionStatus { kTrue, kFalse, kUnknown };
template <> struct EnumNames<ConditionStatus> {
  static constexpr std::array<std::pair<ConditionStatus, std::string_view>, 3> kValues{{
      {ConditionStatus::kTrue, "True"},
      {ConditionStatus::kFalse, "False"},
      {ConditionStatus::kUnknown, "Unknown"},
  }};
};

// metav1.Condition.
struct Condition {
  std::string type;
  ConditionStatus status = ConditionStatus::kUnknown;
  std::int64_t observed_generation = 0;
  Time last_transition_time;
  std::string reason;
  std::string message;

  friend bool operator==(const Condition&, const Condition&) = default;
};

struct LabelSelectorRequirement {
  std::string key;
  std::string operator_;
  std::vector<std::string> values;

  friend bool operator==(const LabelSelectorRequirement&,
                         const LabelSelectorRequirement&) = default;
};

// metav1.LabelSelector. `{}` selects everything.
struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};

// ---- core/v1 --------------------------------------------------------------

// A reference to an object in the same namespace. Unlike core/v1 the name is
// required: an empty reference is always a mistake here.
struct LocalObjectReference {
  std::string name;

  friend bool operator==(const LocalObjectReference&, const LocalObjectReference&) = default;
};

struct ObjectFieldSelector {
  std::string api_version;
  std::string field_path;

  friend bool operator==(const ObjectFieldSelector&, const ObjectFieldSelector&) = default;
};

struct ResourceFieldSelector {
  std::string container_name;
  std::string resource;
  std::optional<Quantity> divisor;

  friend bool operator==(const ResourceFieldSelector&, const ResourceFieldSelector&) = default;
};

struct KeySelector {
  std::string name;
  std::string key;
  std::optional<bool> optional;

  friend bool operator==(const KeySelector&, const KeySelector&) = default;
};

struct EnvVarSource {
  std::optional<ObjectFieldSelector> field_ref;
  std::optional<ResourceFieldSelector> resource_field_ref;
  std::optional<KeySelector> config_map_key_ref;
  std::optional<KeySelector> secret_key_ref;

  friend bool operator==(const EnvVarSource&, const EnvVarSource&) = default;
};

struct EnvVar {
  std::string name;
  std::string value;
  std::optional<EnvVarSource> value_from;

  friend bool operator==(const EnvVar&, const EnvVar&) = default;
};

struct ResourceClaim {
  std::string name;
  std::string request;

  friend bool operator==(const ResourceClaim&, const ResourceClaim&) = default;
};

struct ResourceRequirements {
  std::map<std::string, Quantity> limits;
  std::map<std::string, Quantity> requests;
  std::vector<ResourceClaim> claims;

  friend bool operator==(const ResourceRequirements&, const ResourceRequirements&) = default;
};

struct Capabilities {
  std::vector<std::string> add;
  std::vector<std::string> drop;

  friend bool operator==(const Capabilities&, const Capabilities&) = default;
};

struct SELinuxOptions {
  std::string user;
  std::string role;
  std::string type;
  std::string level;

  friend bool operator==(const SELinuxOptions&, const SELinuxOptions&) = default;
};

struct WindowsSecurityContextOptions {
  std::string gmsa_credential_spec_name;
  std::string gmsa_credential_spec;
  std::string run_as_user_name;
  std::optional<bool> host_process;

  friend bool operator==(const WindowsSecurityContextOptions&,
                         const WindowsSecurityContextOptions&) = default;
};

// seccompProfile and appArmorProfile share this shape.
struct ProfileReference {
  std::string type;
  std::string localhost_profile;

  friend bool operator==(const ProfileReference&, const ProfileReference&) = default;
};

struct SecurityContext {
  std::optional<Capabilities> capabilities;
  std::optional<bool> privileged;
  std::optional<SELinuxOptions> se_linux_options;
  std::optional<WindowsSecurityContextOptions> windows_options;
  std::optional<std::int64_t> run_as_user;
  std::optional<std::int64_t> run_as_group;
  std::optional<bool> run_as_non_root;
  std::optional<bool> read_only_root_filesystem;
  std::optional<bool> allow_privilege_escalation;
  std::string proc_mount;
  std::optional<ProfileReference> seccomp_profile;
  std::optional<ProfileReference> app_armor_profile;

  friend bool operator==(const SecurityContext&, const SecurityContext&) = default;
};

struct Sysctl {
  std::string name;
  std::string value;

  friend bool operator==(const Sysctl&, const Sysctl&) = default;
};

struct PodSecurityContext {
  std::optional<SELinuxOptions> se_linux_options;
  std::optional<WindowsSecurityContextOptions> windows_options;
  std::optional<std::int64_t> run_as_user;
  std::optional<std::int64_t> run_as_group;
  std::optional<bool> run_as_non_root;
  std::vector<std::int64_t> supplemental_groups;
  std::string supplemental_groups_policy;
  std::optional<std::int64_t> fs_group;
  std::vector<Sysctl> sysctls;
  std::string fs_group_change_policy;
  std::optional<ProfileReference> seccomp_profile;
  std::optional<ProfileReference> app_armor_profile;
  std::string se_linux_change_policy;

  friend bool operator==(const PodSecurityContext&, const PodSecurityContext&) = default;
};

// ---- Cluster API v1beta2 ----------------------------------------------------

// clusterv1.APIEndpoint.
struct ApiEndpoint {
  std::string host;
  std::int32_t port = 0;

  friend bool operator==(const ApiEndpoint&, const ApiEndpoint&) = default;
};

// clusterv1.FailureDomain (v1beta2: a list entry keyed by name).
struct FailureDomain {
  std::string name;
  std::optional<bool> control_plane;
  std::map<std::string, std::string> attributes;

  friend bool operator==(const FailureDomain&, const FailureDomain&) = default;
};

enum class MachineAddressType { kHostname, kExternalIP, kInternalIP, kExternalDNS, kInternalDNS };
template <> struct EnumNames<MachineAddressType> {
  static constexpr std::array<std::pair<MachineAddressType, std::string_view>, 5> kValues{{
      {MachineAddressType::kHostname, "Hostname"},
      {MachineAddressType::kExternalIP, "ExternalIP"},
      {MachineAddressType::kInternalIP, "InternalIP"},
      {MachineAddressType::kExternalDNS, "ExternalDNS"},
      {MachineAddressType::kInternalDNS, "InternalDNS"},
  }};
};

// clusterv1.MachineAddress.
struct MachineAddress {
  MachineAddressType type = MachineAddressType::kInternalIP;
  std::string address;

  friend bool operator==(const MachineAddress&, const MachineAddress&) = default;
};

// clusterv1.ObjectMeta: the labels and annotations a template copies onto
// the objects created from it.
struct TemplateObjectMeta {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;

  friend bool operator==(const TemplateObjectMeta&, const TemplateObjectMeta&) = default;
};

CAPTF_API_DECLARE_CODEC(OwnerReference);
CAPTF_API_DECLARE_CODEC(ObjectMeta);
CAPTF_API_DECLARE_CODEC(Condition);
CAPTF_API_DECLARE_CODEC(LabelSelectorRequirement);
CAPTF_API_DECLARE_CODEC(LabelSelector);
CAPTF_API_DECLARE_CODEC(LocalObjectReference);
CAPTF_API_DECLARE_CODEC(ObjectFieldSelector);
CAPTF_API_DECLARE_CODEC(ResourceFieldSelector);
CAPTF_API_DECLARE_CODEC(KeySelector);
CAPTF_API_DECLARE_CODEC(EnvVarSource);
CAPTF_API_DECLARE_CODEC(EnvVar);
CAPTF_API_DECLARE_CODEC(ResourceClaim);
CAPTF_API_DECLARE_CODEC(ResourceRequirements);
CAPTF_API_DECLARE_CODEC(Capabilities);
CAPTF_API_DECLARE_CODEC(SELinuxOptions);
CAPTF_API_DECLARE_CODEC(WindowsSecurityContextOptions);
CAPTF_API_DECLARE_CODEC(ProfileReference);
CAPTF_API_DECLARE_CODEC(SecurityContext);
CAPTF_API_DECLARE_CODEC(Sysctl);
CAPTF_API_DECLARE_CODEC(PodSecurityContext);
CAPTF_API_DECLARE_CODEC(ApiEndpoint);
CAPTF_API_DECLARE_CODEC(FailureDomain);
CAPTF_API_DECLARE_CODEC(MachineAddress);
CAPTF_API_DECLARE_CODEC(TemplateObjectMeta);

} // namespace captf::api
