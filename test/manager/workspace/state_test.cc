#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "contract/strings.h"
#include "manager/workspace/state.h"
#include "test/manager/workspace/testing.h"

namespace captf::workspace {
namespace {

using ::captf::contract::strCat;
using ::captf::contract::testing::expectNoSecret;
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

// State is Secret content: what is wrong with it reaches the StateReadable
// condition, a Warning Event and the run history, so the message says where
// (a byte offset) and what kind, never a byte of the state.
TEST(ReadStateTest, ErrorsNeverQuoteTheState) {
  const std::string secret = "CANARY-7f3a9c2e5b10d4";
  const std::string open =
      R"({"version":4,"serial":1,"lineage":"l","outputs":{"p":{"value":")" + secret;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {open, strCat("invalid JSON at byte ", open.size() + 1, ": unexpected end of input")},
      {open + R"(\q"}}})", "invalid string"},
      {open + "\x01\"}}}", "invalid string"},
      {R"({"version":4,"serial":)" + secret + "}", "invalid literal"},
      {R"({"version":")" + secret + R"(","serial":1,"lineage":"l"})", "not an integer"},
  };
  for (const auto& [state, part] : cases) {
    SCOPED_TRACE(part);
    const ReadState read = readState(kSuffix, stateSecrets(kSuffix, state, 2));
    EXPECT_EQ(read.status, StateStatus::kCorrupt);
    EXPECT_THAT(read.message, HasSubstr(part));
    const std::string condition = stateMessage(StateVerdict::kCorrupt, read, kSuffix);
    EXPECT_THAT(condition, HasSubstr(part));
    expectNoSecret(read.message, secret);
    expectNoSecret(condition, secret);
  }
}

// What a child process's readState used: its verdict and how far its
// resident set grew (KiB). Memory is measured in a child, by its peak
// resident set, because AddressSanitizer reserves terabytes of address
// space, so an address-space limit cannot bound it.
struct ChildRead {
  StateStatus status = StateStatus::kNotFound;
  std::size_t managed_resources = 0;
  long peak_growth_kib = -1;
  double seconds = 0;
};

ChildRead readStateInChild(const std::vector<nlohmann::json>& secrets) {
  std::array<int, 2> fds{};
  if (pipe(fds.data()) != 0) {
    ADD_FAILURE() << "pipe failed";
    return {};
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    // The peak so far is the resident set inherited at the fork.
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
    const auto start = std::chrono::steady_clock::now();
    const ReadState read = readState(kSuffix, secrets);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    const ChildRead out{read.status, read.summary.managed_resources,
                        after.ru_maxrss - before.ru_maxrss, took.count()};
    const bool written = write(fds[1], &out, sizeof out) == static_cast<ssize_t>(sizeof out);
    _exit(written ? 0 : 1);
  }
  close(fds[1]);
  ChildRead out;
  const bool got = read(fds[0], &out, sizeof out) == static_cast<ssize_t>(sizeof out);
  close(fds[0]);
  int wait_status = 0;
  waitpid(pid, &wait_status, 0);
  EXPECT_TRUE(got && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0)
      << "the child died (wait status " << wait_status << ")";
  return out;
}

// `prefix`, `text` `repeats` times, then `suffix`, gzipped a piece at a time
// (the bombs are larger than a test should hold).
std::string gzipRepeated(std::string_view prefix, std::string_view text, std::size_t repeats,
                         std::string_view suffix = {}) {
  z_stream stream{};
  deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  std::string out;
  std::string buffer(std::size_t{1} << 16, '\0');
  const auto feed = [&](std::string_view in, int flush) {
    // zlib's next_in is not const-qualified.
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    stream.avail_in = static_cast<uInt>(in.size());
    do {
      stream.next_out = reinterpret_cast<Bytef*>(buffer.data());
      stream.avail_out = static_cast<uInt>(buffer.size());
      deflate(&stream, flush);
      out.append(buffer.data(), buffer.size() - stream.avail_out);
    } while (stream.avail_out == 0);
  };
  const std::size_t per_block = std::max<std::size_t>(1, (std::size_t{1} << 20) / text.size());
  std::string block;
  for (std::size_t i = 0; i < per_block; ++i) {
    block += text;
  }
  feed(prefix, Z_NO_FLUSH);
  for (std::size_t done = 0; done < repeats; done += per_block) {
    const std::size_t copies = std::min(per_block, repeats - done);
    feed(std::string_view(block).substr(0, copies * text.size()), Z_NO_FLUSH);
  }
  feed(suffix, Z_FINISH);
  deflateEnd(&stream);
  return out;
}

