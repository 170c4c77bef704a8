#include "manager/kube/credentials.h"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "contract/status_macros.h"
#include "manager/kube/object.h"

// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): POSIX declares it
extern char** environ;

namespace captf::kube {
namespace {

using nlohmann::json;

// Owns one file descriptor.
class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = fd;
  }

private:
  int fd_ = -1;
};

absl::Status makePipe(Fd& read_end, Fd& write_end) {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return absl::OkStatus();
}

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv with `env` and no standard input; kills it after `timeout`.
absl::StatusOr<ProcessResult> runProcess(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env, Duration timeout) {
  Fd out_read;
  Fd out_write;
  Fd err_read;
  Fd err_write;
  CAPTF_RETURN_IF_ERROR(makePipe(out_read, out_write));
  CAPTF_RETURN_IF_ERROR(makePipe(err_read, err_write));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);

  std::vector<char*> c_argv;
  c_argv.reserve(argv.size() + 1);
  for (const auto& arg : argv) {
    c_argv.push_back(const_cast<char*>(arg.c_str())); // posix_spawn takes char*
  }
  c_argv.push_back(nullptr);
  std::vector<char*> c_env;
  c_env.reserve(env.size() + 1);
  for (const auto& var : env) {
    c_env.push_back(const_cast<char*>(var.c_str())); // posix_spawn takes char*
  }
  c_env.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawnp(&pid, c_argv[0], &actions, nullptr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run \"", argv[0], "\": ", std::strerror(rc)));
  }
  out_write.reset();
  err_write.reset();

  ProcessResult result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::array<pollfd, 2> fds{pollfd{out_read.get(), POLLIN, 0}, pollfd{err_read.get(), POLLIN, 0}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  int open_fds = 2;
  bool timed_out = false;
  std::array<char, 4096> buffer{};
  constexpr size_t kMaxOutput = 1 << 20;
  while (open_fds > 0) {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (remaining.count() <= 0) {
      timed_out = true;
      break;
    }
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(remaining.count()));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      timed_out = n == 0;
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      // Blocking under ExecCredentials' lock is deliberate (see current()).
      // NOLINTNEXTLINE(clang-analyzer-unix.BlockInCriticalSection)
      ssize_t got = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (got > 0 && sinks[i]->size() < kMaxOutput) {
        sinks[i]->append(buffer.data(), static_cast<size_t>(got));
      } else if (got == 0 || (got < 0 && errno != EINTR)) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  if (timed_out) {
    ::kill(pid, SIGKILL);
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("\"", argv[0], "\" did not finish in time"));
  }
  result.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return result;
}

} // namespace

TokenFileCredentials::TokenFileCredentials(std::string path, Credentials base, Clock& clock,
                                           Duration refresh)
    : path_(std::move(path)), base_(std::move(base)), clock_(clock), refresh_(refresh) {}

absl::StatusOr<Credentials> TokenFileCredentials::current() {
  std::scoped_lock lock(mu_);
  SteadyTime now = clock_.now();
  if (cached_ && now - read_at_ < refresh_) {
    return *cached_;
  }
  auto token = readFile(path_);
  if (!token.ok()) {
    if (cached_) {
      return *cached_; // keep serving the last token through a rotation hiccup
    }
    return absl::UnauthenticatedError(absl::StrCat("cannot read token file ", path_));
  }
  Credentials credentials = base_;
  credentials.bearer_token = std::string(absl::StripAsciiWhitespace(*token));
  if (credentials.bearer_token.empty()) {
    return absl::UnauthenticatedError(absl::StrCat("token file ", path_, " is empty"));
  }
  cached_ = credentials;
  read_at_ = now;
  return credentials;
}

bool TokenFileCredentials::invalidate(const Credentials& used) {
  std::scoped_lock lock(mu_);
  if (cached_ && *cached_ == used) {
    cached_.reset();
  }
  return true;
}

ExecCredentials::ExecCredentials(ExecConfig exec, std::string server, std::string ca_pem,
                                 Clock& clock, std::shared_ptr<spdlog::logger> logger,
                                 Duration timeout)
    : exec_(std::move(exec)), server_(std::move(server)), ca_pem_(std::move(ca_pem)), clock_(clock),
      logger_(std::move(logger)), timeout_(timeout) {}

