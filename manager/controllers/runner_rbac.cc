#include "manager/controllers/runner_rbac.h"

#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/kube/errors.h"

namespace captf::controllers {

using nlohmann::json;

namespace {

std::string str(std::string_view s) {
  return std::string(s);
}

ConditionResult cond(const char* status, std::string_view reason, std::string message) {
  return ConditionResult{status, std::string(reason), std::move(message)};
}

std::string serviceAccountOf(const json& jobs) {
  if (jobs.is_object()) {
    const std::string sa = jobs.value("serviceAccountName", "");
    if (!sa.empty()) {
      return sa;
    }
  }
  return "";
}

json subjectsOf(const std::set<std::string>& accounts, const std::string& ns) {
  json subjects = json::array();
  for (const std::string& sa : accounts) {
    subjects.push_back({{"kind", "ServiceAccount"}, {"name", sa}, {"namespace", ns}});
  }
  return subjects;
}

const json kRoleRef = {
    {"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", kRunnerName}};

} // namespace

absl::StatusOr<std::set<std::string>> RunnerRbac::serviceAccountsInUse(const std::string& ns) {
  std::set<std::string> accounts;
  kube::ListOptions options;
  options.ns = ns;
  auto clusters = cached_.list(kinds::kTerraformCluster, options);
  if (!clusters.ok()) {
    return clusters.status();
  }
  // Machines and pools fall back to their cluster's defaults; a machine or
  // pool whose cluster cannot be resolved keeps every cluster default.
  std::set<std::string> defaults;
  for (const json& cluster : clusters->items) {
    const json spec = cluster.value("spec", json::object());
    const std::string own = serviceAccountOf(spec.value("jobs", json()));
    accounts.insert(own.empty() ? std::string(kRunnerName) : own);
    const std::string inherited =
        serviceAccountOf(spec.value("defaults", json::object()).value("jobs", json()));
    defaults.insert(inherited.empty() ? std::string(kRunnerName) : inherited);
  }
  for (const auto* gvk : {&kinds::kTerraformMachine, &kinds::kTerraformMachinePool}) {
    auto objects = cached_.list(*gvk, options);
    if (!objects.ok()) {
      return objects.status();
    }
    for (const json& object : objects->items) {
      const std::string own =
          serviceAccountOf(object.value("spec", json::object()).value("jobs", json()));
      if (!own.empty()) {
        accounts.insert(own);
      } else if (defaults.empty()) {
        accounts.insert(kRunnerName);
      } else {
        accounts.insert(defaults.begin(), defaults.end());
      }
    }
  }
  return accounts;
}

ConditionResult RunnerRbac::ensure(const std::string& ns, const std::string& service_account,
                                   absl::Status& transient) {
  const std::string sa = service_account.empty() ? std::string(kRunnerName) : service_account;
  if (sa != kRunnerName) {
    // An override must exist and opt in (captf.io/runner=true).
    auto custom = api_.get(kinds::kServiceAccount, {ns, sa});
    if (!custom.ok() && !kube::isNotFound(custom.status())) {
      transient = custom.status();
      return cond("False", api::conditions::kReasonRbacFailed, "reading ServiceAccount failed");
    }
    if (!custom.ok() || kube::meta::labels(*custom).value(str(api::kLabelRunner), "") != "true") {
      return cond("False", api::conditions::kReasonServiceAccountNotOptedIn,
                  "ServiceAccount " + sa + " must exist and carry label captf.io/runner=true");
    }
  } else {
    auto existing = cached_.get(kinds::kServiceAccount, {ns, sa});
    if (!existing.ok()) {
      if (!kube::isNotFound(existing.status())) {
        transient = existing.status();
        return cond("False", api::conditions::kReasonRbacFailed, "reading ServiceAccount failed");
      }
      json account = {
          {"apiVersion", "v1"},
          {"kind", "ServiceAccount"},
          {"metadata",
           {{"name", sa}, {"namespace", ns}, {"labels", {{str(api::kLabelManaged), "true"}}}}}};
      auto created = api_.create(account);
      // A pre-existing (unlabeled, so uncached) one is reused as is.
      if (!created.ok() && !kube::isAlreadyExists(created.status())) {
        transient = created.status();
        return cond("False", api::conditions::kReasonRbacFailed,
                    "creating ServiceAccount " + sa + " failed");
      }
    }
  }

  auto accounts = serviceAccountsInUse(ns);
  if (!accounts.ok()) {
    transient = accounts.status();
    return cond("False", api::conditions::kReasonRbacFailed, "listing objects failed");
  }
  accounts->insert(sa);
  // Only opted-in overrides are bound.
  std::set<std::string> bound;
  for (const std::string& account : *accounts) {
    if (account == kRunnerName) {
      bound.insert(account);
      continue;
    }
    auto custom = api_.get(kinds::kServiceAccount, {ns, account});
    if (custom.ok() && kube::meta::labels(*custom).value(str(api::kLabelRunner), "") == "true") {
      bound.insert(account);
    }
  }
  const json subjects = subjectsOf(bound, ns);
  json binding = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "RoleBinding"},
      {"metadata",
       {{"name", kRunnerName}, {"namespace", ns}, {"labels", {{str(api::kLabelManaged), "true"}}}}},
      {"roleRef", kRoleRef},
      {"subjects", subjects}};
  auto existing = cached_.get(kinds::kRoleBinding, {ns, kRunnerName});
  if (!existing.ok() && !kube::isNotFound(existing.status())) {
    transient = existing.status();
    return cond("False", api::conditions::kReasonRbacFailed, "reading RoleBinding failed");
  }
  if (!existing.ok()) {
    auto created = api_.create(binding);
    if (created.ok()) {
      return cond("True", api::conditions::kReasonRbacReady, "");
    }
    if (!kube::isAlreadyExists(created.status())) {
      transient = created.status();
      return cond("False", api::conditions::kReasonRbacFailed,
                  "creating RoleBinding captf-runner failed");
    }
    existing = api_.get(kinds::kRoleBinding, {ns, kRunnerName});
    if (!existing.ok()) {
      transient = existing.status();
      return cond("False", api::conditions::kReasonRbacFailed, "reading RoleBinding failed");
    }
  }
  if (kube::meta::labels(*existing).value(str(api::kLabelManaged), "") != "true") {
    return cond("False", api::conditions::kReasonRbacFailed,
                "RoleBinding captf-runner exists and is not managed by CAPTF; it is never touched");
  }
  if (existing->value("roleRef", json::object()) != kRoleRef) {
    // roleRef is immutable: delete and re-create.
    kube::DeleteOptions options;
    options.preconditions.uid = kube::meta::uid(*existing);
    absl::Status removed = api_.remove(kinds::kRoleBinding, {ns, kRunnerName}, options);
    if (!removed.ok() && !kube::isNotFound(removed)) {
      transient = removed;
      return cond("False", api::conditions::kReasonRbacFailed, "replacing RoleBinding failed");
    }
    auto created = api_.create(binding);
    if (!created.ok()) {
      transient = created.status();
      return cond("False", api::conditions::kReasonRbacFailed, "re-creating RoleBinding failed");
    }
    return cond("True", api::conditions::kReasonRbacReady, "");
  }
  if (existing->value("subjects", json::array()) != subjects) {
    json updated = *existing;
    updated["subjects"] = subjects;
    auto written = api_.update(updated);
    if (!written.ok()) {
      transient = written.status();
      return cond("False", api::conditions::kReasonRbacFailed,
                  "updating RoleBinding subjects failed");
    }
  }
  return cond("True", api::conditions::kReasonRbacReady, "");
}

} // namespace captf::controllers
