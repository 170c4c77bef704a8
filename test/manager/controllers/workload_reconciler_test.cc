// The shared pass (WorkloadReconciler) over the in-memory API server, run
// for TerraformCluster (its kind owned by a Cluster in the store): what the
// pass guarantees.
//   - a finished Job is bookkept exactly once across a failed status patch,
//     and its counts land only with the patch that carries its result;
//   - no Job is created from a stale copy of the object, and no write of a
//     pass over a stale copy carries its status patch over a newer status;
//   - a stuck Job (never started, inputs Secret gone) is deleted;
//   - a lock whose holder pod is gone is forced only past its Job's deadline;
//   - a pod that cannot pull its image sets ImagePullFailed once (one Event,
//     one count), keeps its Job, and clears when the image is pulled;
//   - final cleanup deletes Leases and state, and the finalizer goes last;
//   - an identity denial counts once when it begins, not every pass;
//   - an unreadable state counts once while it stays unreadable;
//   - a finished destroy counts once, also on passes over a cached copy
//     that still shows the finalizer after it went;
//   - a backup Secret name already holding other content is a conflict,
//     never a backup taken; the leftover of the same chunk is not.
#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "contract/digest.h"
#include "manager/api/keys.h"
#include "manager/api/terraform_cluster.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/metrics.h"
#include "manager/controllers/terraform_cluster_kind.h"
#include "manager/controllers/workload_reconciler.h"
#include "manager/kube/clock.h"
#include "manager/kube/errors.h"
#include "manager/kube/metrics.h"
#include "manager/lifecycle/names.h"
#include "manager/workspace/backups.h"
#include "manager/workspace/locks.h"
#include "manager/workspace/names.h"
#include "manager/workspace/state.h"
#include "test/contract/test_util.h"
#include "test/manager/controllers/fakes.h"
#include "test/manager/kube/fake_client.h"
#include "test/manager/kube/fakes.h"

namespace captf::controllers {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::Not;

constexpr char kNs[] = "t1";
constexpr char kName[] = "c1";

// The fake API server with a log of writes and a switch that refuses the
// next status patches (a lost connection, an API server restart).
class RecordingClient final : public kube::Client {
public:
  explicit RecordingClient(kube::testing::FakeClient& store) : store_(store) {}

  absl::StatusOr<json> get(const kube::GroupVersionKind& gvk, const kube::ObjectKey& key) override {
    if (gvk == kinds::kJob && gone_jobs.contains(key.name)) {
      const json status = {{"kind", "Status"},
                           {"code", 404},
                           {"reason", "NotFound"},
                           {"message", key.name + " not found"}};
      return kube::errorFromResponse(404, status.dump());
    }
    return store_.get(gvk, key);
  }
  absl::StatusOr<kube::ObjectList> list(const kube::GroupVersionKind& gvk,
                                        const kube::ListOptions& options) override {
    return store_.list(gvk, options);
  }
  absl::StatusOr<json> create(const json& object, const kube::CreateOptions& options) override {
    log.push_back("create " + object.value("kind", "") + " " + kube::meta::name(object));
    if (forbid_config_maps && object.value("kind", "") == "ConfigMap") {
      return forbidden();
    }
    return store_.create(object, options);
  }
  absl::StatusOr<json> update(const json& object, const kube::UpdateOptions& options) override {
    log.push_back("update " + object.value("kind", "") + " " + kube::meta::name(object));
    if (forbid_config_maps && object.value("kind", "") == "ConfigMap") {
      return forbidden();
    }
    return store_.update(object, options);
  }
  absl::StatusOr<json> patch(const kube::GroupVersionKind& gvk, const kube::ObjectKey& key,
                             kube::PatchType type, const json& patch,
                             const kube::PatchOptions& options) override {
    if (options.subresource == "status" && fail_status_patches > 0) {
      --fail_status_patches;
      return absl::UnavailableError("the API server went away");
    }
    log.push_back("patch " + gvk.kind + (options.subresource.empty() ? "" : "/status") + " " +
                  key.name + " " + patch.dump());
    return store_.patch(gvk, key, type, patch, options);
  }
  absl::StatusOr<json> apply(const json& object, const kube::ApplyOptions& options) override {
    return store_.apply(object, options);
  }
  absl::Status remove(const kube::GroupVersionKind& gvk, const kube::ObjectKey& key,
                      const kube::DeleteOptions& options) override {
    log.push_back("delete " + gvk.kind + " " + key.name);
    return store_.remove(gvk, key, options);
  }

  int fail_status_patches = 0;
  // Refuses every ConfigMap write (Forbidden), as an RBAC or quota would.
  bool forbid_config_maps = false;
  std::vector<std::string> log;
  // Jobs the API server has deleted while the cache still lists them.
  std::set<std::string> gone_jobs;

private:
  static absl::Status forbidden() {
    const json status = {{"kind", "Status"},
                         {"code", 403},
                         {"reason", "Forbidden"},
                         {"message", "configmaps is forbidden"}};
    return kube::errorFromResponse(403, status.dump());
  }

