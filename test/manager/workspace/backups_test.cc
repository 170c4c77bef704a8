#include <algorithm>

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
  // Named for serial and digest, so two contents of one serial never share a name.
  const std::string digest = stateDigest(state.chunks);
  EXPECT_EQ(digest, "sha256:" + contract::sha256Hex(state.chunks[0] + state.chunks[1]));
  const std::string set = "1-" + digest.substr(7, 12);
  EXPECT_EQ(secrets[0]["metadata"]["name"], "captf-state-backup-" + suffix + "-" + set);
  EXPECT_EQ(secrets[1]["metadata"]["name"], "captf-state-backup-" + suffix + "-" + set + "-part-1");
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& meta = secrets[i]["metadata"];
    EXPECT_EQ(meta["labels"]["captf.io/state-backup"], "true");
    EXPECT_EQ(meta["labels"]["captf.io/state-backup-suffix"], suffix);
    EXPECT_EQ(meta["labels"]["captf.io/managed"], "true");
    EXPECT_EQ(meta["labels"]["clusterctl.cluster.x-k8s.io/move"], "");
    EXPECT_FALSE(meta["labels"].contains("tfstateSecretSuffix")); // never read as state
    EXPECT_EQ(meta["annotations"]["captf.io/state-backup-serial"], "1");
    EXPECT_EQ(meta["annotations"]["captf.io/state-backup-digest"], digest);
    EXPECT_EQ(meta["annotations"]["captf.io/state-backup-set"], set);
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
  EXPECT_TRUE(sets[0].verified) << sets[0].problem;
  EXPECT_EQ(sets[0].resources, 2);
  EXPECT_EQ(sets[0].inputs_hash, "h2:abc");
  EXPECT_EQ(sets[0].bytes, state.compressed_bytes);

  const auto restore = findRestoreBackup("2", sets);
  ASSERT_TRUE(restore.ok()) << restore.status();
  EXPECT_EQ(restore->serial, 2);
  const std::string set = backupSetId(2, stateDigest(state.chunks));
  EXPECT_THAT(restore->chunk_secrets,
              ElementsAre(backupSecretName(suffix, set, 0), backupSecretName(suffix, set, 1)));
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
  const std::string digest = stateDigest(state.chunks);
  EXPECT_THAT(backupsToPrune(sets, 2),
              ElementsAre(backupSecretName(suffix, backupSetId(1, digest)),
                          backupSecretName(suffix, backupSetId(2, digest))));
  EXPECT_THAT(backupsToPrune(sets, 5), IsEmpty());
  EXPECT_THAT(backupsToPrune(sets, 0), IsEmpty()); // --state-backups=0 keeps them restorable
}

// The state of the fixture at `serial`, its content told apart by the
// network id the module exported (a re-apply after a restore writes the
// serials again with new content).
ReadState fixtureStateAt(std::int64_t serial, std::string_view network_id, std::size_t pieces = 1) {
  nlohmann::json state = nlohmann::json::parse(testdata("tofu-cluster.tfstate"));
  state["serial"] = serial;
  state["outputs"]["exports"]["value"]["network_id"] = network_id;
  return readState(stateSuffix(object()),
                   stateSecrets(stateSuffix(object()), state.dump(2), pieces, "h2:abc"));
}

void appendSecrets(std::vector<nlohmann::json>& to, std::vector<nlohmann::json> more) {
  for (auto& secret : more) {
    to.push_back(std::move(secret));
  }
}

std::vector<std::string> namesOf(const std::vector<nlohmann::json>& secrets) {
  std::vector<std::string> names;
  names.reserve(secrets.size());
  for (const auto& secret : secrets) {
    names.push_back(secret["metadata"]["name"].get<std::string>());
  }
  return names;
}

