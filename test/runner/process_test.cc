// PosixProcessRunner and SignalStopSource against a real child process
// (test/runner/child.cc). Hermetic: local processes only.
#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/posix_process.h"
#include "test/runner/testing.h"

namespace captf::runner {
namespace {

using ::captf::runner::testing::readText;
using ::captf::runner::testing::TempDir;
using ::captf::runner::testing::writeText;
using ::testing::HasSubstr;

using ::captf::runner::testing::kChild;

class CollectingSink final : public OutputSink {
public:
  void write(OutputStream stream, std::string_view bytes) override {
    (stream == OutputStream::kStdout ? out : err).append(bytes);
  }
  std::string out;
  std::string err;
};

// A stop source another thread triggers; polled, since it has no fd.
class AtomicStopSource final : public StopSource {
public:
  bool stopRequested() override { return requested.load(); }
  int pollFd() const override { return -1; }
  std::atomic<bool> requested{false};
};

ProcessSpec child(std::vector<std::string> args) {
  return ProcessSpec{.path = kChild, .args = std::move(args), .env = {"ONLY=1"}, .cwd = "/"};
}

// Whether `pid` is gone (or a zombie waiting for its reaper).
bool gone(pid_t pid) {
  if (::kill(pid, 0) != 0) {
    return true;
  }
  const std::string stat = readText("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

TEST(ProcessTest, StreamsOutputAndReportsTheExitCode) {
  AtomicStopSource stop;
  PosixProcessRunner runner(stop, absl::Seconds(10));
  CollectingSink sink;
  auto result = runner.run(child({"out:hello", "err:oops", "outbytes:3000000", "exit:3"}), sink);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_EQ(result->term_signal, 0);
  EXPECT_FALSE(result->stop_forwarded);
  EXPECT_EQ(sink.out.size(), 6 + 3000000U);
  EXPECT_EQ(sink.out.substr(0, 6), "hello\n");
  EXPECT_EQ(sink.err, "oops\n");
}

TEST(ProcessTest, GivesExactlyTheEnvironmentAndDirectoryAsked) {
  AtomicStopSource stop;
  PosixProcessRunner runner(stop, absl::Seconds(10));
  TempDir dir;
  CollectingSink sink;
  ProcessSpec spec = child({"env:ONLY", "env:PATH", "cwd"});
  spec.cwd = dir.path();
  auto result = runner.run(spec, sink);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(sink.out, "ONLY=1\nPATH unset\n" + dir.path() + "\n");
}

TEST(ProcessTest, ReportsDeathBySignal) {
  AtomicStopSource stop;
  PosixProcessRunner runner(stop, absl::Seconds(10));
  CollectingSink sink;
  auto result = runner.run(child({"kill:9"}), sink);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->term_signal, 9);
  EXPECT_EQ(result->exit_code, 137);
}

TEST(ProcessTest, ExecFailuresAreErrorsNotResults) {
  AtomicStopSource stop;
  PosixProcessRunner runner(stop, absl::Seconds(10));
  TempDir dir;
  CollectingSink sink;
  EXPECT_TRUE(absl::IsNotFound(
      runner.run(ProcessSpec{.path = dir / "missing", .args = {}, .env = {}, .cwd = "/"}, sink)
          .status()));
  writeText(dir / "plain", "data", 0644);
  EXPECT_TRUE(absl::IsPermissionDenied(
      runner.run(ProcessSpec{.path = dir / "plain", .args = {}, .env = {}, .cwd = "/"}, sink)
          .status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      runner.run(ProcessSpec{.path = "relative", .args = {}, .env = {}, .cwd = "/"}, sink)
          .status()));
  EXPECT_TRUE(absl::IsNotFound(
      runner
          .run(ProcessSpec{.path = kChild, .args = {}, .env = {}, .cwd = dir / "no-such-dir"}, sink)
          .status()));
}

TEST(ProcessTest, ForwardsAStopAsSigtermAndWaitsForAGracefulExit) {
  AtomicStopSource stop;
  PosixProcessRunner runner(stop, absl::Seconds(60));
  CollectingSink sink;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.requested = true;
  });
  auto result = runner.run(child({"trap:7:0.2", "out:started", "sleep:60"}), sink);
  stopper.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->stop_forwarded);
  EXPECT_FALSE(result->killed);
  EXPECT_EQ(result->exit_code, 7);
  EXPECT_EQ(sink.err, "child: SIGTERM\n");
}

TEST(ProcessTest, KillsTheProcessGroupAfterTheStopTimeout) {
  TempDir dir;
  AtomicStopSource stop;
  PosixProcessRunner runner(stop, absl::Milliseconds(200));
  CollectingSink sink;
  const std::string pidfile = dir / "pid";
  std::thread stopper([&] {
    // Once the child ignores SIGTERM (it writes its pid file after that).
    for (int i = 0; i < 500 && readText(pidfile).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop.requested = true;
  });
  auto result = runner.run(child({"ignoreterm", "pidfile:" + pidfile, "sleep:60"}), sink);
  stopper.join();
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->stop_forwarded);
  EXPECT_TRUE(result->killed);
  EXPECT_EQ(result->term_signal, SIGKILL);
}

TEST(ProcessTest, NothingTheChildStartedOutlivesIt) {
  AtomicStopSource stop;
  PosixProcessRunner runner(stop, absl::Seconds(10));
  TempDir dir;
  CollectingSink sink;
  const std::string pidfile = dir / "pid";
  // The grandchild keeps the pipes open; the run must still end with the
  // child, and take the grandchild with it.
  auto result =
      runner.run(child({"pidfile:" + pidfile, "grandchild:60", "sleep:0.3", "out:bye"}), sink);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_THAT(sink.out, HasSubstr("bye"));
  const std::string grandchild = readText(pidfile + ".grandchild");
  ASSERT_FALSE(grandchild.empty());
  const auto pid = static_cast<pid_t>(std::stol(grandchild));
  for (int i = 0; i < 100 && !gone(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone(pid));
  EXPECT_THAT(sink.out, ::testing::Not(HasSubstr("grandchild done")));
}

TEST(SignalStopSourceTest, SigtermBecomesAStopAndReachesTheChild) {
  auto source = SignalStopSource::create();
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_FALSE((*source)->stopRequested());
  PosixProcessRunner runner(**source, absl::Seconds(60));
  CollectingSink sink;
  // Created after the mask is set, so it has SIGTERM blocked too.
  std::thread sender([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGTERM);
  });
  // The child starts with SIGTERM unblocked although the runner blocks it.
  auto result = runner.run(child({"trap:9:0", "sleep:60"}), sink);
  sender.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->stop_forwarded);
  EXPECT_EQ(result->exit_code, 9);
  EXPECT_TRUE((*source)->stopRequested());
  EXPECT_EQ((*source)->signalNumber(), SIGTERM);
}

} // namespace
} // namespace captf::runner
