#include "manager/controllers/runner_rbac.h"

#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"
#include "manager/workspace/names.h"

namespace captf::controllers {

using nlohmann::json;

namespace {

using kube::str;

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

// The managed RoleBinding captf-runner of `ns` binding `subjects`.
json bindingOf(const std::string& ns, const json& subjects) {
  return {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "RoleBinding"},
      {"metadata",
       {{"name", kRunnerName}, {"namespace", ns}, {"labels", {{str(api::kLabelManaged), "true"}}}}},
      {"roleRef", kRoleRef},
      {"subjects", subjects}};
}

} // namespace

namespace {

constexpr char kRunsAs[] = "runs-as/";
constexpr char kLends[] = "lends/";
constexpr char kInherits[] = "inherits";

// Drops `prefix` from the front of `text` when it is there.
bool consume(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) {
    return false;
  }
  text.remove_prefix(prefix.size());
  return true;
}

std::string orRunner(const std::string& account) {
  return account.empty() ? std::string(kRunnerName) : account;
}

std::vector<std::string> clusterAccounts(const json& cluster) {
  const std::string prefix = kube::meta::ns(cluster) + "/";
  const json spec = cluster.value("spec", json::object());
  return {
      prefix + kRunsAs + orRunner(serviceAccountOf(spec.value("jobs", json()))),
      prefix + kLends +
          orRunner(serviceAccountOf(spec.value("defaults", json::object()).value("jobs", json())))};
}

std::vector<std::string> workloadAccounts(const json& object) {
  const std::string prefix = kube::meta::ns(object) + "/";
  const std::string own =
      serviceAccountOf(object.value("spec", json::object()).value("jobs", json()));
  return {own.empty() ? prefix + kInherits : prefix + kRunsAs + own};
}

} // namespace

