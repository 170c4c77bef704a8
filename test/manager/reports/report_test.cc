// The run reports end to end inside one process: the runner's GrpcReporter
// talks real gRPC over real TLS to the manager's ReportServer, which
// authenticates each call against a Job (the lookup stands in for the
// manager's cache, the one thing the test must control) and turns the
// events into Events and a log tail. docs/decisions/run-reports.md.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "captf/runner/v1alpha1/report.grpc.pb.h"
#include "contract/report.h"
#include "manager/api/keys.h"
#include "manager/kube/metrics.h"
#include "manager/reports/report_server.h"
#include "manager/reports/run_reports.h"
#include "manager/workspace/run_history.h"
#include "runner/report.h"

namespace captf::reports {
namespace {

namespace fs = std::filesystem;
namespace pb = captf::runner::v1alpha1;
using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Posted {
  std::string regarding;
  kube::EventType type;
  std::string reason;
  std::string note;
};

class RecordingEvents final : public kube::EventRecorder {
public:
  void event(const json& regarding, kube::EventType type, std::string_view reason,
             std::string_view /*action*/, std::string_view note) override {
    std::scoped_lock lock(mu_);
    posted_.push_back({regarding["kind"].get<std::string>() + "/" +
                           regarding["metadata"]["name"].get<std::string>(),
                       type, std::string(reason), std::string(note)});
  }
  std::vector<Posted> posted() const {
    std::scoped_lock lock(mu_);
    return posted_;
  }
  std::vector<std::string> reasons() const {
    std::vector<std::string> out;
    for (const Posted& p : posted()) {
      out.push_back(p.reason);
    }
    return out;
  }

private:
  mutable std::mutex mu_;
  std::vector<Posted> posted_;
};

json jobWithToken(const std::string& name, const std::string& token, bool finished = false) {
  json job = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata",
       {{"name", name},
        {"namespace", "tenant"},
        {"uid", "uid-" + name},
        {"annotations",
         {{std::string(api::kAnnotationReportTokenHash), contract::reportTokenHash(token)}}},
        {"ownerReferences",
         {{{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
           {"kind", "TerraformCluster"},
           {"name", "demo"},
           {"uid", "tc-uid"},
           {"controller", true}}}}}}};
  if (finished) {
    job["status"]["conditions"] = {{{"type", "Complete"}, {"status", "True"}}};
  }
  return job;
}

class ReportTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir_ =
        new std::string(fs::temp_directory_path() / ("captf-reports-" + std::to_string(getpid())));
    fs::create_directories(*dir_);
    const std::string command =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
        "subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
        *dir_ + "/tls.key -out " + *dir_ + "/tls.crt 2>/dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  void SetUp() override {
    jobs_["job-1"] = jobWithToken("job-1", token_);
    jobs_["job-2"] = jobWithToken("job-2", other_token_);
    jobs_["job-done"] = jobWithToken("job-done", done_token_, /*finished=*/true);
    ReportServerOptions options;
    options.bind_address = "127.0.0.1:0";
    options.cert_file = *dir_ + "/tls.crt";
    options.key_file = *dir_ + "/tls.key";
    server_ = std::make_unique<ReportServer>(
        options,
        [this](const std::string& ns, const std::string& name) -> absl::StatusOr<json> {
          auto found = jobs_.find(name);
          if (ns != "tenant" || found == jobs_.end()) {
            return absl::NotFoundError("no job");
          }
          return found->second;
        },
        reports_, metrics_, std::make_shared<spdlog::logger>("reports-test"));
    ASSERT_TRUE(server_->listen().ok());
    serving_ = std::jthread([this](std::stop_token stop) { (void)server_->start(stop); });
  }

  void TearDown() override {
    if (serving_.joinable()) {
      serving_.request_stop();
      serving_.join();
    }
    server_.reset();
  }

  runner::ReportOptions reportOptions(const std::string& job, const std::string& token) const {
    runner::ReportOptions options;
    options.address = "127.0.0.1:" + std::to_string(server_->port());
    options.token = token;
    std::ifstream ca(*dir_ + "/tls.crt");
    std::stringstream text;
    text << ca.rdbuf();
    options.ca_pem = text.str();
    options.job = "tenant/" + job;
    options.call_deadline = absl::Seconds(5);
    options.batch_delay = absl::Milliseconds(20);
    return options;
  }

  // A whole run's events through a reporter; returns its stats.
  runner::ReportStats reportRun(const std::string& job, const std::string& token) {
    auto reporter = runner::GrpcReporter::start(reportOptions(job, token), clock_);
    EXPECT_TRUE(reporter.ok()) << reporter.status();
    pb::ReportRequest opened;
    opened.mutable_opened()->set_job_name(job);
    opened.mutable_opened()->set_operation(pb::OPERATION_APPLY);
    opened.mutable_opened()->set_image("registry.example/modules/net:1.0");
    (*reporter)->send(opened);
    pb::ReportRequest running;
    running.mutable_phase_changed()->set_phase(pb::RUN_PHASE_RUNNING);
    running.mutable_phase_changed()->set_runtime_version("1.9.0");
    (*reporter)->send(running);
    pb::ReportRequest step;
    step.mutable_step_started()->set_step(pb::STEP_APPLY);
    (*reporter)->send(step);
    for (int i = 0; i < 3; ++i) {
      pb::ReportRequest line;
      line.mutable_log_line()->set_step(pb::STEP_APPLY);
      line.mutable_log_line()->set_text("line " + std::to_string(i));
      (*reporter)->send(line);
    }
    pb::ReportRequest changed;
    changed.mutable_resources_changed()->set_add(2);
    (*reporter)->send(changed);
    pb::ReportRequest done;
    done.mutable_step_finished()->mutable_result()->set_step(pb::STEP_APPLY);
    done.mutable_step_finished()->mutable_result()->mutable_duration()->set_seconds(4);
    (*reporter)->send(done);
    pb::ReportRequest finished;
    finished.mutable_finished()->mutable_result()->mutable_succeeded();
    finished.mutable_finished()->mutable_result()->mutable_duration()->set_seconds(9);
    (*reporter)->send(finished);
    return (*reporter)->close(absl::Seconds(10));
  }

  double rejections(const std::string& reason) const {
    const std::string text = metrics_.render();
    const std::string key = "captf_run_report_rejections_total{reason=\"" + reason + "\"} ";
    const auto at = text.find(key);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
  }

  static std::string* dir_;
  const std::string token_ = contract::newReportToken();
  const std::string other_token_ = contract::newReportToken();
  const std::string done_token_ = contract::newReportToken();
  std::map<std::string, json> jobs_;
  RecordingEvents events_;
  RunReports reports_{events_};
  kube::MetricsRegistry metrics_;
  runner::SystemClock clock_;
  std::unique_ptr<ReportServer> server_;
  std::jthread serving_;
};

