#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "contract/json_adapter.h"
#include "contract/json_error.h"
#include "test/contract/test_util.h"

namespace captf::contract {
namespace {

using ::captf::contract::testing::expectNoSecret;
using ::testing::HasSubstr;

constexpr std::string_view kSecret = "CANARY-7f3a9c2e5b10d4";

struct KindCase {
  std::string text;
  std::string_view kind;
};

// NOLINTNEXTLINE(readability-identifier-naming): gtest finds its printer by this name.
void PrintTo(const KindCase& c, std::ostream* os) {
  *os << c.text;
}

class JsonErrorKindTest : public ::testing::TestWithParam<KindCase> {};

// Each error is named by kind and offset; no byte of the document appears,
// however much of it nlohmann's own message quotes.
TEST_P(JsonErrorKindTest, NamesTheKindNeverTheContent) {
  const KindCase& c = GetParam();
  auto parsed = parseJson(c.text, "doc");
  ASSERT_FALSE(parsed.ok());
  const std::string message(parsed.status().message());
  EXPECT_THAT(message, HasSubstr(strCat("doc: invalid JSON")));
  EXPECT_THAT(message, ::testing::EndsWith(strCat(": ", c.kind)));
  expectNoSecret(message, std::string(kSecret));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("last read")));
}

const std::string kOpen = strCat(R"({"token":")", kSecret);

INSTANTIATE_TEST_SUITE_P(
    All, JsonErrorKindTest,
    ::testing::Values(KindCase{"", "unexpected end of input"},
                      KindCase{kOpen, "unexpected end of input"},
                      KindCase{strCat(R"({"token":)", kSecret, "}"), "invalid literal"},
                      KindCase{strCat(kOpen, "\\q\"}"), "invalid string"},
                      KindCase{strCat(kOpen, "\x01\"}"), "invalid string"},
                      KindCase{strCat(kOpen, "\xff\"}"), "invalid string"},
                      KindCase{R"({"n":-x})", "invalid number"},
                      KindCase{R"({"n":1e999})", "number out of range"},
                      KindCase{strCat(R"({"token":")", kSecret, R"(" "x"})"), "syntax error"},
                      KindCase{R"({} {})", "syntax error"}));

TEST(JsonErrorTextTest, KeepsTheByteOffset) {
  auto parsed = parseJson(R"({"a": 1,, "b": 2})", "doc");
  ASSERT_FALSE(parsed.ok());
  // nlohmann counts bytes read: the second ',' is the 9th byte.
  EXPECT_EQ(parsed.status().message(), "doc: invalid JSON at byte 9: syntax error");
}

// A SAX handler hears the same words through jsonErrorText.
class Recorder : public nlohmann::json_sax<nlohmann::json> {
public:
  // NOLINTBEGIN(readability-identifier-naming): nlohmann's SAX interface.
  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override { return true; }
  bool key(string_t& /*key*/) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t /*elements*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::json::exception& error) override {
    message = jsonErrorText(position, error);
    return false;
  }
  // NOLINTEND(readability-identifier-naming)

  std::string message;
};

TEST(SaxParseJsonTest, ReportsErrorsThroughTheHandler) {
  Recorder recorder;
  std::istringstream open(kOpen);
  EXPECT_FALSE(saxParseJson(open, recorder));
  EXPECT_EQ(recorder.message,
            strCat("invalid JSON at byte ", kOpen.size() + 1, ": unexpected end of input"));
  Recorder valid;
  std::istringstream document(R"({"a":[1,2.5,"x",null,true]})");
  EXPECT_TRUE(saxParseJson(document, valid));
  EXPECT_EQ(valid.message, "");
}

TEST(DumpJsonTest, InvalidUtf8IsNamedNotQuoted) {
  auto dumped = dumpJson(nlohmann::json(strCat(kSecret, "\xff")), JsonLayout::kCompact, "doc");
  ASSERT_FALSE(dumped.ok());
  EXPECT_EQ(dumped.status().message(), "doc: cannot serialize: a string is not valid UTF-8");
}

} // namespace
} // namespace captf::contract
