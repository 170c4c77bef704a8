#include "webhooks/rules.h"

#include <algorithm>
#include <cctype>

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
  if (jobs.security_context) {
    const api::SecurityContext& sc = *jobs.security_context;
    const api::FieldPath scp = path.child("securityContext");
    if (sc.privileged.value_or(false)) {
      errors.push_back(forbidden(scp.child("privileged"), "runner Jobs never run privileged"));
    }
    if (sc.allow_privilege_escalation.value_or(false)) {
      errors.push_back(forbidden(scp.child("allowPrivilegeEscalation"),
                                 "runner Jobs never allow privilege escalation"));
    }
    if (sc.capabilities && !sc.capabilities->add.empty()) {
      errors.push_back(forbidden(scp.child("capabilities").child("add"),
                                 "runner Jobs cannot add capabilities; only drop is allowed"));
    }
  }
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
