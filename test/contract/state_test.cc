#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/state.h"
#include "contract/strings.h"
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
  EXPECT_EQ(
      summary->outputs,
      nlohmann::json::parse(
          R"({"health": {"value": {"state": "running"}, "type": ["object", {}], "sensitive": true}})"));
}

TEST(StateTest, SummarizesStraightFromTheChunks) {
  const std::string compressed = gzip(kState);
  for (const std::size_t piece : {std::size_t{13}, std::size_t{100}, compressed.size()}) {
    auto summary = summarizeState(split(compressed, piece));
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_EQ(summary->serial, 7);
    EXPECT_EQ(summary->managed_resources, 2U);
    EXPECT_EQ(summary->outputs, inspectState(kState)->outputs);
  }
}

// A piece boundary of the inflated stream (256 KiB) at the end of a chunk's
// input must not lose output zlib still holds.
TEST(StateTest, ReadsStatesOfEverySizeAcrossBufferBoundaries) {
  for (const std::size_t size : {std::size_t{262143}, std::size_t{262144}, std::size_t{262145},
                                 std::size_t{524288}, std::size_t{1048577}}) {
    const std::string head = R"({"version":4,"serial":3,"lineage":"l","x":")";
    const std::string state = head + std::string(size - head.size() - 2, 'a') + "\"}";
    ASSERT_EQ(state.size(), size);
    const std::string compressed = gzip(state);
    for (const std::size_t pieces : {std::size_t{1}, std::size_t{3}}) {
      const auto chunks = split(compressed, compressed.size() / pieces + 1);
      auto assembled = assembleState(chunks);
      ASSERT_TRUE(assembled.ok()) << assembled.status();
      EXPECT_EQ(*assembled, state);
      auto summary = summarizeState(chunks);
      ASSERT_TRUE(summary.ok()) << summary.status();
      EXPECT_EQ(summary->serial, 3);
    }
  }
}

TEST(StateTest, EmptyChunksAreNoData) {
  const std::string compressed = gzip(kState);
  for (const std::vector<std::string>& chunks :
       {std::vector<std::string>{"", compressed}, std::vector<std::string>{compressed, ""},
        std::vector<std::string>{compressed.substr(0, 10), "", compressed.substr(10)}}) {
    auto assembled = assembleState(chunks);
    ASSERT_TRUE(assembled.ok()) << assembled.status();
    EXPECT_EQ(*assembled, kState);
    EXPECT_TRUE(summarizeState(chunks).ok());
  }
}

// Duplicate keys keep the last value, as a parsed tree did; a later
// `resources` or `outputs` replaces an earlier one whole.
TEST(StateTest, DuplicateKeysKeepTheLastValue) {
  auto summary = inspectState(R"({"version": 4, "serial": 1, "serial": 2, "lineage": "a",
    "outputs": {"x": {"value": 1}}, "outputs": {"y": {"value": 2}, "y": {"value": 3}},
    "resources": [{"mode": "managed"}, 7],
    "resources": [{"mode": "data", "mode": "managed"}, {"mode": "managed", "mode": "data"},
                  {"mode": {"nested": "managed"}}, {"x": {"mode": "managed"}}]})");
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->serial, 2);
  EXPECT_EQ(summary->outputs, nlohmann::json::parse(R"({"y": {"value": 3}})"));
  EXPECT_EQ(summary->managed_resources, 1U);
}

// Resource attributes and other members are scanned past whatever they
// hold; only `mode` of each resource is read.
TEST(StateTest, ScansPastResourceAttributes) {
  auto summary = inspectState(R"({"version": 4, "serial": 0, "lineage": "l",
    "check_results": [{"objects": [[[{}]]]}],
    "resources": [{"mode": "managed", "instances": [{"attributes": {"mode": "data",
      "list": [1, -2, 3.5, 18446744073709551615, null, true, "s", {"k": [{}]}]}}]}]})");
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->managed_resources, 1U);
  EXPECT_EQ(summary->outputs, nlohmann::json::object());
}

TEST(StateTest, OutputsKeepTheirValuesExactly) {
  const std::string outputs =
      R"({"a": {"value": [1, -2, 3.5, 18446744073709551615, null, true, "s", {"k": []}, {}],)"
      R"( "type": ["tuple", ["number"]], "sensitive": false}, "b": {"value": null}})";
  auto summary =
      inspectState(R"({"version": 4, "serial": 0, "lineage": "l", "outputs": )" + outputs + "}");
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->outputs, nlohmann::json::parse(outputs));
}

