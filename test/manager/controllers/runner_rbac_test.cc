#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/runner_rbac.h"
#include "manager/kube/cache.h"
#include "manager/kube/clock.h"
#include "test/manager/controllers/fakes.h"
#include "test/manager/kube/fake_client.h"
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

// The informers of a manager in which another pass, for a TerraformMachine
// running as `b`, has just added `b` to the RoleBinding: that pass read the
// machine from the cache before its write, so once the RoleBinding
// informer shows the write, the machine informer (and its index) shows the
// machine.
class CausalCache final : public StoreCache {
public:
  using StoreCache::StoreCache;

  absl::StatusOr<json> get(const kube::GroupVersionKind& gvk, const kube::ObjectKey& key) override {
    if (gvk == kinds::kRoleBinding) {
      binding_read_ = true;
    }
    return StoreCache::get(gvk, key);
  }
  absl::StatusOr<std::vector<std::string>>
  indexValues(const kube::GroupVersionKind& gvk, const std::string&, std::string_view) override {
    if (binding_read_ && gvk == kinds::kTerraformMachine) {
      return std::vector<std::string>{"t1/runs-as/b"};
    }
    return std::vector<std::string>{};
  }

private:
  bool binding_read_ = false;
};

// The subjects are computed after the RoleBinding is read, so a subject
// another pass has just added is in them and is not written away.
TEST(RunnerRbacTest, ASubjectAnotherPassHasJustAddedIsKept) {
  kube::testing::FakeClient store;
  const json managed = {{std::string(api::kLabelManaged), "true"}};
  store.put({{"apiVersion", "v1"},
             {"kind", "ServiceAccount"},
             {"metadata",
              {{"namespace", "t1"},
               {"name", "captf-runner"},
               {"resourceVersion", "1"},
               {"labels", managed}}}});
  store.put({{"apiVersion", "v1"},
             {"kind", "ServiceAccount"},
             {"metadata",
              {{"namespace", "t1"},
               {"name", "b"},
               {"resourceVersion", "1"},
               {"labels", {{std::string(api::kLabelRunner), "true"}}}}}});
  const json subjects = {
      {{"kind", "ServiceAccount"}, {"name", "b"}, {"namespace", "t1"}},
      {{"kind", "ServiceAccount"}, {"name", "captf-runner"}, {"namespace", "t1"}}};
  store.put({{"apiVersion", "rbac.authorization.k8s.io/v1"},
             {"kind", "RoleBinding"},
             {"metadata",
              {{"namespace", "t1"},
               {"name", "captf-runner"},
               {"resourceVersion", "5"},
               {"labels", managed}}},
             {"roleRef",
              {{"apiGroup", "rbac.authorization.k8s.io"},
               {"kind", "ClusterRole"},
               {"name", "captf-runner"}}},
             {"subjects", subjects}});
  CausalCache cache(store);
  RunnerRbac rbac(cache, store);
  absl::Status transient;
  const ConditionResult ready = rbac.ensure("t1", "", transient);
  EXPECT_TRUE(transient.ok()) << transient;
  EXPECT_TRUE(ready.isTrue()) << ready.message;
  EXPECT_EQ((*store.get(kinds::kRoleBinding, {"t1", "captf-runner"}))["subjects"], subjects);
  EXPECT_EQ(store.writes(), 0U);
}

} // namespace
} // namespace captf::controllers
