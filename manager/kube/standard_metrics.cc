#include "manager/kube/standard_metrics.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <system_error>
#include <utility>

#include <unistd.h>

namespace captf::kube {
namespace {

using Samples = std::vector<std::pair<std::vector<std::string>, double>>;

// Fields of /proc/<pid>/stat counted from the state (field 3 in proc(5)),
// the first one after the command name's closing parenthesis.
constexpr size_t kUtime = 14 - 3;
constexpr size_t kStime = 15 - 3;
constexpr size_t kStarttime = 22 - 3;
constexpr size_t kVsize = 23 - 3;
constexpr size_t kRss = 24 - 3;

std::optional<std::string> readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return std::nullopt;
  }
  return text;
}

std::optional<ProcessStat> readStat(const std::filesystem::path& proc) {
  std::optional<std::string> text = readFile(proc / "self" / "stat");
  if (!text) {
    return std::nullopt;
  }
  return parseProcessStat(*text, static_cast<double>(sysconf(_SC_CLK_TCK)),
                          static_cast<double>(sysconf(_SC_PAGESIZE)));
}

ProcessLimits readLimits(const std::filesystem::path& proc) {
  std::optional<std::string> text = readFile(proc / "self" / "limits");
  return text ? parseProcessLimits(*text) : ProcessLimits{};
}

void append(Samples& samples, std::optional<double> value) {
  if (value) {
    samples.push_back({{}, *value});
  }
}

// The words of `text` between blanks and line ends.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (true) {
    at = text.find_first_not_of(" \t\n", at);
    if (at == std::string_view::npos) {
      return out;
    }
    const size_t end = std::min(text.find_first_of(" \t\n", at), text.size());
    out.push_back(text.substr(at, end - at));
    at = end;
  }
}

// `text` as a whole decimal number of type T; nullopt for anything else
// (a sign on an unsigned type, trailing characters, out of range).
template <typename T> std::optional<T> number(std::string_view text) {
  T value{};
  const auto [ptr, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

// The lines of `text`.
std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    out.push_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return out;
}

// A soft limit's value: "unlimited" is -1.
std::optional<double> limitValue(std::string_view text) {
  if (text == "unlimited") {
    return -1;
  }
  const std::optional<uint64_t> value = number<uint64_t>(text);
  return value ? std::optional<double>(static_cast<double>(*value)) : std::nullopt;
}

} // namespace

std::optional<ProcessStat> parseProcessStat(std::string_view text, double ticks_per_second,
                                            double page_size) {
  // The command name (field 2) is in parentheses and may hold spaces and
  // parentheses itself: the fields start after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0 || page_size <= 0) {
    return std::nullopt;
  }
  const std::vector<std::string_view> fields = words(text.substr(close + 1));
  if (fields.size() <= kRss) {
    return std::nullopt;
  }
  const std::optional<uint64_t> utime = number<uint64_t>(fields[kUtime]);
  const std::optional<uint64_t> stime = number<uint64_t>(fields[kStime]);
  const std::optional<uint64_t> starttime = number<uint64_t>(fields[kStarttime]);
  const std::optional<uint64_t> vsize = number<uint64_t>(fields[kVsize]);
  const std::optional<int64_t> rss = number<int64_t>(fields[kRss]);
  if (!utime || !stime || !starttime || !vsize || !rss) {
    return std::nullopt;
  }
  ProcessStat stat;
  stat.cpu_seconds = (static_cast<double>(*utime) + static_cast<double>(*stime)) / ticks_per_second;
  stat.virtual_bytes = static_cast<double>(*vsize);
  stat.resident_bytes = static_cast<double>(*rss) * page_size;
  stat.start_seconds_after_boot = static_cast<double>(*starttime) / ticks_per_second;
  return stat;
}

