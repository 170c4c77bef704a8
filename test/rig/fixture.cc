#include "test/rig/fixture.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): POSIX declares it
extern char** environ;

namespace captf::rig {
namespace {

std::string sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string rigCommand() {
  return sourceDir() + "/test/rig/rig";
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) {
    s.pop_back();
  }
  return s;
}

// Parses the `export K="V"` lines that the rig writes to DIR/env.
std::map<std::string, std::string> readEnvFile(const std::string& path) {
  std::map<std::string, std::string> vars;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    constexpr std::string_view kPrefix = "export ";
    if (!line.starts_with(kPrefix)) {
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    std::string key = line.substr(kPrefix.size(), eq - kPrefix.size());
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    vars[key] = value;
  }
  return vars;
}

// The one rig of this process. Stopped by an atexit handler; its directory is
// removed when every test passed and kept (with the logs) otherwise.
struct SharedRig {
  std::once_flag once;
  Env env;
  Tier tier = Tier::kIntegration;
};

SharedRig& sharedRig() {
  static SharedRig
      rig; // NOLINT(cppcoreguidelines-avoid-non-const-global-variables): one per test binary
  return rig;
}

void stopRig() {
  SharedRig& rig = sharedRig();
  if (rig.env.dir.empty()) {
    return;
  }
  run({rigCommand(), "down", "--dir", rig.env.dir});
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (unit != nullptr && unit->Passed()) {
    std::filesystem::remove_all(rig.env.dir);
  } else {
    std::fprintf(stderr, "rig: logs kept in %s/logs\n", rig.env.dir.c_str());
  }
}

} // namespace

namespace {

const char* tierName(Tier tier) {
  switch (tier) {
  case Tier::kInstall:
    return "install";
  case Tier::kCapi:
    return "capi";
  case Tier::kE2e:
    return "e2e";
  case Tier::kIntegration:
    break;
  }
  return "integration";
}

// Starts a rig of `tier` in a new temporary directory, owned by this
// process; exits the binary with the rig's cause when it cannot start.
Env startRig(Tier tier) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "captf-rig-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "rig: cannot create a temporary directory: %s\n", std::strerror(errno));
    std::exit(1);
  }
  CommandResult up = run({rigCommand(), "up", "--dir", tmpl, "--tier", tierName(tier),
                          "--owner-pid", std::to_string(getpid())});
  if (up.exit_code != 0) {
    std::fprintf(stderr, "%s\nrig: could not start the %s rig (exit %d); logs in %s/logs\n",
                 up.output.c_str(), tierName(tier), up.exit_code, tmpl.c_str());
    std::exit(1);
  }
  Env env;
  env.dir = tmpl;
  env.vars = readEnvFile(tmpl + "/env");
  env.kubeconfig = env.vars["KUBECONFIG"];
  env.server = env.vars["CAPTF_RIG_SERVER"];
  env.ca_file = env.vars["CAPTF_RIG_CA"];
  env.kubectl = env.vars["CAPTF_RIG_KUBECTL"];
  env.tofu = env.vars["CAPTF_RIG_TOFU"];
  env.registry = env.vars["CAPTF_RIG_REGISTRY"];
  env.clusterctl = env.vars["CAPTF_RIG_CLUSTERCTL"];
  env.promtool = env.vars["CAPTF_RIG_PROMTOOL"];
  env.prometheus = env.vars["CAPTF_RIG_PROMETHEUS"];
  env.git_https = env.vars["CAPTF_RIG_GIT_HTTPS"];
  env.git_user = env.vars["CAPTF_RIG_GIT_USER"];
  env.git_password = env.vars["CAPTF_RIG_GIT_PASSWORD"];
  env.git_repos = env.vars["CAPTF_RIG_GIT_REPOS"];
  env.git_ssh = env.vars["CAPTF_RIG_GIT_SSH"];
  env.git_ssh_key = env.vars["CAPTF_RIG_GIT_SSH_KEY"];
  env.git_known_hosts = env.vars["CAPTF_RIG_GIT_KNOWN_HOSTS"];
  return env;
}

} // namespace

const Env& shared(Tier tier) {
  SharedRig& rig = sharedRig();
  std::call_once(rig.once, [&] {
    rig.tier = tier;
    rig.env = startRig(tier);
    std::atexit(stopRig);
  });
  if (static_cast<int>(tier) > static_cast<int>(rig.tier)) {
    std::fprintf(stderr, "rig: this binary started a lower tier and then asked for a higher one\n");
    std::exit(1);
  }
  return rig.env;
}