TEST(StateTest, NestingIsCapped) {
  const auto nested = [](std::string_view member, std::size_t depth) {
    // The root object is one level.
    return strCat(R"({"version": 4, "serial": 0, "lineage": "l", ")", member, R"(": )",
                  std::string(depth - 1, '['), std::string(depth - 1, ']'), "}");
  };
  for (const std::string_view member : {"check_results", "resources", "outputs"}) {
    const auto deepest = inspectState(nested(member, kMaxStateDepth));
    // At the cap the document is read (and judged on its shape, not its depth).
    EXPECT_THAT(std::string(deepest.status().message()), ::testing::Not(HasSubstr("nested")))
        << member;
    const auto deeper = inspectState(nested(member, kMaxStateDepth + 1));
    EXPECT_EQ(stateProblem(deeper.status()), StateProblem::kCorrupt) << member;
    EXPECT_EQ(deeper.status().message(), "state: nested deeper than 256 levels");
  }
  const auto outputs = inspectState(
      R"({"version": 4, "serial": 0, "lineage": "l", "outputs": {"o": {"value": )" +
      std::string(kMaxStateDepth - 3, '[') + std::string(kMaxStateDepth - 3, ']') + "}}}");
  ASSERT_TRUE(outputs.ok()) << outputs.status();
}

TEST(StateTest, OutputValuesAreBudgeted) {
  const StateLimits limits{.output_values = 100};
  // The outputs object, `o`, and its `value` list are three values.
  const auto state = [](std::size_t elements) {
    std::string list;
    for (std::size_t i = 0; i < elements; ++i) {
      list += i == 0 ? "0" : ",{}";
    }
    return strCat(R"({"version": 4, "serial": 0, "lineage": "l", "outputs": {"o": {"value": [)",
                  list, "]}}}");
  };
  auto at_budget = inspectState(state(97), limits);
  ASSERT_TRUE(at_budget.ok()) << at_budget.status();
  EXPECT_EQ(at_budget->outputs["o"]["value"].size(), 97U);
  const auto over = inspectState(state(98), limits);
  EXPECT_EQ(stateProblem(over.status()), StateProblem::kCorrupt);
  EXPECT_EQ(over.status().message(), "state: outputs hold more than 100 values");
  // The same values elsewhere in the state are not kept, so not counted.
  EXPECT_TRUE(
      inspectState(R"({"version": 4, "serial": 0, "lineage": "l", "x": )" + state(1000) + "}",
                   limits)
          .ok());
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

TEST(StateTest, CorruptStreamsAreCorruptWhenSummarizedToo) {
  const std::string compressed = gzip(kState);
  const auto pieces = split(compressed, compressed.size() / 3 + 1);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"plain text, not gzip"}, "not a gzip stream"},
      {{compressed.substr(0, compressed.size() / 2)}, "truncated"},
      {{compressed, "trailing"}, "data after the end of the gzip stream (chunk 1)"},
      {{compressed + "x"}, "data after the end of the gzip stream (chunk 0)"},
      {{pieces[0], pieces[2]}, "not a gzip stream"},
  };
  for (const auto& [chunks, message] : cases) {
    const auto summary = summarizeState(chunks);
    EXPECT_EQ(stateProblem(summary.status()), StateProblem::kCorrupt) << message;
    EXPECT_THAT(std::string(summary.status().message()), HasSubstr(message));
  }
  EXPECT_EQ(stateProblem(summarizeState({}).status()), StateProblem::kInconsistent);
}

// A state of exactly `size` bytes: the head, then members holding strings
// of at most 64 KiB.
std::string stateOfSize(std::size_t size) {
  constexpr std::size_t kPiece = std::size_t{64} << 10;
  std::string state = R"({"version":4,"serial":1,"lineage":"l")";
  for (int i = 0;; ++i) {
    const std::string key = strCat(R"(,"x)", i, R"(":")");
    // Room left for this string before its closing quote and the brace.
    const std::size_t room = size - state.size() - key.size() - 2;
    if (room <= kPiece) {
      return state + key + std::string(room, 'a') + "\"}";
    }
    state += key + std::string(kPiece, 'a') + "\"";
  }
}

