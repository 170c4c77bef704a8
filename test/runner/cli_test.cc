// The runner executable end to end on this machine: its exit codes, its
// result document and its signal handling, with the test child standing in
// for the runtime (the real runtimes are exercised by the e2e tests).
#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contract/result.h"
#include "test/runner/testing.h"

namespace captf::runner {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using ::captf::runner::testing::readText;
using ::captf::runner::testing::TempDir;
using ::captf::runner::testing::writeText;
using ::testing::HasSubstr;

using ::captf::runner::testing::kChild;
using ::captf::runner::testing::kRunner;

struct Exit {
  int code = -1;
  std::string output;
};

// Runs the runner with `args`; `on_start` gets its pid.
Exit runRunner(const std::vector<std::string>& args,
               const std::function<void(pid_t)>& on_start = nullptr) {
  TempDir out_dir;
  const std::string log = out_dir / "log";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    std::string path = kRunner;
    argv.push_back(path.data());
    std::vector<std::string> copies = args;
    for (std::string& arg : copies) {
      argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    ::execv(kRunner, argv.data());
    ::_exit(127);
  }
  if (on_start) {
    on_start(pid);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return Exit{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), readText(log)};
}

class CliTest : public ::testing::Test {
protected:
  void SetUp() override {
    writeText(dir_ / "module/main.tf", "");
    std::filesystem::create_directories(dir_ / "work");
    writeText(dir_ / "config/main.tf.json", "{}");
    writeText(dir_ / "config/terraform.tfvars.json", "{}");
  }

  std::vector<std::string> runArgs(const std::vector<std::string>& child_verbs) {
    std::vector<std::string> args = {"run",
                                     "--op=destroy",
                                     "--bin=" + std::string(kChild),
                                     "--module=" + (dir_ / "module"),
                                     "--workdir=" + (dir_ / "work"),
                                     "--config=" + (dir_ / "config"),
                                     "--providers=" + (dir_ / "providers"),
                                     "--result=" + result(),
                                     "--stop-timeout=30s"};
    for (const std::string& verb : child_verbs) {
      args.push_back("--bin=" + verb);
    }
    return args;
  }

  std::string result() const { return dir_ / "termination-log"; }

  pb::RunResult decoded() {
    auto decoded = contract::decodeResult(readText(result()));
    EXPECT_TRUE(decoded.ok()) << decoded.status();
    return decoded.ok() ? *decoded : pb::RunResult();
  }

  TempDir dir_;
};

TEST_F(CliTest, VersionAndHelpExitZero) {
  Exit exit = runRunner({"version"});
  EXPECT_EQ(exit.code, 0);
  EXPECT_THAT(exit.output, ::testing::StartsWith("runner "));
  EXPECT_EQ(runRunner({"--help"}).code, 0);
}

TEST_F(CliTest, UsageErrorsExitTwoAndStillWriteAResult) {
  Exit exit = runRunner({"run", "--op=apply", "--bogus", "--result=" + result()});
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.output, HasSubstr("unknown flag: --bogus"));
  const pb::RunResult written = decoded();
  EXPECT_EQ(written.exit_code(), 2);
  EXPECT_THAT(written.error().summary(), HasSubstr("unknown flag: --bogus"));
  EXPECT_EQ(runRunner({"frobnicate"}).code, 2);
}

TEST_F(CliTest, SuccessfulRunExitsZero) {
  const Exit exit = runRunner(runArgs({"out:Destroy complete! Resources: 1 destroyed."}));
  EXPECT_EQ(exit.code, 0) << exit.output;
  const pb::RunResult written = decoded();
  EXPECT_TRUE(written.has_succeeded());
  EXPECT_EQ(written.operation(), pb::OPERATION_DESTROY);
  EXPECT_EQ(written.changes().destroy(), 1U);
  EXPECT_EQ(written.steps_size(), 3); // prepare, init, destroy
}

TEST_F(CliTest, FailingStepExitsWithItsCode) {
  const Exit exit = runRunner(runArgs({"err:Error: Nope", "exit:4"}));
  EXPECT_EQ(exit.code, 4) << exit.output;
  const pb::RunResult written = decoded();
  EXPECT_EQ(written.error().kind(), pb::ERROR_KIND_STEP);
  EXPECT_EQ(written.error().step(), pb::STEP_INIT);
  EXPECT_EQ(written.error().summary(), "Nope");
}

TEST_F(CliTest, ImageLayoutFailureExitsOne) {
  std::filesystem::remove(dir_ / "module/main.tf");
  const Exit exit = runRunner(runArgs({}));
  EXPECT_EQ(exit.code, 1);
  EXPECT_EQ(decoded().error().kind(), pb::ERROR_KIND_IMAGE_LAYOUT);
}

TEST_F(CliTest, SigtermIsForwardedAndTheRunEndsInterrupted) {
  const std::string started = dir_ / "started";
  const Exit exit =
      runRunner(runArgs({"trap:1:0.3", "pidfile:" + started, "sleep:60"}), [&](pid_t pid) {
        for (int i = 0; i < 500 && !std::filesystem::exists(started); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ::kill(pid, SIGTERM);
      });
  EXPECT_EQ(exit.code, 1) << exit.output;
  EXPECT_THAT(exit.output, HasSubstr("child: SIGTERM"));
  const pb::RunResult written = decoded();
  EXPECT_EQ(written.error().kind(), pb::ERROR_KIND_INTERRUPTED);
  // The version -json call also runs the child; the stop reaches whichever
  // runtime call is running.
  EXPECT_THAT(written.error().summary(), HasSubstr("interrupted by SIGTERM"));
}

TEST_F(CliTest, CopyPutsAnExecutableCopyInPlace) {
  const Exit exit = runRunner({"copy", dir_ / "bin-runner"});
  EXPECT_EQ(exit.code, 0) << exit.output;
  EXPECT_EQ(readText(dir_ / "bin-runner"), readText(kRunner));
  EXPECT_EQ(runRunner({"copy", dir_ / "missing/dir/runner"}).code, 1);
}

} // namespace
} // namespace captf::runner
