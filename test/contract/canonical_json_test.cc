#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "contract/canonical_json.h"

namespace captf::contract {
namespace {

using nlohmann::json;

std::string canonical(const json& value) {
  auto out = canonicalJson(value);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::string();
}

TEST(CanonicalJsonTest, SortsKeysAndDropsWhitespace) {
  EXPECT_EQ(canonical(json::parse(R"({ "b": 1, "a": {"d": [1, 2], "c": null}, "A": true })")),
            R"({"A":true,"a":{"c":null,"d":[1,2]},"b":1})");
}

TEST(CanonicalJsonTest, KeyOrderIsUtf8ByteOrder) {
  // 'Z' (0x5A) < '_' (0x5F) < 'a' (0x61) < 'é' (0xC3 0xA9) < '😀' (0xF0 ...).
  EXPECT_EQ(canonical(json{{"\xF0\x9F\x98\x80", 1}, {"\xC3\xA9", 2}, {"a", 3}, {"_", 4}, {"Z", 5}}),
            "{\"Z\":5,\"_\":4,\"a\":3,\"\xC3\xA9\":2,\"\xF0\x9F\x98\x80\":1}");
}

TEST(CanonicalJsonTest, EscapesOnlyWhatJsonRequires) {
  EXPECT_EQ(canonical(json("q\"b\\s/<>&\x01\x1f\x7f\b\f\n\r\t\xC3\xA9")),
            "\"q\\\"b\\\\s/<>&\\u0001\\u001f\x7f\\b\\f\\n\\r\\t\xC3\xA9\"");
}

TEST(CanonicalJsonTest, ParsedEscapesAndRawCharactersAreTheSame) {
  // The same string written two ways in the source JSON.
  EXPECT_EQ(canonical(json::parse(R"(["\u00e9\u003c\ud83d\ude00"])")),
            canonical(json::array({"\xC3\xA9<\xF0\x9F\x98\x80"})));
}

TEST(CanonicalJsonTest, IntegersInShortestDecimalForm) {
  EXPECT_EQ(canonical(json::parse("[0, -0, 7, -42, 9223372036854775807, 18446744073709551615]")),
            "[0,0,7,-42,9223372036854775807,18446744073709551615]");
  EXPECT_EQ(canonical(json(std::numeric_limits<std::int64_t>::min())), "-9223372036854775808");
}

TEST(CanonicalJsonTest, RejectsFractionalAndExponentNumbersWithTheirPath) {
  for (const char* text :
       {R"({"exports": {"ratio": 0.5}})", R"({"exports": {"ratio": 1.0}})",
        R"({"exports": {"ratio": 1e3}})", R"({"exports": {"ratio": 100000000000000000000}})"}) {
    auto out = canonicalJson(json::parse(text));
    ASSERT_FALSE(out.ok()) << text;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find("exports.ratio"), std::string::npos) << out.status();
  }
  auto in_list = canonicalJson(json::parse(R"({"a": [1, [2, 2.5]]})"));
  ASSERT_FALSE(in_list.ok());
  EXPECT_NE(in_list.status().message().find("a[1][1]"), std::string::npos) << in_list.status();
}

TEST(CanonicalJsonTest, RejectsInvalidUtf8InValuesAndKeys) {
  for (const std::string& bad :
       {std::string("\xC3"), std::string("\xC0\xAF"), std::string("\xED\xA0\x80"),
        std::string("\xF4\x90\x80\x80"), std::string("\xFF"), std::string("a\x80")}) {
    auto value = canonicalJson(json{{"k", bad}});
    EXPECT_FALSE(value.ok()) << "value " << bad;
    auto key = canonicalJson(json{{bad, 1}});
    EXPECT_FALSE(key.ok()) << "key " << bad;
  }
}

TEST(CanonicalJsonTest, EqualValuesGiveEqualBytes) {
  const json a = json::parse(R"({"x": {"p": [1, {"q": "r", "s": false}]}, "y": "z"})");
  const json b = json::parse(R"({"y":"z","x":{"p":[1,{"s":false,"q":"r"}]}})");
  EXPECT_EQ(canonical(a), canonical(b));
}

TEST(CanonicalJsonTest, DistinguishesTypesThatPrintAlike) {
  EXPECT_NE(canonical(json{{"a", "1"}}), canonical(json{{"a", 1}}));
  EXPECT_NE(canonical(json{{"a", "true"}}), canonical(json{{"a", true}}));
  EXPECT_NE(canonical(json{{"a", "null"}}), canonical(json{{"a", nullptr}}));
  EXPECT_NE(canonical(json{{"a", json::array()}}), canonical(json{{"a", json::object()}}));
}

} // namespace
} // namespace captf::contract
