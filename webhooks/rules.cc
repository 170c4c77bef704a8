#include "webhooks/rules.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "contract/git_source.h"
#include "contract/image_reference.h"

namespace captf::webhooks {
namespace {

constexpr std::size_t kMaxVariables = 256;

bool isTerraformIdentifier(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  const auto first = static_cast<unsigned char>(s.front());
  if (!(std::isalpha(first) != 0 || first == '_')) {
    return false;
  }
  return std::all_of(s.begin() + 1, s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) != 0 || c == '_' || c == '-';
  });
}

std::string_view roleName(contract::Role role) {
  return contract::roleSpec(role).name;
}

} // namespace

namespace {

void validateImage(const std::string& image, const api::FieldPath& path, FieldErrorList& errors) {
  std::string why;
  if (!contract::parseImageReference(image, &why)) {
    errors.push_back(invalid(path, image, why));
  }
}

void validateGitRef(const api::GitReference& ref, const api::FieldPath& path,
                    FieldErrorList& errors) {
  const int set =
      int{ref.branch.has_value()} + int{ref.tag.has_value()} + int{ref.commit.has_value()};
  if (set != 1) {
    errors.push_back(set == 0
                         ? required(path, "exactly one of branch, tag and commit must be set")
                         : forbidden(path, "exactly one of branch, tag and commit may be set"));
    return;
  }
  const auto check = [&](const std::optional<std::string>& name, contract::GitRefKind kind,
                         std::string_view key) {
    if (!name) {
      return;
    }
    if (absl::Status s = contract::validateGitRef({kind, *name}); !s.ok()) {
      errors.push_back(invalid(path.child(key), *name, std::string(s.message())));
    }
  };
  check(ref.branch, contract::GitRefKind::kBranch, "branch");
  check(ref.tag, contract::GitRefKind::kTag, "tag");
  check(ref.commit, contract::GitRefKind::kCommit, "commit");
}

void validateGit(const api::GitSource& git, const api::FieldPath& path, FieldErrorList& errors) {
  if (auto url = contract::parseGitUrl(git.url); !url.ok()) {
    errors.push_back(invalid(path.child("url"), git.url, std::string(url.status().message())));
  }
  validateGitRef(git.ref, path.child("ref"), errors);
  if (absl::Status s = contract::validateRepositoryPath(git.path); !s.ok()) {
    errors.push_back(invalid(path.child("path"), git.path, std::string(s.message())));
  }
  validateImage(git.runtime_image, path.child("runtimeImage"), errors);
}

// ---- Job security contexts ----------------------------------------------
//
// What Pod Security `baseline` forbids that a jobs policy can express
// (docs/reference/webhooks.md, docs/behaviour/security.md#pod-security), one
// row a field, so that a policy the webhook admits never makes the Job's pod
// inadmissible in a baseline namespace. Where the rows are stricter than
// baseline they say why. Host namespaces, host ports, hostPath volumes and
// hostUsers are not fields of a jobs policy: the Job builder never sets them.

template <class Context> struct Refusal {
  // Below the context, dotted: "seLinuxOptions.type".
  std::string_view field;
  bool (*refused)(const Context&);
  std::string_view detail;
};

constexpr std::string_view kUnconfined = "Unconfined";
// The type the container runtime gives a container when none is set.
constexpr std::string_view kRuntimeSeLinuxType = "container_t";

constexpr std::string_view kSeccompDetail =
    "runner Jobs never run without a seccomp filter; use RuntimeDefault (the default) or "
    "Localhost";
constexpr std::string_view kAppArmorDetail =
    "runner Jobs never run without an AppArmor profile; use RuntimeDefault or Localhost";
// Baseline also admits container_init_t, container_kvm_t and
// container_engine_t: types for init systems, virtual machines and nested
// container engines, none of which a runner is. Any other type (spc_t,
// unconfined_t) is not confined like a container. Only the runtime's own
// default may be written out.
constexpr std::string_view kSeLinuxTypeDetail =
    "runner Jobs run with the container runtime's SELinux type: only its default, container_t, "
    "may be set; other types, such as spc_t, are not confined like a container";
constexpr std::string_view kSeLinuxUserRoleDetail =
    "runner Jobs never set a SELinux user or role; only level may be set";
constexpr std::string_view kHostProcessDetail =
    "runner Jobs never run as Windows HostProcess containers, which have the node's privileges";

template <class Context> bool seccompUnconfined(const Context& c) {
  return c.seccomp_profile && c.seccomp_profile->type == kUnconfined;
}
template <class Context> bool appArmorUnconfined(const Context& c) {
  return c.app_armor_profile && c.app_armor_profile->type == kUnconfined;
}
template <class Context> bool seLinuxTypeSet(const Context& c) {
  return c.se_linux_options && !c.se_linux_options->type.empty() &&
         c.se_linux_options->type != kRuntimeSeLinuxType;
}
template <class Context> bool seLinuxUserSet(const Context& c) {
  return c.se_linux_options && !c.se_linux_options->user.empty();
}
template <class Context> bool seLinuxRoleSet(const Context& c) {
  return c.se_linux_options && !c.se_linux_options->role.empty();
}
template <class Context> bool hostProcess(const Context& c) {
  return c.windows_options && c.windows_options->host_process.value_or(false);
}

// jobs.securityContext: the `source` container's.
constexpr std::array<Refusal<api::SecurityContext>, 10> kContainerRefusals{{
    {"privileged", [](const api::SecurityContext& c) { return c.privileged.value_or(false); },
     "runner Jobs never run privileged"},
    {"allowPrivilegeEscalation",
     [](const api::SecurityContext& c) { return c.allow_privilege_escalation.value_or(false); },
     "runner Jobs never allow privilege escalation"},
    // Stricter than baseline, which admits a default set (CHOWN, SETUID,
    // ...): a runner needs none of them.
    {"capabilities.add",
     [](const api::SecurityContext& c) { return c.capabilities && !c.capabilities->add.empty(); },
     "runner Jobs cannot add capabilities; only drop is allowed"},
    {"procMount",
     [](const api::SecurityContext& c) {
       return !c.proc_mount.empty() && c.proc_mount != "Default";
     },
     "runner Jobs use the Default /proc mount, which masks the kernel's sensitive /proc paths"},
    {"seccompProfile.type", seccompUnconfined<api::SecurityContext>, kSeccompDetail},
    {"appArmorProfile.type", appArmorUnconfined<api::SecurityContext>, kAppArmorDetail},
    {"seLinuxOptions.type", seLinuxTypeSet<api::SecurityContext>, kSeLinuxTypeDetail},
    {"seLinuxOptions.user", seLinuxUserSet<api::SecurityContext>, kSeLinuxUserRoleDetail},
    {"seLinuxOptions.role", seLinuxRoleSet<api::SecurityContext>, kSeLinuxUserRoleDetail},
    {"windowsOptions.hostProcess", hostProcess<api::SecurityContext>, kHostProcessDetail},
}};

// jobs.podSecurityContext: every container's, the init container's too.
constexpr std::array<Refusal<api::PodSecurityContext>, 7> kPodRefusals{{
    {"seccompProfile.type", seccompUnconfined<api::PodSecurityContext>, kSeccompDetail},
    {"appArmorProfile.type", appArmorUnconfined<api::PodSecurityContext>, kAppArmorDetail},
    {"seLinuxOptions.type", seLinuxTypeSet<api::PodSecurityContext>, kSeLinuxTypeDetail},
    {"seLinuxOptions.user", seLinuxUserSet<api::PodSecurityContext>, kSeLinuxUserRoleDetail},
    {"seLinuxOptions.role", seLinuxRoleSet<api::PodSecurityContext>, kSeLinuxUserRoleDetail},
    {"windowsOptions.hostProcess", hostProcess<api::PodSecurityContext>, kHostProcessDetail},
    // Stricter than baseline, which admits a version-dependent safe set: a
    // runner tunes no kernel parameter.
    {"sysctls", [](const api::PodSecurityContext& c) { return !c.sysctls.empty(); },
     "runner pods set no sysctls"},
}};

template <class Context, std::size_t N>
void refuse(const Context& context, const std::array<Refusal<Context>, N>& rules,
            const api::FieldPath& path, FieldErrorList& errors) {
  for (const Refusal<Context>& rule : rules) {
    if (rule.refused(context)) {
      errors.push_back(forbidden(path.child(rule.field), rule.detail));
    }
  }
}

// runAsNonRoot and runAsUser 0 for the `source` container, each from the
// container's context or else the pod's, within this one policy: the
// kubelet would refuse to start the container, so the Job could never run.
// (A policy that inherits one context from spec.defaults.jobs is not seen
// whole here; the Job then fails with CreateContainerConfigError.)
void validateRunAsRoot(const api::JobPolicy& jobs, const api::FieldPath& scp,
                       const api::FieldPath& pscp, FieldErrorList& errors) {
  const api::SecurityContext* sc = jobs.security_context ? &*jobs.security_context : nullptr;
  const api::PodSecurityContext* psc =
      jobs.pod_security_context ? &*jobs.pod_security_context : nullptr;
  std::optional<bool> non_root = sc != nullptr ? sc->run_as_non_root : std::nullopt;
  if (!non_root && psc != nullptr) {
    non_root = psc->run_as_non_root;
  }
  const bool own_user = sc != nullptr && sc->run_as_user.has_value();
  const std::optional<std::int64_t> user =
      own_user ? sc->run_as_user : (psc != nullptr ? psc->run_as_user : std::nullopt);
  if (non_root.value_or(false) && user == 0) {
    errors.push_back(invalid((own_user ? scp : pscp).child("runAsUser"), 0,
                             "is root while runAsNonRoot is true, so the container would never "
                             "start; use a non-zero UID such as 65532"));
  }
}

} // namespace

