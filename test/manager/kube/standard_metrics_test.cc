// The families beside the manager's own (manager/kube/standard_metrics.h):
// the process collector's parsers on fixed /proc text, well-formed or not,
// its families read from a directory laid out like /proc at every render,
// and kubernetes_feature_enabled.
#include <array>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "manager/kube/metrics.h"
#include "manager/kube/standard_metrics.h"

namespace captf::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A stat line (proc(5)) whose command name holds a space and a ')': utime
// 150, stime 50, starttime 1234, vsize 104857600, rss 2560 pages.
constexpr char kStat[] =
    "4242 (mana ger) x) S 1 4242 4242 0 -1 4194560 9000 0 0 0 150 50 0 0 20 0 12 0 1234 "
    "104857600 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";

constexpr char kLimits[] =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max open files            1024                 1048576              files     \n"
    "Max address space         unlimited            unlimited            bytes     \n";

constexpr char kSystemStat[] = "cpu  1 2 3 4\nintr 5\nbtime 1700000000\nprocesses 77\n";

TEST(ProcessStatTest, ParsesTheFieldsAfterTheLastParenthesis) {
  const std::optional<ProcessStat> stat = parseProcessStat(kStat, 100, 4096);
  ASSERT_TRUE(stat.has_value());
  EXPECT_DOUBLE_EQ(stat->cpu_seconds, 2.0);
  EXPECT_DOUBLE_EQ(stat->virtual_bytes, 104857600);
  EXPECT_DOUBLE_EQ(stat->resident_bytes, 2560.0 * 4096);
  EXPECT_DOUBLE_EQ(stat->start_seconds_after_boot, 12.34);
}

TEST(ProcessStatTest, MalformedTextIsNoStat) {
  for (const char* text : {
           "",
           "4242 manager S 1",                                           // no parenthesis
           "4242 (manager) S 1 4242 4242 0 -1 4194560 9000 0 0 0 150\n", // truncated
           "4242 (manager) S 1 4242 4242 0 -1 4194560 9000 0 0 0 1x0 50 0 0 20 0 12 0 1234 "
           "104857600 2560\n", // utime not a number
           "4242 (manager) S 1 4242 4242 0 -1 4194560 9000 0 0 0 150 50 0 0 20 0 12 0 -5 "
           "104857600 2560\n", // negative starttime
           "4242 (manager) S 1 4242 4242 0 -1 4194560 9000 0 0 0 150 50 0 0 20 0 12 0 1234 "
           "99999999999999999999999 2560\n", // vsize out of range
           ")))",
       }) {
    EXPECT_FALSE(parseProcessStat(text, 100, 4096).has_value()) << text;
  }
  EXPECT_FALSE(parseProcessStat(kStat, 0, 4096).has_value());
}

TEST(ProcessStatTest, BootTimeIsTheBtimeLine) {
  EXPECT_EQ(parseBootTime(kSystemStat), 1700000000);
  EXPECT_FALSE(parseBootTime("cpu 1 2 3\n").has_value());
  EXPECT_FALSE(parseBootTime("btime soon\n").has_value());
  EXPECT_FALSE(parseBootTime("").has_value());
}

TEST(ProcessLimitsTest, SoftLimitsWithUnlimitedAsMinusOne) {
  const ProcessLimits limits = parseProcessLimits(kLimits);
  EXPECT_EQ(limits.open_files, 1024);
  EXPECT_EQ(limits.address_space, -1);
  const ProcessLimits capped = parseProcessLimits(
      "Max open files            65536                65536                files\n"
      "Max address space         8589934592           unlimited            bytes\n");
  EXPECT_EQ(capped.open_files, 65536);
  EXPECT_EQ(capped.address_space, 8589934592.0);
}

TEST(ProcessLimitsTest, MissingOrMalformedLinesAreNoLimit) {
  const ProcessLimits none = parseProcessLimits("");
  EXPECT_FALSE(none.open_files.has_value());
  EXPECT_FALSE(none.address_space.has_value());
  const ProcessLimits bad = parseProcessLimits("Max open files            lots   lots   files\n"
                                               "Max address space\n");
  EXPECT_FALSE(bad.open_files.has_value());
  EXPECT_FALSE(bad.address_space.has_value());
}

// A directory laid out like /proc, removed at the end of the test.
class FakeProc {
public:
  FakeProc() {
    root_ = fs::temp_directory_path() /
            ("captf-fake-proc-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(root_ / "self" / "fd");
  }
  ~FakeProc() { fs::remove_all(root_); }
  FakeProc(const FakeProc&) = delete;
  FakeProc& operator=(const FakeProc&) = delete;
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(root_ / name) << text;
  }
  const fs::path& root() const { return root_; }

private:
  fs::path root_;
  static inline int counter_ = 0; // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
};

