#pragma once

// Runner RBAC per tenant namespace (spec/captf-core.md §20.2): the default
// ServiceAccount captf-runner and the managed RoleBinding captf-runner to
// ClusterRole captf-runner, whose subjects are the union of the
// ServiceAccounts the namespace's Terraform* objects run as. Feeds
// RunnerRBACReady.

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "manager/controllers/identity.h"
#include "manager/kube/client.h"

namespace captf::controllers {

inline constexpr char kRunnerName[] = "captf-runner";

class RunnerRbac {
public:
  // `cached` reads managed ServiceAccounts, RoleBindings and the workload
  // objects; `api` reads custom ServiceAccounts and writes.
  RunnerRbac(kube::Client& cached, kube::Client& api) : cached_(cached), api_(api) {}

  // Ensures the RBAC for an object running as `service_account` in `ns`.
  // The result's status is the RunnerRBACReady condition; a non-OK
  // `transient` is an API error to retry.
  ConditionResult ensure(const std::string& ns, const std::string& service_account,
                         absl::Status& transient);

  // The effective ServiceAccounts of every Terraform* object in `ns`
  // (§20.2; TerraformClusters and, through their clusters' defaults,
  // machines and pools). Always contains captf-runner when any default is
  // in use.
  absl::StatusOr<std::set<std::string>> serviceAccountsInUse(const std::string& ns);

private:
  kube::Client& cached_;
  kube::Client& api_;
};

} // namespace captf::controllers