absl::StatusOr<std::pair<Credentials, std::optional<WallTime>>>
ExecCredentials::parseExecCredential(const std::string& output,
                                     const std::string& expected_api_version) {
  auto parsed = parseJson(output);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("exec plugin output is not JSON: ", parsed.status().message()));
  }
  const Json& doc = *parsed;
  if (!doc.is_object() || doc.value("kind", "") != "ExecCredential") {
    return absl::InvalidArgumentError("exec plugin output is not an ExecCredential");
  }
  if (doc.value("apiVersion", "") != expected_api_version) {
    return absl::InvalidArgumentError(absl::StrCat("exec plugin answered apiVersion \"",
                                                   doc.value("apiVersion", ""), "\", want \"",
                                                   expected_api_version, "\""));
  }
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return absl::InvalidArgumentError("exec plugin output has no status");
  }
  Credentials credentials;
  credentials.bearer_token = status->value("token", "");
  credentials.client_cert_pem = status->value("clientCertificateData", "");
  credentials.client_key_pem = status->value("clientKeyData", "");
  if (credentials.client_cert_pem.empty() != credentials.client_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "exec plugin returned only one of clientCertificateData and clientKeyData");
  }
  if (credentials.bearer_token.empty() && credentials.client_cert_pem.empty()) {
    return absl::InvalidArgumentError("exec plugin returned neither a token nor a certificate");
  }
  std::optional<WallTime> expiry;
  if (auto exp = status->find("expirationTimestamp"); exp != status->end() && exp->is_string()) {
    auto time = parseTime(exp->get<std::string>());
    if (!time.ok()) {
      return time.status();
    }
    expiry = *time;
  }
  return std::make_pair(std::move(credentials), expiry);
}

absl::StatusOr<std::string> ExecCredentials::runPlugin() {
  if (exec_.interactive_mode == "Always") {
    return absl::FailedPreconditionError(
        "exec plugin needs interactive mode, but the manager has no terminal");
  }
  json info = {{"apiVersion", exec_.api_version},
               {"kind", "ExecCredential"},
               {"spec", {{"interactive", false}}}};
  if (exec_.provide_cluster_info) {
    json cluster = {{"server", server_}};
    if (!ca_pem_.empty()) {
      cluster["certificate-authority-data"] = absl::Base64Escape(ca_pem_);
    }
    info["spec"]["cluster"] = std::move(cluster);
  }
  std::vector<std::string> env;
  for (char** var = environ; *var != nullptr; ++var) {
    env.emplace_back(*var);
  }
  for (const auto& [name, value] : exec_.env) {
    env.push_back(absl::StrCat(name, "=", value));
  }
  env.push_back(absl::StrCat("KUBERNETES_EXEC_INFO=", info.dump()));
  std::vector<std::string> argv{exec_.command};
  argv.insert(argv.end(), exec_.args.begin(), exec_.args.end());
  auto result = runProcess(argv, env, timeout_);
  if (!result.ok()) {
    std::string hint =
        exec_.install_hint.empty() ? "" : absl::StrCat(" (", exec_.install_hint, ")");
    return absl::Status(result.status().code(), absl::StrCat(result.status().message(), hint));
  }
  if (result->exit_code != 0) {
    constexpr size_t kMaxExcerpt = 256;
    return absl::UnauthenticatedError(absl::StrCat("exec plugin \"", exec_.command, "\" exited ",
                                                   result->exit_code, ": ",
                                                   result->err.substr(0, kMaxExcerpt)));
  }
  return std::move(result->out);
}

absl::StatusOr<Credentials> ExecCredentials::current() {
  // The plugin runs under the lock on purpose: one run at a time, and the
  // callers that arrive meanwhile get its token instead of starting more.
  std::scoped_lock lock(mu_);
  if (cached_ && (!expiry_ || clock_.wallNow() < *expiry_)) {
    return *cached_;
  }
  auto output = runPlugin();
  if (!output.ok()) {
    return output.status();
  }
  auto parsed = parseExecCredential(*output, exec_.api_version);
  if (!parsed.ok()) {
    return parsed.status();
  }
  cached_ = std::move(parsed->first);
  expiry_ = parsed->second;
  logger_->debug("exec credential refreshed command={} expires={}", exec_.command,
                 expiry_ ? formatTime(*expiry_) : "never");
  return *cached_;
}

bool ExecCredentials::invalidate(const Credentials& used) {
  std::scoped_lock lock(mu_);
  if (cached_ && *cached_ == used) {
    cached_.reset();
  }
  return true;
}

std::unique_ptr<CredentialSource> makeCredentialSource(const RestConfig& config, Clock& clock,
                                                       std::shared_ptr<spdlog::logger> logger) {
  Credentials base{config.bearer_token, config.client_cert_pem, config.client_key_pem};
  if (config.exec) {
    return std::make_unique<ExecCredentials>(*config.exec, config.server, config.ca_pem, clock,
                                             std::move(logger));
  }
  if (!config.bearer_token_file.empty()) {
    return std::make_unique<TokenFileCredentials>(config.bearer_token_file, std::move(base), clock);
  }
  return std::make_unique<StaticCredentials>(std::move(base));
}

} // namespace captf::kube
