// The in-pod half of the runner overhead benchmark (see README.md).
//
// Runs, in one pod and alternating to spread any drift, N iterations of
//   hand:   the exact runtime commands the runner runs for the operation,
//           each one exec'd directly with the same environment, output
//           streamed to the pod log (stdout of JSON commands captured);
//   runner: /captf/bin/runner run --op=apply with the same flags;
// each on a fresh state (its own secret_suffix) and a fresh work directory,
// then times `runner copy`. Prints one JSON object per measurement and a
// final {"summary": ...} line.
//
// With --compare reports the two alternating turns are both the runner's
// apply: once with run reports off and once streaming them to the report
// server at --report-address (the token and CA in the per-run Secret, as
// the manager provides them), so the summary is the cost of reporting.
//
//   sequence --iterations N --namespace NS --mode machine|cluster
//            --inputs-hash H (cluster) --labels HCL
//            [--compare hand|reports --report-address A --event-object O --job-name J]
//
// Static, no dependencies beyond libc++/libstdc++ (it runs in the module
// image's filesystem).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <ftw.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ; // NOLINT(cppcoreguidelines-avoid-non-const-global-variables): POSIX

namespace {

using Clock = std::chrono::steady_clock;

// The emptyDir both the runner and the hand sequence work in: the generated
// root's `../../module` must land on /captf/module, and the root filesystem
// is read-only.
constexpr char kWork[] = "/captf/work";

struct Options {
  int iterations = 5;
  std::string ns;
  std::string mode = "machine";
  std::string inputs_hash;
  std::string labels;
  std::string compare = "hand";
  std::string report_address;
  std::string event_object;
  std::string job_name;
};

struct Measure {
  double seconds = 0;
  long max_rss_kib = 0; // the largest process of the tree
  int exit_code = 0;
  // The runner's own time (its run minus its runtime processes).
  double runner_overhead_ms = -1;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void makeDirs(const std::string& path) {
  for (std::size_t at = 1; at != std::string::npos;) {
    at = path.find('/', at + 1);
    ::mkdir(path.substr(0, at).c_str(), 0755);
  }
}

int removeEntry(const char* path, const struct stat* /*info*/, int /*type*/, struct FTW* ftw) {
  return ftw->level == 0 ? 0 : ::remove(path);
}

// Empties kWork before each measured sequence.
void cleanWork() {
  ::nftw(kWork, removeEntry, 16, FTW_DEPTH | FTW_PHYS);
}

// Runs argv with env in cwd; stdout captured when `capture` is given, else
// streamed to ours (the pod log), like the runner does. Returns the child's
// exit code and rusage.
int runProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
               const std::string& cwd, std::string* capture, long* max_rss_kib,
               const std::string& stderr_file = "") {
  int pipe_fds[2] = {-1, -1};
  if (capture != nullptr && ::pipe(pipe_fds) != 0) {
    return -1;
  }
  std::vector<std::string> a = argv;
  std::vector<std::string> e = env;
  std::vector<char*> av;
  std::vector<char*> ev;
  av.reserve(a.size());
  for (auto& s : a) {
    av.push_back(s.data());
  }
  av.push_back(nullptr);
  ev.reserve(e.size());
  for (auto& s : e) {
    ev.push_back(s.data());
  }
  ev.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (capture != nullptr) {
      ::dup2(pipe_fds[1], 1);
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
    }
    if (!stderr_file.empty()) {
      const int fd = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
    }
    if (::chdir(cwd.c_str()) != 0) {
      ::_exit(126);
    }
    ::execve(av[0], av.data(), ev.data());
    ::_exit(127);
  }
  if (capture != nullptr) {
    ::close(pipe_fds[1]);
    char buffer[65536];
    ssize_t n = 0;
    while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) {
      capture->append(buffer, static_cast<std::size_t>(n));
    }
    ::close(pipe_fds[0]);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  *max_rss_kib = std::max(*max_rss_kib, usage.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The environment the runner gives the runtime (docs/behaviour/jobs.md), for `work`.
std::vector<std::string> shapedEnv(const std::string& work) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    const bool dropped = (name.starts_with("TF_") || name.starts_with("KUBE_")) &&
                         name != "TF_IN_AUTOMATION" && name != "TF_INPUT" &&
                         name != "KUBE_NAMESPACE";
    if (!dropped && name != "HOME") {
      out.push_back(entry);
    }
  }
  out.push_back("HOME=" + work);
  out.push_back("TF_DATA_DIR=" + work + "/.terraform");
  return out;
}

std::vector<std::string> backendArgs(const Options& o, const std::string& suffix) {
  return {"secret_suffix=" + suffix, "namespace=" + o.ns, "in_cluster_config=true",
          "labels=" + o.labels};
}

