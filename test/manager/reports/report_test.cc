// The run reports end to end inside one process: the runner's GrpcReporter
// talks real gRPC over real TLS to the manager's ReportServer, which
// authenticates each call against a Job (the lookup stands in for the
// manager's cache, the one thing the test must control) and turns the
// events into Events and a log tail. docs/decisions/run-reports.md.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include "captf/runner/v1alpha1/report.grpc.pb.h"
#include "contract/report.h"
#include "manager/api/keys.h"
#include "manager/kube/clock.h"
#include "manager/kube/metrics.h"
#include "manager/reports/report_server.h"
#include "manager/reports/run_reports.h"
#include "manager/workspace/run_history.h"
#include "runner/report.h"

#if defined(__SANITIZE_ADDRESS__)
// ASan's allocator interface (<sanitizer/allocator_interface.h>, which GCC
// does not install).
extern "C" std::size_t
__sanitizer_get_current_allocated_bytes(); // NOLINT(bugprone-reserved-identifier)
#endif

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

// A field of /proc/self/status ("VmRSS" in KiB, "Threads").
long procStatus(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(field + ":")) {
      return std::stol(line.substr(field.size() + 1));
    }
  }
  return -1;
}

// Whether `done` holds within 10 s (polled: the server's threads change
// what it reads).
bool eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Heap bytes in use: what a server buffering a flood would show. Under
// ASan, VmRSS also counts freed memory held in quarantine (each message the
// client serialized), so the allocator's own count is the fair measure.
std::size_t heapInUse() {
#if defined(__SANITIZE_ADDRESS__)
  return __sanitizer_get_current_allocated_bytes();
#else
  return mallinfo2().uordblks;
#endif
}

// Streams that open a Report call and then send nothing. An async client:
// no thread per stream on this side of the count.
class IdleStreams {
public:
  // One stream per Job (name, token).
  IdleStreams(pb::RunReporter::Stub& stub,
              const std::vector<std::pair<std::string, std::string>>& jobs) {
    for (const auto& [job, token] : jobs) {
      auto stream = std::make_unique<Stream>();
      stream->context.AddMetadata("authorization", "Bearer " + token);
      stream->context.AddMetadata(std::string(contract::kReportJobHeader), "tenant/" + job);
      stream->writer = stub.PrepareAsyncReport(&stream->context, &stream->response, &cq_);
      streams_.push_back(std::move(stream));
    }
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      streams_[i]->writer->StartCall(tag(i, Kind::kStarted));
      streams_[i]->writer->Finish(&streams_[i]->status, tag(i, Kind::kFinished));
      outstanding_ += 2;
    }
  }
  ~IdleStreams() {
    for (auto& stream : streams_) {
      stream->context.TryCancel();
    }
    while (outstanding_ > 0 && poll(std::chrono::seconds(10))) {
    }
    cq_.Shutdown();
    void* got = nullptr;
    bool ok = false;
    while (cq_.Next(&got, &ok)) {
    }
  }
  IdleStreams(const IdleStreams&) = delete;
  IdleStreams& operator=(const IdleStreams&) = delete;

  // Waits until at least `count` streams have ended, or `timeout` passed;
  // returns how many have.
  std::size_t awaitEnded(std::size_t count, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (ended_ < count && std::chrono::steady_clock::now() < until) {
      poll(until - std::chrono::steady_clock::now());
    }
    return ended_;
  }
  std::size_t ended() const { return ended_; }
  std::size_t endedWith(grpc::StatusCode code) const {
    std::size_t n = 0;
    for (const auto& stream : streams_) {
      if (stream->ended && stream->status.error_code() == code) {
        ++n;
      }
    }
    return n;
  }

