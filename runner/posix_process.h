#pragma once

// The real ProcessRunner (fork and exec with pipes) and the real StopSource
// (SIGTERM and SIGINT through a signalfd).
//
// Process groups: each child becomes the leader of its own process group, so
// that a signal sent to the runner's group (a kubelet that signals the whole
// container, as the test rig's does) reaches the runner alone; the runner
// then forwards SIGTERM to the runtime only, never to its provider plugins,
// which the runtime shuts down itself. The group is killed when the runtime
// exits (nothing it started may outlive it) or outlives the stop timeout.

#include <csignal>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runner/fd.h"
#include "runner/process.h"

namespace captf::runner {

class SignalStopSource final : public StopSource {
public:
  // Blocks SIGTERM and SIGINT in the calling thread (call it before any other
  // thread exists) and receives them through a signalfd from then on.
  // Children started by PosixProcessRunner get an empty signal mask.
  static absl::StatusOr<std::unique_ptr<SignalStopSource>> create();

  SignalStopSource(const SignalStopSource&) = delete;
  SignalStopSource& operator=(const SignalStopSource&) = delete;
  // Restores the signal mask that was in place before create().
  ~SignalStopSource() override;

  bool stopRequested() override;
  int pollFd() const override { return fd_.get(); }
  // The first stop signal received (SIGTERM or SIGINT), or 0.
  int signalNumber() const { return signal_; }

private:
  SignalStopSource(UniqueFd fd, sigset_t previous_mask)
      : fd_(std::move(fd)), previous_(previous_mask) {}

  UniqueFd fd_;
  sigset_t previous_;
  bool requested_ = false;
  int signal_ = 0;
};

class PosixProcessRunner final : public ProcessRunner {
public:
  // `stop` must outlive the runner. `stop_timeout` is how long a process may
  // take to exit after SIGTERM was forwarded to it.
  PosixProcessRunner(StopSource& stop, absl::Duration stop_timeout)
      : stop_(stop), stop_timeout_(stop_timeout) {}

  absl::StatusOr<ProcessResult> run(const ProcessSpec& spec, OutputSink& sink) override;

private:
  StopSource& stop_;
  absl::Duration stop_timeout_;
};

} // namespace captf::runner
