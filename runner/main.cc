// The runner executable: parses the command line, sets up logging and the
// signal handling, then runs one command. See runner/README.md.

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/str_split.h"
#include "contract/report.h"
#include "runner/copy.h"
#include "runner/logging.h"
#include "runner/options.h"
#include "runner/posix_process.h"
#include "runner/report.h"
#include "runner/result_file.h"
#include "runner/run.h"
#include "runner/version.h"

extern char** environ; // NOLINT(cppcoreguidelines-avoid-non-const-global-variables): POSIX

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

constexpr absl::Duration kReportCloseBudget = absl::Seconds(3);

std::optional<std::string> readSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text;
}

// The run reports' client when --report-address is given and the per-run
// Secret holds a token and a CA (docs/decisions/run-reports.md); otherwise
// none, said once: reporting never fails a run.
std::unique_ptr<GrpcReporter> startReporter(const RunOptions& options, const Clock& clock,
                                            Log& log) {
  if (options.report_address.empty()) {
    return nullptr;
  }
  const std::string dir = options.config + "/";
  const auto token = readSmallFile(dir + std::string(captf::contract::kReportTokenKey));
  const auto ca = readSmallFile(dir + std::string(captf::contract::kReportCaKey));
  if (!token || !ca) {
    log.warning("run reports off: the per-run Secret has no report token or CA",
                {{"config", options.config}});
    return nullptr;
  }
  ReportOptions report;
  report.address = options.report_address;
  report.token = *token;
  report.ca_pem = *ca;
  // --event-object is <apiVersion>/<kind>/<namespace>/<name>/<uid>.
  const std::vector<std::string> parts = absl::StrSplit(options.event_object, '/');
  report.job =
      (parts.size() >= 5 ? parts[parts.size() - 3] : std::string()) + "/" + options.job_name;
  auto reporter = GrpcReporter::start(std::move(report), clock);
  if (!reporter.ok()) {
    log.warning("run reports off", {{"error", std::string(reporter.status().message())}});
    return nullptr;
  }
  return *std::move(reporter);
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
  std::unique_ptr<GrpcReporter> reporter = startReporter(options, clock, log);
  RunContext context{.processes = processes,
                     .stop = **stop,
                     .clock = clock,
                     .runtime_output = runtime_output,
                     .log = log,
                     .container_env = parseEnviron(environ),
                     .reporter = reporter.get()};
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
  const int code = writeResult(log, options.result, outcome);
  if (reporter) {
    // The result is written: what the reports still carry is a courtesy,
    // bounded so that the pod does not linger.
    const ReportStats stats = reporter->close(kReportCloseBudget);
    log.info("run reports", {{"queued", static_cast<std::int64_t>(stats.queued)},
                             {"accepted", static_cast<std::int64_t>(stats.accepted)},
                             {"dropped", static_cast<std::int64_t>(stats.dropped)},
                             {"calls", static_cast<std::int64_t>(stats.calls)},
                             {"failedCalls", static_cast<std::int64_t>(stats.failed_calls)},
                             {"gaveUp", stats.gave_up},
                             {"lastError", stats.last_error}});
  }
  return code;
}

} // namespace

int main(int argc, char** argv) {
  ensureStandardDescriptors();
  // A log reader that went away must not kill the run.
  std::signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const ParsedCommandLine parsed = parseCommandLine(args);
  const Invocation& invocation = parsed.invocation;
  using captf::contract::SplitStream;
  const SplitStream split = invocation.logging.splitStream() ? SplitStream::kOn : SplitStream::kOff;
  Log log(makeStderrLogger(invocation.logging.format, split), invocation.logging.format,
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
