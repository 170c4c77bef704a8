#include "runner/options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <functional>
#include <limits>
#include <string_view>

#include <CLI/CLI.hpp>

#include "contract/git_source.h"
#include "contract/logging.h"
#include "contract/result.h"
#include "contract/strings.h"

namespace captf::runner {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using contract::strCat;

absl::Status usage(std::string_view message) {
  return absl::InvalidArgumentError(std::string(message));
}

absl::Status badValue(std::string_view flag, std::string_view value, std::string_view why) {
  return usage(strCat("invalid argument \"", value, "\" for \"--", flag, "\" flag: ", why));
}

// Go's strconv.ParseBool.
std::optional<bool> parseGoBool(std::string_view text) {
  static constexpr std::array<std::string_view, 6> kTrue = {"1", "t", "T", "TRUE", "true", "True"};
  static constexpr std::array<std::string_view, 6> kFalse = {"0",     "f",     "F",
                                                             "FALSE", "false", "False"};
  if (std::find(kTrue.begin(), kTrue.end(), text) != kTrue.end()) {
    return true;
  }
  if (std::find(kFalse.begin(), kFalse.end(), text) != kFalse.end()) {
    return false;
  }
  return std::nullopt;
}

std::optional<std::int64_t> parseInt(std::string_view text) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
  }
  std::int64_t value = 0;
  const auto parsed = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || parsed.ec != std::errc() || parsed.ptr != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// A non-negative int flag.
absl::Status setCount(std::string_view flag, std::string_view value, int& out) {
  const auto parsed = parseInt(value);
  if (!parsed || *parsed < 0 || *parsed > std::numeric_limits<int>::max()) {
    return badValue(flag, value, "want a non-negative integer");
  }
  out = static_cast<int>(*parsed);
  return absl::OkStatus();
}

// A Go duration, finite and not negative.
absl::Status setDuration(std::string_view flag, std::string_view value, absl::Duration& out) {
  absl::Duration duration;
  if (!absl::ParseDuration(std::string(value), &duration) || duration == absl::InfiniteDuration()) {
    return badValue(flag, value, "want a duration such as 300s or 5m0s");
  }
  if (duration < absl::ZeroDuration()) {
    return badValue(flag, value, "the duration is negative");
  }
  out = duration;
  return absl::OkStatus();
}

// A Kubernetes quantity of bytes ("0", "64Ki", "1M").
absl::Status setQuantity(std::string_view flag, std::string_view value, std::int64_t& out) {
  // The manager reads its buffer sizes with the same parser (contract/logging.h).
  const std::optional<std::int64_t> bytes = contract::parseByteQuantity(value);
  if (!bytes) {
    return badValue(flag, value, "want a non-negative quantity such as 0, 64Ki or 1M");
  }
  out = *bytes;
  return absl::OkStatus();
}

absl::Status setFeatureGates(std::string_view value, std::map<std::string, bool>& out) {
  static constexpr std::array<std::string_view, 5> kKnown = {
      "AllAlpha", "AllBeta", "ContextualLogging", "LoggingAlphaOptions", "LoggingBetaOptions"};
  std::size_t start = 0;
  while (start < value.size()) {
    const auto end = std::min(value.find(',', start), value.size());
    const std::string_view entry = value.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) {
      continue;
    }
    const auto equals = entry.find('=');
    if (equals == std::string_view::npos) {
      return badValue("feature-gates", value, strCat("missing bool value for ", entry));
    }
    const std::string_view key = entry.substr(0, equals);
    if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end()) {
      return badValue("feature-gates", value, strCat("unrecognized feature gate: ", key));
    }
    const auto enabled = parseGoBool(entry.substr(equals + 1));
    if (!enabled) {
      return badValue("feature-gates", value, strCat("invalid value of ", entry));
    }
    out[std::string(key)] = *enabled;
  }
  return absl::OkStatus();
}

