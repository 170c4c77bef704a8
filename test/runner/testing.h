#pragma once

// Shared helpers of the runner's tests: temporary directories, test data,
// and the fakes for the seams of runner/ (a scripted runtime, a stop source
// the test triggers, a clock, a log writer that records lines).

#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>

#include "absl/status/status.h"
#include "runner/clock.h"
#include "runner/logging.h"
#include "runner/process.h"
#include "runner/run.h"

namespace captf::runner::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(std::string_view relative) const;

private:
  std::string path_;
};

// test/runner/testdata/<relative>, read whole. Fails the test if missing.
std::string testdata(std::string_view relative);

void writeText(const std::string& path, std::string_view contents, unsigned mode = 0644);
std::string readText(const std::string& path);

// gzip of `data` (what the kubernetes backend stores).
std::string gzip(std::string_view data);

// What the fake runtime does for one command.
struct FakeResponse {
  int exit_code = 0;
  std::string stdout_text{};
  std::string stderr_text{};
  // The process "saw" a stop request: SIGTERM was forwarded to it.
  bool stop_forwarded = false;
  bool killed = false;
  // When not OK, the process never ran.
  absl::Status start_error = absl::OkStatus();
  // Runs when the command is invoked (e.g. to request a stop).
  std::function<void()> side_effect{};
};

// A scripted runtime. Commands are keyed by their first argument ("init",
// "plan", ...), or the first two for "state push" and "state list".
// Unscripted commands exit 0 silently, except `version`, which reports
// OpenTofu 1.12.6.
class FakeProcessRunner final : public ProcessRunner {
public:
  void on(const std::string& command, FakeResponse response) {
    responses_[command] = std::move(response);
  }
  absl::StatusOr<ProcessResult> run(const ProcessSpec& spec, OutputSink& sink) override;

  const std::vector<ProcessSpec>& calls() const { return calls_; }
  std::vector<std::string> commands() const;
  // The call of `command`, or nullptr.
  const ProcessSpec* call(const std::string& command) const;

  static std::string commandOf(const ProcessSpec& spec);

private:
  std::map<std::string, FakeResponse> responses_;
  std::vector<ProcessSpec> calls_;
};

class FakeStopSource final : public StopSource {
public:
  bool stopRequested() override { return requested; }
  int pollFd() const override { return -1; }
  bool requested = false;
};

class FakeClock final : public Clock {
public:
  absl::Time now() const override { return absl::FromUnixSeconds(1'764'000'000); }
  std::chrono::steady_clock::time_point monotonicNow() const override {
    ticks_ += std::chrono::milliseconds(5);
    return std::chrono::steady_clock::time_point(ticks_);
  }

private:
  mutable std::chrono::steady_clock::duration ticks_{};
};

class RecordingLogWriter final : public LogWriter {
public:
  void writeLine(OutputStream stream, std::string_view line) override {
    lines.emplace_back(stream, std::string(line));
  }
  // Every line, joined by "\n".
  std::string all() const;
  std::vector<std::pair<OutputStream, std::string>> lines;
};

// A Log writing into a string stream (text format, every verbosity).
struct CapturedLog {
  CapturedLog();
  std::ostringstream stream;
  Log log;
};

#ifdef CAPTF_RUNNER_TEST_CHILD
// The test child program (child.cc), in a target that defines its path.
inline constexpr char kChild[] = CAPTF_RUNNER_TEST_CHILD;
#endif
#ifdef CAPTF_RUNNER_BINARY
// The runner executable, in a target that defines its path.
inline constexpr char kRunner[] = CAPTF_RUNNER_BINARY;
#endif

} // namespace captf::runner::testing
