#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "manager/controllers/kinds.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "test/manager/kube/fake_client.h"

namespace captf::controllers {
namespace {

using nlohmann::json;

json terraformCluster(const std::string& rv) {
  return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
          {"kind", "TerraformCluster"},
          {"metadata", {{"namespace", "t1"}, {"name", "c1"}, {"resourceVersion", rv}}},
          {"status", {{"ready", false}}}};
}

// The in-memory API server lists by label selector, as listRunJobs needs.
TEST(FakeClientTest, ListsByLabelSelector) {
  kube::testing::FakeClient api;
  for (const auto& [name, owner] : {std::pair{"j1", "c1"}, std::pair{"j2", "c2"}}) {
    api.put({{"apiVersion", "batch/v1"},
             {"kind", "Job"},
             {"metadata", {{"namespace", "t1"}, {"name", name}, {"labels", {{"owner", owner}}}}}});
  }
  kube::ListOptions options;
  options.ns = "t1";
  options.label_selector = "owner=c1";
  auto listed = api.list(kinds::kJob, options);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->items.size(), 1U);
  EXPECT_EQ(kube::meta::name(listed->items[0]), "j1");
  options.label_selector = "owner in (c1,c2)";
  EXPECT_EQ(api.list(kinds::kJob, options)->items.size(), 2U);
  options.label_selector = "owner in (";
  EXPECT_EQ(kube::reasonOf(api.list(kinds::kJob, options).status()), kube::Reason::kBadRequest);
}

// A pass that read a stale copy must not write back what it read.
TEST(ObjectPatcherTest, StatusPatchIsRefusedForACopyOlderThanTheServers) {
  kube::testing::FakeClient api;
  api.put(terraformCluster("5"));
  json stale = terraformCluster("4");
  ObjectPatcher patcher(api, stale);
  const absl::Status s = patcher.patchStatus(json{{"ready", false}}, json{{"ready", true}});
  EXPECT_TRUE(kube::isConflict(s)) << s;
  EXPECT_EQ(api.writes(), 0U);
  json current = terraformCluster("5");
  ObjectPatcher fresh(api, current);
  EXPECT_TRUE(fresh.patchStatus(json{{"ready", false}}, json{{"ready", true}}).ok());
  EXPECT_EQ((*api.get(kinds::kTerraformCluster, {"t1", "c1"}))["status"]["ready"], true);
  EXPECT_EQ(kube::meta::resourceVersion(current),
            kube::meta::resourceVersion(*api.get(kinds::kTerraformCluster, {"t1", "c1"})));
}

// Each of the pass's own writes (annotation, finalizer, spec write-back)
// moves its copy along, so its status patch afterwards is not refused. The
// spec write-back of spec.controlPlaneEndpoint used to be sent beside the
// patcher and left the copy behind: the status patch of that pass was then a
// Conflict with the pass's own write.
TEST(ObjectPatcherTest, StatusPatchFollowsThePassesOwnWrites) {
  kube::testing::FakeClient api;
  api.put(terraformCluster("5"));
  json object = terraformCluster("5");
  ObjectPatcher patcher(api, object);
  ASSERT_TRUE(patcher.setAnnotation("captf.io/x", std::string("y")).ok());
  ASSERT_TRUE(patcher.addFinalizer("example.com/f").ok());
  ASSERT_TRUE(
      patcher.patch({{"spec", {{"controlPlaneEndpoint", {{"host", "lb"}, {"port", 6443}}}}}}).ok());
  EXPECT_NE(kube::meta::resourceVersion(object), "5");
  EXPECT_TRUE(patcher.patchStatus(json{{"ready", false}}, json{{"ready", true}}).ok());
  const json stored = *api.get(kinds::kTerraformCluster, {"t1", "c1"});
  EXPECT_EQ(stored["spec"]["controlPlaneEndpoint"]["port"], 6443);
  EXPECT_EQ(stored["status"]["ready"], true);
  EXPECT_TRUE(hasFinalizer(stored, "example.com/f"));

  // The old path: the same write sent around the patcher leaves the copy's
  // version behind, and the guarded status patch is refused.
  json behind = stored;
  ASSERT_TRUE(api.patch(kinds::kTerraformCluster, {"t1", "c1"}, kube::PatchType::kMerge,
                        {{"spec", {{"controlPlaneEndpoint", {{"port", 6444}}}}}})
                  .ok());
  ObjectPatcher old_path(api, behind);
  EXPECT_TRUE(
      kube::isConflict(old_path.patchStatus(json{{"ready", true}}, json{{"ready", false}})));
}