absl::Status checkVmodule(std::string_view value) {
  std::size_t start = 0;
  while (start < value.size()) {
    const auto end = std::min(value.find(',', start), value.size());
    const std::string_view entry = value.substr(start, end - start);
    start = end + 1;
    const auto equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      return badValue("vmodule", value, "want pattern=N entries separated by commas");
    }
    const auto level = parseInt(entry.substr(equals + 1));
    if (!level || *level < 0 || *level > std::numeric_limits<std::int32_t>::max()) {
      return badValue("vmodule", value, strCat("invalid level in ", entry));
    }
  }
  return absl::OkStatus();
}

bool isIdentifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front())) != 0) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

// <apiVersion>/<kind>/<namespace>/<name>/<uid>, where apiVersion is
// "group/version" or "version".
absl::Status checkEventObject(std::string_view value) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const auto slash = value.find('/', start);
    parts.push_back(
        value.substr(start, slash == std::string_view::npos ? value.npos : slash - start));
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  const bool shape = parts.size() == 5 || parts.size() == 6;
  if (!shape ||
      std::any_of(parts.begin(), parts.end(), [](std::string_view p) { return p.empty(); })) {
    return badValue("event-object", value, "want <apiVersion>/<kind>/<namespace>/<name>/<uid>");
  }
  return absl::OkStatus();
}

// An absolute path without "." or ".." components, trailing '/' dropped.
std::optional<std::string> normalAbsolutePath(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return std::nullopt;
  }
  std::string out;
  std::size_t start = 1;
  while (start <= path.size()) {
    const auto end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty()) {
      continue;
    }
    if (part == "." || part == "..") {
      return std::nullopt;
    }
    out += '/';
    out.append(part);
  }
  return out.empty() ? std::string("/") : out;
}

// A --git-ref: refs/heads/<branch> or refs/tags/<tag>.
absl::Status checkGitRef(std::string_view value) {
  contract::GitRef ref;
  if (value.starts_with("refs/heads/")) {
    ref = contract::GitRef{contract::GitRefKind::kBranch, std::string(value.substr(11))};
  } else if (value.starts_with("refs/tags/")) {
    ref = contract::GitRef{contract::GitRefKind::kTag, std::string(value.substr(10))};
  } else {
    return badValue("git-ref", value, "want refs/heads/<branch> or refs/tags/<tag>");
  }
  if (auto status = contract::validateGitRef(ref); !status.ok()) {
    return badValue("git-ref", value, std::string(status.message()));
  }
  return absl::OkStatus();
}

// The --git-* flags go together, and --module lies inside --git-checkout.
absl::Status checkGitSource(RunOptions& run, bool max_bytes_given) {
  if (!run.git_url) {
    if (!run.git_commit.empty() || !run.git_ref.empty() || !run.git_checkout.empty() ||
        !run.git_credentials.empty() || max_bytes_given) {
      return usage("run: --git-commit, --git-ref, --git-checkout, --git-credentials and "
                   "--git-max-bytes need --git-url");
    }
    return absl::OkStatus();
  }
  if (run.git_commit.empty()) {
    return usage("run: --git-url needs --git-commit");
  }
  if (!contract::isCommitId(run.git_commit)) {
    return badValue("git-commit", run.git_commit, "want a full 40-digit lower-case hex commit id");
  }
  if (!run.git_ref.empty()) {
    if (auto status = checkGitRef(run.git_ref); !status.ok()) {
      return status;
    }
  }
  if (run.git_checkout.empty()) {
    return usage("run: --git-url needs --git-checkout");
  }
  const auto checkout = normalAbsolutePath(run.git_checkout);
  if (!checkout || *checkout == "/") {
    return badValue("git-checkout", run.git_checkout,
                    "want an absolute directory path without . or .. (not /)");
  }
  const auto module = normalAbsolutePath(run.module);
  if (!module || (*module != *checkout && !module->starts_with(*checkout + "/"))) {
    return badValue(
        "module", run.module,
        strCat("with --git-url, --module must be a directory inside --git-checkout ", *checkout));
  }
  run.git_checkout = *checkout;
  run.module = *module;
  return absl::OkStatus();
}

