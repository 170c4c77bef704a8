#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include "manager/diagnostics/logging.h"
#include "manager/kube/logging.h"

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
  const auto written = lines(errors_);
  ASSERT_EQ(written.size(), 3U) << errors_.str();
  const json info = json::parse(written[0]);
  EXPECT_EQ(info["msg"], "cannot read error=\"a \"quoted\" \\ value\nwith a newline\"");
  EXPECT_EQ(info["v"], 0);
  EXPECT_TRUE(info["ts"].is_number_float());
  EXPECT_EQ(json::parse(written[1])["v"], 4);
  const json error = json::parse(written[2]);
  EXPECT_EQ(error["err"], "failed error=\"boom\"");
  EXPECT_FALSE(error.contains("v"));
  EXPECT_TRUE(infos_.str().empty()) << "every line goes to stderr unless split";
}

TEST_F(LoggingTest, JsonRecordsHaveTheirKeyValuesAsTopLevelFields) {
  auto logger = make({.json = true, .verbosity = 4});
  const kube::Logger log =
      kube::Logger(logger).withValues({{"controller", "terraformcluster"},
                                       {"TerraformCluster", kube::objectRef("team-a", "web")},
                                       {"reconcileID", "5d4c0c5e-4b8e-4a55-9a39-0d1e1c6f7a01"}});
  log.verbose(4, "next operation decided", {{"operation", "apply"}, {"attempt", 1}});
  log.error("Reconciler error", absl::UnavailableError("api \"down\""));
  const auto written = lines(errors_);
  ASSERT_EQ(written.size(), 2U) << errors_.str();
  json line = json::parse(written[0]);
  EXPECT_TRUE(line["ts"].is_number_float());
  EXPECT_EQ(line["msg"], "next operation decided");
  EXPECT_EQ(line["v"], 4);
  EXPECT_EQ(line["controller"], "terraformcluster");
  EXPECT_EQ(line["TerraformCluster"], (json{{"name", "web"}, {"namespace", "team-a"}}));
  EXPECT_EQ(line["operation"], "apply");
  EXPECT_EQ(line["attempt"], 1);
  // "ts" first, as component-base writes it.
  EXPECT_EQ(written[0].rfind("{\"ts\":", 0), 0U) << written[0];
  json error = json::parse(written[1]);
  EXPECT_EQ(error["msg"], "Reconciler error");
  EXPECT_EQ(error["err"], "api \"down\"");
  EXPECT_FALSE(error.contains("v"));
  EXPECT_EQ(error["TerraformCluster"]["name"], "web");
}

TEST_F(LoggingTest, TextRecordsAreKlogKeyValuesAfterTheQuotedMessage) {
  auto logger = make({.json = false, .verbosity = 2});
  kube::Logger(logger)
      .withValues({{"TerraformCluster", kube::objectRef("team-a", "web")},
                   {"Cluster", kube::objectRef("team-a", "web-cluster")}})
      .info("run Job created", {{"operation", "apply"}, {"attempt", 2}, {"ok", true}});
  const auto written = lines(errors_);
  ASSERT_EQ(written.size(), 1U) << errors_.str();
  EXPECT_EQ(written[0].front(), 'I');
  const std::string expected = "] \"run Job created\" TerraformCluster=\"team-a/web\" "
                               "Cluster=\"team-a/web-cluster\" operation=\"apply\" attempt=2 "
                               "ok=true";
  EXPECT_NE(written[0].find(expected), std::string::npos) << written[0];
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

TEST_F(LoggingTest, SplitStreamSendsErrorsToStderrAndInfoToStdout) {
  // Warnings: klog text routes by severity letter (W to stderr); JSON has
  // no warning level (info, stdout). The runner's rule too.
  for (bool json_format : {true, false}) {
    infos_.str("");
    errors_.str("");
    auto logger = make({.json = json_format, .verbosity = 2, .split_stream = true});
    logger->info("info line");
    logger->warn("warning line");
    logger->error("error line");
    kube::Logger(logger).error("record error", absl::InternalError("x"));
    EXPECT_EQ(lines(infos_).size(), json_format ? 2U : 1U) << infos_.str();
    ASSERT_EQ(lines(errors_).size(), json_format ? 2U : 3U) << errors_.str();
    EXPECT_NE(errors_.str().find("error line"), std::string::npos);
    EXPECT_NE(errors_.str().find("record error"), std::string::npos);
    EXPECT_NE(infos_.str().find("info line"), std::string::npos);
  }
}

TEST(BufferSizeTest, ParsesKubernetesQuantities) {
  EXPECT_EQ(*parseBufferSize("--f", "0"), 0U);
  EXPECT_EQ(*parseBufferSize("--f", "4096"), 4096U);
  EXPECT_EQ(*parseBufferSize("--f", "64Ki"), 65536U);
  EXPECT_EQ(*parseBufferSize("--f", "1Mi"), 1048576U);
  EXPECT_EQ(*parseBufferSize("--f", "100k"), 100000U);
  EXPECT_EQ(*parseBufferSize("--f", "1G"), 1000000000U);
  // component-base's cap.
  EXPECT_EQ(*parseBufferSize("--f", "8Gi"), std::size_t{2} << 30);
  for (const char* bad : {"", "Ki", "-1", "1.5Mi", "12Q", "99999999999Gi"}) {
    const auto parsed = parseBufferSize("--log-json-info-buffer-size", bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("--log-json-info-buffer-size"), std::string::npos);
  }
}

} // namespace
} // namespace captf::diagnostics
