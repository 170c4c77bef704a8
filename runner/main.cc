// The runner executable: parses the command line, sets up logging and the
// signal handling, then runs one command. See runner/README.md.

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "runner/copy.h"
#include "runner/logging.h"
#include "runner/options.h"
#include "runner/posix_process.h"
#include "runner/result_file.h"
#include "runner/run.h"
#include "runner/version.h"

extern char** environ;

namespace {

using namespace captf::runner;

// A child must never inherit a closed standard descriptor as one of its
// pipes, so 0, 1 and 2 are always open.
void ensureStandardDescriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) {
      ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    }
  }
}

int writeResult(Log& log, const std::string& path, const RunOutcome& outcome) {
  const std::string document = encodeResultDocument(outcome.result, outcome.outputs);
  if (auto status = writeResultDocument(path, document); !status.ok()) {
    log.error("the result document could not be written",
              {{"path", path}, {"error", std::string(status.message())}});
    return std::max(outcome.exit_code, kExitFailure);
  }
  return outcome.exit_code;
}

int run(const RunOptions& options, Log& log) {
  auto stop = SignalStopSource::create();
  if (!stop.ok()) {
    log.error("signal handling could not be set up",
              {{"error", std::string(stop.status().message())}});
    return writeResult(
        log, options.result,
        prepareFailure(options.operation, kExitFailure, "signal handling could not be set up"));
  }
  PosixProcessRunner processes(**stop, options.stop_timeout);
  SystemClock clock;
  StdioLogWriter runtime_output;
  RunContext context{.processes = processes,
                     .stop = **stop,
                     .clock = clock,
                     .runtime_output = runtime_output,
                     .log = log,
                     .container_env = parseEnviron(environ)};
  RunOutcome outcome;
  try {
    outcome = executeRun(options, context);
  } catch (const std::exception& error) {
    // Errors are values throughout; this is the last guard of the promise
    // that a run always leaves a result.
    log.error("internal error", {{"what", error.what()}});
    outcome = prepareFailure(options.operation, kExitFailure,
                             "internal error in the runner; see the Job's logs");
  }
  if ((*stop)->stopRequested()) {
    log.info("stop signal received", {{"signal", (*stop)->signalNumber()}});
  }
  return writeResult(log, options.result, outcome);
}

} // namespace

int main(int argc, char** argv) {
  ensureStandardDescriptors();
  // A log reader that went away must not kill the run.
  std::signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const ParsedCommandLine parsed = parseCommandLine(args);
  const Invocation& invocation = parsed.invocation;
  Log log(makeStderrLogger(invocation.logging.splitStream()), invocation.logging.format,
          invocation.logging.verbosity);

  if (!parsed.status.ok()) {
    std::fprintf(stderr, "runner: %s\n\n%s", std::string(parsed.status.message()).c_str(),
                 usageText().c_str());
    // A run always leaves a result document, even for its own usage error.
    if (std::find(args.begin(), args.end(), "run") != args.end()) {
      writeResult(log, invocation.run.result,
                  usageOutcome(invocation.run.operation, std::string(parsed.status.message())));
    }
    return kExitUsage;
  }
  switch (invocation.command) {
  case Command::kHelp:
    std::fputs(usageText().c_str(), stdout);
    return kExitOk;
  case Command::kVersion:
    std::printf("runner %.*s\n", static_cast<int>(kRunnerVersion.size()), kRunnerVersion.data());
    return kExitOk;
  case Command::kCopy:
    if (auto status = copyExecutable(kSelfExecutable, invocation.copy_destination); !status.ok()) {
      log.error("copy failed", {{"error", std::string(status.message())}});
      return kExitFailure;
    }
    log.info("copied", {{"destination", invocation.copy_destination}});
    return kExitOk;
  case Command::kRun:
    return run(invocation.run, log);
  case Command::kNone:
    break;
  }
  return kExitUsage;
}