// The command line as pflag reads it, in the form CLI11 binds: pflag's
// lexical rules that CLI11 does not share are applied here, and only here.
// - `--a_b` is `--a-b` (component-base's word-separator normalization).
// - Shorthands as pflag takes them: `-v 2`, `-v2`, `-v=2`, `-hv 2`.
// - A flag that takes a value takes the next argument whatever it is
//   (`--image --` sets "--"); `--flag=` sets an empty value.
// - The first argument that is not a flag is the command; every other one,
//   and everything after `--`, is one of its arguments. CLI11 would instead
//   take any later argument naming a subcommand as that subcommand, split
//   `[a,b]` into two, and treat `++` as a terminator.
// - An unknown flag, or a value missing at the end, is an error at its
//   position: `flags` stop before it, so CLI11 still reports a bad value
//   that comes earlier first, as pflag does.
// Each flag leaves as its long name: `--name` (a bool without a value),
// `--name=value` (a bool with one) or `--name` `value`.
struct PflagArguments {
  std::vector<std::string> flags;
  std::vector<std::string> positionals;
  absl::Status error;
};

bool isBool(const CLI::Option& option) {
  return option.get_expected_max() == 0;
}

PflagArguments readPflagArguments(const CLI::App& app, std::span<const std::string> args) {
  PflagArguments out;
  std::size_t i = 0;
  // Appends `option`, spelled `spelled` in errors, with `value` (inline)
  // or else the next argument; false on an error.
  const auto append = [&](const CLI::Option& option, std::optional<std::string> value,
                          const std::string& spelled) {
    const std::string name = strCat("--", option.get_lnames().front());
    if (isBool(option)) {
      if (value && value->empty()) {
        // CLI11 reads `--flag=` as true; pflag refuses the empty value.
        out.error = badValue(option.get_lnames().front(), "", "want true or false");
        return false;
      }
      out.flags.push_back(value ? strCat(name, "=", *value) : name);
      return true;
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        out.error = usage(strCat("flag needs an argument: ", spelled));
        return false;
      }
      value = args[++i];
    }
    out.flags.push_back(name);
    out.flags.push_back(*std::move(value));
    return true;
  };
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg.front() != '-') {
      out.positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      const std::span<const std::string> rest = args.subspan(i + 1);
      out.positionals.insert(out.positionals.end(), rest.begin(), rest.end());
      break;
    }
    if (arg[1] == '-') {
      const std::string_view body = std::string_view(arg).substr(2);
      const auto equals = body.find('=');
      const std::string_view given = body.substr(0, equals);
      if (given.empty() || given.front() == '-') {
        out.error = usage(strCat("bad flag syntax: ", arg));
        break;
      }
      std::string name(given);
      std::replace(name.begin(), name.end(), '_', '-');
      const CLI::Option* option = app.get_option_no_throw(strCat("--", name));
      if (option == nullptr) {
        out.error = usage(strCat("unknown flag: --", given));
        break;
      }
      std::optional<std::string> value;
      if (equals != std::string_view::npos) {
        value = std::string(body.substr(equals + 1));
      }
      if (!append(*option, std::move(value), strCat("--", given))) {
        break;
      }
      continue;
    }
    // One or more shorthands.
    std::string_view shorthands = std::string_view(arg).substr(1);
    while (!shorthands.empty() && out.error.ok()) {
      const char shorthand = shorthands.front();
      const CLI::Option* option = app.get_option_no_throw(strCat("-", shorthand));
      if (option == nullptr) {
        out.error = usage(strCat("unknown shorthand flag: '", shorthand, "' in ", arg));
        break;
      }
      std::optional<std::string> value;
      if (shorthands.size() > 2 && shorthands[1] == '=') {
        value = std::string(shorthands.substr(2));
        shorthands = {};
      } else if (isBool(*option)) {
        shorthands.remove_prefix(1);
      } else if (shorthands.size() > 1) {
        value = std::string(shorthands.substr(1));
        shorthands = {};
      } else {
        shorthands = {};
      }
      append(*option, std::move(value), strCat("'", shorthand, "' in ", arg));
    }
    if (!out.error.ok()) {
      break;
    }
  }
  return out;
}

// Thrown by a flag's callback, which CLI11 runs as it reads the flag
// (trigger_on_parse): the parse stops at the first bad value, as pflag's
// does. parseCommandLine catches it.
class FlagValueError : public CLI::ParseError {
public:
  explicit FlagValueError(const absl::Status& status)
      : CLI::ParseError("FlagValueError", std::string(status.message()),
                        CLI::ExitCodes::ValidationError) {}
};

