#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include "manager/kube/controller.h"
#include "manager/kube/logging.h"
#include "test/manager/kube/fakes.h"

namespace captf::kube {
namespace {

// Lines as the spdlog logger received them (the records).
class LoggerTest : public ::testing::Test {
protected:
  LoggerTest() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(out_);
    sink->set_pattern("%v");
    spdlog_ = std::make_shared<spdlog::logger>("test", sink);
    spdlog_->set_level(spdlog::level::info);
  }
  std::vector<LogValues> records() const {
    std::vector<LogValues> result;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) {
      auto record = parseLogRecord(line);
      EXPECT_TRUE(record.has_value()) << line;
      if (record) {
        result.push_back(*record);
      }
    }
    return result;
  }
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> spdlog_;
};

TEST_F(LoggerTest, KeyValuesAreFieldsAndTheMessageStaysConstant) {
  const Logger log = Logger(spdlog_).withValues(
      {{"controller", "terraformcluster"}, {"TerraformCluster", objectRef("team-a", "web")}});
  const Logger child = log.withValues({{"Cluster", objectRef("team-a", "web-cluster")}});
  child.info("run Job created", {{"operation", "apply"}, {"attempt", 2}});
  log.info("parent line");
  auto written = records();
  ASSERT_EQ(written.size(), 2U) << out_.str();
  LogValues& line = written[0];
  EXPECT_EQ(line["msg"], "run Job created");
  EXPECT_EQ(line["v"], 0);
  EXPECT_EQ(line["controller"], "terraformcluster");
  EXPECT_EQ(line["TerraformCluster"], (LogValues{{"name", "web"}, {"namespace", "team-a"}}));
  EXPECT_EQ(line["Cluster"], (LogValues{{"name", "web-cluster"}, {"namespace", "team-a"}}));
  EXPECT_EQ(line["operation"], "apply");
  EXPECT_EQ(line["attempt"], 2);
  // msg first, then v, then the logger's values in order, then the call's.
  std::vector<std::string> keys;
  for (const auto& [key, value] : line.items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"msg", "v", "controller", "TerraformCluster", "Cluster",
                                            "operation", "attempt"}));
  // The child's owner is not on the parent's lines.
  EXPECT_FALSE(written[1].contains("Cluster"));
  EXPECT_EQ(written[1]["msg"], "parent line");
}

TEST_F(LoggerTest, ErrorsCarryErrInsteadOfV) {
  Logger(spdlog_).error("Reconciler error", absl::UnavailableError("api down"),
                        {{"terminal", true}});
  auto written = records();
  ASSERT_EQ(written.size(), 1U);
  EXPECT_EQ(written[0]["msg"], "Reconciler error");
  EXPECT_EQ(written[0]["err"], "api down");
  EXPECT_FALSE(written[0].contains("v"));
  EXPECT_EQ(written[0]["terminal"], true);
}

TEST_F(LoggerTest, VerboseLinesFollowTheLoggersLevel) {
  const Logger log(spdlog_);
  log.verbose(2, "at 2");
  log.verbose(4, "at 4, hidden at info");
  EXPECT_FALSE(log.enabled(4));
  spdlog_->set_level(spdlogLevel(4)); // PUT /debug/flags/v 4
  EXPECT_TRUE(log.enabled(4));
  log.verbose(4, "at 4");
  log.verbose(5, "at 5, hidden at debug");
  auto written = records();
  ASSERT_EQ(written.size(), 2U) << out_.str();
  EXPECT_EQ(written[0]["v"], 2);
  EXPECT_EQ(written[1]["msg"], "at 4");
  EXPECT_EQ(written[1]["v"], 4);
}