  kube::testing::FakeClient& store_;
};

class WorkloadReconcilerTest : public ::testing::Test {
protected:
  WorkloadReconcilerTest()
      : api_(store_), cache_(store_), cached_(cache_, api_), metrics_(registry_, "v", "c"),
        reconciler_(deps(), terraformClusterKind(deps())) {
    settings_.runner_image = "registry.local/captf/runner:1";
    store_.put({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                {"kind", "TerraformClusterIdentity"},
                {"metadata", {{"name", "aws"}, {"resourceVersion", "1"}}},
                {"spec",
                 {{"allowedNamespaces", {{"list", {kNs}}}},
                  {"secretRef", {{"namespace", "captf-system"}, {"name", "aws-creds"}}}}}});
    store_.put({{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"metadata",
                 {{"namespace", "captf-system"}, {"name", "aws-creds"}, {"resourceVersion", "1"}}},
                {"data", {{"key", "c2VjcmV0"}}}});
    store_.put({{"apiVersion", "v1"},
                {"kind", "Namespace"},
                {"metadata", {{"name", kNs}, {"resourceVersion", "1"}}}});
    // The owning Cluster, naming the object back.
    store_.put({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                {"kind", "Cluster"},
                {"metadata",
                 {{"name", "capi-c1"},
                  {"namespace", kNs},
                  {"uid", "uid-capi-c1"},
                  {"resourceVersion", "1"}}},
                {"spec",
                 {{"infrastructureRef",
                   {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
                    {"kind", "TerraformCluster"},
                    {"name", kName}}}}}});
    store_.put(object());
  }

  ReconcilerDeps deps() {
    return ReconcilerDeps{cache_, cached_, api_, events_, clock_, metrics_, settings_};
  }

  json object() const {
    return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
            {"kind", "TerraformCluster"},
            {"metadata",
             {{"name", kName},
              {"namespace", kNs},
              {"uid", "uid-c1"},
              {"generation", 1},
              {"resourceVersion", "7"},
              {"finalizers", {api::kFinalizerTerraformCluster}},
              {"ownerReferences",
               {{{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                 {"kind", "Cluster"},
                 {"name", "capi-c1"},
                 {"uid", "uid-capi-c1"}}}}}},
            {"spec",
             {{"source", {{"image", "registry.local/team/cluster:v1"}}},
              {"identityRef", {{"name", "aws"}}}}}};
  }

  absl::StatusOr<kube::Result> reconcile() {
    auto logger = kube::testing::quietLogger();
    return reconciler_.reconcile(kube::ReconcileContext{{}, kube::Logger(logger)},
                                 kube::Request{kNs, kName});
  }
  json live() { return *store_.get(kinds::kTerraformCluster, {kNs, kName}); }
  std::vector<json> jobs() {
    kube::ListOptions options;
    options.ns = kNs;
    return store_.list(kinds::kJob, options)->items;
  }
  // Marks Job `name` failed, its pod gone: an interrupted run.
  void finishInterrupted(const std::string& name) {
    json job = *store_.get(kinds::kJob, {kNs, name});
    job["status"] = {{"failed", 1},
                     {"conditions", {{{"type", "Failed"}, {"status", "True"}}}},
                     {"completionTime", "2023-11-14T22:20:00Z"}};
    store_.put(job);
  }
  // With the cache showing `cached` and the API server `moved` (a newer
  // version), a pass ends at the check before the Job and runs again: no
  // Job, and no write to the object at all (so no refused write stopped it).
  void expectAPassOverTheCacheStartsNothing(const json& cached, const json& moved) {
    cache_.pin(cached);
    store_.put(moved);
    api_.log.clear();
    auto result = reconcile();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(result->requeue);
    EXPECT_TRUE(jobs().empty());
    for (const std::string& write : api_.log) {
      EXPECT_THAT(write, Not(::testing::StartsWith("patch TerraformCluster"))) << write;
      EXPECT_THAT(write, Not(::testing::StartsWith("create Job"))) << write;
    }
  }
  double jobsTotal(const std::string& result) {
    return metrics_.jobs_total.withLabels({"TerraformCluster", "apply", result}).value();
  }
  bool bookkept(const std::string& job) {
    return kube::meta::annotations(*store_.get(kinds::kJob, {kNs, job}))
        .contains(std::string(api::kAnnotationBookkept));
  }

