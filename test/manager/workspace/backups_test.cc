#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/digest.h"
#include "manager/workspace/backups.h"
#include "test/manager/workspace/testing.h"

namespace captf::workspace {
namespace {

using ::captf::workspace::testing::stateSecrets;
using ::captf::workspace::testing::testdata;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

ObjectRef object() {
  return {contract::Role::kCluster, "ns", "demo", "uid-1", "demo"};
}

ReadState readOf(std::size_t pieces, std::string_view hash = "h2:abc") {
  return readState(
      stateSuffix(object()),
      stateSecrets(stateSuffix(object()), testdata("tofu-cluster.tfstate"), pieces, hash));
}

std::vector<nlohmann::json> backupOf(const ReadState& state, std::string_view taken_at,
                                     std::int64_t serial_override = 0) {
  ReadState copy = state;
  if (serial_override > 0) {
    copy.summary.serial = serial_override;
  }
  return backupSecrets({object(), &copy, std::string(taken_at), "captf-c-demo-apply-a1-abcdef"});
}

TEST(AdoptionTest, OwnsEveryChunkAndAnnotatesTheBase) {
  const std::string suffix = stateSuffix(object());
  auto secrets = stateSecrets(suffix, "payload", 2);
  secrets[1]["metadata"]["ownerReferences"] =
      nlohmann::json::array({{{"uid", "someone-else"}, {"kind", "X"}}});
  const auto patches = adoptionPatches(object(), secrets, suffix, "h2:new");
  ASSERT_EQ(patches.size(), 2U);
  EXPECT_EQ(patches[0].name, stateSecretName(suffix));
  EXPECT_EQ(patches[0].patch["metadata"]["annotations"]["captf.io/inputs-hash"], "h2:new");
  EXPECT_EQ(patches[0].patch["metadata"]["resourceVersion"], "17");
  EXPECT_EQ(patches[0].patch["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(patches[0].patch["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], false);
  // Chunks get the owner only, keeping their other owners.
  EXPECT_FALSE(patches[1].patch["metadata"].contains("annotations"));
  EXPECT_EQ(patches[1].patch["metadata"]["ownerReferences"].size(), 2U);
  EXPECT_EQ(patches[1].patch["metadata"]["ownerReferences"][1]["uid"], "uid-1");
}

TEST(AdoptionTest, NothingToDoWhenAlreadyAdopted) {
  const std::string suffix = stateSuffix(object());
  auto secrets = stateSecrets(suffix, "payload", 2, "h2:same");
  for (auto& secret : secrets) {
    secret["metadata"]["ownerReferences"] = nlohmann::json::array({ownerReference(object())});
  }
  EXPECT_THAT(adoptionPatches(object(), secrets, suffix, "h2:same"), IsEmpty());
  const auto rehash = adoptionPatches(object(), secrets, suffix, "h2:other");
  ASSERT_EQ(rehash.size(), 1U);
  EXPECT_FALSE(rehash[0].patch["metadata"].contains("ownerReferences"));
}

TEST(BackupTest, CopiesChunksVerbatimWithTheSpecifiedMetadata) {
  const ReadState state = readOf(2);
  ASSERT_EQ(state.status, StateStatus::kRead);
  const auto secrets = backupOf(state, "2026-01-02T03:04:05Z");
  ASSERT_EQ(secrets.size(), 2U);
  const std::string suffix = stateSuffix(object());
  EXPECT_EQ(secrets[0]["metadata"]["name"], "captf-state-backup-" + suffix + "-1");
  EXPECT_EQ(secrets[1]["metadata"]["name"], "captf-state-backup-" + suffix + "-1-part-1");
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& meta = secrets[i]["metadata"];
    EXPECT_EQ(meta["labels"]["captf.io/state-backup"], "true");
    EXPECT_EQ(meta["labels"]["captf.io/state-backup-suffix"], suffix);
    EXPECT_EQ(meta["labels"]["captf.io/managed"], "true");
    EXPECT_EQ(meta["labels"]["clusterctl.cluster.x-k8s.io/move"], "");
    EXPECT_FALSE(meta["labels"].contains("tfstateSecretSuffix")); // never read as state
    EXPECT_EQ(meta["annotations"]["captf.io/state-backup-serial"], "1");
    EXPECT_EQ(meta["annotations"]["captf.io/state-backup-chunk"], std::to_string(i));
    EXPECT_EQ(meta["annotations"]["captf.io/state-backup-chunks"], "2");
    EXPECT_EQ(meta["annotations"]["captf.io/state-backup-resources"], "2");
    EXPECT_EQ(meta["annotations"]["captf.io/state-backup-lineage"],
              "f4d62ae4-c36f-7ca6-3427-127199eae976");
    EXPECT_EQ(meta["annotations"]["captf.io/state-backup-source-job"],
              "captf-c-demo-apply-a1-abcdef");
    EXPECT_EQ(meta["ownerReferences"][0]["uid"], "uid-1");
    EXPECT_EQ(secrets[i]["data"]["tfstate"], contract::base64Encode(state.chunks[i]));
  }
  EXPECT_EQ(secrets[0]["metadata"]["annotations"]["captf.io/inputs-hash"], "h2:abc");
  EXPECT_FALSE(secrets[1]["metadata"]["annotations"].contains("captf.io/inputs-hash"));
}

TEST(BackupTest, ListsSetsNewestFirstAndRestoresThem) {
  const ReadState state = readOf(2);
  std::vector<nlohmann::json> all;
  for (std::int64_t serial : {3, 1, 2}) {
    for (auto& secret :
         backupOf(state, "2026-01-0" + std::to_string(serial) + "T00:00:00Z", serial)) {
      all.push_back(std::move(secret));
    }
  }
  const std::string suffix = stateSuffix(object());
  auto sets = listBackups(suffix, all);
  ASSERT_EQ(sets.size(), 3U);
  EXPECT_EQ(sets[0].serial, 3);
  EXPECT_EQ(sets[2].serial, 1);
  EXPECT_TRUE(sets[0].complete);
  EXPECT_EQ(sets[0].resources, 2);
  EXPECT_EQ(sets[0].inputs_hash, "h2:abc");
  EXPECT_EQ(sets[0].bytes, state.compressed_bytes);

  const auto restore = findRestoreBackup("2", sets);
  ASSERT_TRUE(restore.ok()) << restore.status();
  EXPECT_EQ(restore->serial, 2);
  EXPECT_THAT(restore->chunk_secrets,
              ElementsAre(backupSecretName(suffix, 2, 0), backupSecretName(suffix, 2, 1)));
  EXPECT_EQ(restore->chunks, 2U);
  EXPECT_EQ(restore->resources, 2);
  EXPECT_EQ(restore->inputs_hash, "h2:abc");

  for (const char* bad : {"", "0", "-1", "two", "02", "9"}) {
    const auto missing = findRestoreBackup(bad, sets);
    EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << bad;
    EXPECT_THAT(missing.status().message(), HasSubstr("3, 2, 1")) << bad;
  }

  const auto status = statusBackups(sets);
  ASSERT_EQ(status.size(), 3U);
  EXPECT_EQ(status[0].serial, 3);
  EXPECT_EQ(api::formatTime(status[0].taken_at), "2026-01-03T00:00:00Z");
  EXPECT_EQ(status[0].bytes, state.compressed_bytes);
}

TEST(BackupTest, IncompleteSetsAreNeitherRestorableNorListed) {
  const ReadState state = readOf(2);
  auto secrets = backupOf(state, "2026-01-01T00:00:00Z");
  secrets.pop_back(); // the copy of chunk 1 failed
  const auto sets = listBackups(stateSuffix(object()), secrets);
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_FALSE(sets[0].complete);
  EXPECT_EQ(findRestoreBackup("1", sets).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(statusBackups(sets), IsEmpty());
  // A failed copy is not "observed": the serial is copied again.
  EXPECT_EQ(decideBackup(state, sets, 5, false), BackupDecision::kTake);
}

TEST(BackupTest, DecidesWhenToTakeOne) {
  const ReadState state = readOf(1);
  const auto sets = listBackups(stateSuffix(object()), backupOf(state, "2026-01-01T00:00:00Z"));
  ReadState corrupt;
  corrupt.status = StateStatus::kCorrupt;
  EXPECT_EQ(decideBackup(state, {}, 5, false), BackupDecision::kTake);
  EXPECT_EQ(decideBackup(state, sets, 5, false), BackupDecision::kAlreadyTaken);
  EXPECT_EQ(decideBackup(state, {}, 0, false), BackupDecision::kDisabled);
  EXPECT_EQ(decideBackup(state, {}, 5, true), BackupDecision::kDeleting);
  EXPECT_EQ(decideBackup(corrupt, {}, 5, false), BackupDecision::kStateUnusable);
  EXPECT_EQ(decideBackup(ReadState{}, {}, 5, false), BackupDecision::kNoState);
}

TEST(BackupTest, PrunesBeyondRetention) {
  const ReadState state = readOf(1);
  std::vector<nlohmann::json> all;
  for (std::int64_t serial = 1; serial <= 4; ++serial) {
    for (auto& secret : backupOf(state, "2026-01-01T00:00:00Z", serial)) {
      all.push_back(std::move(secret));
    }
  }
  const std::string suffix = stateSuffix(object());
  const auto sets = listBackups(suffix, all);
  EXPECT_THAT(backupsToPrune(sets, 2),
              ElementsAre(backupSecretName(suffix, 1), backupSecretName(suffix, 2)));
  EXPECT_THAT(backupsToPrune(sets, 5), IsEmpty());
  EXPECT_THAT(backupsToPrune(sets, 0), IsEmpty()); // --state-backups=0 keeps them restorable
}

TEST(CleanupTest, DeletesStateDurableInputsAndLeasesButNotBackups) {
  const std::string suffix = stateSuffix(object());
  const auto cleanup =
      stateCleanup(object(), {stateChunkName(suffix, 1), stateChunkName(suffix, 0)});
  EXPECT_THAT(cleanup.secrets, ElementsAre("captf-inputs-c-demo", stateChunkName(suffix, 0),
                                           stateChunkName(suffix, 1)));
  EXPECT_THAT(cleanup.leases, ElementsAre(lockLeaseName(suffix), runLeaseName(suffix)));
}

} // namespace
} // namespace captf::workspace