std::string* ReportTest::dir_ = nullptr;

TEST_F(ReportTest, ARunsReportsBecomeItsEventsAndItsLogTail) {
  const runner::ReportStats stats = reportRun("job-1", token_);
  EXPECT_EQ(stats.accepted, 9u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_FALSE(stats.gave_up);
  EXPECT_THAT(events_.reasons(), ElementsAre("RunStarted", "StepStarted", "ResourcesChanged",
                                             "StepSucceeded", "RunFinished"));
  for (const Posted& p : events_.posted()) {
    EXPECT_EQ(p.regarding, "TerraformCluster/demo");
    EXPECT_THAT(p.note, HasSubstr("apply Job job-1: "));
  }
  EXPECT_THAT(events_.posted()[0].note, HasSubstr("runtime 1.9.0 ready"));
  EXPECT_THAT(events_.posted()[2].note, HasSubstr("2 added, 0 changed, 0 destroyed"));
  EXPECT_THAT(events_.posted()[3].note, HasSubstr("step apply succeeded in 4.0s"));
  const ReportedTail tail = reports_.tail("uid-job-1");
  EXPECT_TRUE(tail.reported);
  EXPECT_THAT(tail.lines, ElementsAre("line 0", "line 1", "line 2"));
  reports_.forget("uid-job-1");
  EXPECT_FALSE(reports_.tail("uid-job-1").reported);
  EXPECT_EQ(rejections("bad_token"), 0);
}

TEST_F(ReportTest, AForgedAnotherJobsAndAnEndedRunsCredentialAreRefusedAndCounted) {
  const runner::ReportStats forged = reportRun("job-1", contract::newReportToken());
  const runner::ReportStats other = reportRun("job-1", other_token_);
  const runner::ReportStats replayed = reportRun("job-done", done_token_);
  const runner::ReportStats unknown = reportRun("job-gone", token_);
  for (const runner::ReportStats& stats : {forged, other, replayed, unknown}) {
    EXPECT_EQ(stats.accepted, 0u);
    EXPECT_TRUE(stats.gave_up);
    // Refused once: the reporter falls silent instead of retrying.
    EXPECT_EQ(stats.failed_calls, 1u);
    EXPECT_THAT(stats.last_error, HasSubstr("7: ")); // PERMISSION_DENIED
  }
  EXPECT_EQ(rejections("bad_token"), 2);
  EXPECT_EQ(rejections("run_ended"), 1);
  EXPECT_EQ(rejections("unknown_job"), 1);
  EXPECT_THAT(events_.posted(), IsEmpty());
  // No token at all.
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = reportOptions("job-1", token_).ca_pem;
  auto stub = pb::RunReporter::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server_->port()), grpc::SslCredentials(tls)));
  grpc::ClientContext context;
  pb::ReportResponse response;
  auto writer = stub->Report(&context, &response);
  writer->WritesDone();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(rejections("missing_credentials"), 1);
}

TEST_F(ReportTest, ABatchSentAgainIsTakenOnce) {
  pb::ReportRequest step;
  step.set_sequence(1);
  step.mutable_step_started()->set_step(pb::STEP_INIT);
  pb::ReportRequest line;
  line.set_sequence(2);
  line.mutable_log_line()->set_text("Initializing");
  EXPECT_EQ(reports_.ingest(jobs_["job-1"], {step, line}), 2u);
  EXPECT_EQ(reports_.ingest(jobs_["job-1"], {step, line}), 2u);
  EXPECT_THAT(events_.reasons(), ElementsAre("StepStarted"));
  EXPECT_THAT(reports_.tail("uid-job-1").lines, ElementsAre("Initializing"));
}

