#pragma once

// The families a Kubernetes controller serves besides its own, as
// controller-runtime's registry holds them: the Prometheus process collector
// (process_*, with client_golang's names, types and help) computed from /proc
// at every scrape, and component-base's kubernetes_feature_enabled. The go_*
// families of a Go binary do not apply to this C++ one
// (docs/decisions/manager-binary.md#metrics).

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "manager/kube/metrics.h"

namespace captf::kube {

// /proc/<pid>/stat (proc(5)) in the collector's units.
struct ProcessStat {
  double cpu_seconds = 0;              // utime + stime
  double virtual_bytes = 0;            // vsize
  double resident_bytes = 0;           // rss pages times the page size
  double start_seconds_after_boot = 0; // starttime
};

// Parses the text of /proc/<pid>/stat. `ticks_per_second` is
// sysconf(_SC_CLK_TCK) and `page_size` sysconf(_SC_PAGESIZE), both > 0.
// nullopt when the text is not a stat line (too few fields, a field that is
// not a number): the caller leaves the families out rather than guess.
std::optional<ProcessStat> parseProcessStat(std::string_view text, double ticks_per_second,
                                            double page_size);

// The `btime` line of /proc/stat: boot time, seconds since the epoch.
std::optional<double> parseBootTime(std::string_view text);

// Soft limits of /proc/<pid>/limits; -1 for "unlimited", nullopt when the
// line is missing or malformed.
struct ProcessLimits {
  std::optional<double> open_files;    // "Max open files"
  std::optional<double> address_space; // "Max address space", bytes
};
ProcessLimits parseProcessLimits(std::string_view text);

// Registers process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_virtual_memory_max_bytes,
// process_open_fds, process_max_fds and process_start_time_seconds, each
// computed when the registry renders from <proc>/self/stat, <proc>/stat,
// <proc>/self/limits and the entries of <proc>/self/fd. A file that cannot
// be read or parsed leaves its families without samples for that scrape.
// `proc` is /proc, or a directory laid out like it in tests.
void registerProcessMetrics(MetricsRegistry& registry, const std::filesystem::path& proc = "/proc");

// A feature gate as component-base describes it: `stage` is its pre-release
// ("ALPHA", "BETA", or "" once GA).
struct FeatureGate {
  std::string name;
  std::string stage;
  bool enabled = false;
};

// Registers kubernetes_feature_enabled{name, stage} with one series per
// gate, 1 when enabled and 0 when not.
void registerFeatureGates(MetricsRegistry& registry, const std::vector<FeatureGate>& gates);

} // namespace captf::kube