enum class Scope { kGlobal, kRun };

constexpr char kGlobalFlags[] = "global flags";
constexpr char kRunFlags[] = "run flags";

// The runner's flags and commands on CLI11, bound to an Invocation. Every
// flag lives on the top-level app, so a run flag may come before `run` and
// a logging flag anywhere, as with cobra; a run flag given to another
// command is refused after the parse. Each flag's callback runs as CLI11
// reads it and checks its value with the same parsers as before (Go bools
// and durations, contract::parseByteQuantity).
class CommandLine {
public:
  explicit CommandLine(Invocation& invocation)
      : inv_(invocation), app_("Runs one operation of a CAPTF Job", "runner") {
    // pflag's -h/--help, which stops the parse where it is read, in place
    // of CLI11's, which is acted on after the parse.
    app_.set_help_flag();
    app_.fallthrough();
    app_.require_subcommand(0, 1);
    app_.get_formatter()->column_width(36);
    copy_ = app_.add_subcommand(
        "copy", "runner copy DEST: copy this executable to DEST (mode 0755, atomically)");
    run_ = app_.add_subcommand("run", "runner run --op=OP [flags]: run one operation of a Job");
    version_ = app_.add_subcommand("version", "runner version: print the version");
    defineGlobalFlags();
    defineRunFlags();
  }

  CLI::App& app() { return app_; }

  absl::Status parse(std::span<const std::string> args) {
    PflagArguments read = readPflagArguments(app_, args);
    // CLI11 takes the arguments last first. The command leads: every flag
    // lives on the top-level app, which the subcommand falls through to.
    std::vector<std::string> tokens(read.flags.rbegin(), read.flags.rend());
    if (!read.positionals.empty()) {
      const std::string& first = read.positionals.front();
      const std::array<CLI::App*, 3> commands = {copy_, run_, version_};
      if (std::any_of(commands.begin(), commands.end(),
                      [&first](const CLI::App* command) { return command->get_name() == first; })) {
        tokens.push_back(first);
      }
    }
    try {
      app_.parse(std::move(tokens));
    } catch (const CLI::CallForHelp&) {
      inv_.command = Command::kHelp;
      return absl::OkStatus();
    } catch (const CLI::ParseError& error) {
      // FlagValueError, or CLI11's own: the arguments are well formed by
      // now, so that would be a bug here.
      return usage(error.what());
    }
    if (!read.error.ok()) {
      return read.error;
    }
    return finish(read.positionals);
  }

private:
  using Setter = std::function<absl::Status(const std::string&)>;

  // --names taking one value of `type` (for the help); `set` checks and
  // stores each use.
  CLI::Option* addValue(Scope scope, const std::string& names, const std::string& type,
                        const std::string& help, Setter set) {
    CLI::Option* option = app_.add_option(
        names,
        [this, scope, names, setter = std::move(set)](const CLI::results_t& results) {
          noteRunFlag(scope, names);
          for (const std::string& value : results) {
            if (absl::Status status = setter(value); !status.ok()) {
              throw FlagValueError(status);
            }
          }
          return true;
        },
        help);
    option->type_name(type)->trigger_on_parse()->group(scope == Scope::kRun ? kRunFlags
                                                                            : kGlobalFlags);
    return option;
  }

  CLI::Option* addString(const std::string& names, std::string& out, const std::string& help) {
    CLI::Option* option =
        addValue(Scope::kRun, names, "string", help, [&out](const std::string& v) {
          out = v;
          return absl::OkStatus();
        });
    if (!out.empty()) {
      option->default_str(out);
    }
    return option;
  }

  // A bool flag: `--name`, or `--name=<Go bool>`.
  CLI::Option* addBool(Scope scope, const std::string& names, const std::string& help,
                       std::function<void(bool)> set) {
    CLI::Option* option = app_.add_option(
        names,
        [this, scope, names, setter = std::move(set)](const CLI::results_t& results) {
          noteRunFlag(scope, names);
          for (const std::string& value : results) {
            const auto parsed = parseGoBool(value);
            if (!parsed) {
              throw FlagValueError(badValue(longName(names), value, "want true or false"));
            }
            setter(*parsed);
          }
          return true;
        },
        help);
    option->expected(0)->trigger_on_parse()->group(scope == Scope::kRun ? kRunFlags : kGlobalFlags);
    return option;
  }

