#pragma once

// The runner's command line (docs/runner.md), read with CLI11 and Go pflag
// semantics, since the manager builds it the way the original Go runner
// took it: `--flag=value` or `--flag value`, bools as `--flag` or
// `--flag=false`, repeatable string arrays whose first use replaces the
// default, Go durations ("5m0s", "570s"), `--` ending the flags, `--a_b`
// read as `--a-b`, and the component-base logging flags accepted anywhere
// on the line. The help text is CLI11's.
//
//   runner copy DEST
//   runner run --op=<apply|destroy|drift|refresh|restore|plan> [flags]
//   runner version
//
// Exit codes: 0 success, 1 failure, 2 usage (unknown --op, bad flag,
// unexpected arguments, invalid logging flags).

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "captf/runner/v1alpha1/result.pb.h"
#include "contract/git_source.h"
#include "runner/logging.h"

namespace captf::runner {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

enum class Command { kNone, kRun, kCopy, kVersion, kHelp };

// component-base's logging flags. The runner honours the format, -v and the
// split streams; the buffer sizes, flush frequency, vmodule and feature
// gates are validated as component-base does and otherwise have no effect
// (the runner flushes every line).
struct LoggingOptions {
  LogFormat format = LogFormat::kText;
  int verbosity = 0;
  std::string vmodule;
  std::map<std::string, bool> feature_gates;
  absl::Duration flush_frequency = absl::Seconds(5);
  std::int64_t json_info_buffer_bytes = 0;
  std::int64_t text_info_buffer_bytes = 0;
  bool json_split_stream = false;
  bool text_split_stream = false;

  bool splitStream() const {
    return format == LogFormat::kJson ? json_split_stream : text_split_stream;
  }
};

struct RunOptions {
  captf::runner::v1alpha1::Operation operation = captf::runner::v1alpha1::OPERATION_UNSPECIFIED;
  // --bin: the runtime command; the first element is executed directly, the
  // others are leading arguments before each step's own.
  std::vector<std::string> bin = {"/captf/runtime"};
  std::string image;
  std::string module = "/captf/module";
  std::string providers = "/captf/providers";
  std::string workdir = "/captf/work";
  std::string config = "/captf/config";
  std::string result = "/dev/termination-log";
  // Each `key=value`, passed to init as -backend-config=key=value.
  std::vector<std::string> backend_config;
  absl::Duration lock_timeout = absl::Minutes(5);
  absl::Duration stop_timeout = absl::Minutes(1);
  // After an apply or destroy whose runtime could not save the state (the
  // API server away), `state push errored.tfstate` is tried this many times,
  // this far apart (docs/behaviour/jobs.md#execution-sequence). Not flags.
  int errored_state_push_attempts = 24;
  absl::Duration errored_state_push_delay = absl::Seconds(5);
  std::string force_unlock;
  bool guard_deletes = false;
  std::string inputs_hash;
  std::string allow_deletes_hash;
  std::string expect_plan;
  std::string event_object;
  std::string job_name;
  // --report-address: host:port of the manager's run reports (needs
  // --event-object and --job-name); the token and CA are the per-run
  // Secret's report-token and report-ca.crt (contract/report.h).
  std::string report_address;
  // 0: as many as <config>/restore holds.
  int restore_chunks = 0;
  // Unset when the flag was not given.
  std::optional<int> restore_resources;

  // A Git module source (--git-url ...): the `fetch` step writes the tree
  // of `git_commit` into `git_checkout` before anything else runs, and
  // `module` is a directory inside it. Parsed with contract::parseGitUrl
  // (https and ssh only); tests may set any URL libgit2 takes here.
  std::optional<contract::GitUrl> git_url;
  std::string git_commit;      // 40 hex
  std::string git_ref;         // refs/heads/<name> or refs/tags/<name>: the hint
  std::string git_checkout;    // absolute, lexically normal; the emptyDir
  std::string git_credentials; // a mounted Secret (contract/git.h keys), or ""
  std::uint64_t git_max_bytes = 256ull << 20;
};

struct Invocation {
  Command command = Command::kNone;
  LoggingOptions logging;
  RunOptions run;
  std::string copy_destination;
};

struct ParsedCommandLine {
  // As far as parsing got: on a usage error `invocation.run.result` still
  // holds any --result seen, so the run can report the error there.
  Invocation invocation;
  // InvalidArgument naming the offending argument on a usage error.
  absl::Status status;
};

// `args` excludes argv[0]. --help/-h give Command::kHelp; --version gives
// Command::kVersion.
ParsedCommandLine parseCommandLine(std::span<const std::string> args);

// The usage text printed for --help and after a usage error: CLI11's help
// of every command and flag, with types and defaults.
std::string usageText();

} // namespace captf::runner
