#include "runner/posix_process.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "contract/strings.h"

namespace captf::runner {
namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kReadChunk = std::size_t{64} * 1024;
// Once the child has exited: how long to keep reading what is still in the
// pipes (or written by a descendant that left the process group), at most,
// and after how long without output to stop.
constexpr milliseconds kDrainMax{2000};
constexpr milliseconds kDrainIdle{200};
// How often to look for the child's exit when the kernel has no pidfd.
constexpr milliseconds kExitPollPeriod{50};

// Makes `from` the descriptor `to` in the child, without close-on-exec.
// Async-signal-safe.
bool moveTo(int from, int to) {
  if (from == to) {
    return ::fcntl(to, F_SETFD, 0) == 0;
  }
  return ::dup2(from, to) == to;
}

// The child between fork and exec: async-signal-safe calls only.
[[noreturn]] void execChild(const char* path, char* const* argv, char* const* envp, const char* cwd,
                            int stdout_fd, int stderr_fd, int status_fd) {
  ::setpgid(0, 0);
  sigset_t empty;
  ::sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  // Ignored dispositions survive exec; the runtime gets the defaults.
  for (const int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
    ::signal(sig, SIG_DFL);
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd >= 0 && moveTo(null_fd, 0) && moveTo(stdout_fd, 1) && moveTo(stderr_fd, 2) &&
      ::chdir(cwd) == 0) {
    ::execve(path, argv, envp);
  }
  const int error = errno;
  writeAll(status_fd, reinterpret_cast<const char*>(&error), sizeof error);
  ::_exit(127);
}

// A started child: unless wait() reaped it, the destructor kills its process
// group and reaps it, so no early return leaves a process behind.
class Child {
public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  pid_t pid() const { return pid_; }

  // Whether it has exited, without reaping it (its pid, and so its process
  // group id, stay reserved until wait()).
  bool exited() const {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid_;
  }

  // Reaps it (blocking) and returns the wait status.
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

private:
  pid_t pid_;
};

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

absl::Status execError(const std::string& path, int error) {
  const std::string message = errnoMessage(contract::strCat("cannot execute ", path), error);
  switch (error) {
  case ENOENT:
  case ENOTDIR:
    return absl::NotFoundError(message);
  case EACCES:
  case EPERM:
    return absl::PermissionDeniedError(message);
  default:
    return absl::InternalError(message);
  }
}

int toMillis(SteadyClock::duration duration) {
  const auto ms = std::chrono::ceil<milliseconds>(duration).count();
  return static_cast<int>(std::clamp<std::int64_t>(ms, 0, std::int64_t{24} * 3600 * 1000));
}

// One output pipe of the child.
struct Stream {
  UniqueFd fd;
  OutputStream kind;
  bool open = true;

  // Reads what is available (at most one chunk) into `sink`; closes the
  // stream at end of file or on an error.
  void readInto(std::vector<char>& buffer, OutputSink& sink) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n > 0) {
      sink.write(kind, std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      open = false;
      fd.reset();
    }
  }
};

} // namespace

absl::StatusOr<std::unique_ptr<SignalStopSource>> SignalStopSource::create() {
  sigset_t mask;
  ::sigemptyset(&mask);
  ::sigaddset(&mask, SIGTERM);
  ::sigaddset(&mask, SIGINT);
  sigset_t previous;
  if (::sigprocmask(SIG_BLOCK, &mask, &previous) != 0) {
    return absl::InternalError(errnoMessage("sigprocmask", errno));
  }
  const int fd = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    return absl::InternalError(errnoMessage("signalfd", error));
  }
  return std::unique_ptr<SignalStopSource>(new SignalStopSource(UniqueFd(fd), previous));
}

SignalStopSource::~SignalStopSource() {
  // Consume what is pending so that unblocking does not deliver it.
  stopRequested();
  ::sigprocmask(SIG_SETMASK, &previous_, nullptr);
}

bool SignalStopSource::stopRequested() {
  signalfd_siginfo info{};
  while (::read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    if (!requested_) {
      requested_ = true;
      signal_ = static_cast<int>(info.ssi_signo);
    }
  }
  return requested_;
}