  kube::testing::FakeClient store_;
  RecordingClient api_;
  StoreCache cache_;
  CachedClient cached_;
  kube::FakeClock clock_;
  Reasons events_;
  kube::MetricsRegistry registry_;
  CaptfMetrics metrics_;
  ControllerSettings settings_;
  WorkloadReconciler reconciler_;
};

TEST_F(WorkloadReconcilerTest, TheFirstPassStartsOneApplyJobWithItsInputs) {
  ASSERT_TRUE(reconcile().ok());
  std::vector<json> created = jobs();
  ASSERT_EQ(created.size(), 1U);
  const std::string job = kube::meta::name(created[0]);
  EXPECT_EQ(kube::meta::labels(created[0]).value("captf.infrastructure.cluster.x-k8s.io/op", ""),
            "apply");
  EXPECT_TRUE(store_.get(kinds::kSecret, {kNs, lifecycle::perRunSecretName(job)}).ok());
  EXPECT_TRUE(store_.get(kinds::kSecret, {kNs, "captf-inputs-c-c1"}).ok());
  EXPECT_EQ(live()["status"]["activeJob"]["name"], job);
  EXPECT_THAT(events_.reasons, Contains("JobCreated"));
  // A second pass waits for it.
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(jobs().size(), 1U);
}

// docs/runbooks/CAPTFNoRecentSuccess.md: the drift series exists while the
// object is scheduled for drift checks, with status.lastDriftCheck; paused
// or with drift off it is withdrawn; a cluster without a recurring refresh
// has no refresh series.
TEST_F(WorkloadReconcilerTest, TheDriftTimestampExistsOnlyWhileDriftIsScheduled) {
  json provisioned = object();
  provisioned["status"] = {{"initialization", {{"provisioned", true}}},
                           {"lastDriftCheck", "2023-11-14T22:13:20Z"},
                           {"lastRefresh", "2023-11-14T22:13:20Z"}};
  store_.put(provisioned);
  const auto series = [&](const char* op) {
    std::optional<double> value;
    metrics_.last_success_timestamp_seconds.forEach(
        [&](const std::vector<std::string>& labels, const kube::Gauge& gauge) {
          if (labels == std::vector<std::string>{"TerraformCluster", kNs, kName, op}) {
            value = gauge.value();
          }
        });
    return value;
  };
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(series("drift"), 1700000000.0);
  EXPECT_EQ(series("refresh"), std::nullopt) << "a cluster refreshes only while pending";

  // Paused: withdrawn.
  json paused = live();
  paused["metadata"]["annotations"][std::string(api::kAnnotationPaused)] = "true";
  store_.put(paused);
  ASSERT_TRUE(reconcile().ok());
  bool is_paused = false;
  for (const json& c : live()["status"].value("conditions", json::array())) {
    is_paused = is_paused || (c.value("type", "") == "Paused" && c.value("status", "") == "True");
  }
  EXPECT_TRUE(is_paused) << live()["status"].dump();
  EXPECT_EQ(series("drift"), std::nullopt);

  // Resumed: back; drift turned off: withdrawn again.
  json resumed = live();
  resumed["metadata"]["annotations"].erase(std::string(api::kAnnotationPaused));
  store_.put(resumed);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(series("drift"), 1700000000.0);
  json off = live();
  off["spec"]["drift"] = {{"intervalSeconds", 0}};
  store_.put(off);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(series("drift"), std::nullopt);
}

TEST_F(WorkloadReconcilerTest, AFinishedJobIsBookkeptOnceAcrossAFailedStatusPatch) {
  ASSERT_TRUE(reconcile().ok());
  const std::string job = kube::meta::name(jobs().at(0));
  finishInterrupted(job);

  // The status patch carrying the result fails: nothing counted, no mark.
  api_.fail_status_patches = 1;
  EXPECT_FALSE(reconcile().ok());
  EXPECT_FALSE(bookkept(job));
  EXPECT_EQ(jobsTotal("interrupted"), 0);
  EXPECT_FALSE(live()["status"].contains("lastRun"));

  // The next pass bookkeeps it: once.
  ASSERT_TRUE(reconcile().ok());
  EXPECT_TRUE(bookkept(job));
  EXPECT_EQ(jobsTotal("interrupted"), 1);
  EXPECT_EQ(live()["status"]["lastRun"]["job"], job);
  ASSERT_TRUE(reconcile().ok());
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(jobsTotal("interrupted"), 1);
  // The per-run Secret went with the bookkeeping.
  EXPECT_FALSE(store_.get(kinds::kSecret, {kNs, lifecycle::perRunSecretName(job)}).ok());
}

TEST_F(WorkloadReconcilerTest, NoJobIsCreatedFromAStaleCopy) {
  // The cache shows the object before a status the API server already has.
  json moved = live();
  moved["metadata"]["resourceVersion"] = "8";
  moved["status"]["lastRefresh"] = "2023-11-14T22:13:20Z";
  expectAPassOverTheCacheStartsNothing(object(), moved);
}

// Not only a newer status: any write of someone else since the cached copy
// (here a withdrawn annotation, the status unchanged) stops the Job.
TEST_F(WorkloadReconcilerTest, NoJobIsCreatedFromACopyOlderThanTheServersMetadata) {
  json cached = object();
  cached["metadata"]["annotations"] = {{"example.com/note", "1"}};
  store_.put(cached);
  json moved = object();
  moved["metadata"]["resourceVersion"] = "8";
  expectAPassOverTheCacheStartsNothing(cached, moved);
  // From the current copy, the pass starts the Job.
  cache_.pin(json());
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(jobs().size(), 1U);
}

// A pass over a stale copy whose first write is of its own (removing
// block-move: no Job runs) meets a Conflict and runs again. That removal
// used to be unguarded and move the copy to the server's version, so the
// status patch decided on the stale copy then replaced the newer status.
TEST_F(WorkloadReconcilerTest, AStaleCopysOwnWriteDoesNotCarryItsStatusOverANewerOne) {
  json stale = object();
  stale["metadata"]["annotations"] = {{std::string(api::kAnnotationPaused), "true"},
                                      {std::string(api::kAnnotationBlockMove), "true"}};
  store_.put(stale);
  cache_.pin(stale);
  json moved = stale;
  moved["metadata"]["resourceVersion"] = "8";
  moved["status"]["conditions"] = {{{"type", "Ready"},
                                    {"status", "True"},
                                    {"reason", "Ready"},
                                    {"lastTransitionTime", "2023-11-14T22:13:20Z"}}};
  store_.put(moved);
  api_.log.clear();
  auto result = reconcile();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->requeue);
  EXPECT_EQ(live()["status"], moved["status"]);
  EXPECT_TRUE(kube::meta::annotations(live()).contains(std::string(api::kAnnotationBlockMove)));
  // The pass did try to remove block-move, and every write it tried was
  // guarded by the version it read.
  EXPECT_TRUE(std::any_of(api_.log.begin(), api_.log.end(), [](const std::string& write) {
    return write.starts_with("patch TerraformCluster c1") &&
           write.find("block-move") != std::string::npos;
  })) << ::testing::PrintToString(api_.log);
  for (const std::string& write : api_.log) {
    if (write.starts_with("patch TerraformCluster")) {
      EXPECT_THAT(write, ::testing::HasSubstr(R"("resourceVersion":"7")")) << write;
    }
  }
}

