#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/workspace/state.h"
#include "test/manager/workspace/testing.h"

namespace captf::workspace {
namespace {

using ::captf::workspace::testing::gzip;
using ::captf::workspace::testing::stateSecret;
using ::captf::workspace::testing::stateSecrets;
using ::captf::workspace::testing::testdata;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kSuffix = "00112233aabbccdd-c";

TEST(ReadStateTest, ReadsStateOpenTofuWrote) {
  const std::string state = testdata("tofu-cluster.tfstate");
  auto secrets = stateSecrets(kSuffix, state, 1, "h2:abc");
  // A Secret of another object in the same list is ignored.
  secrets.push_back(stateSecret("ffffffffffffffff-m", 0, "not gzip"));
  const ReadState read = readState(kSuffix, secrets);
  ASSERT_EQ(read.status, StateStatus::kRead) << read.message;
  EXPECT_EQ(read.summary.version, 4);
  EXPECT_EQ(read.summary.terraform_version, "1.12.6");
  EXPECT_EQ(read.summary.serial, 1);
  EXPECT_EQ(read.summary.lineage, "f4d62ae4-c36f-7ca6-3427-127199eae976");
  // terraform_data.lb and terraform_data.zones (count = 3) once each; the
  // terraform_remote_state data source not at all.
  EXPECT_EQ(read.summary.managed_resources, 2U);
  EXPECT_TRUE(read.summary.outputs.contains("exports"));
  EXPECT_EQ(read.inputs_hash, "h2:abc");
  EXPECT_EQ(read.compressed_bytes, static_cast<std::int64_t>(gzip(state).size()));
  EXPECT_THAT(read.secret_names, ElementsAre("tfstate-default-00112233aabbccdd-c"));
  ASSERT_EQ(read.chunks.size(), 1U);
}

TEST(ReadStateTest, ReadsTerraformChunksInAnyOrder) {
  const std::string state = testdata("tofu-cluster.tfstate");
  auto secrets = stateSecrets(kSuffix, state, 3);
  std::reverse(secrets.begin(), secrets.end());
  const ReadState read = readState(kSuffix, secrets);
  ASSERT_EQ(read.status, StateStatus::kRead) << read.message;
  EXPECT_EQ(read.summary.serial, 1);
  EXPECT_EQ(read.inputs_hash, "");
  EXPECT_THAT(read.secret_names, ElementsAre("tfstate-default-00112233aabbccdd-c",
                                             "tfstate-default-00112233aabbccdd-c-part-1",
                                             "tfstate-default-00112233aabbccdd-c-part-2"));
  EXPECT_EQ(read.chunks.size(), 3U);
}

TEST(ReadStateTest, NoSecretIsNotFound) {
  const ReadState read = readState(kSuffix, {stateSecret("ffffffffffffffff-m", 0, "x")});
  EXPECT_EQ(read.status, StateStatus::kNotFound);
  EXPECT_TRUE(read.secret_names.empty());
}

struct ProblemCase {
  const char* name;
  std::vector<nlohmann::json> secrets;
  StateStatus status;
  const char* message_part;
};

std::vector<ProblemCase> problemCases() {
  const std::string state = testdata("tofu-cluster.tfstate");
  const auto three = stateSecrets(kSuffix, state, 3);
  nlohmann::json no_key = stateSecret(kSuffix, 0, "x");
  no_key["data"].erase("tfstate");
  nlohmann::json bad_base64 = stateSecret(kSuffix, 0, "x");
  bad_base64["data"]["tfstate"] = "not*base64";
  nlohmann::json stranger = stateSecret(kSuffix, 0, gzip(state));
  stranger["metadata"]["name"] = "something-else";
  std::vector<nlohmann::json> many;
  for (std::size_t i = 0; i <= contract::kMaxStateChunks; ++i) {
    many.push_back(stateSecret(kSuffix, i, "x"));
  }
  return {
      {"missing chunk", {three[0], three[2]}, StateStatus::kInconsistent, "chunk 1 is missing"},
      {"duplicate chunk",
       {three[0], three[1], three[1], three[2]},
       StateStatus::kInconsistent,
       "appears twice"},
      {"base without tfstate", {no_key}, StateStatus::kInconsistent, "has no tfstate key"},
      {"bad base64", {bad_base64}, StateStatus::kInconsistent, "not valid base64"},
      {"unexpected name",
       {stateSecret(kSuffix, 0, gzip(state)), stranger},
       StateStatus::kInconsistent,
       "something-else is not a chunk"},
      {"too many chunks", many, StateStatus::kInconsistent, "over the limit of 32"},
      {"not gzip", {stateSecret(kSuffix, 0, "plain text")}, StateStatus::kCorrupt, "not a gzip"},
      {"truncated gzip", {three[0], three[1]}, StateStatus::kCorrupt, "truncated"},
      {"not json", {stateSecret(kSuffix, 0, gzip("{nope"))}, StateStatus::kCorrupt, "invalid JSON"},
      {"old version",
       {stateSecret(kSuffix, 0, gzip(R"({"version":3,"serial":1,"lineage":"l"})"))},
       StateStatus::kCorrupt,
       "unsupported state version 3"},
      {"encrypted", stateSecrets(kSuffix, testdata("tofu-encrypted.tfstate")),
       StateStatus::kEncrypted, "encrypted"},
  };
}

TEST(ReadStateTest, ClassifiesEveryProblemAndNamesTheSecret) {
  for (const ProblemCase& c : problemCases()) {
    SCOPED_TRACE(c.name);
    const ReadState read = readState(kSuffix, c.secrets);
    EXPECT_EQ(read.status, c.status) << read.message;
    EXPECT_THAT(read.message, HasSubstr(c.message_part));
    EXPECT_THAT(read.message, HasSubstr("tfstate-default-00112233aabbccdd-c"));
    EXPECT_TRUE(read.chunks.empty());
    EXPECT_FALSE(read.secret_names.empty());
  }
}

TEST(ReadStateTest, KeepsTheInputsHashOfAnUnreadableState) {
  const ReadState read = readState(kSuffix, {stateSecret(kSuffix, 0, "garbage", "h2:kept")});
  EXPECT_EQ(read.status, StateStatus::kCorrupt);
  EXPECT_EQ(read.inputs_hash, "h2:kept");
}

TEST(ClassifyStateTest, AppliesTheLostRule) {
  ReadState none;
  ReadState unhashed;
  unhashed.status = StateStatus::kRead;
  ReadState hashed = unhashed;
  hashed.inputs_hash = "h2:x";
  ReadState corrupt;
  corrupt.status = StateStatus::kCorrupt;
  // The traits classifyState reads: a machine's inputs are immutable, a
  // cluster's and a pool's are not.
  const KindTraits machine{.immutable_inputs = true, .post_apply_refresh = true};
  const KindTraits cluster{.plan_approval = true, .owns_cluster_lease = true};
  const KindTraits pool{
      .pool_membership = true, .post_apply_refresh = true, .ready_tracks_reapply = true};
  struct Case {
    const ReadState* read;
    const KindTraits* traits;
    Provisioned provisioned;
    StateVerdict want;
  };
  const Case cases[] = {
      {&none, &machine, Provisioned::kNo, StateVerdict::kNotFound},
      {&none, &cluster, Provisioned::kYes, StateVerdict::kLost},
      {&unhashed, &machine, Provisioned::kNo, StateVerdict::kRead},
      {&unhashed, &machine, Provisioned::kYes, StateVerdict::kLost},
      {&unhashed, &pool, Provisioned::kYes, StateVerdict::kRead},
      {&unhashed, &cluster, Provisioned::kYes, StateVerdict::kRead},
      {&hashed, &machine, Provisioned::kYes, StateVerdict::kRead},
      {&corrupt, &machine, Provisioned::kYes, StateVerdict::kCorrupt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(classifyState(*c.read, *c.traits, c.provisioned), c.want)
        << stateReason(c.want) << " immutable " << c.traits->immutable_inputs;
  }
}

TEST(ClassifyStateTest, NamesReasonsMetricsAndEvents) {
  struct Row {
    StateVerdict verdict;
    std::string_view reason, metric, event;
    bool jobs;
  };
  const Row rows[] = {
      {StateVerdict::kNotFound, "StateNotFound", "", "", true},
      {StateVerdict::kRead, "StateRead", "", "", true},
      {StateVerdict::kInconsistent, "StateInconsistent", "inconsistent", "StateUnreadable", false},
      {StateVerdict::kEncrypted, "StateEncrypted", "encrypted", "StateUnreadable", false},
      {StateVerdict::kCorrupt, "StateCorrupt", "corrupt", "StateUnreadable", false},
      {StateVerdict::kLost, "StateLost", "lost", "StateLost", false},
      {StateVerdict::kLocked, "StateLocked", "locked", "StateLocked", false},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(stateReason(row.verdict), row.reason);
    EXPECT_EQ(stateMetricReason(row.verdict), row.metric);
    EXPECT_EQ(stateEventReason(row.verdict), row.event);
    EXPECT_EQ(stateAllowsJobs(row.verdict), row.jobs);
  }
}

TEST(ClassifyStateTest, LostMessageSaysHowToRecover) {
  ReadState none;
  const std::string message = stateMessage(StateVerdict::kLost, none, kSuffix);
  EXPECT_THAT(message, HasSubstr("tfstate-default-00112233aabbccdd-c"));
  EXPECT_THAT(message, HasSubstr("captf.io/restore-state"));
}

} // namespace
} // namespace captf::workspace