private:
  struct Stream {
    grpc::ClientContext context;
    pb::ReportResponse response;
    std::unique_ptr<grpc::ClientAsyncWriter<pb::ReportRequest>> writer;
    grpc::Status status;
    bool ended = false;
  };
  enum class Kind : std::uintptr_t { kStarted = 0, kFinished = 1 };

  static void* tag(std::size_t i, Kind kind) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a tag is an opaque number
    return reinterpret_cast<void*>((i << 1U) | static_cast<std::uintptr_t>(kind));
  }

  bool poll(std::chrono::steady_clock::duration timeout) {
    void* got = nullptr;
    bool ok = false;
    const auto deadline = std::chrono::system_clock::now() +
                          std::chrono::duration_cast<std::chrono::system_clock::duration>(timeout);
    if (cq_.AsyncNext(&got, &ok, deadline) != grpc::CompletionQueue::GOT_EVENT) {
      return false;
    }
    --outstanding_;
    const auto value = reinterpret_cast<std::uintptr_t>(got);
    if ((value & 1U) == static_cast<std::uintptr_t>(Kind::kFinished)) {
      streams_[value >> 1U]->ended = true;
      ++ended_;
    }
    return true;
  }

  grpc::CompletionQueue cq_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::size_t outstanding_ = 0;
  std::size_t ended_ = 0;
};

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
    serve({});
  }

  // (Re)starts the server with `limits`, timed by server_clock_ (which
  // moves only when a test advances it: no deadline passes and no token
  // bucket refills on its own).
  void serve(const ReportServerLimits& limits) {
    stopServing();
    ReportServerOptions options;
    options.bind_address = "127.0.0.1:0";
    options.cert_file = *dir_ + "/tls.crt";
    options.key_file = *dir_ + "/tls.key";
    options.limits = limits;
    server_ = std::make_unique<ReportServer>(
        options,
        [this](const std::string& ns, const std::string& name) -> absl::StatusOr<json> {
          auto found = jobs_.find(name);
          if (ns != "tenant" || found == jobs_.end()) {
            return absl::NotFoundError("no job");
          }
          return found->second;
        },
        reports_, metrics_, std::make_shared<spdlog::logger>("reports-test"), server_clock_);
    ASSERT_TRUE(server_->listen().ok());
    serving_ = std::jthread([this](std::stop_token stop) { (void)server_->start(stop); });
  }

  void stopServing() {
    if (serving_.joinable()) {
      serving_.request_stop();
      serving_.join();
    }
    server_.reset();
  }

  void TearDown() override { stopServing(); }

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
    return metric("captf_run_report_rejections_total{reason=\"" + reason + "\"}");
  }
  double eventsTaken() const { return metric("captf_run_report_events_total"); }
  double openCalls() const { return metric("captf_run_report_calls_open"); }
  double metric(const std::string& series) const {
    const std::string text = metrics_.render();
    const std::string key = "\n" + series + " ";
    const auto at = text.find(key);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
  }

  // A raw client of the service: what a tenant's code holding a Job's token
  // can do, unbound by the runner's reporter.
  std::unique_ptr<pb::RunReporter::Stub> rawStub() const {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = reportOptions("job-1", token_).ca_pem;
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    return pb::RunReporter::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::SslCredentials(tls), args));
  }
  static void authorize(grpc::ClientContext& context, const std::string& job,
                        const std::string& token) {
    context.AddMetadata("authorization", "Bearer " + token);
    context.AddMetadata(std::string(contract::kReportJobHeader), "tenant/" + job);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  }
  // One call of `events` log lines of `text_bytes` each, numbered from
  // `first`; returns its status.
  grpc::Status call(pb::RunReporter::Stub& stub, const std::string& job, const std::string& token,
                    std::uint64_t first, std::size_t events, std::size_t text_bytes = 8) {
    grpc::ClientContext context;
    authorize(context, job, token);
    pb::ReportResponse response;
    auto writer = stub.Report(&context, &response);
    pb::ReportRequest line;
    line.mutable_log_line()->set_text(std::string(text_bytes, 'x'));
    for (std::size_t i = 0; i < events; ++i) {
      line.set_sequence(first + i);
      if (!writer->Write(line)) {
        break;
      }
    }
    writer->WritesDone();
    return writer->Finish();
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
  kube::FakeClock server_clock_;
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

// A tenant's code can read its Job's token, so the server holds its ground
// against a caller with a valid one (docs/decisions/run-reports.md).

// 2048 messages of just under 1 MiB (the old bound of a message) would be
// 2 GiB if the server kept them; it refuses the first instead.
TEST_F(ReportTest, AFloodOfLargeMessagesIsRefusedWithoutBeingBuffered) {
  auto stub = rawStub();
  // The connection (TLS, gRPC's threads) is made before the measure.
  ASSERT_TRUE(call(*stub, "job-2", other_token_, 1, 1).ok());
  pb::ReportRequest big;
  big.mutable_log_line()->set_text(std::string((std::size_t{1} << 20) - 1024, 'x'));
  constexpr long kMiB = 1024L * 1024;
  const auto heap_before = static_cast<long>(heapInUse());
  const long rss_before = procStatus("VmRSS");
  const auto started = std::chrono::steady_clock::now();
  grpc::ClientContext context;
  authorize(context, "job-1", token_);
  pb::ReportResponse response;
  auto writer = stub->Report(&context, &response);
  long heap_growth = 0;
  int written = 0;
  for (; written < 2048; ++written) {
    big.set_sequence(static_cast<std::uint64_t>(written) + 1);
    if (!writer->Write(big)) {
      break;
    }
    heap_growth = std::max(heap_growth, static_cast<long>(heapInUse()) - heap_before);
    if (heap_growth > 256 * kMiB) {
      break; // the server buffers: stop before it takes the machine
    }
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  const auto took = std::chrono::steady_clock::now() - started;
  heap_growth = std::max(heap_growth, static_cast<long>(heapInUse()) - heap_before);
  const long rss_growth_kib = procStatus("VmRSS") - rss_before;
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_LT(heap_growth, 32 * kMiB) << "bytes of heap growth after " << written << " messages";
  // VmRSS for good measure, with room for ASan's quarantine (some 6 MiB
  // per message the client wrote).
  EXPECT_LT(rss_growth_kib, 64 * 1024);
  EXPECT_EQ(eventsTaken(), 1); // job-2's
  EXPECT_TRUE(reports_.tail("uid-job-1").lines.empty());
  RecordProperty("messages_written", written);
  RecordProperty("heap_growth_kib", static_cast<int>(heap_growth / 1024));
  RecordProperty("vmrss_growth_kib", static_cast<int>(rss_growth_kib));
  RecordProperty(
      "ms_to_refusal",
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
}

TEST_F(ReportTest, ACallOfMoreEventsOrBytesThanARunnerSendsIsRefusedAndNothingOfItIsTaken) {
  auto stub = rawStub();
  EXPECT_EQ(call(*stub, "job-1", token_, 1, 2048).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Each message within its bound, together beyond a call's.
  EXPECT_EQ(call(*stub, "job-1", token_, 1, 20, std::size_t{60} * 1024).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(rejections("too_many_events"), 1);
  EXPECT_EQ(rejections("too_many_bytes"), 1);
  EXPECT_EQ(eventsTaken(), 0);
  EXPECT_FALSE(reports_.tail("uid-job-1").reported);
  // The most a runner sends in one call is taken whole.
  EXPECT_TRUE(call(*stub, "job-1", token_, 1, contract::kMaxReportEventsPerCall,
                   contract::kMaxReportLineBytes)
                  .ok());
  EXPECT_EQ(eventsTaken(), static_cast<double>(contract::kMaxReportEventsPerCall));
}

// One Job's idle streams: the server takes its share of calls at once and
// refuses the rest, without a thread each, while another Job reports.
TEST_F(ReportTest, FiveHundredIdleStreamsOfOneJobTakeOnlyItsShareWhileAnotherJobReports) {
  const ReportServerLimits limits;
  const auto share = static_cast<std::size_t>(limits.max_calls_per_job);
  auto stub = rawStub();
  const long threads_before = procStatus("Threads");
  IdleStreams idle(*stub, std::vector(500, std::pair{std::string("job-1"), token_}));
  EXPECT_EQ(idle.awaitEnded(500 - share, std::chrono::seconds(10)), 500 - share);
  // Refused by the Job's share, or by the thread quota when they arrive
  // faster than the refusals go out.
  EXPECT_EQ(idle.endedWith(grpc::StatusCode::RESOURCE_EXHAUSTED), 500 - share);
  EXPECT_GE(rejections("too_many_calls"), 1);
  const long threads = procStatus("Threads") - threads_before;
  EXPECT_LE(threads, limits.max_threads + 16) << "threads started for 500 idle streams";
  RecordProperty("threads_for_500_idle_streams", static_cast<int>(threads));

  const runner::ReportStats stats = reportRun("job-2", other_token_);
  EXPECT_EQ(stats.accepted, 9u);
  EXPECT_EQ(stats.failed_calls, 0u);
  EXPECT_THAT(events_.reasons(), Contains("RunFinished"));

  // The streams the server took end once idle for too long.
  ASSERT_TRUE(eventually([&] { return openCalls() == static_cast<double>(share); }));
  server_clock_.advance(limits.idle_timeout + std::chrono::seconds(1));
  EXPECT_EQ(idle.awaitEnded(500, std::chrono::seconds(10)), 500u);
  EXPECT_EQ(idle.endedWith(grpc::StatusCode::CANCELLED), share);
  EXPECT_TRUE(eventually([&] { return rejections("deadline") == static_cast<double>(share); }));
}

// Many Jobs' idle streams: beyond the thread quota a call is refused at
// once; the idle deadline frees the server for the next run.
TEST_F(ReportTest, IdleStreamsOfManyJobsAreCappedByTheThreadQuotaAndEndedByTheDeadline) {
  ReportServerLimits limits;
  limits.max_threads = 8;
  stopServing(); // the lookup reads jobs_ from the server's threads
  std::vector<std::pair<std::string, std::string>> idlers;
  for (int i = 0; i < 40; ++i) {
    const std::string name = "idle-" + std::to_string(i);
    const std::string token = contract::newReportToken();
    jobs_[name] = jobWithToken(name, token);
    idlers.emplace_back(name, token);
  }
  serve(limits);
  auto stub = rawStub();
  const long threads_before = procStatus("Threads");
  IdleStreams idle(*stub, idlers);
  const std::size_t refused = 40 - static_cast<std::size_t>(limits.max_threads);
  EXPECT_GE(idle.awaitEnded(refused, std::chrono::seconds(10)), refused);
  EXPECT_GE(idle.endedWith(grpc::StatusCode::RESOURCE_EXHAUSTED), refused);
  const long threads = procStatus("Threads") - threads_before;
  EXPECT_LE(threads, limits.max_threads + 16);
  RecordProperty("threads_for_40_idle_streams", static_cast<int>(threads));

  // The calls the server took end at the idle deadline.
  ASSERT_TRUE(eventually([this] { return openCalls() > 0; }));
  for (int round = 0; round < 3 && openCalls() > 0; ++round) {
    server_clock_.advance(limits.idle_timeout + std::chrono::seconds(1));
    eventually([this] { return openCalls() == 0; });
  }
  EXPECT_EQ(openCalls(), 0);
  idle.awaitEnded(40, std::chrono::seconds(5));
  EXPECT_EQ(idle.ended(), 40u);
  const runner::ReportStats stats = reportRun("job-2", other_token_);
  EXPECT_EQ(stats.accepted, 9u);
  EXPECT_FALSE(stats.gave_up);
}

TEST_F(ReportTest, ACallThatKeepsSendingIsEndedAtTheLongestACallMayLast) {
  ReportServerLimits limits;
  limits.idle_timeout = std::chrono::hours(1); // only the call's length can end it
  serve(limits);
  auto stub = rawStub();
  grpc::ClientContext context;
  authorize(context, "job-1", token_);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  pb::ReportResponse response;
  auto writer = stub->Report(&context, &response);
  pb::ReportRequest line;
  line.mutable_log_line()->set_text("still here");
  line.set_sequence(1);
  EXPECT_TRUE(writer->Write(line));
  // The deadline runs from when the server took the call.
  ASSERT_TRUE(eventually([this] { return openCalls() == 1; }));
  server_clock_.advance(limits.max_call_duration - std::chrono::seconds(1));
  line.set_sequence(2);
  EXPECT_TRUE(writer->Write(line));
  server_clock_.advance(std::chrono::seconds(2));
  // No half-close: the status is whatever the server ends the call with.
  const grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  EXPECT_TRUE(eventually([this] { return rejections("deadline") == 1; }));
  EXPECT_EQ(eventsTaken(), 0);
}

TEST_F(ReportTest, TheRateLimitThrottlesOneJobWithoutTouchingAnother) {
  const ReportServerLimits limits;
  const int burst = static_cast<int>(limits.job_call_burst);
  auto stub = rawStub();
  std::uint64_t sequence = 1;
  for (int i = 0; i < burst + 5; ++i) {
    const grpc::Status status = call(*stub, "job-1", token_, sequence++, 1);
    if (i < burst) {
      EXPECT_TRUE(status.ok()) << i << ": " << status.error_message();
    } else {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << i;
    }
  }
  EXPECT_EQ(rejections("rate_limited"), 5);

  const runner::ReportStats stats = reportRun("job-2", other_token_);
  EXPECT_EQ(stats.accepted, 9u);
  EXPECT_EQ(stats.failed_calls, 0u);

  // The bucket refills with time.
  server_clock_.advance(std::chrono::seconds(1));
  EXPECT_TRUE(call(*stub, "job-1", token_, sequence++, 1).ok());
  EXPECT_EQ(eventsTaken(), burst + 1 + 9);
}

// The runner's side of the bounds: a long line is clipped, a batch larger
// than a call may carry goes over several calls, and a message too large to
// be taken is dropped instead of failing every call it would be part of.
TEST_F(ReportTest, TheRunnersReporterStaysWithinTheServersBounds) {
  auto reporter = runner::GrpcReporter::start(reportOptions("job-1", token_), clock_);
  ASSERT_TRUE(reporter.ok());
  pb::ReportRequest line;
  line.mutable_log_line()->set_text(std::string(std::size_t{200} * 1024, 'y'));
  (*reporter)->send(line);
  for (int i = 0; i < 20; ++i) {
    pb::ReportRequest phase;
    phase.mutable_phase_changed()->set_phase(pb::RUN_PHASE_PREPARE);
    phase.mutable_phase_changed()->set_runtime_version(std::string(std::size_t{60} * 1024, 'v'));
    (*reporter)->send(phase);
  }
  pb::ReportRequest opened;
  opened.mutable_opened()->set_image(std::string(std::size_t{100} * 1024, 'i'));
  (*reporter)->send(opened);
  const runner::ReportStats stats = (*reporter)->close(absl::Seconds(10));
  EXPECT_EQ(stats.queued, 21u);
  EXPECT_EQ(stats.accepted, 21u);
  EXPECT_EQ(stats.dropped, 1u);
  EXPECT_EQ(stats.failed_calls, 0u) << stats.last_error;
  EXPECT_GE(stats.calls, 2u);
  const ReportedTail tail = reports_.tail("uid-job-1");
  ASSERT_EQ(tail.lines.size(), 1u);
  EXPECT_THAT(tail.lines[0], ::testing::StartsWith("yyyy"));
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
