#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/state.h"
#include "test/contract/test_util.h"

namespace captf::contract {
namespace {

using ::captf::contract::testing::gzip;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kState = R"({
  "version": 4,
  "terraform_version": "1.11.4",
  "serial": 7,
  "lineage": "2506b82c-8f48-f77f-24bd-d668d3312b03",
  "outputs": {"health": {"value": {"state": "running"}, "type": ["object", {}], "sensitive": true}},
  "resources": [
    {"mode": "managed", "type": "terraform_data", "name": "a", "instances": [{}, {}, {}]},
    {"mode": "data", "type": "terraform_remote_state", "name": "b", "instances": [{}]},
    {"module": "module.role", "mode": "managed", "type": "terraform_data", "name": "c", "instances": [{}]}
  ],
  "check_results": null
})";

std::vector<std::string> split(const std::string& data, std::size_t piece) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < data.size(); at += piece) {
    out.push_back(data.substr(at, piece));
  }
  return out;
}

TEST(StateTest, AssemblesChunksSplitAnywhereInTheGzipStream) {
  const std::string compressed = gzip(kState);
  for (const std::size_t piece : {std::size_t{1}, std::size_t{13}, compressed.size()}) {
    const auto chunks = split(compressed, piece);
    if (chunks.size() > kMaxStateChunks) {
      continue;
    }
    auto state = assembleState(chunks);
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_EQ(*state, kState);
  }
}

TEST(StateTest, InspectsWhatTheControllerNeeds) {
  auto summary = inspectState(kState);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->version, 4);
  EXPECT_EQ(summary->serial, 7);
  EXPECT_EQ(summary->lineage, "2506b82c-8f48-f77f-24bd-d668d3312b03");
  EXPECT_EQ(summary->terraform_version, "1.11.4");
  // count/for_each resources count once; data sources not at all.
  EXPECT_EQ(summary->managed_resources, 2U);
  EXPECT_EQ(summary->outputs["health"]["value"]["state"], "running");
}

TEST(StateTest, OrdersTerraformsPartSecrets) {
  const std::string base = "tfstate-default-0123456789abcdef-c";
  auto ordered = orderChunks(base, {{base + "-part-2", "C"}, {base, "A"}, {base + "-part-1", "B"}});
  ASSERT_TRUE(ordered.ok()) << ordered.status();
  EXPECT_THAT(*ordered, ElementsAre("A", "B", "C"));
}

struct ChunkSetCase {
  std::vector<std::string> names;
  std::string message;
};

// NOLINTNEXTLINE(readability-identifier-naming): gtest finds its printer by this name.
void PrintTo(const ChunkSetCase& c, std::ostream* os) {
  *os << c.message;
}

class InconsistentChunksTest : public ::testing::TestWithParam<ChunkSetCase> {};

TEST_P(InconsistentChunksTest, IsReportedNeverPartiallyRead) {
  std::vector<NamedChunk> chunks;
  for (const std::string& name : GetParam().names) {
    chunks.push_back({name, "x"});
  }
  const auto ordered = orderChunks("tfstate-default-s-m", chunks);
  ASSERT_FALSE(ordered.ok());
  EXPECT_EQ(stateProblem(ordered.status()), StateProblem::kInconsistent) << ordered.status();
  EXPECT_THAT(std::string(ordered.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    All, InconsistentChunksTest,
    ::testing::Values(
        ChunkSetCase{{}, "no chunk"},
        ChunkSetCase{{"tfstate-default-s-m-part-1"}, "chunk 0 is missing"},
        ChunkSetCase{{"tfstate-default-s-m", "tfstate-default-s-m-part-2"}, "chunk 1 is missing"},
        ChunkSetCase{{"tfstate-default-s-m", "tfstate-default-s-m"}, "appears twice"},
        ChunkSetCase{{"tfstate-default-s-m", "tfstate-default-s-m-part-01"}, "is not a chunk"},
        ChunkSetCase{{"tfstate-default-s-m", "tfstate-default-s-mp"}, "is not a chunk"},
        ChunkSetCase{{"tfstate-default-s-m", "captf-state-backup-s-m-3"}, "is not a chunk"}));

TEST(StateTest, TooManyChunksIsInconsistent) {
  std::vector<NamedChunk> chunks{{"b", ""}};
  for (std::size_t i = 1; i <= kMaxStateChunks; ++i) {
    chunks.push_back({"b-part-" + std::to_string(i), ""});
  }
  EXPECT_EQ(stateProblem(orderChunks("b", chunks).status()), StateProblem::kInconsistent);
}

TEST(StateTest, CorruptStreams) {
  const std::string compressed = gzip(kState);
  const auto corrupt = [](std::vector<std::string> chunks) {
    return stateProblem(assembleState(chunks).status());
  };
  EXPECT_EQ(corrupt({"plain text, not gzip"}), StateProblem::kCorrupt);
  EXPECT_EQ(corrupt({compressed.substr(0, compressed.size() / 2)}), StateProblem::kCorrupt);
  EXPECT_EQ(corrupt({compressed, "trailing"}), StateProblem::kCorrupt);
  EXPECT_EQ(corrupt({compressed + "x"}), StateProblem::kCorrupt);
  // A chunk missing from the middle breaks the stream.
  const auto pieces = split(compressed, compressed.size() / 3 + 1);
  ASSERT_EQ(pieces.size(), 3U);
  EXPECT_EQ(corrupt({pieces[0], pieces[2]}), StateProblem::kCorrupt);
}

TEST(StateTest, DecompressedSizeIsCapped) {
  const std::string bomb = gzip(std::string(kMaxStateBytes + 1, ' '));
  const auto state = assembleState(std::vector<std::string>{bomb});
  EXPECT_EQ(stateProblem(state.status()), StateProblem::kCorrupt);
  EXPECT_THAT(std::string(state.status().message()), HasSubstr("more than"));
}

TEST(StateTest, ClassifiesStateDocuments) {
  // OpenTofu client-side encryption: an envelope without `version`.
  EXPECT_EQ(
      stateProblem(
          inspectState(
              R"({"serial":1,"lineage":"l","meta":{"key_provider.pbkdf2.k":"e30="},"encrypted_data":"AAAA","encryption_version":"v0"})")
              .status()),
      StateProblem::kEncrypted);
  EXPECT_EQ(stateProblem(inspectState(R"({"version":3,"serial":1,"lineage":"l"})").status()),
            StateProblem::kCorrupt);
  EXPECT_EQ(stateProblem(inspectState(R"({"serial":1})").status()), StateProblem::kCorrupt);
  EXPECT_EQ(stateProblem(inspectState(R"({"version":4,"lineage":"l"})").status()),
            StateProblem::kCorrupt);
  EXPECT_EQ(stateProblem(inspectState(R"([1,2])").status()), StateProblem::kCorrupt);
  EXPECT_EQ(stateProblem(inspectState("{not json").status()), StateProblem::kCorrupt);
  EXPECT_EQ(stateProblem(
                inspectState(R"({"version":4,"serial":1,"lineage":"l","resources":{}})").status()),
            StateProblem::kCorrupt);
  auto empty = inspectState(R"({"version":4,"serial":0,"lineage":"l","resources":[]})");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->managed_resources, 0U);
}

} // namespace
} // namespace captf::contract
