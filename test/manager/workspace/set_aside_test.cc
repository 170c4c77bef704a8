#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/digest.h"
#include "manager/workspace/set_aside.h"
#include "test/manager/workspace/testing.h"

namespace captf::workspace {
namespace {

using ::captf::workspace::testing::stateSecret;
using nlohmann::json;
using ::testing::ElementsAre;

ObjectRef asideOwner() {
  return {contract::Role::kCluster, "ns", "demo", "uid-1", "demo"};
}

// Two chunks of a state of `asideOwner()` that is not gzip, as the API server
// returns them (uid, resourceVersion).
std::vector<json> garbledChunks() {
  const std::string suffix = stateSuffix(asideOwner());
  std::vector<json> secrets = {stateSecret(suffix, 1, "second half"),
                               stateSecret(suffix, 0, "not a state", "h2:abc")};
  secrets[0]["metadata"]["uid"] = "uid-part-1";
  secrets[0]["metadata"]["resourceVersion"] = "41";
  secrets[1]["metadata"]["uid"] = "uid-base";
  secrets[1]["metadata"]["resourceVersion"] = "42";
  return secrets;
}

SetAsideRequest asideRequestOf(std::vector<json> secrets) {
  SetAsideRequest request;
  request.ref = asideOwner();
  request.state_secrets = std::move(secrets);
  request.reason = "StateCorrupt";
  request.set_aside_at = "2026-12-05T18:00:00Z";
  request.restore_serial = 3;
  return request;
}

TEST(SetAsideTest, OnlyAnUnreadableStateThatIsNotLockedBySomeoneElse) {
  for (StateStatus unreadable :
       {StateStatus::kCorrupt, StateStatus::kInconsistent, StateStatus::kEncrypted}) {
    EXPECT_EQ(decideSetAside(unreadable, LockState::kFree), SetAsideDecision::kSetAside);
    // A lock left by a finished runner of the object: the Job force-unlocks it.
    EXPECT_EQ(decideSetAside(unreadable, LockState::kStale), SetAsideDecision::kSetAside);
    EXPECT_EQ(decideSetAside(unreadable, LockState::kForeign), SetAsideDecision::kLocked);
    EXPECT_EQ(decideSetAside(unreadable, LockState::kLive), SetAsideDecision::kLocked);
  }
  // The runtime loads these and pushes over them.
  EXPECT_EQ(decideSetAside(StateStatus::kRead, LockState::kFree), SetAsideDecision::kNone);
  EXPECT_EQ(decideSetAside(StateStatus::kNotFound, LockState::kFree), SetAsideDecision::kNone);
}

TEST(SetAsideTest, EveryChunkIsCopiedVerbatimUnderItsOwnName) {
  const std::string suffix = stateSuffix(asideOwner());
  const std::vector<json> secrets = garbledChunks();
  const std::string id = setAsideId(secrets);
  ASSERT_EQ(id.size(), 10U);
  const std::vector<SetAsideCopy> copies = setAsideCopies(asideRequestOf(secrets));
  ASSERT_EQ(copies.size(), 2U);
  // In name order: the base first.
  EXPECT_EQ(copies[0].source, stateSecretName(suffix));
  EXPECT_EQ(copies[0].source_uid, "uid-base");
  EXPECT_EQ(copies[0].source_resource_version, "42");
  EXPECT_EQ(copies[1].source, stateChunkName(suffix, 1));
  EXPECT_EQ(copies[1].source_uid, "uid-part-1");
  EXPECT_EQ(copies[1].source_resource_version, "41");
  const json& base = copies[0].copy;
  EXPECT_EQ(base["metadata"]["name"], stateSecretName(suffix) + "-unreadable-" + id);
  EXPECT_EQ(copies[1].copy["metadata"]["name"], stateChunkName(suffix, 1) + "-unreadable-" + id);
  EXPECT_EQ(base["metadata"]["namespace"], "ns");
  // The bytes, whatever they are.
  EXPECT_EQ(base["data"], secrets[1]["data"]);
  EXPECT_EQ(base["data"]["tfstate"], contract::base64Encode("not a state"));
  EXPECT_EQ(copies[1].copy["data"], secrets[0]["data"]);
  // Neither state nor backup: none of the backend's labels, none of a backup's.
  const json& labels = base["metadata"]["labels"];
  for (const char* key : {"tfstate", "tfstateSecretSuffix", "tfstateWorkspace",
                          "captf.io/state-backup", "captf.io/state-backup-suffix"}) {
    EXPECT_FALSE(labels.contains(key)) << key;
  }
  EXPECT_EQ(labels["captf.io/state-unreadable"], "true");
  EXPECT_EQ(labels["captf.io/state-unreadable-suffix"], suffix);
  EXPECT_EQ(labels["captf.io/managed"], "true");
  EXPECT_EQ(labels["captf.infrastructure.cluster.x-k8s.io/owner-kind"], "TerraformCluster");
  EXPECT_EQ(labels["captf.infrastructure.cluster.x-k8s.io/owner-name"], "demo");
  EXPECT_TRUE(labels.contains("clusterctl.cluster.x-k8s.io/move"));
  const json& notes = base["metadata"]["annotations"];
  EXPECT_EQ(notes["captf.io/state-unreadable-source"], stateSecretName(suffix));
  EXPECT_EQ(notes["captf.io/state-unreadable-reason"], "StateCorrupt");
  EXPECT_EQ(notes["captf.io/state-unreadable-set"], id);
  EXPECT_EQ(notes["captf.io/state-unreadable-set-aside-at"], "2026-12-05T18:00:00Z");
  EXPECT_EQ(notes["captf.io/state-unreadable-restore-serial"], "3");
  EXPECT_EQ(json::parse(notes["captf.io/state-unreadable-labels"].get<std::string>()),
            secrets[1]["metadata"]["labels"]);
  EXPECT_EQ(notes["captf.io/inputs-hash"], "h2:abc");
  EXPECT_FALSE(copies[1].copy["metadata"]["annotations"].contains("captf.io/inputs-hash"));
  // Owned by the object, not blocking its deletion: kept until it goes.
  ASSERT_EQ(base["metadata"]["ownerReferences"].size(), 1U);
  EXPECT_EQ(base["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(base["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], false);
}

TEST(SetAsideTest, TheIdFollowsTheContentNotTheOrderOrTheTime) {
  std::vector<json> secrets = garbledChunks();
  std::vector<json> reversed = {secrets[1], secrets[0]};
  EXPECT_EQ(setAsideId(secrets), setAsideId(reversed));
  SetAsideRequest later = asideRequestOf(secrets);
  later.set_aside_at = "2026-12-05T19:00:00Z";
  EXPECT_EQ(setAsideCopies(later)[0].copy["metadata"]["name"],
            setAsideCopies(asideRequestOf(secrets))[0].copy["metadata"]["name"]);
  std::vector<json> other = secrets;
  other[1]["data"]["tfstate"] = contract::base64Encode("garbled otherwise");
  EXPECT_NE(setAsideId(other), setAsideId(secrets));
  // Every key counts, not only tfstate (an inconsistent chunk may lack it).
  other = secrets;
  other[1]["data"]["extra"] = contract::base64Encode("x");
  EXPECT_NE(setAsideId(other), setAsideId(secrets));
}

TEST(SetAsideTest, SecretsOfAnotherSuffixAreNotCopied) {
  std::vector<json> secrets = garbledChunks();
  secrets.push_back(stateSecret("0000000000000000-c", 0, "someone else's"));
  const std::vector<SetAsideCopy> copies = setAsideCopies(asideRequestOf(secrets));
  std::vector<std::string> sources;
  sources.reserve(copies.size());
  for (const SetAsideCopy& copy : copies) {
    sources.push_back(copy.source);
  }
  const std::string suffix = stateSuffix(asideOwner());
  EXPECT_THAT(sources, ElementsAre(stateSecretName(suffix), stateChunkName(suffix, 1)));
}

TEST(SetAsideTest, ALeftoverCountsOnlyWithTheSameSourceSetAndData) {
  const std::vector<SetAsideCopy> copies = setAsideCopies(asideRequestOf(garbledChunks()));
  json existing = copies[0].copy;
  // As the API server returns it, written by an earlier attempt at another time.
  existing["metadata"]["uid"] = "uid-copy";
  existing["metadata"]["annotations"]["captf.io/state-unreadable-set-aside-at"] =
      "2026-12-05T17:00:00Z";
  EXPECT_TRUE(sameSetAsideCopy(existing, copies[0].copy));
  json other_data = existing;
  other_data["data"]["tfstate"] = contract::base64Encode("something else");
  EXPECT_FALSE(sameSetAsideCopy(other_data, copies[0].copy));
  json other_source = existing;
  other_source["metadata"]["annotations"]["captf.io/state-unreadable-source"] = "x";
  EXPECT_FALSE(sameSetAsideCopy(other_source, copies[0].copy));
  json not_a_copy = existing;
  not_a_copy["metadata"]["labels"].erase("captf.io/state-unreadable");
  EXPECT_FALSE(sameSetAsideCopy(not_a_copy, copies[0].copy));
  EXPECT_FALSE(sameSetAsideCopy(copies[1].copy, copies[0].copy));
}

} // namespace
} // namespace captf::workspace