// The durable inputs Secret an apply rewrites keeps the digest pinned on
// the API server's copy (by the bookkeeping of the pass itself, say) while
// the cache shows the Secret without it.
TEST_F(WorkloadReconcilerTest, AnApplyKeepsTheDigestTheCacheHasNotSeenYet) {
  ASSERT_TRUE(reconcile().ok());
  const std::string job = kube::meta::name(jobs().at(0));
  finishInterrupted(job); // retried at once: a second apply
  const std::string digest = "sha256:" + std::string(64, 'a');
  json durable = *store_.get(kinds::kSecret, {kNs, "captf-inputs-c-c1"});
  cache_.pin(durable);
  durable["metadata"]["annotations"][std::string(api::kAnnotationImageDigest)] = digest;
  store_.put(durable);
  ASSERT_TRUE(reconcile().ok());
  ASSERT_EQ(jobs().size(), 2U);
  EXPECT_EQ(kube::meta::annotations(*store_.get(kinds::kSecret, {kNs, "captf-inputs-c-c1"}))
                .value(std::string(api::kAnnotationImageDigest), ""),
            digest);
}

// docs/behaviour/jobs.md#an-object-created-again: the Jobs of an earlier
// object of the same name (here orphaned, as `kubectl delete
// --cascade=orphan` leaves them) are not this object's history. Before,
// they were matched by labels alone: the earlier object's succeeded apply,
// whose name this object's first apply also gets, was taken as this one's,
// and the object was Ready with no apply of its own.
TEST_F(WorkloadReconcilerTest, AJobOfAnEarlierObjectOfTheSameNameIsNotThisOnes) {
  ASSERT_TRUE(reconcile().ok());
  const std::string job = kube::meta::name(jobs().at(0));
  json earlier = *store_.get(kinds::kJob, {kNs, job});
  earlier["metadata"]["uid"] = "uid-earlier-job";
  earlier["metadata"].erase("ownerReferences");
  earlier["status"] = {{"succeeded", 1},
                       {"completionTime", "2023-11-14T22:14:00Z"},
                       {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
  store_.put(earlier);
  ASSERT_TRUE(store_.remove(kinds::kSecret, {kNs, lifecycle::perRunSecretName(job)}).ok());

  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(jobsTotal("succeeded"), 0) << "the earlier object's apply was bookkept as this one's";
  EXPECT_FALSE(live()["status"].contains("lastRun"));
  // The leftover went, and this object's own apply runs under the name.
  const std::vector<json> now = jobs();
  ASSERT_EQ(now.size(), 1U);
  EXPECT_TRUE(controlledBy(now[0], "uid-c1")) << now[0].dump(2);
  EXPECT_FALSE(now[0].contains("status") && now[0]["status"].contains("succeeded"));
  EXPECT_EQ(live()["status"]["activeJob"]["name"], job);
}

TEST_F(WorkloadReconcilerTest, AStuckJobIsDeleted) {
  ASSERT_TRUE(reconcile().ok());
  const std::string job = kube::meta::name(jobs().at(0));
  // Its inputs Secret is gone, no pod ever started, and a minute passes.
  ASSERT_TRUE(store_.remove(kinds::kSecret, {kNs, lifecycle::perRunSecretName(job)}).ok());
  json stuck = *store_.get(kinds::kJob, {kNs, job});
  stuck["metadata"]["creationTimestamp"] = "2023-11-14T22:13:20Z"; // the fake clock's start
  store_.put(stuck);
  clock_.advance(std::chrono::minutes(2));
  ASSERT_TRUE(reconcile().ok());
  EXPECT_TRUE(jobs().empty());
  EXPECT_THAT(events_.reasons, Contains("StuckJobDeleted"));
}

// docs/behaviour/state.md#locks: a lock whose holder pod no longer exists is
// forced only once that pod's Job is past its deadline and grace period (a
// pod deleted with --force on a lost node may still run and write the
// state); before, no Job starts and StateLocked says so.
TEST_F(WorkloadReconcilerTest, AGoneHoldersLockIsForcedOnlyPastItsJobsDeadline) {
  ASSERT_TRUE(reconcile().ok());
  const std::string job = kube::meta::name(jobs().at(0));
  json started = *store_.get(kinds::kJob, {kNs, job});
  started["metadata"]["creationTimestamp"] = "2023-11-14T22:13:20Z"; // the fake clock's start
  store_.put(started);
  finishInterrupted(job); // its pod gone, its runtime's lock left behind
  const workspace::ObjectRef ref{contract::Role::kCluster, kNs, kName, "uid-c1", "capi-c1"};
  store_.put(
      {{"apiVersion", "coordination.k8s.io/v1"},
       {"kind", "Lease"},
       {"metadata",
        {{"name", workspace::lockLeaseName(workspace::stateSuffix(ref))},
         {"namespace", kNs},
         {"resourceVersion", "1"},
         {"annotations",
          {{std::string(workspace::kLockInfoAnnotation), json({{"ID", "9e1f-lock"},
                                                               {"Operation", "OperationTypeApply"},
                                                               {"Who", "runner@" + job + "-q7x2z"}})
                                                             .dump()}}}}},
       {"spec", {{"holderIdentity", "9e1f-lock"}}}});
  const std::int64_t deadline = started["spec"].value("activeDeadlineSeconds", 0);
  const std::int64_t grace =
      started["spec"]["template"]["spec"].value("terminationGracePeriodSeconds", 0);
  ASSERT_GT(deadline, 0);

  auto held = reconcile();
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(jobs().size(), 1U) << "no Job while the holder may still run";
  bool locked = false;
  for (const json& c : live()["status"].value("conditions", json::array())) {
    locked = locked ||
             (c.value("type", "") == "StateReadable" && c.value("reason", "") == "StateLocked" &&
              c.value("message", "").find("no longer exists") != std::string::npos &&
              c.value("message", "").find("(at 2023-11-14T") != std::string::npos);
  }
  EXPECT_TRUE(locked) << live()["status"].dump(2);
  EXPECT_THAT(events_.reasons, Not(Contains("ForceUnlocked")));
  EXPECT_GT(held->requeue_after, kube::Duration::zero());
  EXPECT_LE(held->requeue_after, std::chrono::seconds(deadline + grace + 1))
      << "looked at again by the time the lock may be forced";

  clock_.advance(std::chrono::seconds(deadline + grace + 1));
  ASSERT_TRUE(reconcile().ok());
  ASSERT_EQ(jobs().size(), 2U);
  EXPECT_THAT(events_.reasons, Contains("ForceUnlocked"));
  bool forced = false;
  for (const json& created : jobs()) {
    forced = forced || created.dump().find("--force-unlock=9e1f-lock") != std::string::npos;
  }
  EXPECT_TRUE(forced);
}

TEST_F(WorkloadReconcilerTest, AnImagePullFailureIsReportedOnceAndTheJobWaitsForTheImage) {
  ASSERT_TRUE(reconcile().ok());
  const std::string job = kube::meta::name(jobs().at(0));
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", job + "-x1"},
        {"namespace", kNs},
        {"resourceVersion", "1"},
        {"creationTimestamp", "2023-11-14T22:13:21Z"},
        {"labels", {{"job-name", job}}}}},
      {"spec",
       {{"containers", {{{"name", "source"}, {"image", "registry.local/team/cluster:v1"}}}}}},
      {"status",
       {{"phase", "Pending"},
        {"containerStatuses",
         {{{"name", "source"},
           {"state",
            {{"waiting",
              {{"reason", "ErrImagePull"},
               {"message", "pulling from https://robot:hunter2@registry.local: "
                           "manifest unknown"}}}}}}}}}}};
  store_.put(pod);
  const auto pulls = [&] {
    return metrics_.image_pull_failures_total.withLabels({"TerraformCluster", "apply"}).value();
  };
  const auto condition = [&] {
    const json object = live();
    for (const json& c : object["status"]["conditions"]) {
      if (c.value("type", "") == "ApplyJobSucceeded") {
        return c;
      }
    }
    return json();
  };
  // The kubelet alternates its reasons while it keeps trying: one transition.
  for (const char* reason : {"ErrImagePull", "ImagePullBackOff", "ErrImagePull"}) {
    pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] = reason;
    store_.put(pod);
    ASSERT_TRUE(reconcile().ok());
  }
  EXPECT_EQ(condition().value("status", ""), "False") << condition().dump();
  EXPECT_EQ(condition().value("reason", ""), "ImagePullFailed");
  EXPECT_THAT(condition().value("message", ""),
              ::testing::HasSubstr("image registry.local/team/cluster:v1 of container source"));
  EXPECT_THAT(condition().value("message", ""), ::testing::HasSubstr("manifest unknown"));
  EXPECT_EQ(std::count(events_.reasons.begin(), events_.reasons.end(), "ImagePullFailed"), 1);
  EXPECT_EQ(pulls(), 1.0);
  for (const std::string& note : events_.notes) {
    EXPECT_THAT(note, Not(::testing::HasSubstr("hunter2")));
  }
  EXPECT_THAT(live().dump(), Not(::testing::HasSubstr("hunter2")));
  // The Job stays and no other is started: its budget is not spent.
  ASSERT_EQ(jobs().size(), 1U);
  EXPECT_EQ(kube::meta::name(jobs()[0]), job);
  EXPECT_EQ(live()["status"]["activeJob"]["name"], job);

  // The image appears: the pod runs and the condition clears.
  pod["status"] = {
      {"phase", "Running"},
      {"containerStatuses",
       {{{"name", "source"}, {"state", {{"running", {{"startedAt", "2023-11-14T22:14:00Z"}}}}}}}}};
  store_.put(pod);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(condition().value("status", ""), "Unknown") << condition().dump();
  EXPECT_EQ(condition().value("reason", ""), "JobRunning");
  EXPECT_EQ(std::count(events_.reasons.begin(), events_.reasons.end(), "ImagePullFailed"), 1);
  EXPECT_EQ(pulls(), 1.0);
  ASSERT_EQ(jobs().size(), 1U);
}

