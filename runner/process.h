#pragma once

// The seam between the runner and the processes it starts: the runtime
// (`/captf/runtime`) for every step. Unit tests replace ProcessRunner with a
// fake that plays a scripted runtime; PosixProcessRunner
// (runner/posix_process.h) is the real one.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace captf::runner {

enum class OutputStream { kStdout, kStderr };

// Receives a child's output as it arrives, in arbitrary chunks (not lines),
// in the order the runner read them. Called on the thread that called
// ProcessRunner::run, never concurrently.
class OutputSink {
public:
  virtual ~OutputSink() = default;
  virtual void write(OutputStream stream, std::string_view bytes) = 0;
};

// A request to stop, from outside (SIGTERM from the kubelet). Latches: once
// stopRequested() has returned true it always does.
class StopSource {
public:
  virtual ~StopSource() = default;
  // Whether a stop was requested. Consumes pending notifications.
  virtual bool stopRequested() = 0;
  // A descriptor that polls readable while a stop notification is pending,
  // or -1 when the source cannot be polled (fakes).
  virtual int pollFd() const = 0;
};

struct ProcessSpec {
  // The executable, run directly: no PATH lookup and no shell.
  std::string path;
  // argv[1..]; argv[0] is `path`.
  std::vector<std::string> args;
  // The complete environment, "NAME=value" each.
  std::vector<std::string> env;
  // The working directory of the child.
  std::string cwd;
};

struct ProcessResult {
  // The exit status, or 128 + the signal number when a signal ended it.
  int exit_code = 0;
  // The signal that ended the process, or 0 when it exited.
  int term_signal = 0;
  // A stop request arrived while the process ran and SIGTERM was forwarded
  // to it.
  bool stop_forwarded = false;
  // The process outlived the stop timeout and was killed (with its whole
  // process group).
  bool killed = false;
  absl::Duration duration;
};

class ProcessRunner {
public:
  virtual ~ProcessRunner() = default;

  // Starts `spec`, streams its stdout and stderr into `sink` and returns when
  // it has exited. Its stdin is /dev/null. A process that ran and failed is
  // a ProcessResult; an error Status means it never ran (the executable is
  // missing or not executable: NotFound or PermissionDenied; anything else:
  // Internal).
  //
  // Stops: when a stop is requested while the process runs, SIGTERM is
  // forwarded to the process itself (once; a second interrupt would make a
  // runtime abandon its graceful shutdown), and if it has not exited after
  // the runner's stop timeout, its process group is killed.
  virtual absl::StatusOr<ProcessResult> run(const ProcessSpec& spec, OutputSink& sink) = 0;
};

} // namespace captf::runner