TEST(BackupTest, AfterARestoreTheNewContentOfAnOldSerialIsBackedUp) {
  // Applies wrote serials 1..3 (network net-1); each was backed up.
  std::vector<nlohmann::json> all;
  for (std::int64_t serial = 1; serial <= 3; ++serial) {
    const ReadState state = fixtureStateAt(serial, "net-1", 2);
    ASSERT_EQ(state.status, StateStatus::kRead) << state.message;
    appendSecrets(all, backupOf(state, "2026-01-0" + std::to_string(serial) + "T00:00:00Z"));
  }
  const std::string suffix = stateSuffix(object());
  // Serial 1 restored: the push keeps the serial, the state is the backup's.
  const ReadState restored = fixtureStateAt(1, "net-1", 2);
  EXPECT_EQ(decideBackup(restored, listBackups(suffix, all), 5, false),
            BackupDecision::kAlreadyTaken);
  // The next apply writes serial 2 again, with other content: a new state,
  // backed up although a backup of serial 2 exists.
  const ReadState reapplied = fixtureStateAt(2, "net-9", 2);
  ASSERT_EQ(reapplied.status, StateStatus::kRead) << reapplied.message;
  ASSERT_NE(stateDigest(reapplied.chunks), stateDigest(fixtureStateAt(2, "net-1", 2).chunks));
  EXPECT_EQ(decideBackup(reapplied, listBackups(suffix, all), 5, false), BackupDecision::kTake);
  const auto taken = backupOf(reapplied, "2026-01-05T00:00:00Z");
  // Under names of its own: creating them cannot meet the old serial 2's.
  for (const std::string& name : namesOf(taken)) {
    EXPECT_THAT(namesOf(all), ::testing::Not(::testing::Contains(name)));
  }
  appendSecrets(all, taken);

  const auto sets = listBackups(suffix, all);
  ASSERT_EQ(sets.size(), 4U);
  EXPECT_TRUE(std::all_of(sets.begin(), sets.end(), [](const BackupSet& s) { return s.verified; }));
  EXPECT_EQ(decideBackup(reapplied, sets, 5, false), BackupDecision::kAlreadyTaken);
  // Two verified sets of serial 2: the newest taken is restored, the content
  // the object has now, not the one the restore discarded.
  const auto restore = findRestoreBackup("2", sets);
  ASSERT_TRUE(restore.ok()) << restore.status();
  EXPECT_EQ(restore->chunk_secrets, namesOf(taken));
  const auto status = statusBackups(sets);
  ASSERT_EQ(status.size(), 4U);
  EXPECT_EQ(status[1].serial, 2);
  EXPECT_EQ(api::formatTime(status[1].taken_at), "2026-01-05T00:00:00Z");
}