TEST(StateTest, DecompressedSizeIsCapped) {
  const std::string bomb = gzip(std::string(kMaxStateBytes + 1, ' '));
  const auto state = assembleState(std::vector<std::string>{bomb});
  EXPECT_EQ(stateProblem(state.status()), StateProblem::kCorrupt);
  EXPECT_EQ(state.status().message(), "state: decompresses to more than 67108864 bytes");
  // The summary reads the stream with the same cap (smaller here: the JSON
  // reader is slow under the sanitizers).
  const StateLimits limits{.bytes = std::size_t{1} << 20};
  const auto summary =
      summarizeState(std::vector<std::string>{gzip(stateOfSize(limits.bytes + 1))}, limits);
  EXPECT_EQ(summary.status().message(), "state: decompresses to more than 1048576 bytes");
  // Exactly at the cap is still state.
  const auto full =
      summarizeState(std::vector<std::string>{gzip(stateOfSize(limits.bytes))}, limits);
  EXPECT_TRUE(full.ok()) << full.status();
}

TEST(StateTest, TokensAndTheGapsBetweenThemAreCapped) {
  const StateLimits limits{.token_bytes = 4096, .gap_bytes = 1024};
  const std::string head = R"({"version":4,"serial":1,"lineage":"l","x":)";
  const auto message = [&](const std::string& value) {
    return std::string(inspectState(head + value + "}", limits).status().message());
  };
  // A string counts its quotes.
  EXPECT_EQ(message(strCat("\"", std::string(4094, 'a'), "\"")), "");
  EXPECT_EQ(message(strCat("\"", std::string(4095, 'a'), "\"")),
            strCat("state: a string, number or literal longer than 4096 bytes at byte ",
                   head.size() + 4097));
  // Escapes are followed: an escaped quote does not end the string.
  EXPECT_EQ(message(strCat("\"", std::string(1000, '\\'), "\\\"", std::string(4000, 'a'), "\"")),
            strCat("state: a string, number or literal longer than 4096 bytes at byte ",
                   head.size() + 4097));
  EXPECT_EQ(message("0." + std::string(4094, '0')), "");
  EXPECT_THAT(message("0." + std::string(4095, '0')), HasSubstr("longer than 4096 bytes"));
  // The gap after "x" is `:`, `[`, the blanks, `]` and `}`.
  EXPECT_EQ(message(strCat("[", std::string(1020, ' '), "]")), "");
  EXPECT_EQ(message(strCat("[", std::string(1021, ' '), "]")),
            strCat("state: more than 1024 bytes of whitespace and punctuation at byte ",
                   head.size() + 1024));
  std::string empties = "[";
  while (empties.size() < 2000) {
    empties += "{},";
  }
  EXPECT_THAT(message(empties + "{}]"), HasSubstr("whitespace and punctuation"));
  // The defaults.
  EXPECT_EQ(StateLimits{}.token_bytes, std::size_t{8} << 20);
  EXPECT_EQ(StateLimits{}.gap_bytes, std::size_t{1} << 20);
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
  EXPECT_EQ(inspectState("{not json").status().message(),
            "state: invalid JSON at byte 3: invalid literal");
  // A version that is not a number is not quoted.
  EXPECT_EQ(inspectState(R"({"version":"CANARY","serial":1,"lineage":"l"})").status().message(),
            "state: unsupported state version: not an integer (want 4)");
  EXPECT_EQ(inspectState(R"({"version":3,"serial":1,"lineage":"l"})").status().message(),
            "state: unsupported state version 3 (want 4)");
  EXPECT_EQ(
      stateProblem(inspectState(R"({"version":4,"serial":1,"lineage":"l","outputs":[]})").status()),
      StateProblem::kCorrupt);
  EXPECT_EQ(
      stateProblem(
          inspectState(R"({"version":4,"serial":1,"lineage":"l","resources":[null]})").status()),
      StateProblem::kCorrupt);
  EXPECT_EQ(
      stateProblem(
          inspectState(R"({"version":4,"serial":18446744073709551615,"lineage":"l"})").status()),
      StateProblem::kCorrupt);
  EXPECT_EQ(inspectState(R"([{},{},{}])").status().message(), "state: not a JSON object");
  EXPECT_EQ(inspectState(R"("x")").status().message(), "state: not a JSON object");
  EXPECT_EQ(stateProblem(
                inspectState(R"({"version":4,"serial":1,"lineage":"l","resources":{}})").status()),
            StateProblem::kCorrupt);
  auto empty = inspectState(R"({"version":4,"serial":0,"lineage":"l","resources":[]})");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->managed_resources, 0U);
}

} // namespace
} // namespace captf::contract