  // "help" of "-h,--help".
  static std::string longName(const std::string& names) {
    return names.substr(names.rfind("--") + 2);
  }

  void noteRunFlag(Scope scope, const std::string& names) {
    if (scope == Scope::kRun) {
      run_flags_.push_back(longName(names));
    }
  }

  void defineGlobalFlags() {
    LoggingOptions& log = inv_.logging;
    addBool(Scope::kGlobal, "-h,--help", "print this help", [](bool help) {
      if (help) {
        throw CLI::CallForHelp();
      }
    });
    addBool(Scope::kGlobal, "--version", "print the version",
            [this](bool version) { version_flag_ = version; });
    // component-base's logging flags.
    addValue(Scope::kGlobal, "--feature-gates", "mapStringBool",
             "ContextualLogging, LoggingAlphaOptions, LoggingBetaOptions, AllAlpha, AllBeta "
             "(key=bool,...)",
             [&log](const std::string& v) { return setFeatureGates(v, log.feature_gates); });
    addValue(Scope::kGlobal, "--log-flush-frequency", "duration",
             "accepted; the runner flushes every line",
             [&log](const std::string& v) {
               return setDuration("log-flush-frequency", v, log.flush_frequency);
             })
        ->default_str(absl::FormatDuration(log.flush_frequency));
    addValue(Scope::kGlobal, "--log-json-info-buffer-size", "quantity",
             "accepted; the runner buffers nothing",
             [&log](const std::string& v) {
               return setQuantity("log-json-info-buffer-size", v, log.json_info_buffer_bytes);
             })
        ->default_str("0");
    addBool(Scope::kGlobal, "--log-json-split-stream",
            "with --logging-format=json: errors to stderr, info to stdout",
            [&log](bool split) { log.json_split_stream = split; });
    addValue(Scope::kGlobal, "--log-text-info-buffer-size", "quantity",
             "accepted; the runner buffers nothing",
             [&log](const std::string& v) {
               return setQuantity("log-text-info-buffer-size", v, log.text_info_buffer_bytes);
             })
        ->default_str("0");
    addBool(Scope::kGlobal, "--log-text-split-stream",
            "with text output: errors to stderr, info to stdout",
            [&log](bool split) { log.text_split_stream = split; });
    addValue(Scope::kGlobal, "--logging-format", "string", "text or json",
             [&log](const std::string& v) {
               if (v == "text") {
                 log.format = LogFormat::kText;
               } else if (v == "json") {
                 log.format = LogFormat::kJson;
               } else {
                 return badValue("logging-format", v, "want text or json");
               }
               return absl::OkStatus();
             })
        ->default_str("text");
    addValue(Scope::kGlobal, "-v,--v", "int", "log verbosity", [&log](const std::string& v) {
      const auto level = parseInt(v);
      if (!level || *level < 0 || *level > std::numeric_limits<std::int32_t>::max()) {
        return badValue("v", v, "want a non-negative integer");
      }
      log.verbosity = static_cast<int>(*level);
      return absl::OkStatus();
    })->default_str("0");
    addValue(Scope::kGlobal, "--vmodule", "string", "pattern=N,... (validated, not applied)",
             [&log](const std::string& v) {
               if (auto status = checkVmodule(v); !status.ok()) {
                 return status;
               }
               log.vmodule = v;
               return absl::OkStatus();
             });
  }