absl::StatusOr<ProcessResult> PosixProcessRunner::run(const ProcessSpec& spec, OutputSink& sink) {
  if (spec.path.empty() || spec.path.front() != '/') {
    return absl::InvalidArgumentError(
        contract::strCat("process path \"", spec.path, "\" is not absolute"));
  }
  // Everything the child needs is built before fork.
  std::vector<std::string> argv_storage;
  argv_storage.reserve(spec.args.size() + 1);
  argv_storage.push_back(spec.path);
  argv_storage.insert(argv_storage.end(), spec.args.begin(), spec.args.end());
  std::vector<std::string> env_storage = spec.env;
  const std::vector<char*> argv = pointers(argv_storage);
  const std::vector<char*> envp = pointers(env_storage);
  const std::string cwd = spec.cwd.empty() ? std::string(".") : spec.cwd;

  auto out = makePipe();
  auto err = makePipe();
  auto exec_status = makePipe();
  if (!out.ok() || !err.ok() || !exec_status.ok()) {
    return !out.ok() ? out.status() : !err.ok() ? err.status() : exec_status.status();
  }

  const auto started = SteadyClock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    return absl::InternalError(errnoMessage("fork", errno));
  }
  if (pid == 0) {
    execChild(argv_storage.front().c_str(), argv.data(), envp.data(), cwd.c_str(), out->write.get(),
              err->write.get(), exec_status->write.get());
  }
  Child child(pid);
  // Also set from the parent, so the group exists before any signal is sent
  // to it (fails harmlessly once the child has exec'd).
  ::setpgid(pid, pid);
  out->write.reset();
  err->write.reset();
  exec_status->write.reset();

  int child_errno = 0;
  ssize_t n = 0;
  do {
    n = ::read(exec_status->read.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (std::cmp_equal(n, sizeof child_errno)) {
    child.wait();
    return execError(spec.path, child_errno);
  }

  std::array<Stream, 2> streams = {Stream{std::move(out->read), OutputStream::kStdout},
                                   Stream{std::move(err->read), OutputStream::kStderr}};
  for (Stream& stream : streams) {
    ::fcntl(stream.fd.get(), F_SETFL, O_NONBLOCK);
  }
  // A pidfd polls readable when the child exits; without one (kernels before
  // 5.3) the loop looks every kExitPollPeriod.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));

  ProcessResult result;
  std::optional<SteadyClock::time_point> kill_at;
  const auto forward_stop = [&] {
    if (!result.stop_forwarded) {
      ::kill(pid, SIGTERM);
      result.stop_forwarded = true;
      kill_at = SteadyClock::now() + absl::ToChronoNanoseconds(stop_timeout_);
    }
  };
  if (stop_.stopRequested()) {
    forward_stop();
  }

  std::vector<char> buffer(kReadChunk);
  bool exited = false;
  while (!exited) {
    std::array<pollfd, 4> fds{};
    std::size_t count = 0;
    std::array<int, 2> stream_slot = {-1, -1};
    for (std::size_t i = 0; i < streams.size(); ++i) {
      if (streams[i].open) {
        stream_slot[i] = static_cast<int>(count);
        fds[count++] = pollfd{streams[i].fd.get(), POLLIN, 0};
      }
    }
    int stop_slot = -1;
    if (!result.stop_forwarded && stop_.pollFd() >= 0) {
      stop_slot = static_cast<int>(count);
      fds[count++] = pollfd{stop_.pollFd(), POLLIN, 0};
    }
    int pid_slot = -1;
    if (pidfd.valid()) {
      pid_slot = static_cast<int>(count);
      fds[count++] = pollfd{pidfd.get(), POLLIN, 0};
    }
    int timeout = -1;
    if (kill_at && !result.killed) {
      timeout = toMillis(*kill_at - SteadyClock::now());
    }
    if (!pidfd.valid() || (stop_slot < 0 && stop_.pollFd() < 0 && !result.stop_forwarded)) {
      // Also look at a pollless stop source regularly.
      const int period = static_cast<int>(kExitPollPeriod.count());
      timeout = timeout < 0 ? period : std::min(timeout, period);
    }
    const int ready = ::poll(fds.data(), count, timeout);
    if (ready < 0 && errno != EINTR) {
      return absl::InternalError(errnoMessage("poll", errno));
    }
    for (std::size_t i = 0; i < streams.size(); ++i) {
      const int slot = stream_slot[i];
      if (slot >= 0 &&
          (fds[static_cast<std::size_t>(slot)].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        streams[i].readInto(buffer, sink);
      }
    }
    if (!result.stop_forwarded && stop_.stopRequested()) {
      forward_stop();
    }
    if (kill_at && !result.killed && SteadyClock::now() >= *kill_at) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      result.killed = true;
    }
    if (pid_slot < 0 || fds[static_cast<std::size_t>(pid_slot)].revents != 0) {
      exited = child.exited();
    }
  }
  // The runtime is gone: nothing it started may outlive it. Its pid is not
  // reaped yet, so the group id cannot have been reused.
  ::kill(-pid, SIGKILL);
  const int status = child.wait();
  result.duration = absl::FromChrono(SteadyClock::now() - started);

  const auto drain_until = SteadyClock::now() + kDrainMax;
  while ((streams[0].open || streams[1].open) && SteadyClock::now() < drain_until) {
    std::array<pollfd, 2> fds{};
    std::array<std::size_t, 2> which{};
    std::size_t count = 0;
    for (std::size_t i = 0; i < streams.size(); ++i) {
      if (streams[i].open) {
        which[count] = i;
        fds[count++] = pollfd{streams[i].fd.get(), POLLIN, 0};
      }
    }
    const int timeout =
        std::min(toMillis(drain_until - SteadyClock::now()), static_cast<int>(kDrainIdle.count()));
    const int ready = ::poll(fds.data(), count, timeout);
    if (ready == 0) {
      break;
    }
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    for (std::size_t k = 0; k < count; ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        streams[which[k]].readInto(buffer, sink);
      }
    }
  }

  if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
    result.exit_code = 128 + result.term_signal;
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

} // namespace captf::runner