TEST(BackupTest, ASetWhoseDataDoesNotHashToItsDigestIsNeitherTakenNorRestorable) {
  const ReadState state = readOf(2);
  auto secrets = backupOf(state, "2026-01-01T00:00:00Z");
  // One chunk's data changed (by hand, or by a writer of another state);
  // every annotation still claims the original.
  secrets[1]["data"]["tfstate"] = contract::base64Encode("not the state");
  const auto sets = listBackups(stateSuffix(object()), secrets);
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_FALSE(sets[0].verified);
  EXPECT_THAT(sets[0].problem, HasSubstr("digest mismatch"));
  EXPECT_EQ(decideBackup(state, sets, 5, false), BackupDecision::kTake);
  EXPECT_THAT(statusBackups(sets), IsEmpty());
  const auto restore = findRestoreBackup("1", sets);
  EXPECT_EQ(restore.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(restore.status().message(), HasSubstr("serial 1"));
  EXPECT_THAT(restore.status().message(), HasSubstr("digest mismatch"));
  EXPECT_THAT(restore.status().message(), HasSubstr(sets[0].secret_names[0]));

  // Annotations that agree with each other but not with the data: a set
  // re-labelled with another digest.
  auto relabelled = backupOf(state, "2026-01-01T00:00:00Z");
  for (auto& secret : relabelled) {
    secret["metadata"]["annotations"]["captf.io/state-backup-digest"] =
        "sha256:" + contract::sha256Hex("other");
  }
  const auto relabelled_sets = listBackups(stateSuffix(object()), relabelled);
  ASSERT_EQ(relabelled_sets.size(), 1U);
  EXPECT_FALSE(relabelled_sets[0].verified);
  EXPECT_FALSE(findRestoreBackup("1", relabelled_sets).ok());
}

TEST(BackupTest, AHalfSetCompletedWithAForeignChunkIsNotComplete) {
  const std::string suffix = stateSuffix(object());
  const ReadState ours = fixtureStateAt(5, "net-1", 2);
  const ReadState foreign = fixtureStateAt(5, "net-9", 2);
  const auto ours_secrets = backupOf(ours, "2026-01-01T00:00:00Z");
  const auto foreign_secrets = backupOf(foreign, "2026-01-02T00:00:00Z");

  // The copy of `ours` failed after chunk 0; chunk 1 was then written with
  // the foreign state's data under our set's name and annotations.
  auto forged = foreign_secrets[1];
  forged["metadata"] = ours_secrets[1]["metadata"];
  auto sets = listBackups(suffix, {ours_secrets[0], forged});
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_FALSE(sets[0].verified);
  EXPECT_EQ(decideBackup(ours, sets, 5, false), BackupDecision::kTake);
  EXPECT_FALSE(findRestoreBackup("5", sets).ok());

  // The same under the serial-only names of earlier versions, the foreign
  // chunk keeping its own annotations: the chunks disagree.
  auto legacy_zero = ours_secrets[0];
  legacy_zero["metadata"]["name"] = legacyBackupSecretName(suffix, 5, 0);
  auto legacy_one = foreign_secrets[1];
  legacy_one["metadata"]["name"] = legacyBackupSecretName(suffix, 5, 1);
  sets = listBackups(suffix, {legacy_zero, legacy_one});
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_FALSE(sets[0].complete);
  EXPECT_THAT(sets[0].problem, HasSubstr("disagree"));
  EXPECT_EQ(decideBackup(ours, sets, 5, false), BackupDecision::kTake);
  EXPECT_EQ(decideBackup(foreign, sets, 5, false), BackupDecision::kTake);
  EXPECT_FALSE(findRestoreBackup("5", sets).ok());

  // The writer: a chunk found under the name it creates is "taken" only when
  // it is the same chunk (a leftover of its own earlier copy).
  auto leftover = ours_secrets[1];
  leftover["metadata"]["annotations"]["captf.io/state-backup-taken-at"] = "2025-12-31T00:00:00Z";
  leftover["metadata"]["resourceVersion"] = "42";
  EXPECT_TRUE(sameBackupChunk(leftover, ours_secrets[1]));
  EXPECT_FALSE(sameBackupChunk(forged, ours_secrets[1]));
  EXPECT_FALSE(sameBackupChunk(ours_secrets[0], ours_secrets[1]));
  EXPECT_FALSE(sameBackupChunk(legacy_one, ours_secrets[1]));
  auto unlabelled = ours_secrets[1];
  unlabelled["metadata"]["labels"].erase("captf.io/state-backup");
  EXPECT_FALSE(sameBackupChunk(unlabelled, ours_secrets[1]));
}

TEST(BackupTest, SetsOfEarlierVersionsAreStillListedVerifiedAndRestorable) {
  const std::string suffix = stateSuffix(object());
  const ReadState state = readOf(2);
  // Written by an earlier version: named for the serial only.
  auto legacy = backupOf(state, "2026-01-01T00:00:00Z");
  for (std::size_t i = 0; i < legacy.size(); ++i) {
    legacy[i]["metadata"]["name"] = legacyBackupSecretName(suffix, 1, i);
  }
  EXPECT_EQ(legacy[1]["metadata"]["name"], "captf-state-backup-" + suffix + "-1-part-1");
  auto sets = listBackups(suffix, legacy);
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_TRUE(sets[0].verified) << sets[0].problem;
  EXPECT_EQ(decideBackup(state, sets, 5, false), BackupDecision::kAlreadyTaken);
  const auto restore = findRestoreBackup("1", sets);
  ASSERT_TRUE(restore.ok()) << restore.status();
  EXPECT_EQ(restore->chunk_secrets, namesOf(legacy));
  EXPECT_EQ(statusBackups(sets).size(), 1U);

  // Its digest is checked all the same.
  legacy[0]["data"]["tfstate"] = contract::base64Encode("tampered");
  sets = listBackups(suffix, legacy);
  ASSERT_EQ(sets.size(), 1U);
  EXPECT_FALSE(sets[0].verified);
  EXPECT_THAT(findRestoreBackup("1", sets).status().message(), HasSubstr("digest mismatch"));
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