  void defineRunFlags() {
    RunOptions& run = inv_.run;
    addValue(Scope::kRun, "--op", "string",
             "apply, destroy, drift, refresh, restore or plan (required)",
             [&run](const std::string& v) {
               const auto operation = contract::parseOperation(v);
               if (!operation.ok()) {
                 return badValue("op", v, "want apply, destroy, drift, refresh, restore or plan");
               }
               run.operation = *operation;
               return absl::OkStatus();
             });
    // pflag's stringArray: the first use replaces the default, each later
    // one appends.
    addValue(Scope::kRun, "--bin", "stringArray",
             "the runtime, then leading arguments of each of its calls (repeatable)",
             [this, &run](const std::string& v) {
               if (v.empty()) {
                 return badValue("bin", v, "empty");
               }
               if (!bin_set_) {
                 run.bin.clear();
                 bin_set_ = true;
               }
               run.bin.push_back(v);
               return absl::OkStatus();
             })
        ->default_str(run.bin.front());
    addString("--image", run.image, "the source image reference, echoed in the result");
    addString("--module", run.module, "the module directory");
    addString("--providers", run.providers, "provider mirror, used when it exists");
    addString("--workdir", run.workdir, "the working directory");
    addString("--config", run.config, "the per-run Secret");
    addString("--result", run.result, "the result document");
    addValue(Scope::kRun, "--backend-config", "stringArray",
             "key=value, passed to init (repeatable)", [&run](const std::string& v) {
               const auto equals = v.find('=');
               if (equals == std::string::npos ||
                   !isIdentifier(std::string_view(v).substr(0, equals))) {
                 // A bare value would make the runtime read it as a file path.
                 return badValue("backend-config", v, "want key=value");
               }
               run.backend_config.push_back(v);
               return absl::OkStatus();
             });
    addValue(
        Scope::kRun, "--lock-timeout", "duration", "the state lock's wait",
        [&run](const std::string& v) { return setDuration("lock-timeout", v, run.lock_timeout); })
        ->default_str(absl::FormatDuration(run.lock_timeout));
    addValue(
        Scope::kRun, "--stop-timeout", "duration", "time the runtime gets after SIGTERM",
        [&run](const std::string& v) { return setDuration("stop-timeout", v, run.stop_timeout); })
        ->default_str(absl::FormatDuration(run.stop_timeout));
    addString("--force-unlock", run.force_unlock, "lock ID to force-unlock after init");
    addBool(Scope::kRun, "--guard-deletes",
            "refuse a plan that deletes or replaces (needs --inputs-hash)",
            [&run](bool guard) { run.guard_deletes = guard; });
    addString("--inputs-hash", run.inputs_hash, "this apply's inputs hash");
    addString("--allow-deletes-hash", run.allow_deletes_hash,
              "an approval: the inputs hash whose deletes are allowed");
    addString("--expect-plan", run.expect_plan, "the approved plan hash");
    addString("--event-object", run.event_object, "<apiVersion>/<kind>/<namespace>/<name>/<uid>");
    addString("--job-name", run.job_name, "this Job's name (with --event-object)");
    addString("--report-address", run.report_address,
              "host:port of the manager's run reports (needs --job-name)");
    addValue(
        Scope::kRun, "--restore-chunks", "int",
        "backup chunks under <config>/restore (0: count them)",
        [&run](const std::string& v) { return setCount("restore-chunks", v, run.restore_chunks); })
        ->default_str("0");
    addValue(Scope::kRun, "--restore-resources", "int", "the backup's managed-resource count",
             [&run](const std::string& v) {
               int count = 0;
               if (auto status = setCount("restore-resources", v, count); !status.ok()) {
                 return status;
               }
               run.restore_resources = count;
               return absl::OkStatus();
             });
    addValue(Scope::kRun, "--git-url", "string",
             "a Git module source (https:// or ssh://); the fetch step runs first",
             [&run](const std::string& v) {
               auto url = contract::parseGitUrl(v);
               if (!url.ok()) {
                 return badValue("git-url", v, std::string(url.status().message()));
               }
               run.git_url = *std::move(url);
               return absl::OkStatus();
             });
    addString("--git-commit", run.git_commit, "the commit to fetch, 40 hex (with --git-url)");
    addString("--git-ref", run.git_ref,
              "the ref it was resolved from (refs/heads/..., refs/tags/...)");
    addString("--git-checkout", run.git_checkout,
              "where the tree is written, empty or absent (with --git-url)");
    addString("--git-credentials", run.git_credentials, "a mounted Git credentials Secret");
    addValue(Scope::kRun, "--git-max-bytes", "quantity",
             "cap on bytes fetched and on bytes of files",
             [this, &run](const std::string& v) {
               std::int64_t bytes = 0;
               if (auto status = setQuantity("git-max-bytes", v, bytes); !status.ok()) {
                 return status;
               }
               if (bytes <= 0) {
                 return badValue("git-max-bytes", v, "want a positive quantity such as 256Mi");
               }
               run.git_max_bytes = static_cast<std::uint64_t>(bytes);
               git_max_bytes_set_ = true;
               return absl::OkStatus();
             })
        ->default_str(strCat(run.git_max_bytes >> 20, "Mi"));
  }