std::optional<double> parseBootTime(std::string_view text) {
  for (std::string_view line : lines(text)) {
    if (line.starts_with("btime ")) {
      const std::optional<uint64_t> seconds = number<uint64_t>(line.substr(6));
      return seconds ? std::optional<double>(static_cast<double>(*seconds)) : std::nullopt;
    }
  }
  return std::nullopt;
}

ProcessLimits parseProcessLimits(std::string_view text) {
  // "Max open files            1024                 1048576              files"
  // The name column is padded; the soft limit is the first word after it.
  static constexpr std::string_view kOpenFiles = "Max open files ";
  static constexpr std::string_view kAddressSpace = "Max address space ";
  ProcessLimits limits;
  for (std::string_view line : lines(text)) {
    std::optional<double>* target = nullptr;
    if (line.starts_with(kOpenFiles)) {
      target = &limits.open_files;
      line.remove_prefix(kOpenFiles.size());
    } else if (line.starts_with(kAddressSpace)) {
      target = &limits.address_space;
      line.remove_prefix(kAddressSpace.size());
    } else {
      continue;
    }
    const std::vector<std::string_view> soft_hard_units = words(line);
    *target = soft_hard_units.empty() ? std::nullopt : limitValue(soft_hard_units.front());
  }
  return limits;
}

void registerProcessMetrics(MetricsRegistry& registry, const std::filesystem::path& proc) {
  // Each family reads its files when rendered: no thread, no stale value.
  const auto from_stat = [proc](std::function<double(const ProcessStat&)> pick) {
    return [proc, pick = std::move(pick)](Samples& samples) {
      if (std::optional<ProcessStat> stat = readStat(proc)) {
        samples.push_back({{}, pick(*stat)});
      }
    };
  };
  registry.counterFunc("process_cpu_seconds_total",
                       "Total user and system CPU time spent in seconds.", {},
                       from_stat([](const ProcessStat& s) { return s.cpu_seconds; }));
  registry.gaugeFunc("process_resident_memory_bytes", "Resident memory size in bytes.", {},
                     from_stat([](const ProcessStat& s) { return s.resident_bytes; }));
  registry.gaugeFunc("process_virtual_memory_bytes", "Virtual memory size in bytes.", {},
                     from_stat([](const ProcessStat& s) { return s.virtual_bytes; }));
  registry.gaugeFunc("process_start_time_seconds",
                     "Start time of the process since unix epoch in seconds.", {},
                     [proc](Samples& samples) {
                       std::optional<ProcessStat> stat = readStat(proc);
                       std::optional<std::string> system = readFile(proc / "stat");
                       std::optional<double> boot = system ? parseBootTime(*system) : std::nullopt;
                       if (stat && boot) {
                         samples.push_back({{}, *boot + stat->start_seconds_after_boot});
                       }
                     });
  registry.gaugeFunc("process_virtual_memory_max_bytes",
                     "Maximum amount of virtual memory available in bytes.", {},
                     [proc](Samples& samples) { append(samples, readLimits(proc).address_space); });
  registry.gaugeFunc("process_max_fds", "Maximum number of open file descriptors.", {},
                     [proc](Samples& samples) { append(samples, readLimits(proc).open_files); });
  registry.gaugeFunc(
      "process_open_fds", "Number of open file descriptors.", {}, [proc](Samples& samples) {
        std::error_code error;
        std::filesystem::directory_iterator it(proc / "self" / "fd", error);
        double count = 0;
        for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
          ++count;
        }
        if (!error) {
          samples.push_back({{}, count});
        }
      });
}

void registerFeatureGates(MetricsRegistry& registry, const std::vector<FeatureGate>& gates) {
  // component-base's k8s.io/component-base/metrics/prometheus/feature, BETA.
  GaugeFamily& family = registry.gauge(
      "kubernetes_feature_enabled",
      "[BETA] This metric records the data about the stage and enablement of a k8s feature.",
      {"name", "stage"});
  for (const FeatureGate& gate : gates) {
    family.withLabels({gate.name, gate.stage}).set(gate.enabled ? 1 : 0);
  }
}

} // namespace captf::kube
