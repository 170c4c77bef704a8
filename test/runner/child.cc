// A static program the runner's tests start instead of a runtime: it does
// what its arguments say, in order, and ignores arguments it does not know
// (so that it can stand behind `--bin` and receive a step's arguments too).
//
//   out:TEXT        print TEXT and a newline on stdout
//   err:TEXT        the same on stderr
//   outbytes:N      print N bytes ('x') on stdout
//   env:NAME        print "NAME=value" or "NAME unset"
//   envhas:TEXT     print "envhas: found in NAME" for each environment
//                   variable whose name or value contains TEXT, else
//                   "envhas: absent" (TEXT itself is never printed)
//   filehex:PATH    print "filehex PATH=<lowercase hex of every byte>" or
//                   "filehex PATH unreadable"
//   cwd             print the working directory
//   pidfile:PATH    write this process's pid to PATH
//   sleep:SECONDS   sleep (fractions allowed)
//   trap:CODE:DELAY on SIGTERM print "child: SIGTERM" on stderr, wait DELAY
//                   seconds, then exit CODE
//   ignoreterm      ignore SIGTERM
//   grandchild:S    fork a process that keeps stdout open, writes its pid to
//                   "<pidfile>.grandchild" when a pidfile was named, and
//                   sleeps S seconds
//   kill:SIG        raise signal SIG
//   write:PATH:TEXT write TEXT to PATH (created or truncated)
//   killancestor:NAME
//                   SIGKILL the nearest ancestor process whose name
//                   (/proc/PID/comm) is NAME, e.g. the runner above a
//                   runtime: what a hostile module can do to its own pod
//   send:PORT:TEXT  connect to 127.0.0.1:PORT and send TEXT and a newline;
//                   prints "send: failed" when it cannot (a module-side
//                   counter the test reads, outside every pod)
//   exit:N          exit with N
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

// NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): the signal
// handler's flag and the options it reads.
volatile sig_atomic_t got_term = 0;
int trap_code = 143;
double trap_delay = 0;
std::string pidfile;
// NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)

void onTerm(int) {
  got_term = 1;
}

void napFor(double seconds) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(seconds);
  ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && got_term == 0) {
  }
}

void checkTerm() {
  if (got_term != 0) {
    std::fputs("child: SIGTERM\n", stderr);
    std::fflush(stderr);
    napFor(trap_delay);
    std::fflush(stdout);
    _exit(trap_code);
  }
}

void sleepFor(double seconds) {
  const double step = 0.02;
  // NOLINTNEXTLINE(bugprone-float-loop-counter): sleeps in 20 ms steps up to `seconds`.
  for (double slept = 0; slept < seconds; slept += step) {
    checkTerm();
    napFor(step);
  }
  checkTerm();
}

void writePid(const std::string& path, pid_t pid) {
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f, "%d\n", static_cast<int>(pid));
    std::fclose(f);
  }
}

// The parent of `pid` from /proc/<pid>/stat ("pid (comm) state ppid ..."),
// 0 when unreadable.
pid_t parentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 4 > stat.size()) {
    return 0;
  }
  return static_cast<pid_t>(std::atol(stat.c_str() + close + 4));
}

std::string nameOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// Sends `text` and a newline to 127.0.0.1:`port` over TCP; false on failure.
bool sendTo(int port, const std::string& text) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return false;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string line = text + "\n";
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ok = ::close(fd) == 0 && ok;
  return ok;
}

void killAncestor(const std::string& name) {
  for (pid_t pid = parentOf(getpid()); pid > 1; pid = parentOf(pid)) {
    if (nameOf(pid) == name) {
      kill(pid, SIGKILL);
      return;
    }
  }
  std::fprintf(stderr, "child: no ancestor named %s\n", name.c_str());
}

} // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto colon = arg.find(':');
    const std::string verb = arg.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : arg.substr(colon + 1);
    if (verb == "out") {
      std::printf("%s\n", value.c_str());
    } else if (verb == "err") {
      std::fprintf(stderr, "%s\n", value.c_str());
    } else if (verb == "outbytes") {
      const std::string block(65536, 'x');
      long left = std::atol(value.c_str());
      while (left > 0) {
        const long n = left < 65536 ? left : 65536;
        std::fwrite(block.data(), 1, static_cast<size_t>(n), stdout);
        left -= n;
      }
    } else if (verb == "env") {
      const char* v = std::getenv(value.c_str());
      if (v != nullptr) {
        std::printf("%s=%s\n", value.c_str(), v);
      } else {
        std::printf("%s unset\n", value.c_str());
      }
    } else if (verb == "envhas") {
      bool found = false;
      for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string variable = *entry;
        if (variable.find(value) != std::string::npos) {
          std::printf("envhas: found in %s\n", variable.substr(0, variable.find('=')).c_str());
          found = true;
        }
      }
      if (!found) {
        std::printf("envhas: absent\n");
      }
    } else if (verb == "filehex") {
      if (FILE* f = std::fopen(value.c_str(), "rb")) {
        std::string hex;
        for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) {
          static constexpr char kDigits[] = "0123456789abcdef";
          hex += kDigits[(c >> 4) & 0xF];
          hex += kDigits[c & 0xF];
        }
        std::fclose(f);
        std::printf("filehex %s=%s\n", value.c_str(), hex.c_str());
      } else {
        std::printf("filehex %s unreadable\n", value.c_str());
      }
    } else if (verb == "cwd") {
      char buffer[4096];
      std::printf("%s\n", getcwd(buffer, sizeof buffer) != nullptr ? buffer : "?");
    } else if (verb == "pidfile") {
      pidfile = value;
      writePid(pidfile, getpid());
    } else if (verb == "sleep") {
      std::fflush(stdout);
      sleepFor(std::atof(value.c_str()));
    } else if (verb == "trap") {
      const auto second = value.find(':');
      trap_code = std::atoi(value.substr(0, second).c_str());
      trap_delay = second == std::string::npos ? 0 : std::atof(value.substr(second + 1).c_str());
      struct sigaction action {};
      action.sa_handler = onTerm;
      sigaction(SIGTERM, &action, nullptr);
    } else if (verb == "ignoreterm") {
      signal(SIGTERM, SIG_IGN);
    } else if (verb == "grandchild") {
      std::fflush(stdout);
      const pid_t pid = fork();
      if (pid == 0) {
        if (!pidfile.empty()) {
          writePid(pidfile + ".grandchild", getpid());
        }
        napFor(std::atof(value.c_str()));
        std::printf("grandchild done\n");
        _exit(0);
      }
    } else if (verb == "kill") {
      std::fflush(stdout);
      raise(std::atoi(value.c_str()));
    } else if (verb == "write") {
      const auto second = value.find(':');
      std::ofstream(value.substr(0, second), std::ios::binary | std::ios::trunc)
          << (second == std::string::npos ? std::string() : value.substr(second + 1));
    } else if (verb == "killancestor") {
      std::fflush(stdout);
      killAncestor(value);
    } else if (verb == "send") {
      const auto second = value.find(':');
      if (!sendTo(std::atoi(value.substr(0, second).c_str()),
                  second == std::string::npos ? std::string() : value.substr(second + 1))) {
        std::printf("send: failed\n");
      }
    } else if (verb == "exit") {
      std::fflush(stdout);
      return std::atoi(value.c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