  // After the flags: the command, its arguments, and the checks between
  // flags.
  absl::Status finish(const std::vector<std::string>& positional) {
    if (version_flag_) {
      inv_.command = Command::kVersion;
      return absl::OkStatus();
    }
    if (positional.empty()) {
      return usage("missing command: want copy, run or version");
    }
    const std::string& command = positional.front();
    const std::span<const std::string> rest(positional.begin() + 1, positional.end());
    if (!run_->parsed() && !run_flags_.empty()) {
      return usage(strCat("unknown flag: --", run_flags_.front(), " (only run takes it)"));
    }
    if (version_->parsed()) {
      inv_.command = Command::kVersion;
      if (!rest.empty()) {
        return usage(strCat("version: unexpected argument \"", rest.front(), "\""));
      }
      return absl::OkStatus();
    }
    if (copy_->parsed()) {
      inv_.command = Command::kCopy;
      if (rest.size() != 1 || rest.front().empty()) {
        return usage("copy: want exactly one argument, the destination path");
      }
      inv_.copy_destination = rest.front();
      return absl::OkStatus();
    }
    if (!run_->parsed()) {
      return usage(strCat("unknown command \"", command, "\": want copy, run or version"));
    }
    inv_.command = Command::kRun;
    RunOptions& run = inv_.run;
    if (!rest.empty()) {
      return usage(strCat("run: unexpected argument \"", rest.front(), "\""));
    }
    if (run.operation == pb::OPERATION_UNSPECIFIED) {
      return usage("run: --op is required");
    }
    if (run.bin.front().front() != '/') {
      return badValue("bin", run.bin.front(), "the runtime must be an absolute path");
    }
    if (run.guard_deletes && run.inputs_hash.empty()) {
      return usage("run: --guard-deletes needs --inputs-hash");
    }
    if (run.event_object.empty() != run.job_name.empty()) {
      return usage("run: --event-object and --job-name go together");
    }
    if (!run.report_address.empty() && run.job_name.empty()) {
      return usage("run: --report-address needs --event-object and --job-name");
    }
    if (auto status = checkGitSource(run, git_max_bytes_set_); !status.ok()) {
      return status;
    }
    if (!run.event_object.empty()) {
      return checkEventObject(run.event_object);
    }
    return absl::OkStatus();
  }

  Invocation& inv_;
  CLI::App app_;
  CLI::App* copy_ = nullptr;
  CLI::App* run_ = nullptr;
  CLI::App* version_ = nullptr;
  // The run flags given, in order, for the error when another command
  // gets one.
  std::vector<std::string> run_flags_;
  bool bin_set_ = false;
  bool git_max_bytes_set_ = false;
  bool version_flag_ = false;
};

} // namespace

ParsedCommandLine parseCommandLine(std::span<const std::string> args) {
  ParsedCommandLine parsed;
  CommandLine command_line(parsed.invocation);
  parsed.status = command_line.parse(args);
  if (!parsed.status.ok()) {
    // The error is reported in the result document: find --result even when
    // it comes after the argument that failed.
    for (std::size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
      const std::string_view arg = args[i];
      if (arg.starts_with("--result=")) {
        parsed.invocation.run.result = std::string(arg.substr(9));
      } else if (arg == "--result" && i + 1 < args.size()) {
        parsed.invocation.run.result = args[++i];
      }
    }
  }
  return parsed;
}

std::string usageText() {
  Invocation defaults;
  CommandLine command_line(defaults);
  return command_line.app().help();
}

} // namespace captf::runner