absl::Status addRunnerAccountsIndex(kube::Cache& cache) {
  for (const auto* gvk : kinds::kWorkloadKinds) {
    // The TerraformCluster also lends its spec.defaults.jobs account to the
    // other kinds, which inherit it.
    kube::IndexFunc accounts =
        gvk == &kinds::kTerraformCluster ? kube::IndexFunc(clusterAccounts) : workloadAccounts;
    if (absl::Status added = cache.addIndex(*gvk, kRunnerAccountsIndex, std::move(accounts));
        !added.ok()) {
      return added;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::set<std::string>> runnerAccountsInUse(kube::Cache& cache,
                                                          const std::string& ns) {
  const std::string prefix = ns + "/";
  std::set<std::string> accounts;
  std::set<std::string> defaults;
  bool inherits = false;
  for (const auto* gvk : kinds::kWorkloadKinds) {
    auto values = cache.indexValues(*gvk, kRunnerAccountsIndex, prefix);
    if (!values.ok()) {
      return values.status();
    }
    for (const std::string& value : *values) {
      std::string_view rest = std::string_view(value).substr(prefix.size());
      if (consume(rest, kRunsAs)) {
        accounts.emplace(rest);
      } else if (consume(rest, kLends)) {
        defaults.emplace(rest);
      } else if (rest == kInherits) {
        inherits = true;
      }
    }
  }
  if (inherits) {
    if (defaults.empty()) {
      accounts.insert(kRunnerName);
    }
    accounts.insert(defaults.begin(), defaults.end());
  }
  return accounts;
}

absl::StatusOr<json> RunnerRbac::subjectsInUse(const std::string& ns, const std::string& sa) {
  auto accounts = runnerAccountsInUse(cache_, ns);
  if (!accounts.ok()) {
    return accounts.status();
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
  return subjectsOf(bound, ns);
}

ConditionResult RunnerRbac::ensure(const std::string& ns, const std::string& service_account,
                                   absl::Status& transient) {
  const std::string sa = service_account.empty() ? std::string(kRunnerName) : service_account;
  if (sa != kRunnerName) {
    // An override must exist and opt in (captf.io/runner=true).
    auto custom = api_.get(kinds::kServiceAccount, {ns, sa});
    if (!custom.ok() && !kube::isNotFound(custom.status())) {
      transient = custom.status();
      return conditionResult("False", api::conditions::kReasonRbacFailed,
                             "reading ServiceAccount failed");
    }
    if (!custom.ok() || kube::meta::labels(*custom).value(str(api::kLabelRunner), "") != "true") {
      return conditionResult("False", api::conditions::kReasonServiceAccountNotOptedIn,
                             "ServiceAccount " + sa +
                                 " must exist and carry label captf.io/runner=true");
    }
  } else {
    auto existing = cache_.get(kinds::kServiceAccount, {ns, sa});
    if (!existing.ok()) {
      if (!kube::isNotFound(existing.status())) {
        transient = existing.status();
        return conditionResult("False", api::conditions::kReasonRbacFailed,
                               "reading ServiceAccount failed");
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
        return conditionResult("False", api::conditions::kReasonRbacFailed,
                               "creating ServiceAccount " + sa + " failed");
      }
    }
  }

  // The RoleBinding is read before the objects that name accounts: any
  // subject another pass of this process wrote into the version read here
  // came from an object already in the cache, so the subjects computed
  // next include it and the guarded update cannot drop it. (Right after a
  // restart the informers list separately, so the RoleBinding may show a
  // subject before its object is listed; it then drops out until that
  // object's pass adds it back.)
  auto existing = cache_.get(kinds::kRoleBinding, {ns, kRunnerName});
  if (!existing.ok() && !kube::isNotFound(existing.status())) {
    transient = existing.status();
    return conditionResult("False", api::conditions::kReasonRbacFailed,
                           "reading RoleBinding failed");
  }
  auto subjects = subjectsInUse(ns, sa);
  if (!existing.ok() && subjects.ok()) {
    auto created = api_.create(bindingOf(ns, *subjects));
    if (created.ok()) {
      return conditionResult("True", api::conditions::kReasonRbacReady, "");
    }
    if (!kube::isAlreadyExists(created.status())) {
      transient = created.status();
      return conditionResult("False", api::conditions::kReasonRbacFailed,
                             "creating RoleBinding captf-runner failed");
    }
    // Another pass created it meanwhile: its version, then the subjects
    // again, for the same reason as above.
    existing = api_.get(kinds::kRoleBinding, {ns, kRunnerName});
    if (!existing.ok()) {
      transient = existing.status();
      return conditionResult("False", api::conditions::kReasonRbacFailed,
                             "reading RoleBinding failed");
    }
    subjects = subjectsInUse(ns, sa);
  }
  if (!subjects.ok()) {
    transient = subjects.status();
    return conditionResult("False", api::conditions::kReasonRbacFailed, "listing objects failed");
  }
  if (!workspace::isManaged(*existing)) {
    return conditionResult(
        "False", api::conditions::kReasonRbacFailed,
        "RoleBinding captf-runner exists and is not managed by CAPTF; it is never touched");
  }
  if (existing->value("roleRef", json::object()) != kRoleRef) {
    // roleRef is immutable: delete and re-create.
    kube::DeleteOptions options;
    options.preconditions.uid = kube::meta::uid(*existing);
    absl::Status removed = api_.remove(kinds::kRoleBinding, {ns, kRunnerName}, options);
    if (!removed.ok() && !kube::isNotFound(removed)) {
      transient = std::move(removed);
      return conditionResult("False", api::conditions::kReasonRbacFailed,
                             "replacing RoleBinding failed");
    }
    auto created = api_.create(bindingOf(ns, *subjects));
    if (!created.ok()) {
      transient = created.status();
      return conditionResult("False", api::conditions::kReasonRbacFailed,
                             "re-creating RoleBinding failed");
    }
    return conditionResult("True", api::conditions::kReasonRbacReady, "");
  }
  if (existing->value("subjects", json::array()) != *subjects) {
    json updated = *existing;
    updated["subjects"] = *subjects;
    auto written = api_.update(updated);
    if (!written.ok()) {
      transient = written.status();
      return conditionResult("False", api::conditions::kReasonRbacFailed,
                             "updating RoleBinding subjects failed");
    }
  }
  return conditionResult("True", api::conditions::kReasonRbacReady, "");
}

} // namespace captf::controllers