const Tools& tools() {
  static const Tools kBuilt = [] {
    const CommandResult r = run({"bash", sourceDir() + "/test/rig/build/prometheus.sh"});
    // Two lines: the directory of promtool and prometheus, then promql-names.
    std::istringstream lines(r.output);
    std::string dir;
    std::string names;
    std::getline(lines, dir);
    std::getline(lines, names);
    if (r.exit_code != 0 || dir.empty() || names.empty()) {
      std::fprintf(stderr, "%s\nrig: building Prometheus failed (exit %d)\n", r.output.c_str(),
                   r.exit_code);
      std::exit(1);
    }
    return Tools{dir + "/promtool", dir + "/prometheus", names};
  }();
  return kBuilt;
}

Env another(Tier tier) {
  return startRig(tier);
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& log,
            const std::vector<std::string>& extra_env, int stdout_fd) {
  std::vector<std::string> args = argv;
  std::vector<char*> raw;
  raw.reserve(args.size() + 1);
  for (std::string& a : args) {
    raw.push_back(a.data());
  }
  raw.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(extra_env.begin(), extra_env.end(),
                     [&](const std::string& extra) { return extra.starts_with(name); })) {
      env_strings.emplace_back(entry);
    }
  }
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& e : env_strings) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, stdout_fd >= 0 ? stdout_fd : 2, 1);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string sanitizerReport(const std::string& output) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    for (const char* marker : {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                               "WARNING: ThreadSanitizer", "runtime error: "}) {
      if (line.find(marker) != std::string::npos) {
        return line;
      }
    }
  }
  return "";
}

CommandResult run(const std::vector<std::string>& argv, const std::string& stdin_data,
                  const std::map<std::string, std::string>& extra_env) {
  CommandResult result;
  std::array<int, 2> in{-1, -1};
  std::array<int, 2> out{-1, -1};
  if (pipe2(in.data(), O_CLOEXEC) != 0 || pipe2(out.data(), O_CLOEXEC) != 0) {
    result.output = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (extra_env.count(kv.substr(0, kv.find('='))) == 0) {
      env_strings.push_back(std::move(kv));
    }
  }
  for (const auto& [key, value] : extra_env) {
    env_strings.push_back(std::string(key).append("=").append(value));
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& e : env_strings) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    execvpe(args[0], args.data(), envp.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    result.output = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  // Feed standard input from another thread so a child that writes before it
  // reads cannot deadlock against us.
  std::thread writer([fd = in[1], &stdin_data] {
    size_t off = 0;
    while (off < stdin_data.size()) {
      ssize_t n = write(fd, stdin_data.data() + off, stdin_data.size() - off);
      if (n <= 0) {
        break;
      }
      off += static_cast<size_t>(n);
    }
    close(fd);
  });
  std::array<char, 65536> buf{};
  for (;;) {
    ssize_t n = read(out[0], buf.data(), buf.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    result.output.append(buf.data(), static_cast<size_t>(n));
  }
  close(out[0]);
  writer.join();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

CommandResult kubectl(const Env& env, const std::vector<std::string>& args,
                      const std::string& stdin_data) {
  std::vector<std::string> argv{env.kubectl, "--kubeconfig", env.kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, stdin_data);
}

std::string userKubeconfig(const Env& env, const std::string& name,
                           const std::vector<std::string>& groups) {
  std::vector<std::string> argv{rigCommand(), "user", "--dir", env.dir, "--name", name};
  for (const auto& g : groups) {
    argv.emplace_back("--group");
    argv.push_back(g);
  }
  CommandResult r = run(argv);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "rig user " << name << ": " << r.output;
    return "";
  }
  return trim(r.output);
}

std::string pushImage(const Env& env, const std::string& rootfs, const std::string& repo,
                      const std::string& tag, const std::map<std::string, std::string>& labels) {
  std::vector<std::string> argv = {rigCommand(),
                                   "image",
                                   "push",
                                   "--rootfs",
                                   rootfs,
                                   "--ref",
                                   env.registry + "/" + repo + ":" + tag};
  for (const auto& [key, value] : labels) {
    argv.emplace_back("--label");
    argv.push_back(std::string(key).append("=").append(value));
  }
  CommandResult r = run(argv);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "rig image push " << repo << ":" << tag << ": " << r.output;
    return "";
  }
  return trim(r.output);
}

std::string podLog(const Env& env, const std::string& ns, const std::string& pod,
                   const std::string& container) {
  std::error_code ec;
  const std::string prefix = std::string(ns).append("_").append(pod).append("_");
  for (const auto& entry : std::filesystem::directory_iterator(env.dir + "/pods", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix)) {
      std::ifstream in(entry.path() / "logs" / (container + ".log"));
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
  }
  return "";
}

} // namespace captf::rig