TEST_F(LoggerTest, AKubernetesObjectIsLoggedAsItsReferenceNeverItsContent) {
  const Json secret = {{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata", {{"name", "creds"}, {"namespace", "captf-system"}}},
                       {"data", {{"token", "Y2FuYXJ5LXNlY3JldA=="}}},
                       {"stringData", {{"password", "canary-secret"}}}};
  const Logger log = Logger(spdlog_).withValues({{"source", LogValues::parse(secret.dump())}});
  log.info("mirrored", {{"Secret", LogValues::parse(secret.dump())}});
  const std::string text = out_.str();
  EXPECT_EQ(text.find("canary-secret"), std::string::npos) << text;
  EXPECT_EQ(text.find("Y2FuYXJ5LXNlY3JldA=="), std::string::npos) << text;
  auto written = records();
  ASSERT_EQ(written.size(), 1U);
  const LogValues ref = {{"name", "creds"}, {"namespace", "captf-system"}};
  EXPECT_EQ(written[0]["Secret"], ref);
  EXPECT_EQ(written[0]["source"], ref);
}

TEST_F(LoggerTest, TheLinesOwnKeysCannotBeOverwrittenAndBadUtf8IsReplaced) {
  Logger(spdlog_)
      .withValues({{"msg", "forged"}, {"v", 9}})
      .info("real", {{"err", "forged"}, {"bytes", "\xff\xfe"}});
  auto written = records();
  ASSERT_EQ(written.size(), 1U) << out_.str();
  EXPECT_EQ(written[0]["msg"], "real");
  EXPECT_EQ(written[0]["v"], 0);
  EXPECT_FALSE(written[0].contains("err"));
  EXPECT_EQ(written[0]["bytes"], "\xef\xbf\xbd\xef\xbf\xbd");
}

TEST_F(LoggerTest, ADefaultLoggerDiscardsAndPlainPayloadsAreNoRecords) {
  const Logger discard;
  EXPECT_FALSE(discard.enabled(0));
  discard.info("nothing");
  discard.error("nothing", absl::InternalError("x"));
  EXPECT_TRUE(out_.str().empty());
  EXPECT_FALSE(parseLogRecord("starting manager version=1").has_value());
  EXPECT_FALSE(isLogRecord("\x1e{not json"));
  EXPECT_TRUE(isLogRecord("\x1e{\"msg\":\"m\"}"));
  EXPECT_EQ(objectRef("", "cluster-scoped"), (LogValues{{"name", "cluster-scoped"}}));
}

// What the controller hands a reconcile: controller-runtime's fields.
class RecordingReconciler final : public Reconciler {
public:
  absl::StatusOr<Result> reconcile(const ReconcileContext& ctx, const Request&) override {
    values.push_back(ctx.log.values());
    ctx.log.info("inside");
    return absl::InternalError("boom");
  }
  std::vector<LogValues> values;
};

TEST_F(LoggerTest, TheControllersReconcileLoggerCarriesTheObject) {
  FakeClock clock;
  // The informer outlives the controller (which unregisters from it).
  SharedInformer informer({"example.io", "v1", "Widget"},
                          std::make_unique<testing::FakeListerWatcher>(), clock, {},
                          testing::quietLogger());
  RecordingReconciler reconciler;
  Controller controller("widget", reconciler, {}, clock, nullptr, spdlog_);
  controller.watchFor(informer);
  controller.reconcileHandler({"ns", "a"}, std::stop_token());
  controller.reconcileHandler({"ns", "a"}, std::stop_token());
  ASSERT_EQ(reconciler.values.size(), 2U);
  LogValues& fields = reconciler.values[0];
  EXPECT_EQ(fields["controller"], "widget");
  EXPECT_EQ(fields["controllerGroup"], "example.io");
  EXPECT_EQ(fields["controllerKind"], "Widget");
  EXPECT_EQ(fields["Widget"], (LogValues{{"name", "a"}, {"namespace", "ns"}}));
  EXPECT_EQ(fields["namespace"], "ns");
  EXPECT_EQ(fields["name"], "a");
  const std::regex uuid("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  ASSERT_TRUE(fields["reconcileID"].is_string());
  EXPECT_TRUE(std::regex_match(fields["reconcileID"].get<std::string>(), uuid))
      << fields["reconcileID"];
  EXPECT_NE(fields["reconcileID"], reconciler.values[1]["reconcileID"]);
  // The reconciler's line and the controller's error line both carry them.
  auto written = records();
  ASSERT_EQ(written.size(), 4U) << out_.str();
  EXPECT_EQ(written[0]["msg"], "inside");
  EXPECT_EQ(written[0]["Widget"], fields["Widget"]);
  EXPECT_EQ(written[1]["msg"], "Reconciler error");
  EXPECT_EQ(written[1]["err"], "boom");
  EXPECT_EQ(written[1]["reconcileID"], fields["reconcileID"]);
  EXPECT_EQ(written[1]["msg"].get<std::string>().find("ns/a"), std::string::npos);
}

} // namespace
} // namespace captf::kube