void validateSource(const api::Source& source, const api::FieldPath& path, FieldErrorList& errors) {
  const bool image = !source.image.empty();
  if (image == source.git.has_value()) {
    errors.push_back(image ? forbidden(path, "exactly one of image and git may be set")
                           : required(path, "exactly one of image and git must be set"));
    return;
  }
  if (image) {
    validateImage(source.image, path.child("image"), errors);
  } else {
    validateGit(*source.git, path.child("git"), errors);
  }
}

void validateVariables(const nlohmann::json& variables, contract::Role role,
                       const api::FieldPath& path, FieldErrorList& errors) {
  if (variables.is_null()) {
    return;
  }
  if (!variables.is_object()) {
    errors.push_back(invalidObject(path, "must be a JSON object of variable names to values"));
    return;
  }
  if (variables.empty()) {
    errors.push_back(invalidObject(path, "must have at least 1 variable when set; omit "
                                         "variables instead of setting {}"));
    return;
  }
  if (variables.size() > kMaxVariables) {
    errors.push_back(tooMany(path, static_cast<std::int64_t>(variables.size()),
                             static_cast<std::int64_t>(kMaxVariables)));
  }
  const auto meta = contract::moduleMetaArguments();
  for (const auto& [name, value] : variables.items()) {
    const api::FieldPath key = path.key(name);
    if (!isTerraformIdentifier(name)) {
      errors.push_back(invalid(key, name,
                               "a variable name must be a Terraform identifier: a letter or "
                               "\"_\" followed by letters, digits, \"_\" or \"-\" (regex "
                               "^[a-zA-Z_][a-zA-Z0-9_-]*$)"));
    } else if (name.starts_with(contract::kReservedPrefix)) {
      errors.push_back(invalid(key, name,
                               fmt::format("names starting with \"{}\" are reserved for the "
                                           "module contract's inputs",
                                           contract::kReservedPrefix)));
    } else if (contract::findInput(role, name) != nullptr) {
      errors.push_back(invalid(key, name,
                               fmt::format("is a contract input of the {} role, set by the "
                                           "controller; it cannot be a user variable",
                                           roleName(role))));
    } else if (std::find(meta.begin(), meta.end(), name) != meta.end()) {
      errors.push_back(invalid(key, name,
                               "is a module meta-argument (source, version, providers, count, "
                               "for_each, depends_on, lifecycle, locals) and cannot be a "
                               "variable name"));
    }
  }
}