// A pass that read a stale copy has every write refused, so no write of its
// own can move the copy to the server's version and carry the status patch
// decided on that copy over a newer status. The annotation writes used to be
// unguarded and took the server's version from the reply: a pass on a copy
// from before the previous pass's status patch removed captf.io/block-move
// and then wrote the older status back (an approved apply of a Manual
// cluster showed PlanChanged again once it had succeeded).
TEST(ObjectPatcherTest, AStaleCopyCannotWriteAtAll) {
  kube::testing::FakeClient api;
  api.put(terraformCluster("5"));
  json stale = terraformCluster("4");
  ObjectPatcher patcher(api, stale);
  EXPECT_TRUE(kube::isConflict(patcher.setAnnotation("captf.io/block-move", std::nullopt)));
  EXPECT_TRUE(kube::isConflict(patcher.setAnnotation("captf.io/x", std::string("y"))));
  EXPECT_TRUE(kube::isConflict(patcher.patch({{"spec", {{"providerID", "p"}}}})));
  EXPECT_TRUE(kube::isConflict(patcher.removeFinalizer("example.com/f")));
  EXPECT_EQ(kube::meta::resourceVersion(stale), "4");
  EXPECT_TRUE(kube::isConflict(patcher.patchStatus(json{{"ready", true}}, json{{"ready", false}})));
  EXPECT_EQ(api.writes(), 0U);
  // Removing an annotation of an object that is gone is success.
  ASSERT_TRUE(api.remove(kinds::kTerraformCluster, {"t1", "c1"}).ok());
  EXPECT_TRUE(patcher.setAnnotation("captf.io/block-move", std::nullopt).ok());
  EXPECT_EQ(kube::reasonOf(patcher.setAnnotation("captf.io/x", std::string("y"))),
            kube::Reason::kNotFound);
}

// The guarded patch the kinds send to their owners (a MachinePool's
// replicas claim, a Machine's remediation annotations): a decision made on
// a copy older than the server's is refused, one made on the current copy
// is written.
TEST(GuardedPatchTest, WritesOnlyWhatWasDecidedOnTheCurrentCopy) {
  kube::testing::FakeClient api;
  api.put(terraformCluster("5"));
  const json patch = {
      {"metadata", {{"annotations", {{"cluster.x-k8s.io/replicas-managed-by", "captf"}}}}}};
  EXPECT_TRUE(kube::isConflict(
      guardedPatch(api, kinds::kTerraformCluster, terraformCluster("4"), patch).status()));
  EXPECT_EQ(api.writes(), 0U);
  auto written = guardedPatch(api, kinds::kTerraformCluster, terraformCluster("5"), patch);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(kube::meta::annotations(*written).value("cluster.x-k8s.io/replicas-managed-by", ""),
            "captf");
}

// A write of someone else between the read and the status patch is a
// Conflict, and so is a finalizer write from that copy.
TEST(ObjectPatcherTest, WritesOfOthersMakeTheGuardedWritesConflict) {
  kube::testing::FakeClient api;
  api.put(terraformCluster("5"));
  json object = terraformCluster("5");
  ObjectPatcher patcher(api, object);
  json other = terraformCluster("5");
  ASSERT_TRUE(patchAnnotation(api, other, "captf.io/other", std::string("1")).ok());
  EXPECT_TRUE(kube::isConflict(patcher.addFinalizer("example.com/f")));
  EXPECT_TRUE(kube::isConflict(patcher.patchStatus(json{{"ready", false}}, json{{"ready", true}})));
  // Removing the finalizer of an object that is gone is success.
  ASSERT_TRUE(api.remove(kinds::kTerraformCluster, {"t1", "c1"}).ok());
  EXPECT_TRUE(patcher.removeFinalizer("example.com/f").ok());
}

} // namespace
} // namespace captf::controllers