TEST_F(WorkloadReconcilerTest, CleanupDeletesLeasesAndStateAndTheFinalizerGoesLast) {
  json deleting = object();
  deleting["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z";
  store_.put(deleting);
  for (const std::string& lease : {lifecycle::runLeaseName({contract::Role::kCluster, kNs, kName}),
                                   lifecycle::clusterLeaseName(kNs, "capi-c1")}) {
    store_.put({{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", lease}, {"namespace", kNs}, {"resourceVersion", "1"}}},
                {"spec", json::object()}});
  }
  api_.log.clear();
  ASSERT_TRUE(reconcile().ok());
  // No state: nothing to destroy, so no Job; the final cleanup ran.
  EXPECT_TRUE(jobs().empty());
  ASSERT_FALSE(api_.log.empty());
  for (size_t i = 0; i + 1 < api_.log.size(); ++i) {
    EXPECT_THAT(api_.log[i], Not(::testing::HasSubstr("finalizers"))) << i;
  }
  // The run Lease and, for the cluster kind, the cluster write Lease.
  EXPECT_THAT(api_.log, Contains("delete Lease " +
                                 lifecycle::runLeaseName({contract::Role::kCluster, kNs, kName})));
  EXPECT_THAT(api_.log, Contains("delete Lease " + lifecycle::clusterLeaseName(kNs, "capi-c1")));
  EXPECT_THAT(api_.log.back(), ::testing::StartsWith("patch TerraformCluster c1"));
  EXPECT_THAT(api_.log.back(), ::testing::HasSubstr("finalizers"));
  EXPECT_TRUE(live()["metadata"].value("finalizers", json::array()).empty());
  EXPECT_THAT(events_.reasons, Contains("FinalizerRemoved"));
}

TEST_F(WorkloadReconcilerTest, AnIdentityDenialCountsOnceWhenItBegins) {
  json identity = *store_.get(kinds::kTerraformClusterIdentity, {"", "aws"});
  identity["spec"]["allowedNamespaces"] = {{"list", {"elsewhere"}}};
  store_.put(identity);
  const auto denied = [&] {
    return metrics_.identity_denied_total.withLabels({"namespace"}).value();
  };
  for (int pass = 0; pass < 3; ++pass) {
    ASSERT_TRUE(reconcile().ok());
  }
  EXPECT_EQ(denied(), 1.0) << "three passes, one denial";
  EXPECT_TRUE(jobs().empty());
  EXPECT_EQ(live()["status"]["conditions"].dump().find("NamespaceNotAllowed") != std::string::npos,
            true);
  // Allowed again, then denied again: a second denial.
  identity["spec"]["allowedNamespaces"] = {{"list", {kNs}}};
  store_.put(identity);
  ASSERT_TRUE(reconcile().ok());
  identity["spec"]["allowedNamespaces"] = {{"list", {"elsewhere"}}};
  store_.put(identity);
  ASSERT_TRUE(reconcile().ok());
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(denied(), 2.0);
}

TEST_F(WorkloadReconcilerTest, AnUnreadableStateCountsOnceWhileItStays) {
  const std::string suffix = lifecycle::stateSuffix({contract::Role::kCluster, kNs, kName});
  json state = {{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"metadata",
                 {{"name", workspace::stateSecretName(suffix)},
                  {"namespace", kNs},
                  {"resourceVersion", "1"},
                  {"labels", {{std::string(workspace::kBackendLabelSuffix), suffix}}}}},
                {"data", json::object()}}; // no tfstate key: inconsistent
  store_.put(state);
  const auto errors = [&](const std::string& reason) {
    return metrics_.state_read_errors_total.withLabels({"TerraformCluster", reason}).value();
  };
  for (int pass = 0; pass < 3; ++pass) {
    ASSERT_TRUE(reconcile().ok());
  }
  EXPECT_EQ(errors("inconsistent"), 1.0) << "three passes over one unreadable state";
  EXPECT_TRUE(jobs().empty()) << "nothing runs on an unreadable state";
  // Unreadable in another way: a new event, counted once too.
  state["data"] = {{"tfstate", "bm90IGd6aXA="}}; // "not gzip"
  store_.put(state);
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_TRUE(reconcile().ok());
  }
  EXPECT_EQ(errors("inconsistent"), 1.0);
  EXPECT_EQ(errors("corrupt"), 1.0) << live()["status"].dump(2);
}

// A destroy Job of the object that finished while the object is deleted.
json finishedDestroy(const std::string& name) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", name},
            {"namespace", kNs},
            {"resourceVersion", "3"},
            {"creationTimestamp", "2023-11-14T22:13:20Z"},
            {"ownerReferences",
             {{{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
               {"kind", "TerraformCluster"},
               {"name", kName},
               {"uid", "uid-c1"},
               {"controller", true}}}},
            {"labels",
             {{std::string(api::kLabelManaged), "true"},
              {std::string(api::kLabelOwnerKind), "TerraformCluster"},
              {std::string(api::kLabelOwnerName), kName},
              {std::string(api::kLabelOp), "destroy"},
              {std::string(api::kLabelAttempt), "1"}}}}},
          {"status",
           {{"succeeded", 1},
            {"completionTime", "2023-11-14T22:14:00Z"},
            {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}}}};
}