void validateVariablesFrom(const std::vector<api::VariablesSource>& sources,
                           const api::FieldPath& path, FieldErrorList& errors) {
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const api::VariablesSource& s = sources[i];
    const api::FieldPath entry = path.index(i);
    if (!s.config_map_ref && !s.secret_ref) {
      errors.push_back(required(entry, "exactly one of configMapRef and secretRef must be set"));
    } else if (s.config_map_ref && s.secret_ref) {
      errors.push_back(forbidden(entry.child("secretRef"),
                                 "exactly one of configMapRef and secretRef must be set; "
                                 "use a separate variablesFrom entry for each source"));
    }
  }
}

void validateJobPolicy(const api::JobPolicy& jobs, const api::FieldPath& path,
                       FieldErrorList& errors) {
  const api::FieldPath scp = path.child("securityContext");
  const api::FieldPath pscp = path.child("podSecurityContext");
  if (jobs.security_context) {
    refuse(*jobs.security_context, kContainerRefusals, scp, errors);
  }
  if (jobs.pod_security_context) {
    refuse(*jobs.pod_security_context, kPodRefusals, pscp, errors);
  }
  validateRunAsRoot(jobs, scp, pscp, errors);
  if (jobs.lock_timeout_seconds && jobs.active_deadline_seconds &&
      *jobs.active_deadline_seconds > 0 &&
      static_cast<std::int64_t>(*jobs.lock_timeout_seconds) >= *jobs.active_deadline_seconds) {
    errors.push_back(invalid(path.child("lockTimeoutSeconds"), *jobs.lock_timeout_seconds,
                             fmt::format("must be less than activeDeadlineSeconds ({}) of the "
                                         "same policy, or the Job's deadline ends the run while "
                                         "it still waits for the state lock",
                                         *jobs.active_deadline_seconds)));
  }
}

void validateWorkspaceSpec(const api::WorkspaceSpec& spec, contract::Role role,
                           const api::FieldPath& path, FieldErrorList& errors) {
  validateSource(spec.source, path.child("source"), errors);
  validateVariables(spec.variables, role, path.child("variables"), errors);
  validateVariablesFrom(spec.variables_from, path.child("variablesFrom"), errors);
  if (spec.jobs) {
    validateJobPolicy(*spec.jobs, path.child("jobs"), errors);
  }
}

} // namespace captf::webhooks
