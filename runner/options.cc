#include "runner/options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <functional>
#include <limits>
#include <string_view>

#include "contract/git_source.h"
#include "contract/logging.h"
#include "contract/result.h"
#include "contract/strings.h"

namespace captf::runner {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using contract::strCat;

enum class Scope { kGlobal, kRun };
enum class Arity { kValue, kBool };

struct FlagHandler {
  Scope scope;
  Arity arity;
  std::function<absl::Status(std::string_view)> set;
};

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

class Parser {
public:
  explicit Parser(Invocation& invocation) : inv_(invocation) { define(); }

  absl::Status parse(std::span<const std::string> args) {
    std::vector<std::string_view> positional;
    bool flags_done = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string_view arg = args[i];
      if (flags_done || arg.size() < 2 || arg.front() != '-') {
        positional.push_back(arg);
        continue;
      }
      if (arg == "--") {
        flags_done = true;
        continue;
      }
      std::string_view name;
      std::optional<std::string_view> value;
      if (arg.starts_with("--")) {
        name = arg.substr(2);
        if (const auto equals = name.find('='); equals != std::string_view::npos) {
          value = name.substr(equals + 1);
          name = name.substr(0, equals);
        }
      } else {
        // Shorthands: -v 2, -v=2, -v2, -h.
        const char shorthand = arg[1];
        if (shorthand == 'h' && arg.size() == 2) {
          name = "help";
        } else if (shorthand == 'v') {
          name = "v";
          if (arg.size() > 2) {
            value = arg.substr(arg[2] == '=' ? 3 : 2);
          }
        } else {
          return usage(
              strCat("unknown shorthand flag: '", std::string(1, shorthand), "' in ", arg));
        }
      }
      const auto handler = handlers_.find(name);
      if (handler == handlers_.end()) {
        return usage(strCat("unknown flag: --", name));
      }
      if (!value) {
        if (handler->second.arity == Arity::kBool) {
          value = "true";
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          return usage(strCat("flag needs an argument: --", name));
        }
      }
      if (handler->second.scope == Scope::kRun) {
        run_flags_.push_back(std::string(name));
      }
      if (auto status = handler->second.set(*value); !status.ok()) {
        return status;
      }
      if (inv_.command == Command::kHelp) {
        return absl::OkStatus();
      }
    }
    return finish(positional);
  }

private:
  void add(std::string_view name, Scope scope, Arity arity,
           std::function<absl::Status(std::string_view)> set) {
    handlers_.emplace(name, FlagHandler{scope, arity, std::move(set)});
  }

  void addString(std::string_view name, std::string& out) {
    add(name, Scope::kRun, Arity::kValue, [&out](std::string_view v) {
      out = std::string(v);
      return absl::OkStatus();
    });
  }

  void addBool(std::string_view name, Scope scope, bool& out) {
    add(name, scope, Arity::kBool, [name, &out](std::string_view v) {
      const auto parsed = parseGoBool(v);
      if (!parsed) {
        return badValue(name, v, "want true or false");
      }
      out = *parsed;
      return absl::OkStatus();
    });
  }