TEST_F(WorkloadReconcilerTest, AFinishedDestroyCountsOnceAfterTheFinalizerWent) {
  json deleting = object();
  deleting["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z";
  store_.put(deleting);
  const std::string job = "c-c1-destroy-1";
  store_.put(finishedDestroy(job));
  const auto destroys = [&] {
    return metrics_.jobs_total.withLabels({"TerraformCluster", "destroy", "succeeded"}).value();
  };
  const auto durations = [&] {
    return metrics_.job_duration_seconds.withLabels({"TerraformCluster", "destroy", "succeeded"})
        .count();
  };
  // Bookkept and cleaned up in one pass: no status patch follows the
  // finalizer's removal, and the Job is marked all the same.
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(destroys(), 1.0);
  EXPECT_EQ(durations(), 1U);
  EXPECT_TRUE(bookkept(job));
  EXPECT_TRUE(live()["metadata"].value("finalizers", json::array()).empty());

  // The API server deleted the object; the cache still shows it with the
  // finalizer, and the Job (a pass right after, before the watch events).
  ASSERT_TRUE(store_.remove(kinds::kTerraformCluster, {kNs, kName}).ok());
  cache_.pin(deleting);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(destroys(), 1.0) << "the destroy was counted again from a stale copy";
  EXPECT_EQ(durations(), 1U);

  // The Job garbage-collected too, its cached copy without the mark.
  json unmarked = finishedDestroy(job);
  store_.put(unmarked);
  api_.gone_jobs.insert(job);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(destroys(), 1.0) << "a Job gone from the API server was bookkept again";
  EXPECT_EQ(std::count(events_.reasons.begin(), events_.reasons.end(), "JobSucceeded"), 1);
}

// A side write refused for good (the run history ConfigMap, Forbidden) is
// said in a Warning Event and holds neither the bookkeeping nor the
// finalizer. Before, every pass failed on it and the deletion never ended.
TEST_F(WorkloadReconcilerTest, ARefusedRunHistoryWriteDoesNotHoldADeletion) {
  json deleting = object();
  deleting["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z";
  store_.put(deleting);
  const std::string job = "c-c1-destroy-1";
  store_.put(finishedDestroy(job));
  api_.forbid_config_maps = true;
  auto result = reconcile();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(bookkept(job));
  EXPECT_TRUE(live()["metadata"].value("finalizers", json::array()).empty());
  EXPECT_EQ(std::count(events_.reasons.begin(), events_.reasons.end(), "RunHistoryNotRecorded"), 1);
}

// The object's readable state (serial 3, no resources) as the backend
// stores it in two chunks, and the backup Secrets the pass would write for it.
struct BackupFixture {
  std::vector<json> state_secrets;
  std::vector<json> backups;
};

BackupFixture backupFixture() {
  const workspace::ObjectRef ref{contract::Role::kCluster, kNs, kName, "uid-c1", "capi-c1"};
  const std::string suffix = workspace::stateSuffix(ref);
  const std::string state = contract::testing::gzip(
      R"({"version":4,"terraform_version":"1.12.6","serial":3,"lineage":"l-1","outputs":{},)"
      R"("resources":[]})");
  BackupFixture fixture;
  const std::size_t half = state.size() / 2;
  for (std::size_t i = 0; i < 2; ++i) {
    fixture.state_secrets.push_back(
        {{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata",
          {{"name", workspace::stateChunkName(suffix, i)},
           {"namespace", kNs},
           {"resourceVersion", "1"},
           {"labels", {{std::string(workspace::kBackendLabelSuffix), suffix}}}}},
         {"data",
          {{"tfstate",
            contract::base64Encode(i == 0 ? state.substr(0, half) : state.substr(half))}}}});
  }
  const workspace::ReadState read = workspace::readState(suffix, fixture.state_secrets);
  EXPECT_EQ(read.status, workspace::StateStatus::kRead) << read.message;
  fixture.backups = workspace::backupSecrets({ref, &read, "2023-11-14T22:00:00Z", ""});
  EXPECT_EQ(fixture.backups.size(), 2U);
  for (json& backup : fixture.backups) {
    backup["metadata"]["resourceVersion"] = "1";
  }
  return fixture;
}

double stateBackupsTotal(const CaptfMetrics& metrics, const std::string& result) {
  return metrics.state_backups_total.withLabels({"TerraformCluster", result}).value();
}

TEST_F(WorkloadReconcilerTest, ABackupNameHoldingOtherContentIsAConflictNotABackup) {
  const BackupFixture fixture = backupFixture();
  ASSERT_EQ(fixture.backups.size(), 2U);
  for (const json& secret : fixture.state_secrets) {
    store_.put(secret);
  }
  json squatter = fixture.backups[0]; // same name and annotations, other data
  squatter["data"]["tfstate"] = contract::base64Encode("another state");
  store_.put(squatter);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_THAT(events_.reasons, Contains("StateBackupConflict"));
  EXPECT_THAT(events_.reasons, Not(Contains("StateBackedUp")));
  EXPECT_EQ(stateBackupsTotal(metrics_, "skipped"), 1.0);
  EXPECT_EQ(stateBackupsTotal(metrics_, "taken"), 0.0);
  EXPECT_TRUE(live()["status"].value("stateBackups", json::array()).empty())
      << live()["status"].dump(2);
  // Nothing overwritten, and the copy stopped at the conflict.
  EXPECT_EQ(store_.get(kinds::kSecret, {kNs, kube::meta::name(squatter)})->at("data"),
            squatter["data"]);
  EXPECT_FALSE(store_.get(kinds::kSecret, {kNs, kube::meta::name(fixture.backups[1])}).ok());
}

TEST_F(WorkloadReconcilerTest, TheLeftoverOfAnEarlierCopyOfTheSameChunkCompletesTheBackup) {
  const BackupFixture fixture = backupFixture();
  ASSERT_EQ(fixture.backups.size(), 2U);
  for (const json& secret : fixture.state_secrets) {
    store_.put(secret);
  }
  // An earlier attempt wrote chunk 0 only, at another time.
  json leftover = fixture.backups[0];
  leftover["metadata"]["annotations"][std::string(api::kAnnotationStateBackupTakenAt)] =
      "2023-11-14T21:00:00Z";
  store_.put(leftover);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_THAT(events_.reasons, Contains("StateBackedUp"));
  EXPECT_THAT(events_.reasons, Not(Contains("StateBackupConflict")));
  EXPECT_EQ(stateBackupsTotal(metrics_, "taken"), 1.0);
  const json listed = live()["status"].value("stateBackups", json::array());
  ASSERT_EQ(listed.size(), 1U) << live()["status"].dump(2);
  EXPECT_EQ(listed[0]["serial"], 3);
}

} // namespace
} // namespace captf::controllers
