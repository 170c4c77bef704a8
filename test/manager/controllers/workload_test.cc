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

// A runner pod whose `list` (initContainerStatuses or containerStatuses)
// has container `name` in `state`.
json podWith(const std::string& list, const std::string& name, const json& state) {
  return {{"spec",
           {{"initContainers", {{{"name", "runner"}, {"image", "reg.local/captf/runner:1"}}}},
            {"containers", {{{"name", "source"}, {"image", "reg.local/team/cluster:v1"}}}}}},
          {"status", {{list, {{{"name", name}, {"image", "ignored"}, {"state", state}}}}}}};
}

TEST(ImagePullWaitTest, NamesTheContainerImageAndTheKubeletsReason) {
  for (const char* reason : {"ErrImagePull", "ImagePullBackOff", "InvalidImageName"}) {
    const auto wait = imagePullWait(
        podWith("containerStatuses", "source",
                {{"waiting", {{"reason", reason}, {"message", "manifest unknown"}}}}));
    ASSERT_TRUE(wait.has_value()) << reason;
    EXPECT_EQ(*wait,
              (ImagePullWait{"source", "reg.local/team/cluster:v1", reason, "manifest unknown"}));
    EXPECT_EQ(imagePullMessage(*wait), std::string("image reg.local/team/cluster:v1 of container "
                                                   "source cannot be pulled (") +
                                           reason + "): manifest unknown");
  }
  // The runner's image, pulled first, is named as well.
  const auto init = imagePullWait(
      podWith("initContainerStatuses", "runner", {{"waiting", {{"reason", "ErrImagePull"}}}}));
  ASSERT_TRUE(init.has_value());
  EXPECT_EQ(init->image, "reg.local/captf/runner:1");
  EXPECT_EQ(imagePullMessage(*init),
            "image reg.local/captf/runner:1 of container runner cannot be pulled (ErrImagePull)");
}

TEST(ImagePullWaitTest, OtherStatesAreNoPullFailure) {
  EXPECT_FALSE(imagePullWait(json::object()).has_value());
  EXPECT_FALSE(imagePullWait(podWith("containerStatuses", "source",
                                     {{"waiting", {{"reason", "ContainerCreating"}}}}))
                   .has_value());
  EXPECT_FALSE(imagePullWait(podWith("containerStatuses", "source",
                                     {{"running", {{"startedAt", "2023-11-14T22:13:20Z"}}}}))
                   .has_value());
  EXPECT_FALSE(imagePullWait(podWith("containerStatuses", "source", {{"waiting", "ErrImagePull"}}))
                   .has_value());
}

TEST(ImagePullWaitTest, TheKubeletsMessageIsClippedAndLosesUrlCredentials) {
  const std::string message = "failed to resolve https://robot:hunter2@mirror.local/v2/x and "
                              "http://mirror.local/v2/y: 401 Unauthorized " +
                              std::string(2000, 'x');
  const auto wait =
      imagePullWait(podWith("containerStatuses", "source",
                            {{"waiting", {{"reason", "ErrImagePull"}, {"message", message}}}}));
  ASSERT_TRUE(wait.has_value());
  EXPECT_EQ(wait->message.find("hunter2"), std::string::npos) << wait->message;
  EXPECT_EQ(wait->message.find("robot"), std::string::npos) << wait->message;
  EXPECT_TRUE(wait->message.starts_with("failed to resolve https://[redacted]@mirror.local/v2/x "
                                        "and http://mirror.local/v2/y: 401 Unauthorized"))
      << wait->message;
  EXPECT_LE(wait->message.size(), 512U);
  EXPECT_TRUE(wait->message.ends_with("..."));
  // A cut never splits a UTF-8 character.
  const auto utf8 = imagePullWait(podWith(
      "containerStatuses", "source",
      {{"waiting",
        {{"reason", "ErrImagePull"}, {"message", std::string(508, 'a') + "\xc3\xa9" + "bbbb"}}}}));
  ASSERT_TRUE(utf8.has_value());
  // 509 bytes fit before "...": the cut falls inside the two-byte character.
  EXPECT_EQ(utf8->message, std::string(508, 'a') + "...");
}

TEST(ImagePullWakeTest, OnlyABeginningEndingOrChangedWaitWakesTheObject) {
  const kube::Predicate wake = imagePullChanged();
  const json pulling = podWith("containerStatuses", "source",
                               {{"waiting", {{"reason", "ErrImagePull"}, {"message", "a"}}}});
  json backing_off = pulling;
  backing_off["status"]["containerStatuses"][0]["state"]["waiting"] = {
      {"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image"}};
  const json running = podWith("containerStatuses", "source", {{"running", json::object()}});
  const json runner_pulling =
      podWith("initContainerStatuses", "runner", {{"waiting", {{"reason", "ErrImagePull"}}}});
  EXPECT_TRUE(wake.create(pulling));
  EXPECT_FALSE(wake.create(running));
  EXPECT_TRUE(wake.update(running, pulling));        // begins
  EXPECT_TRUE(wake.update(pulling, running));        // ends
  EXPECT_TRUE(wake.update(runner_pulling, pulling)); // another container and image
  EXPECT_FALSE(wake.update(pulling, backing_off));   // the kubelet's reason and message only
  EXPECT_FALSE(wake.update(running, running));
  EXPECT_FALSE(wake.remove(pulling));
}

TEST(ImagePullWakeTest, APodWakesTheObjectsOfItsJobOfTheWatchedKind) {
  kube::testing::FakeClient store;
  store.put({{"apiVersion", "batch/v1"},
             {"kind", "Job"},
             {"metadata",
              {{"namespace", "t1"},
               {"name", "c1-apply-1"},
               {"resourceVersion", "1"},
               {"ownerReferences",
                {{{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                  {"kind", "TerraformCluster"},
                  {"name", "a-name-longer-than-a-label-value-may-be-and-so-on-and-so-forth-x"},
                  {"uid", "u1"}},
                 {{"apiVersion", "example.com/v1"},
                  {"kind", "TerraformCluster"},
                  {"name", "other"}}}}}}});
  json pod = {{"metadata",
               {{"namespace", "t1"},
                {"name", "c1-apply-1-x"},
                {"ownerReferences",
                 {{{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "c1-apply-1"}}}}}}};
  EXPECT_EQ(ownersOfPodJob(store, kinds::kTerraformCluster, pod),
            (std::vector<kube::Request>{
                {"t1", "a-name-longer-than-a-label-value-may-be-and-so-on-and-so-forth-x"}}));
  EXPECT_TRUE(ownersOfPodJob(store, kinds::kTerraformMachine, pod).empty());
  // A pod of a Job that is gone, or of no Job, wakes nothing.
  pod["metadata"]["ownerReferences"][0]["name"] = "gone";
  EXPECT_TRUE(ownersOfPodJob(store, kinds::kTerraformCluster, pod).empty());
  pod["metadata"].erase("ownerReferences");
  EXPECT_TRUE(ownersOfPodJob(store, kinds::kTerraformCluster, pod).empty());
}

} // namespace
} // namespace captf::controllers