  void define() {
    LoggingOptions& log = inv_.logging;
    RunOptions& run = inv_.run;
    // component-base logging flags.
    add("feature-gates", Scope::kGlobal, Arity::kValue,
        [&log](std::string_view v) { return setFeatureGates(v, log.feature_gates); });
    add("log-flush-frequency", Scope::kGlobal, Arity::kValue, [&log](std::string_view v) {
      return setDuration("log-flush-frequency", v, log.flush_frequency);
    });
    add("log-json-info-buffer-size", Scope::kGlobal, Arity::kValue, [&log](std::string_view v) {
      return setQuantity("log-json-info-buffer-size", v, log.json_info_buffer_bytes);
    });
    add("log-text-info-buffer-size", Scope::kGlobal, Arity::kValue, [&log](std::string_view v) {
      return setQuantity("log-text-info-buffer-size", v, log.text_info_buffer_bytes);
    });
    addBool("log-json-split-stream", Scope::kGlobal, log.json_split_stream);
    addBool("log-text-split-stream", Scope::kGlobal, log.text_split_stream);
    add("logging-format", Scope::kGlobal, Arity::kValue, [&log](std::string_view v) {
      if (v == "text") {
        log.format = LogFormat::kText;
      } else if (v == "json") {
        log.format = LogFormat::kJson;
      } else {
        return badValue("logging-format", v, "want text or json");
      }
      return absl::OkStatus();
    });
    add("v", Scope::kGlobal, Arity::kValue, [&log](std::string_view v) {
      const auto level = parseInt(v);
      if (!level || *level < 0 || *level > std::numeric_limits<std::int32_t>::max()) {
        return badValue("v", v, "want a non-negative integer");
      }
      log.verbosity = static_cast<int>(*level);
      return absl::OkStatus();
    });
    add("vmodule", Scope::kGlobal, Arity::kValue, [&log](std::string_view v) {
      if (auto status = checkVmodule(v); !status.ok()) {
        return status;
      }
      log.vmodule = std::string(v);
      return absl::OkStatus();
    });
    add("version", Scope::kGlobal, Arity::kBool, [this](std::string_view v) {
      const auto parsed = parseGoBool(v);
      if (!parsed) {
        return badValue("version", v, "want true or false");
      }
      version_flag_ = *parsed;
      return absl::OkStatus();
    });
    add("help", Scope::kGlobal, Arity::kBool, [this](std::string_view v) {
      if (parseGoBool(v).value_or(true)) {
        inv_.command = Command::kHelp;
      }
      return absl::OkStatus();
    });

    // run flags.
    add("op", Scope::kRun, Arity::kValue, [&run](std::string_view v) {
      const auto operation = contract::parseOperation(v);
      if (!operation.ok()) {
        return usage(strCat("invalid argument \"", v,
                            "\" for \"--op\" flag: want apply, destroy, drift, refresh, restore "
                            "or plan"));
      }
      run.operation = *operation;
      return absl::OkStatus();
    });
    add("bin", Scope::kRun, Arity::kValue, [this, &run](std::string_view v) {
      if (v.empty()) {
        return badValue("bin", v, "empty");
      }
      if (!bin_set_) {
        run.bin.clear();
        bin_set_ = true;
      }
      run.bin.emplace_back(v);
      return absl::OkStatus();
    });
    add("backend-config", Scope::kRun, Arity::kValue, [&run](std::string_view v) {
      const auto equals = v.find('=');
      if (equals == std::string_view::npos || !isIdentifier(v.substr(0, equals))) {
        // A bare value would make the runtime read it as a file path.
        return badValue("backend-config", v, "want key=value");
      }
      run.backend_config.emplace_back(v);
      return absl::OkStatus();
    });
    addString("image", run.image);
    addString("module", run.module);
    addString("providers", run.providers);
    addString("workdir", run.workdir);
    addString("config", run.config);
    addString("result", run.result);
    addString("force-unlock", run.force_unlock);
    addString("inputs-hash", run.inputs_hash);
    addString("allow-deletes-hash", run.allow_deletes_hash);
    addString("expect-plan", run.expect_plan);
    addString("event-object", run.event_object);
    addString("job-name", run.job_name);
    addString("report-address", run.report_address);
    addBool("guard-deletes", Scope::kRun, run.guard_deletes);
    add("lock-timeout", Scope::kRun, Arity::kValue,
        [&run](std::string_view v) { return setDuration("lock-timeout", v, run.lock_timeout); });
    add("stop-timeout", Scope::kRun, Arity::kValue,
        [&run](std::string_view v) { return setDuration("stop-timeout", v, run.stop_timeout); });
    add("git-url", Scope::kRun, Arity::kValue, [&run](std::string_view v) {
      auto url = contract::parseGitUrl(v);
      if (!url.ok()) {
        return badValue("git-url", v, std::string(url.status().message()));
      }
      run.git_url = *std::move(url);
      return absl::OkStatus();
    });
    addString("git-commit", run.git_commit);
    addString("git-ref", run.git_ref);
    addString("git-checkout", run.git_checkout);
    addString("git-credentials", run.git_credentials);
    add("git-max-bytes", Scope::kRun, Arity::kValue, [this, &run](std::string_view v) {
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
    });
    add("restore-chunks", Scope::kRun, Arity::kValue,
        [&run](std::string_view v) { return setCount("restore-chunks", v, run.restore_chunks); });
    add("restore-resources", Scope::kRun, Arity::kValue, [&run](std::string_view v) {
      int count = 0;
      if (auto status = setCount("restore-resources", v, count); !status.ok()) {
        return status;
      }
      run.restore_resources = count;
      return absl::OkStatus();
    });
  }

