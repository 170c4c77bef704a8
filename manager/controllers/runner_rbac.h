#pragma once

// Runner RBAC per tenant namespace (docs/behaviour/security.md#runner-clusterrole): the default
// ServiceAccount captf-runner and the managed RoleBinding captf-runner to
// ClusterRole captf-runner, whose subjects are the union of the
// ServiceAccounts the namespace's Terraform* objects run as. Feeds
// RunnerRBACReady.

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "manager/controllers/identity.h"
#include "manager/kube/cache.h"
#include "manager/kube/client.h"

namespace captf::controllers {

inline constexpr char kRunnerName[] = "captf-runner";

// The cache index behind runnerAccountsInUse: each TerraformCluster,
// TerraformMachine and TerraformMachinePool is found under
// "<ns>/runs-as/<account>" (its own spec.jobs.serviceAccountName, or
// captf-runner), a cluster also under "<ns>/lends/<account>" (its
// spec.defaults.jobs.serviceAccountName, or captf-runner), and a machine or
// pool without an account of its own under "<ns>/inherits".
inline constexpr char kRunnerAccountsIndex[] = "captf.io/runner-accounts";
absl::Status addRunnerAccountsIndex(kube::Cache& cache);

// The effective ServiceAccounts of every Terraform* object in `ns` (docs/behaviour/security.md;
// TerraformClusters and, through their clusters' defaults, machines and
// pools; a machine or pool whose cluster cannot be resolved keeps every
// cluster default). Contains captf-runner when any default is in use.
// Costs the number of distinct accounts in use, not the number of objects.
absl::StatusOr<std::set<std::string>> runnerAccountsInUse(kube::Cache& cache,
                                                          const std::string& ns);

class RunnerRbac {
public:
  // `cache` reads managed ServiceAccounts, RoleBindings and the index of
  // accounts in use; `api` reads custom ServiceAccounts and writes.
  RunnerRbac(kube::Cache& cache, kube::Client& api) : cache_(cache), api_(api) {}

  // Ensures the RBAC for an object running as `service_account` in `ns`.
  // The result's status is the RunnerRBACReady condition; a non-OK
  // `transient` is an API error to retry.
  ConditionResult ensure(const std::string& ns, const std::string& service_account,
                         absl::Status& transient);

private:
  // The RoleBinding's subjects: the accounts the objects of `ns` run as
  // (the index), `sa`, and of the overrides only those opted in.
  absl::StatusOr<nlohmann::json> subjectsInUse(const std::string& ns, const std::string& sa);

  kube::Cache& cache_;
  kube::Client& api_;
};

} // namespace captf::controllers