// The runner's sequence for an apply, by hand.
Measure hand(const Options& o, int i) {
  cleanWork();
  const std::string work = kWork;
  const std::string root = work + "/root";
  const auto started = Clock::now();
  Measure m;
  makeDirs(root);
  writeFile(root + "/main.tf.json", readFile("/captf/config/main.tf.json"));
  writeFile(root + "/terraform.tfvars.json", readFile("/captf/config/terraform.tfvars.json"));
  const std::vector<std::string> env = shapedEnv(work);
  const std::string rt = "/captf/runtime";
  const std::vector<std::string> common = {"-input=false", "-no-color", "-lock-timeout=300s"};
  auto with = [&](std::vector<std::string> head, const std::vector<std::string>& tail) {
    head.insert(head.begin() + 2, common.begin(), common.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  std::string captured;
  auto step = [&](const std::vector<std::string>& argv, bool capture) {
    captured.clear();
    const auto step_started = Clock::now();
    const int code = runProcess(argv, env, root, capture ? &captured : nullptr, &m.max_rss_kib);
    std::fprintf(stderr, "hand step %s %.1fms\n", argv[1].c_str(),
                 std::chrono::duration<double, std::milli>(Clock::now() - step_started).count());
    if (code != 0 && !(argv[1] == "plan" && code == 2)) {
      m.exit_code = code;
    }
    return code;
  };
  step({rt, "version", "-json"}, true);
  std::vector<std::string> init_tail;
  for (const std::string& b : backendArgs(o, "hand-" + std::to_string(i))) {
    init_tail.push_back("-backend-config=" + b);
  }
  step(with({rt, "init"}, init_tail), false);
  step({rt, "validate", "-json", "-no-color"}, true);
  if (o.mode == "cluster") {
    const std::string plan = work + "/plan.tfplan";
    const int code = step(with({rt, "plan"}, {"-detailed-exitcode",
                                              "-var-file=terraform.tfvars.json", "-out=" + plan}),
                          false);
    if (code == 2) {
      step({rt, "show", "-json", "-no-color", plan}, true);
      step(with({rt, "apply"}, {plan}), false);
    }
  } else {
    step(with({rt, "apply"}, {"-auto-approve", "-var-file=terraform.tfvars.json"}), false);
  }
  step({rt, "output", "-json"}, true);
  m.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return m;
}

// `reporting`: the runner streams its run reports to o.report_address.
Measure runner(const Options& o, int i, long* runner_self_rss_kib, bool reporting = false) {
  cleanWork();
  const std::string scratch = "/tmp/runner-" + std::to_string(i) + (reporting ? "-on" : "");
  std::vector<std::string> argv = {"/captf/bin/runner",   "run",
                                   "--op=apply",          "--result=" + scratch + ".result",
                                   "--lock-timeout=300s", "--stop-timeout=570s",
                                   "--image=bench"};
  for (const std::string& b :
       backendArgs(o, "runner-" + std::to_string(i) + (reporting ? "-on" : ""))) {
    argv.push_back("--backend-config=" + b);
  }
  if (reporting) {
    argv.push_back("--report-address=" + o.report_address);
    argv.push_back("--event-object=" + o.event_object);
    argv.push_back("--job-name=" + o.job_name);
  }
  if (o.mode == "cluster") {
    argv.emplace_back("--guard-deletes");
    argv.push_back("--inputs-hash=" + o.inputs_hash);
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    env.emplace_back(*e);
  }
  Measure m;
  const std::string log = scratch + ".log";
  const auto started = Clock::now();
  m.exit_code = runProcess(argv, env, "/", nullptr, &m.max_rss_kib, log);
  m.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  // The runner logs its own peak RSS ("run finished" ... peakRssKiB=N).
  const std::string text = readFile(log);
  const auto at = text.rfind("peakRssKiB=");
  if (at != std::string::npos) {
    *runner_self_rss_kib = std::max(*runner_self_rss_kib, std::atol(text.c_str() + at + 11));
  }
  const auto overhead = text.rfind("overheadMs=");
  if (overhead != std::string::npos) {
    m.runner_overhead_ms = std::atof(text.c_str() + overhead + 11);
  }
  std::fputs(text.c_str(), stderr);
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()
             ? 0
             : (v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) {
    sum += x;
  }
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// Reporting off against on, alternating which goes first.
int compareReports(const Options& o) {
  std::vector<double> off_s;
  std::vector<double> on_s;
  std::vector<double> paired_ratio;
  std::vector<double> off_overhead_ms;
  std::vector<double> on_overhead_ms;
  long off_self = 0;
  long on_self = 0;
  int failures = 0;
  for (int i = 0; i < o.iterations; ++i) {
    for (int k = 0; k < 2; ++k) {
      const bool on = (i + k) % 2 == 1;
      const Measure m = runner(o, i, on ? &on_self : &off_self, on);
      failures += m.exit_code != 0 ? 1 : 0;
      (on ? on_s : off_s).push_back(m.seconds);
      if (m.runner_overhead_ms >= 0) {
        (on ? on_overhead_ms : off_overhead_ms).push_back(m.runner_overhead_ms);
      }
      std::printf("{\"iteration\":%d,\"what\":\"%s\",\"seconds\":%.4f,\"exit\":%d}\n", i,
                  on ? "reportsOn" : "reportsOff", m.seconds, m.exit_code);
      std::fflush(stdout);
    }
    paired_ratio.push_back(on_s.back() / off_s.back());
  }
  std::printf("{\"summary\":{\"mode\":\"%s\",\"compare\":\"reports\",\"iterations\":%d,"
              "\"failures\":%d,\"offMedianSeconds\":%.4f,\"onMedianSeconds\":%.4f,"
              "\"wallRatioMedian\":%.4f,\"pairedRatioMedian\":%.4f,"
              "\"offRunnerOverheadMedianMs\":%.1f,\"onRunnerOverheadMedianMs\":%.1f,"
              "\"offRunnerOwnPeakRssKiB\":%ld,\"onRunnerOwnPeakRssKiB\":%ld}}\n",
              o.mode.c_str(), o.iterations, failures, median(off_s), median(on_s),
              median(on_s) / median(off_s), median(paired_ratio), median(off_overhead_ms),
              median(on_overhead_ms), off_self, on_self);
  return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--iterations") {
      o.iterations = std::atoi(value.c_str());
    } else if (flag == "--namespace") {
      o.ns = value;
    } else if (flag == "--mode") {
      o.mode = value;
    } else if (flag == "--inputs-hash") {
      o.inputs_hash = value;
    } else if (flag == "--labels") {
      o.labels = value;
    } else if (flag == "--compare") {
      o.compare = value;
    } else if (flag == "--report-address") {
      o.report_address = value;
    } else if (flag == "--event-object") {
      o.event_object = value;
    } else if (flag == "--job-name") {
      o.job_name = value;
    }
  }
  if (o.compare == "reports") {
    return compareReports(o);
  }
  std::vector<double> hand_s;
  std::vector<double> runner_s;
  long hand_rss = 0;
  long runner_rss = 0;
  long runner_self = 0;
  std::vector<double> overhead_ms;
  std::vector<double> paired_ratio;
  int failures = 0;
  for (int i = 0; i < o.iterations; ++i) {
    // Alternate which goes first.
    for (int k = 0; k < 2; ++k) {
      const bool hand_turn = (i + k) % 2 == 0;
      const Measure m = hand_turn ? hand(o, i) : runner(o, i, &runner_self);
      failures += m.exit_code != 0 ? 1 : 0;
      (hand_turn ? hand_s : runner_s).push_back(m.seconds);
      if (!hand_turn && m.runner_overhead_ms >= 0) {
        overhead_ms.push_back(m.runner_overhead_ms);
      }
      long& rss = hand_turn ? hand_rss : runner_rss;
      rss = std::max(rss, m.max_rss_kib);
      std::printf(
          "{\"iteration\":%d,\"what\":\"%s\",\"seconds\":%.4f,\"maxRssKiB\":%ld,\"exit\":%d}\n", i,
          hand_turn ? "hand" : "runner", m.seconds, m.max_rss_kib, m.exit_code);
      std::fflush(stdout);
    }
    paired_ratio.push_back(runner_s.back() / hand_s.back());
  }
  // runner copy, as the init container runs it.
  std::vector<double> copy_s;
  for (int i = 0; i < 20; ++i) {
    long rss = 0;
    const auto started = Clock::now();
    runProcess({"/captf/bin/runner", "copy", "/tmp/copy-" + std::to_string(i)}, {}, "/", nullptr,
               &rss, "/dev/null");
    copy_s.push_back(std::chrono::duration<double>(Clock::now() - started).count());
  }
  struct stat info {};
  ::stat("/captf/bin/runner", &info);
  std::printf("{\"summary\":{\"mode\":\"%s\",\"iterations\":%d,\"failures\":%d,"
              "\"handMedianSeconds\":%.4f,\"runnerMedianSeconds\":%.4f,"
              "\"handMeanSeconds\":%.4f,\"runnerMeanSeconds\":%.4f,"
              "\"wallRatioMedian\":%.4f,\"pairedRatioMedian\":%.4f,"
              "\"runnerOverheadMedianMs\":%.1f,\"overheadShareOfHandMedian\":%.4f,"
              "\"handMaxRssKiB\":%ld,\"runnerTreeMaxRssKiB\":%ld,"
              "\"rssRatio\":%.4f,\"runnerOwnPeakRssKiB\":%ld,\"copyMedianSeconds\":%.5f,"
              "\"runnerBytes\":%lld}}\n",
              o.mode.c_str(), o.iterations, failures, median(hand_s), median(runner_s),
              mean(hand_s), mean(runner_s), median(runner_s) / median(hand_s), median(paired_ratio),
              median(overhead_ms), median(overhead_ms) / (1000 * median(hand_s)), hand_rss,
              runner_rss, static_cast<double>(runner_rss) / static_cast<double>(hand_rss),
              runner_self, median(copy_s), static_cast<long long>(info.st_size));
  return failures == 0 ? 0 : 1;
}
