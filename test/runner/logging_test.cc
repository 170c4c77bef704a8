#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/logging.h"
#include "test/runner/testing.h"

namespace captf::runner {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(LogTest, TextLinesAreKlogStyleWithTypedFields) {
  Log log(nullptr, LogFormat::kText, 0);
  const std::string line =
      log.format('I', 0, "step finished", {{"step", "init"}, {"exitCode", 3}, {"ok", false}});
  EXPECT_THAT(
      line,
      MatchesRegex(
          R"(I[0-9]{4} [0-9:.]{15} [0-9]+] "step finished" step="init" exitCode=3 ok=false)"));
  // Quotes and control characters in values cannot break the line.
  EXPECT_THAT(log.format('W', 0, "m", {{"name", "a\"b\nc"}}), HasSubstr(R"(name="a\"b\nc")"));
}

TEST(LogTest, JsonLinesCarryTheFieldsAsMembers) {
  Log log(nullptr, LogFormat::kJson, 0);
  const auto info = nlohmann::json::parse(log.format('I', 2, "run finished", {{"exitCode", 0}}));
  EXPECT_EQ(info["msg"], "run finished");
  EXPECT_EQ(info["v"], 2);
  EXPECT_EQ(info["exitCode"], 0);
  EXPECT_TRUE(info["ts"].is_number());
  const auto error = nlohmann::json::parse(log.format('E', 0, "run failed", {{"kind", "step"}}));
  EXPECT_EQ(error["err"], "run failed");
  EXPECT_EQ(error["kind"], "step");
  // Invalid UTF-8 is replaced, never thrown on.
  EXPECT_NO_THROW(log.format('I', 0, "m", {{"bytes", "\xff\xfe"}}));
  // The manager's order: the line's keys first, then the fields.
  const std::string line = log.format('I', 0, "m", {{"b", 1}, {"a", 2}});
  EXPECT_EQ(line.find(R"("msg":"m","v":0,"b":1,"a":2})"), line.find("\"msg\""));
}

TEST(LogTest, VerbosityFiltersVerboseLines) {
  testing::CapturedLog captured;
  Log quiet(makeLogger(LogFormat::kText,
                       std::make_shared<spdlog::sinks::ostream_sink_st>(captured.stream)),
            LogFormat::kText, 1);
  quiet.verbose(1, "shown");
  quiet.verbose(2, "hidden");
  quiet.error("always");
  EXPECT_THAT(captured.stream.str(), HasSubstr("\"shown\""));
  EXPECT_THAT(captured.stream.str(), ::testing::Not(HasSubstr("hidden")));
  // One klog line each: an error line starts with its severity letter.
  EXPECT_THAT(captured.stream.str(), HasSubstr("\nE"));
  EXPECT_THAT(captured.stream.str(), HasSubstr(R"("always" err="always")"));
}

} // namespace
} // namespace captf::runner