// Bombs: inputs small as Secrets that would take far more memory or time to
// read than their size. Each stays corrupt within a bounded resident set.
TEST(ReadStateTest, BombsAreCorruptWithinBoundedMemory) {
  constexpr long kBoundKib = 256L * 1024;
  const std::string head = R"({"version":4,"serial":1,"lineage":"l",)";
  const std::string in_outputs = head + R"("outputs":{"p":{"value":)";
  struct Bomb {
    const char* name;
    std::string chunk;
  };
  const std::vector<Bomb> bombs = {
      // A Secret-sized chunk inflating to 1 GiB, far over the 64 MiB cap.
      {"gzip", gzipRepeated("", " ", std::size_t{1} << 30)},
      {"nesting", gzipRepeated(head + R"("x":)", "[", std::size_t{16} << 20)},
      {"nesting in outputs", gzipRepeated(in_outputs, "[", std::size_t{16} << 20)},
      {"empty objects", gzipRepeated("[", "{},", std::size_t{4} << 20, "{}]")},
      {"empty objects in resources",
       gzipRepeated(head + R"("resources":[)", "{},", std::size_t{4} << 20, "{}]}")},
      {"empty objects in outputs",
       gzipRepeated(in_outputs + "[", "{},", std::size_t{4} << 20, "{}]}}}")},
      {"one long string", gzipRepeated(head + R"("x":")", "x", std::size_t{16} << 20, "\"}")},
  };
  for (const Bomb& bomb : bombs) {
    SCOPED_TRACE(bomb.name);
    ASSERT_LE(bomb.chunk.size(), std::size_t{1} << 20) << "a chunk is at most 1 MiB";
    const ChildRead read = readStateInChild({stateSecret(kSuffix, 0, bomb.chunk)});
    EXPECT_EQ(read.status, StateStatus::kCorrupt);
    EXPECT_GE(read.peak_growth_kib, 0);
    EXPECT_LT(read.peak_growth_kib, kBoundKib);
    std::printf("%s: %zu compressed bytes, peak resident growth %ld KiB, %.2f s\n", bomb.name,
                bomb.chunk.size(), read.peak_growth_kib, read.seconds);
  }
}

// A state large in resources costs memory for what is kept, not for its
// size: the resources are scanned past.
TEST(ReadStateTest, ManyResourcesAreCountedWithinBoundedMemory) {
  constexpr std::size_t kResources = 50000;
  const std::string chunk = gzipRepeated(
      R"({"version":4,"serial":1,"lineage":"l","outputs":{},"resources":[)",
      R"({"mode":"managed","type":"t","name":"n","instances":[{"attributes":{"a":[1,"x"]}}]},)",
      kResources, R"({"mode":"data"}]})");
  ASSERT_LE(chunk.size(), std::size_t{1} << 20);
  const ChildRead read = readStateInChild({stateSecret(kSuffix, 0, chunk)});
  EXPECT_EQ(read.status, StateStatus::kRead);
  EXPECT_EQ(read.managed_resources, kResources);
  EXPECT_LT(read.peak_growth_kib, 32L * 1024);
  std::printf("resources: %zu compressed bytes, peak resident growth %ld KiB, %.2f s\n",
              chunk.size(), read.peak_growth_kib, read.seconds);
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