  absl::Status finish(const std::vector<std::string_view>& positional) {
    if (version_flag_) {
      inv_.command = Command::kVersion;
      return absl::OkStatus();
    }
    if (positional.empty()) {
      return usage("missing command: want copy, run or version");
    }
    const std::string_view command = positional.front();
    const std::span<const std::string_view> rest(positional.begin() + 1, positional.end());
    if (command != "run" && !run_flags_.empty()) {
      return usage(strCat("unknown flag: --", run_flags_.front(), " (only run takes it)"));
    }
    if (command == "version") {
      inv_.command = Command::kVersion;
      if (!rest.empty()) {
        return usage(strCat("version: unexpected argument \"", rest.front(), "\""));
      }
      return absl::OkStatus();
    }
    if (command == "copy") {
      inv_.command = Command::kCopy;
      if (rest.size() != 1 || rest.front().empty()) {
        return usage("copy: want exactly one argument, the destination path");
      }
      inv_.copy_destination = std::string(rest.front());
      return absl::OkStatus();
    }
    if (command != "run") {
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
  std::map<std::string, FlagHandler, std::less<>> handlers_;
  std::vector<std::string> run_flags_;
  bool bin_set_ = false;
  bool git_max_bytes_set_ = false;
  bool version_flag_ = false;
};

} // namespace

ParsedCommandLine parseCommandLine(std::span<const std::string> args) {
  ParsedCommandLine parsed;
  Parser parser(parsed.invocation);
  parsed.status = parser.parse(args);
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
  return R"(Usage:
  runner copy DEST         copy this executable to DEST (mode 0755, atomically)
  runner run --op=OP ...   run one operation of a CAPTF Job
  runner version           print the version

run flags:
  --op string                  apply, destroy, drift, refresh, restore or plan (required)
  --bin stringArray            the runtime (default [/captf/runtime])
  --image string               the source image reference, echoed in the result
  --module string              (default "/captf/module")
  --providers string           provider mirror, used when it exists (default "/captf/providers")
  --workdir string             (default "/captf/work")
  --config string              the per-run Secret (default "/captf/config")
  --result string              the result document (default "/dev/termination-log")
  --backend-config stringArray key=value, passed to init
  --lock-timeout duration      (default 5m0s)
  --stop-timeout duration      time the runtime gets after SIGTERM (default 1m0s)
  --force-unlock string        lock ID to force-unlock after init
  --guard-deletes              refuse a plan that deletes or replaces (needs --inputs-hash)
  --inputs-hash string
  --allow-deletes-hash string  an approval: the inputs hash whose deletes are allowed
  --expect-plan string         the approved plan hash
  --event-object string        <apiVersion>/<kind>/<namespace>/<name>/<uid>
  --job-name string
  --report-address string      host:port of the manager's run reports (needs --job-name)
  --restore-chunks int         backup chunks under <config>/restore (0: count them)
  --restore-resources int      the backup's managed-resource count
  --git-url string             a Git module source (https:// or ssh://); the fetch step runs first
  --git-commit string          the commit to fetch, 40 hex (required with --git-url)
  --git-ref string             the ref it was resolved from (refs/heads/..., refs/tags/...)
  --git-checkout string        where the tree is written, empty or absent (required with --git-url)
  --git-credentials string     a mounted Git credentials Secret
  --git-max-bytes quantity     cap on bytes fetched and on bytes of files (default 256Mi)

global flags:
  --feature-gates, --log-flush-frequency (5s), --log-json-info-buffer-size (0),
  --log-json-split-stream, --log-text-info-buffer-size (0), --log-text-split-stream,
  --logging-format (text|json), -v, --v (0), --vmodule, --version, -h, --help
)";
}

} // namespace captf::runner
