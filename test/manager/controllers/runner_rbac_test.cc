#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "manager/controllers/kinds.h"
#include "manager/controllers/runner_rbac.h"
#include "manager/kube/cache.h"
#include "manager/kube/clock.h"
#include "test/manager/kube/fakes.h"

namespace captf::controllers {
namespace {

using nlohmann::json;
using Accounts = std::set<std::string>;

// `jobs_sa` and `defaults_sa`: spec.jobs.serviceAccountName and (clusters)
// spec.defaults.jobs.serviceAccountName; empty leaves them unset.
json object(const std::string& ns, const std::string& name, const std::string& jobs_sa,
            const std::string& defaults_sa = "") {
  json spec = json::object();
  if (!jobs_sa.empty()) {
    spec["jobs"]["serviceAccountName"] = jobs_sa;
  }
  if (!defaults_sa.empty()) {
    spec["defaults"]["jobs"]["serviceAccountName"] = defaults_sa;
  }
  return {{"metadata",
           {{"namespace", ns}, {"name", name}, {"resourceVersion", "1"}, {"uid", ns + name}}},
          {"spec", spec}};
}

// A started cache over scripted lists of the three kinds, with the index.
class RunnerAccountsTest : public ::testing::Test {
protected:
  void start(std::vector<json> clusters, std::vector<json> machines, std::vector<json> pools) {
    items_[kinds::kTerraformCluster] = std::move(clusters);
    items_[kinds::kTerraformMachine] = std::move(machines);
    items_[kinds::kTerraformMachinePool] = std::move(pools);
    cache_ = std::make_unique<kube::InformerCache>(
        [this](const kube::GroupVersionKind& gvk, const kube::ListOptions&) {
          auto lw = std::make_unique<kube::testing::FakeListerWatcher>();
          kube::ObjectList list;
          list.resource_version = "1";
          list.items = items_[gvk];
          lw->addList(std::move(list));
          return lw;
        },
        clock_, kube::CacheOptions{}, nullptr, kube::testing::quietLogger());
    ASSERT_TRUE(addRunnerAccountsIndex(*cache_).ok());
    cache_->start();
  }

  Accounts inUse(const std::string& ns) {
    auto accounts = runnerAccountsInUse(*cache_, ns);
    EXPECT_TRUE(accounts.ok()) << accounts.status();
    return accounts.ok() ? *accounts : Accounts{};
  }

  kube::FakeClock clock_;
  std::map<kube::GroupVersionKind, std::vector<json>> items_;
  std::unique_ptr<kube::InformerCache> cache_;
};

TEST_F(RunnerAccountsTest, ClustersRunAsTheirOwnAccountOrTheDefault) {
  start({object("t1", "a", ""), object("t1", "b", "builder"), object("t2", "c", "other")}, {}, {});
  EXPECT_EQ(inUse("t1"), (Accounts{"captf-runner", "builder"}));
  EXPECT_EQ(inUse("t2"), (Accounts{"other"})) << "captf-runner is bound only while in use";
  EXPECT_EQ(inUse("t3"), Accounts{});
}

TEST_F(RunnerAccountsTest, MachinesAndPoolsInheritEveryClusterDefaultOfTheirNamespace) {
  start({object("t1", "a", "builder", "worker"), object("t1", "b", "builder"),
         object("t2", "c", "x", "y")},
        {object("t1", "m", "")}, {object("t1", "p", "pool-sa")});
  EXPECT_EQ(inUse("t1"), (Accounts{"builder", "captf-runner", "pool-sa", "worker"}));
}

TEST_F(RunnerAccountsTest, AClusterDefaultIsBoundOnlyWhenSomethingInheritsIt) {
  start({object("t1", "a", "builder", "worker")}, {object("t1", "m", "own")}, {});
  EXPECT_EQ(inUse("t1"), (Accounts{"builder", "own"}));
}

TEST_F(RunnerAccountsTest, AMachineWithoutAClusterRunsAsCaptfRunner) {
  start({}, {}, {object("t1", "p", "")});
  EXPECT_EQ(inUse("t1"), (Accounts{"captf-runner"}));
}

TEST_F(RunnerAccountsTest, ANamespaceIsNotAPrefixOfAnother) {
  start({object("t1", "a", "one"), object("t10", "b", "ten")}, {}, {});
  EXPECT_EQ(inUse("t1"), (Accounts{"one"}));
}

} // namespace
} // namespace captf::controllers
