#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include "manager/diagnostics/logging.h"

namespace captf::diagnostics {
namespace {

using nlohmann::json;

std::vector<std::string> lines(const std::ostringstream& out) {
  std::vector<std::string> result;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) {
    result.push_back(line);
  }
  return result;
}

class LoggingTest : public ::testing::Test {
protected:
  std::shared_ptr<spdlog::logger> make(const LogOptions& options) {
    return makeLogger(options, std::make_shared<spdlog::sinks::ostream_sink_st>(infos_),
                      std::make_shared<spdlog::sinks::ostream_sink_st>(errors_));
  }
  std::ostringstream infos_;
  std::ostringstream errors_;
};

TEST_F(LoggingTest, JsonLinesAreValidJsonWhateverTheMessageHolds) {
  auto logger = make({.json = true, .verbosity = 4});
  logger->info("cannot read error=\"{}\"", "a \"quoted\" \\ value\nwith a newline");
  logger->debug("debug line");
  logger->error("failed error=\"{}\"", "boom");
  const auto written = lines(infos_);
  ASSERT_EQ(written.size(), 3U) << infos_.str();
  const json info = json::parse(written[0]);
  EXPECT_EQ(info["msg"], "cannot read error=\"a \"quoted\" \\ value\nwith a newline\"");
  EXPECT_EQ(info["v"], 0);
  EXPECT_TRUE(info["ts"].is_number_float());
  EXPECT_EQ(json::parse(written[1])["v"], 4);
  const json error = json::parse(written[2]);
  EXPECT_EQ(error["err"], "failed error=\"boom\"");
  EXPECT_FALSE(error.contains("v"));
  EXPECT_TRUE(errors_.str().empty()) << "JSON goes to stdout unless split";
}

TEST_F(LoggingTest, TextIsKlogOnStderr) {
  auto logger = make({.json = false, .verbosity = 2});
  logger->info("hello");
  logger->debug("hidden at -v=2");
  EXPECT_TRUE(infos_.str().empty());
  const auto written = lines(errors_);
  ASSERT_EQ(written.size(), 1U) << errors_.str();
  EXPECT_EQ(written[0].front(), 'I');
  EXPECT_NE(written[0].find("] hello"), std::string::npos) << written[0];
}

TEST_F(LoggingTest, SplitStreamSendsErrorsToStderrAndTheRestToStdout) {
  for (bool json_format : {true, false}) {
    infos_.str("");
    errors_.str("");
    auto logger = make({.json = json_format, .verbosity = 2, .split_stream = true});
    logger->info("info line");
    logger->warn("warning line");
    logger->error("error line");
    EXPECT_EQ(lines(infos_).size(), 2U) << infos_.str();
    ASSERT_EQ(lines(errors_).size(), 1U) << errors_.str();
    EXPECT_NE(errors_.str().find("error line"), std::string::npos);
  }
}

TEST(BufferSizeTest, ParsesKubernetesQuantities) {
  EXPECT_EQ(*parseBufferSize("--f", "0"), 0U);
  EXPECT_EQ(*parseBufferSize("--f", "4096"), 4096U);
  EXPECT_EQ(*parseBufferSize("--f", "64Ki"), 65536U);
  EXPECT_EQ(*parseBufferSize("--f", "1Mi"), 1048576U);
  EXPECT_EQ(*parseBufferSize("--f", "100k"), 100000U);
  for (const char* bad : {"", "Ki", "-1", "1.5Mi", "12Q", "99999999999Gi"}) {
    const auto parsed = parseBufferSize("--log-json-info-buffer-size", bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("--log-json-info-buffer-size"), std::string::npos);
  }
}

} // namespace
} // namespace captf::diagnostics