TEST(ProcessMetricsTest, EveryFamilyIsReadFromProcWhenRendered) {
  FakeProc proc;
  MetricsRegistry registry;
  registerProcessMetrics(registry, proc.root());
  // Nothing to read yet: the families are there, without samples.
  std::string text = registry.render();
  EXPECT_THAT(text, HasSubstr("# HELP process_cpu_seconds_total Total user and system CPU time "
                              "spent in seconds.\n# TYPE process_cpu_seconds_total counter\n"));
  EXPECT_THAT(text, Not(HasSubstr("\nprocess_resident_memory_bytes ")));
  EXPECT_THAT(text, HasSubstr("process_open_fds 0\n"));

  proc.write("self/stat", kStat);
  proc.write("self/limits", kLimits);
  proc.write("stat", kSystemStat);
  for (const char* fd : {"0", "1", "2"}) {
    proc.write(std::string("self/fd/") + fd, "");
  }
  text = registry.render();
  const auto ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const auto page = static_cast<double>(sysconf(_SC_PAGESIZE));
  // The registry's text of a value: the shortest that reads back the same.
  const auto sample = [](const std::string& name, double value) {
    std::array<char, 32> buffer{};
    const auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    EXPECT_EQ(error, std::errc());
    return name + " " + std::string(buffer.data(), end) + "\n";
  };
  EXPECT_THAT(text, HasSubstr(sample("process_cpu_seconds_total", 200 / ticks)));
  EXPECT_THAT(text, HasSubstr(sample("process_resident_memory_bytes", 2560 * page)));
  EXPECT_THAT(text, HasSubstr("process_virtual_memory_bytes 104857600\n"));
  EXPECT_THAT(text, HasSubstr("process_virtual_memory_max_bytes -1\n"));
  EXPECT_THAT(text, HasSubstr("process_max_fds 1024\n"));
  EXPECT_THAT(text, HasSubstr("process_open_fds 3\n"));
  EXPECT_THAT(text, HasSubstr(sample("process_start_time_seconds", 1700000000 + 1234 / ticks)));

  // Malformed files: their families lose their samples, the others stay.
  proc.write("self/stat", "garbage");
  proc.write("stat", "no boot time here");
  text = registry.render();
  for (const char* family : {"process_cpu_seconds_total ", "process_resident_memory_bytes ",
                             "process_virtual_memory_bytes ", "process_start_time_seconds "}) {
    EXPECT_THAT(text, Not(HasSubstr(std::string("\n") + family))) << family;
  }
  EXPECT_THAT(text, HasSubstr("process_max_fds 1024\n"));
  EXPECT_THAT(text, HasSubstr("process_open_fds 3\n"));
}

TEST(ProcessMetricsTest, ThisProcessHasResidentMemoryAndOpenFiles) {
  MetricsRegistry registry;
  registerProcessMetrics(registry);
  const std::string text = registry.render();
  for (const char* family :
       {"process_cpu_seconds_total ", "process_resident_memory_bytes ",
        "process_virtual_memory_bytes ", "process_virtual_memory_max_bytes ", "process_open_fds ",
        "process_max_fds ", "process_start_time_seconds "}) {
    EXPECT_THAT(text, HasSubstr(std::string("\n") + family)) << family << "\n" << text;
  }
  EXPECT_THAT(text, Not(HasSubstr("process_resident_memory_bytes 0\n")));
}

TEST(FeatureGateMetricsTest, OneSeriesPerGateWithItsStage) {
  MetricsRegistry registry;
  registerFeatureGates(registry, {{"ContextualLogging", "BETA", true},
                                  {"LoggingAlphaOptions", "ALPHA", false},
                                  {"SomethingGA", "", true}});
  EXPECT_EQ(registry.render(),
            "# HELP kubernetes_feature_enabled [BETA] This metric records the data about the "
            "stage and enablement of a k8s feature.\n"
            "# TYPE kubernetes_feature_enabled gauge\n"
            "kubernetes_feature_enabled{name=\"ContextualLogging\",stage=\"BETA\"} 1\n"
            "kubernetes_feature_enabled{name=\"LoggingAlphaOptions\",stage=\"ALPHA\"} 0\n"
            "kubernetes_feature_enabled{name=\"SomethingGA\",stage=\"\"} 1\n");
}

} // namespace
} // namespace captf::kube