TEST_F(ReportTest, TheTailKeepsTheLastLinesAndCountsWhatItDropped) {
  RunReports small(events_, RunReportsOptions{.tail_lines = 2, .line_bytes = 8, .max_runs = 2});
  std::vector<pb::ReportRequest> lines;
  for (int i = 1; i <= 4; ++i) {
    pb::ReportRequest line;
    line.set_sequence(static_cast<std::uint64_t>(i));
    line.mutable_log_line()->set_text("line number " + std::to_string(i));
    lines.push_back(line);
  }
  lines[2].mutable_log_line()->set_dropped_before(5);
  small.ingest(jobs_["job-1"], lines);
  const ReportedTail tail = small.tail("uid-job-1");
  EXPECT_THAT(tail.lines, ElementsAre("line ...", "line ..."));
  EXPECT_EQ(tail.dropped, 7u); // 5 the runner dropped, 2 beyond the bound
  // Beyond max_runs the oldest run is forgotten.
  small.ingest(jobs_["job-2"], {lines[0]});
  small.ingest(jobs_["job-done"], {lines[0]});
  EXPECT_FALSE(small.tail("uid-job-1").reported);
  EXPECT_EQ(small.trackedRuns(), 2u);
}

TEST_F(ReportTest, AnUnreachableManagerNeverHoldsTheRunBeyondTheCloseBudget) {
  runner::ReportOptions options = reportOptions("job-1", token_);
  serving_.request_stop();
  serving_.join();
  server_.reset(); // nothing listens on the port any more
  options.call_deadline = absl::Milliseconds(300);
  auto reporter = runner::GrpcReporter::start(options, clock_);
  ASSERT_TRUE(reporter.ok());
  for (int i = 0; i < 1000; ++i) { // beyond the queue bound: dropped, never blocking
    pb::ReportRequest line;
    line.mutable_log_line()->set_text("x");
    (*reporter)->send(line);
  }
  const runner::ReportStats stats = (*reporter)->close(absl::Seconds(2));
  EXPECT_EQ(stats.accepted, 0u);
  EXPECT_GE(stats.dropped, 1000u - 512u);
  EXPECT_GE(stats.failed_calls, 1u);
}

TEST(RunHistoryTest, KeepsTheNewestTenAndReplacesARecordOfTheSameJob) {
  workspace::ObjectRef ref;
  ref.role = contract::Role::kCluster;
  ref.ns = "tenant";
  ref.name = "demo";
  ref.uid = "tc-uid";
  json configmap;
  for (int i = 0; i < 12; ++i) {
    char finish[32];
    std::snprintf(finish, sizeof finish, "2026-12-02T10:%02d:00Z", i);
    configmap = workspace::withRunRecord(
        ref, configmap, {{"job", "job-" + std::to_string(i)}, {"finishTime", finish}});
  }
  configmap["metadata"]["resourceVersion"] = "42";
  configmap = workspace::withRunRecord(
      ref, configmap, {{"job", "job-11"}, {"finishTime", "2026-12-02T10:11:00Z"}, {"x", 1}});
  EXPECT_EQ(configmap["metadata"]["name"], "captf-runs-c-demo");
  EXPECT_EQ(configmap["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(configmap["metadata"]["ownerReferences"][0]["uid"], "tc-uid");
  const json runs = json::parse(configmap["data"]["runs.json"].get<std::string>());
  ASSERT_EQ(runs.size(), workspace::kRunHistoryLimit);
  EXPECT_EQ(runs[0]["job"], "job-11");
  EXPECT_EQ(runs[0]["x"], 1);
  EXPECT_EQ(runs[9]["job"], "job-2");
  // An unreadable history starts over instead of failing the pass.
  configmap["data"]["runs.json"] = "{not json";
  const json fresh = workspace::withRunRecord(ref, configmap, {{"job", "j"}});
  EXPECT_EQ(json::parse(fresh["data"]["runs.json"].get<std::string>()).size(), 1u);
}

TEST(ReportTokenTest, OnlyTheTokenMatchesItsHash) {
  const std::string token = contract::newReportToken();
  EXPECT_EQ(token.size(), 64u);
  EXPECT_NE(token, contract::newReportToken());
  const std::string hash = contract::reportTokenHash(token);
  EXPECT_THAT(hash, ::testing::StartsWith("sha256:"));
  EXPECT_EQ(hash.find(token), std::string::npos);
  EXPECT_TRUE(contract::reportTokenMatches(token, hash));
  EXPECT_FALSE(contract::reportTokenMatches(token + "0", hash));
  EXPECT_FALSE(contract::reportTokenMatches("", contract::reportTokenHash("")));
  EXPECT_FALSE(contract::reportTokenMatches(token, hash.substr(0, 20)));
}

} // namespace
} // namespace captf::reports
