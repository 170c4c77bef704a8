#include "runner/run.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_split.h"
#include "contract/git.h"
#include "contract/json_adapter.h"
#include "contract/plan.h"
#include "contract/render.h"
#include "contract/result.h"
#include "contract/roles.h"
#include "contract/state.h"
#include "contract/strings.h"
#include "contract/text.h"
#include "runner/diagnostics.h"
#include "runner/fd.h"
#include "runner/json_fields.h"
#include "runner/redact.h"
#include "runner/workspace.h"

namespace captf::runner {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using contract::strCat;

// Runtime stderr kept per step for the failure summary (docs/behaviour/jobs.md).
constexpr std::size_t kStderrTailBytes = std::size_t{64} * 1024;
// A line longer than this goes to the log in pieces.
constexpr std::size_t kMaxLineBytes = std::size_t{64} * 1024;
constexpr std::size_t kMaxPlanJsonBytes = std::size_t{512} * 1024 * 1024;
constexpr std::size_t kMaxOutputJsonBytes = std::size_t{64} * 1024 * 1024;
constexpr std::size_t kMaxValidateJsonBytes = std::size_t{16} * 1024 * 1024;
constexpr std::size_t kMaxVersionJsonBytes = std::size_t{64} * 1024;
constexpr std::size_t kMaxStateListBytes = std::size_t{64} * 1024 * 1024;
constexpr std::size_t kMaxConfigFileBytes = std::size_t{16} * 1024 * 1024;
constexpr std::size_t kMaxCredentialBytes = std::size_t{1024} * 1024;
constexpr std::string_view kVarFileArg = "-var-file=terraform.tfvars.json";
// What the runtime writes in the root when it cannot write the state.
constexpr std::string_view kErroredState = "errored.tfstate";
constexpr std::string_view kPlanFile = "plan.tfplan";
constexpr std::string_view kRestoreStateFile = "restore.tfstate";

enum class StdoutUse { kLog, kCapture, kLogAndCapture };

std::string lockTimeoutArg(absl::Duration timeout) {
  return strCat("-lock-timeout=", absl::ToInt64Seconds(absl::Ceil(timeout, absl::Seconds(1))), "s");
}

std::int64_t millis(absl::Duration duration) {
  return absl::ToInt64Milliseconds(duration);
}

void setDuration(google::protobuf::Duration* out, absl::Duration duration) {
  const std::int64_t seconds = absl::IDivDuration(duration, absl::Seconds(1), &duration);
  out->set_seconds(seconds);
  out->set_nanos(static_cast<std::int32_t>(absl::ToInt64Nanoseconds(duration)));
}

void setTimestamp(google::protobuf::Timestamp* out, absl::Time time) {
  const absl::Duration since_epoch = time - absl::UnixEpoch();
  absl::Duration rest;
  const std::int64_t seconds = absl::IDivDuration(since_epoch, absl::Seconds(1), &rest);
  out->set_seconds(seconds);
  out->set_nanos(static_cast<std::int32_t>(absl::ToInt64Nanoseconds(rest)));
}

// The peak resident set of this process, in KiB.
std::int64_t peakRssKib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Whether a `state list` address names a managed resource (not a data
// source): module.a["x.y"].module.b.data.t.n is a data source.
bool isManagedAddress(std::string_view address) {
  while (address.starts_with("module.")) {
    address.remove_prefix(7);
    std::size_t i = 0;
    while (i < address.size() && address[i] != '.' && address[i] != '[') {
      ++i;
    }
    if (i < address.size() && address[i] == '[') {
      bool quoted = false;
      for (; i < address.size(); ++i) {
        if (address[i] == '\\' && quoted) {
          ++i;
        } else if (address[i] == '"') {
          quoted = !quoted;
        } else if (address[i] == ']' && !quoted) {
          ++i;
          break;
        }
      }
    }
    if (i >= address.size() || address[i] != '.') {
      return false;
    }
    address.remove_prefix(i + 1);
  }
  return !address.empty() && !address.starts_with("data.");
}

// The string values inside a JSON value (a sensitive variable's value may
// be an object or a list).
void collectStrings(const nlohmann::json& value, Redactor& redactor) {
  if (value.is_string()) {
    redactor.addSecret(value.get_ref<const std::string&>());
  } else if (value.is_structured()) {
    for (const auto& element : value) {
      collectStrings(element, redactor);
    }
  }
}

// A step's output: lines to the pod log (redacted), the stderr tail, the
// captured stdout and the resource counts of an apply or destroy.
class StepOutput final : public OutputSink {
public:
  // `lines` (may be null) also gets every redacted line: the run reports.
  StepOutput(LogWriter& log, const Redactor& redactor, StdoutUse use, std::size_t max_capture,
             std::function<void(OutputStream, std::string_view)> lines = nullptr)
      : log_(log), redactor_(redactor), use_(use), max_capture_(max_capture),
        lines_(std::move(lines)) {}

  void write(OutputStream stream, std::string_view bytes) override {
    if (stream == OutputStream::kStdout && use_ != StdoutUse::kLog) {
      if (captured_.size() + bytes.size() > max_capture_) {
        overflow_ = true;
      } else {
        captured_.append(bytes);
      }
      if (use_ == StdoutUse::kCapture) {
        return;
      }
    }
    std::string& pending = stream == OutputStream::kStdout ? stdout_pending_ : stderr_pending_;
    pending.append(bytes);
    std::size_t start = 0;
    for (std::size_t newline = pending.find('\n'); newline != std::string::npos;
         newline = pending.find('\n', start)) {
      emit(stream, std::string_view(pending).substr(start, newline - start));
      start = newline + 1;
    }
    pending.erase(0, start);
    if (pending.size() > kMaxLineBytes) {
      emit(stream, pending);
      pending.clear();
    }
  }

  // Writes what is left of unterminated lines.
  void finish() {
    if (!stdout_pending_.empty()) {
      emit(OutputStream::kStdout, stdout_pending_);
      stdout_pending_.clear();
    }
    if (!stderr_pending_.empty()) {
      emit(OutputStream::kStderr, stderr_pending_);
      stderr_pending_.clear();
    }
  }

  std::string& captured() { return captured_; }
  bool overflow() const { return overflow_; }
  std::string& stderrTail() { return stderr_tail_; }
  const std::optional<pb::ResourceChanges>& changes() const { return changes_; }

private:
  void emit(OutputStream stream, std::string_view line) {
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    const std::string clean = redactor_.redact(line);
    log_.writeLine(stream, clean);
    if (lines_) {
      lines_(stream, clean);
    }
    if (stream == OutputStream::kStdout) {
      if (auto changes = parseChangeSummary(stripTerminalDecoration(clean))) {
        changes_ = *changes;
      }
      return;
    }
    stderr_tail_.append(clean);
    stderr_tail_ += '\n';
    if (stderr_tail_.size() > kStderrTailBytes) {
      // Keep whole lines.
      std::size_t cut = stderr_tail_.size() - kStderrTailBytes;
      const std::size_t newline = stderr_tail_.find('\n', cut);
      cut = newline == std::string::npos ? cut : newline + 1;
      stderr_tail_.erase(0, cut);
    }
  }

  LogWriter& log_;
  const Redactor& redactor_;
  StdoutUse use_;
  std::size_t max_capture_;
  std::string captured_;
  bool overflow_ = false;
  std::string stdout_pending_;
  std::string stderr_pending_;
  std::string stderr_tail_;
  std::optional<pb::ResourceChanges> changes_;
  std::function<void(OutputStream, std::string_view)> lines_;
};

struct StepRun {
  ProcessResult process;
  std::string stdout_data;
  bool stdout_overflow = false;
  std::string stderr_tail;
  std::optional<pb::ResourceChanges> changes;

  int exitCode() const { return process.exit_code; }
};

using Accept = std::function<bool(const StepRun&)>;

bool exitedZero(const StepRun& run) {
  return run.exitCode() == 0;
}

// plan -detailed-exitcode: 0 no changes, 2 changes present.
bool planAccepted(const StepRun& run) {
  return run.exitCode() == 0 || run.exitCode() == 2;
}

// force-unlock on a state nobody holds fails with "state is already
// unlocked" in both runtimes; that counts as success (docs/behaviour/jobs.md#execution-sequence).
bool unlockAccepted(const StepRun& run) {
  return run.exitCode() == 0 ||
         stripTerminalDecoration(run.stderr_tail).find("already unlocked") != std::string::npos;
}

struct PlanOutcome {
  bool ok = false;
  bool has_changes = false;
  std::vector<contract::PlannedChange> changes;
};

class Run {
public:
  Run(const RunOptions& options, RunContext& context) : options_(options), ctx_(context) {}

  RunOutcome execute() {
    const auto started = ctx_.clock.monotonicNow();
    result_.set_operation(options_.operation);
    result_.set_image(options_.image);
    setTimestamp(result_.mutable_started_at(), ctx_.clock.now());
    ctx_.log.info("run started", {{"op", contract::operationName(options_.operation)},
                                  {"image", options_.image},
                                  {"runtime", options_.bin.front()}});
    reportOpened();
    if (fetchSource() && (reportPhase(pb::RUN_PHASE_PREFLIGHT), preflight()) &&
        (reportPhase(pb::RUN_PHASE_PREPARE), prepare())) {
      readRuntimeVersion();
      reportPhase(pb::RUN_PHASE_RUNNING);
      operate();
    }
    if (!failed_) {
      result_.mutable_succeeded();
      result_.set_exit_code(kExitOk);
      exit_code_ = kExitOk;
      checkOutputs();
    }
    const absl::Duration elapsed = absl::FromChrono(ctx_.clock.monotonicNow() - started);
    setDuration(result_.mutable_duration(), elapsed);
    ctx_.log.info("run finished", {{"op", contract::operationName(options_.operation)},
                                   {"outcome", failed_ ? "failed" : "succeeded"},
                                   {"exitCode", exit_code_},
                                   {"durationMs", millis(elapsed)},
                                   {"runtimeMs", millis(runtime_time_)},
                                   {"overheadMs", millis(elapsed - runtime_time_)},
                                   {"peakRssKiB", peakRssKib()}});
    if (ctx_.reporter != nullptr) {
      pb::ReportRequest event;
      *event.mutable_finished()->mutable_result() = result_;
      ctx_.reporter->send(std::move(event));
    }
    return RunOutcome{std::move(result_), std::move(outputs_), exit_code_};
  }

private:
  // --- Run reports (runner/report.h) ---------------------------------------

  void reportOpened() {
    if (ctx_.reporter == nullptr) {
      return;
    }
    pb::ReportRequest event;
    pb::RunOpened* opened = event.mutable_opened();
    opened->set_job_name(options_.job_name);
    // <apiVersion>/<kind>/<namespace>/<name>/<uid>; the apiVersion may hold
    // a slash itself.
    std::vector<std::string> parts = absl::StrSplit(options_.event_object, '/');
    if (parts.size() >= 5) {
      pb::ObjectReference* object = opened->mutable_object();
      object->set_uid(parts.back());
      parts.pop_back();
      object->set_name(parts.back());
      parts.pop_back();
      object->set_namespace_(parts.back());
      parts.pop_back();
      object->set_kind(parts.back());
      parts.pop_back();
      object->set_api_version(contract::strJoin(parts, "/"));
    }
    opened->set_operation(options_.operation);
    opened->set_image(options_.image);
    ctx_.reporter->send(std::move(event));
  }

  void reportPhase(pb::RunPhase phase) {
    if (ctx_.reporter == nullptr) {
      return;
    }
    pb::ReportRequest event;
    event.mutable_phase_changed()->set_phase(phase);
    if (phase == pb::RUN_PHASE_RUNNING) {
      event.mutable_phase_changed()->set_runtime_version(result_.runtime_version());
    }
    ctx_.reporter->send(std::move(event));
  }

  void reportStepStarted(pb::Step step) {
    current_step_ = step;
    if (ctx_.reporter == nullptr) {
      return;
    }
    pb::ReportRequest event;
    event.mutable_step_started()->set_step(step);
    ctx_.reporter->send(std::move(event));
  }

  // After the step's result is recorded, and its failure if it failed.
  void reportStepFinished(pb::Step step) {
    if (ctx_.reporter == nullptr) {
      return;
    }
    pb::ReportRequest event;
    pb::StepFinished* finished = event.mutable_step_finished();
    for (const pb::StepResult& recorded : result_.steps()) {
      if (recorded.step() == step) {
        *finished->mutable_result() = recorded;
      }
    }
    if (!finished->has_result()) { // it never started
      finished->mutable_result()->set_step(step);
      finished->mutable_result()->set_exit_code(kExitFailure);
    }
    if (failed_ && result_.has_error() && result_.error().step() == step) {
      finished->set_summary(result_.error().summary());
    }
    ctx_.reporter->send(std::move(event));
  }

  void reportPlan(const pb::PlanSummary& plan) {
    if (ctx_.reporter == nullptr) {
      return;
    }
    pb::ReportRequest event;
    *event.mutable_plan_summary() = plan;
    event.mutable_plan_summary()->clear_resources(); // counts only
    event.mutable_plan_summary()->clear_truncated();
    ctx_.reporter->send(std::move(event));
  }

  void reportLine(OutputStream stream, std::string_view text) {
    pb::ReportRequest event;
    pb::LogLine* line = event.mutable_log_line();
    line->set_step(current_step_);
    line->set_stream(stream == OutputStream::kStdout ? pb::LOG_STREAM_STDOUT
                                                     : pb::LOG_STREAM_STDERR);
    line->set_text(contract::sanitizeUtf8(text));
    ctx_.reporter->send(std::move(event));
  }

  // --- Phases ------------------------------------------------------------

  // The Git module source (--git-url): the tree of --git-commit into
  // --git-checkout, before anything else; a failure ends the run.
  bool fetchSource() {
    if (!options_.git_url) {
      return true;
    }
    if (stoppedBefore(pb::STEP_FETCH)) {
      return false;
    }
    reportStepStarted(pb::STEP_FETCH);
    ctx_.log.info("step started", {{"step", "fetch"},
                                   {"url", options_.git_url->canonical},
                                   {"commit", options_.git_commit},
                                   {"ref", options_.git_ref}});
    const auto started = ctx_.clock.monotonicNow();
    const absl::StatusOr<contract::git::FetchResult> fetched = fetchModuleSource();
    const absl::Duration elapsed = absl::FromChrono(ctx_.clock.monotonicNow() - started);
    recordStep(pb::STEP_FETCH, fetched.ok() ? 0 : kExitFailure, elapsed);
    const absl::Cleanup finished = [this] { reportStepFinished(pb::STEP_FETCH); };
    if (!fetched.ok()) {
      if (fetched.status().code() == absl::StatusCode::kCancelled) {
        fail(pb::ERROR_KIND_INTERRUPTED, pb::STEP_FETCH, kExitFailure,
             "interrupted by SIGTERM during step fetch");
        return false;
      }
      // contract/git.h's messages start with "fetch <url>: ".
      std::string_view message(fetched.status().message().data(),
                               fetched.status().message().size());
      if (message.starts_with("fetch ")) {
        message.remove_prefix(6);
      }
      fail(pb::ERROR_KIND_STEP, pb::STEP_FETCH, kExitFailure,
           boundedSummary(strCat("fetch: ", message), redactor_));
      return false;
    }
    ctx_.log.info("step finished", {{"step", "fetch"},
                                    {"exitCode", 0},
                                    {"durationMs", millis(elapsed)},
                                    {"commit", fetched->commit},
                                    {"files", fetched->files},
                                    {"bytes", fetched->bytes}});
    return true;
  }

  absl::StatusOr<contract::git::FetchResult> fetchModuleSource() {
    if (!options_.git_url) {
      return absl::FailedPreconditionError("fetch: no --git-url");
    }
    contract::git::Credentials credentials;
    if (!options_.git_credentials.empty()) {
      auto loaded = contract::git::credentialsFromDirectory(options_.git_credentials);
      if (!loaded.ok()) {
        return loaded.status();
      }
      credentials = *std::move(loaded);
      redactor_.addSecret(credentials.password);
      redactor_.addSecret(credentials.ssh_private_key);
    }
    contract::git::FetchOptions fetch;
    fetch.max_bytes = options_.git_max_bytes;
    fetch.ref_hint = options_.git_ref;
    fetch.cancelled = [this] { return ctx_.stop.stopRequested(); };
    return contract::git::fetchCommit(*options_.git_url, credentials, options_.git_commit,
                                      options_.git_checkout, fetch);
  }

  bool preflight() {
    std::vector<std::string> problems;
    if (auto status = checkModuleDirectory(options_.module); !status.ok()) {
      problems.emplace_back(status.message());
    }
    if (auto status = checkRuntime(options_.bin.front()); !status.ok()) {
      problems.emplace_back(status.message());
    }
    if (problems.empty()) {
      return true;
    }
    fail(pb::ERROR_KIND_IMAGE_LAYOUT, pb::STEP_UNSPECIFIED, kExitFailure,
         boundedSummary(strCat(options_.git_url ? "module source: " : "image layout: ",
                               contract::strJoin(problems, "; ")),
                        redactor_));
    return false;
  }

  bool prepare() {
    if (stoppedBefore(pb::STEP_PREPARE)) {
      return false;
    }
    reportStepStarted(pb::STEP_PREPARE);
    const auto started = ctx_.clock.monotonicNow();
    const absl::Status status = prepareFiles();
    const absl::Duration elapsed = absl::FromChrono(ctx_.clock.monotonicNow() - started);
    recordStep(pb::STEP_PREPARE, status.ok() ? 0 : kExitFailure, elapsed);
    if (!status.ok()) {
      fail(pb::ERROR_KIND_STEP, pb::STEP_PREPARE, kExitFailure,
           boundedSummary(strCat("prepare: ", std::string(status.message())), redactor_));
    }
    reportStepFinished(pb::STEP_PREPARE);
    return status.ok();
  }

  absl::Status prepareFiles() {
    root_dir_ = strCat(options_.workdir, "/root");
    if (auto status = makeDirectories(root_dir_); !status.ok()) {
      return status;
    }
    // The generated root calls its module by a relative path; it must land
    // on --module. An image's root calls kModuleSource; a Git source's root
    // calls the module in the checkout (contract::gitModuleSource), so its
    // own call is read. A restore root calls no module.
    if (!(options_.git_url && options_.operation == pb::OPERATION_RESTORE)) {
      std::string source(contract::kModuleSource);
      if (options_.git_url) {
        auto called = moduleCallSource();
        if (!called.ok()) {
          return called.status();
        }
        source = *std::move(called);
      }
      const std::string reached = strCat(root_dir_, "/", source);
      auto same = sameDirectory(reached, options_.module);
      if (!same.ok() || !*same) {
        return absl::FailedPreconditionError(strCat("the generated root calls its module at ",
                                                    reached, ", which is not --module ",
                                                    options_.module));
      }
    }
    if (auto status = writeRootFiles(); !status.ok()) {
      return status;
    }
    if (auto status = loadCredentials(); !status.ok()) {
      return status;
    }
    if (auto status = shapeRuntimeEnvironment(); !status.ok()) {
      return status;
    }
    if (options_.operation == pb::OPERATION_RESTORE) {
      return assembleBackup();
    }
    return absl::OkStatus();
  }

  absl::Status writeRootFiles() {
    const std::string main_source = strCat(options_.config, "/", contract::kMainFileName);
    const std::string main_target = strCat(root_dir_, "/", contract::kMainFileName);
    if (options_.operation == pb::OPERATION_RESTORE) {
      // A restore root is the backend block alone; the runner renders it
      // when the per-run Secret does not carry one.
      std::string main = contract::renderRestoreRoot();
      if (isRegularFile(main_source)) {
        auto read = readFile(main_source, kMaxConfigFileBytes);
        if (!read.ok()) {
          return read.status();
        }
        main = *std::move(read);
      }
      return writeFile(main_target, main, 0644);
    }
    auto main = readFile(main_source, kMaxConfigFileBytes);
    if (!main.ok()) {
      return main.status();
    }
    auto tfvars =
        readFile(strCat(options_.config, "/", contract::kTfvarsFileName), kMaxConfigFileBytes);
    if (!tfvars.ok()) {
      return tfvars.status();
    }
    if (auto status = writeFile(main_target, *main, 0644); !status.ok()) {
      return status;
    }
    if (auto status = writeFile(strCat(root_dir_, "/", contract::kTfvarsFileName), *tfvars, 0600);
        !status.ok()) {
      return status;
    }
    return readInputs(*main, *tfvars);
  }

  // module "role"'s source in <config>/main.tf.json: a local path ("./" or
  // "../"), as the manager renders it.
  absl::StatusOr<std::string> moduleCallSource() const {
    auto text =
        readFile(strCat(options_.config, "/", contract::kMainFileName), kMaxConfigFileBytes);
    if (!text.ok()) {
      return text.status();
    }
    auto parsed = contract::parseJson(*text, contract::kMainFileName);
    if (!parsed.ok()) {
      return parsed.status();
    }
    const nlohmann::json main = *std::move(parsed);
    const auto source =
        stringMember(member(member(main, "module"), contract::kModuleCallName), "source");
    if (!source || !(source->starts_with("./") || source->starts_with("../"))) {
      return absl::FailedPreconditionError(strCat("main.tf.json does not call module \"",
                                                  contract::kModuleCallName, "\" by a local path"));
    }
    return *source;
  }

  // The secrets (values of variables the root declares sensitive) and the
  // role (from captf_object.kind).
  absl::Status readInputs(std::string_view main_text, std::string_view tfvars_text) {
    auto main_parsed = contract::parseJson(main_text, contract::kMainFileName);
    if (!main_parsed.ok()) {
      return main_parsed.status();
    }
    auto tfvars_parsed = contract::parseJson(tfvars_text, contract::kTfvarsFileName);
    if (!tfvars_parsed.ok()) {
      return tfvars_parsed.status();
    }
    // Local values (see diagnostics.cc on -Wnull-dereference).
    const nlohmann::json main = *std::move(main_parsed);
    const nlohmann::json tfvars = *std::move(tfvars_parsed);
    if (!main.is_object() || !tfvars.is_object()) {
      return absl::InvalidArgumentError("main.tf.json and terraform.tfvars.json must be objects");
    }
    const nlohmann::json& variables = member(main, "variable");
    if (variables.is_object()) {
      for (const auto& [name, declaration] : variables.items()) {
        if (boolMember(declaration, "sensitive", false)) {
          collectStrings(member(tfvars, name), redactor_);
        }
      }
    }
    const auto kind = stringMember(member(tfvars, contract::input::kCaptfObject), "kind");
    if (kind) {
      if (auto role = contract::roleForKind(*kind); role.ok()) {
        role_ = *role;
      }
    }
    if (!role_) {
      ctx_.log.warning("the inputs name no known captf_object.kind; outputs will not be checked");
    }
    return absl::OkStatus();
  }

  absl::Status loadCredentials() {
    auto names = listFiles(ctx_.credentials_dir);
    if (!names.ok()) {
      return names.status();
    }
    for (const std::string& name : *names) {
      auto contents = readFile(strCat(ctx_.credentials_dir, "/", name), kMaxCredentialBytes);
      if (contents.ok()) {
        redactor_.addSecret(*contents);
      }
      if (const auto value = ctx_.container_env.find(name); value != ctx_.container_env.end()) {
        redactor_.addSecret(value->second);
      }
    }
    ctx_.log.verbose(1, "credentials loaded for redaction",
                     {{"files", names->size()}, {"secrets", redactor_.secretCount()}});
    return absl::OkStatus();
  }

  absl::Status shapeRuntimeEnvironment() {
    const bool mirror = isDirectory(options_.providers);
    const ShapedEnvironment shaped =
        shapeEnvironment(ctx_.container_env,
                         EnvironmentPlan{.workdir = options_.workdir, .provider_mirror = mirror});
    for (const std::string& name : shaped.dropped) {
      ctx_.log.info("environment variable dropped", {{"name", name}});
    }
    if (shaped.tmpdir_defaulted) {
      if (auto status = makeDirectories(shaped.env.at("TMPDIR")); !status.ok()) {
        return status;
      }
    }
    if (mirror) {
      if (auto status = writeFile(cliConfigPath(options_.workdir),
                                  providerMirrorCliConfig(options_.providers), 0644);
          !status.ok()) {
        return status;
      }
      ctx_.log.info("provider mirror in use", {{"path", options_.providers}});
    }
    runtime_env_ = toEnvStrings(shaped.env);
    return absl::OkStatus();
  }

  absl::Status assembleBackup() {
    auto chunks = readRestoreChunks(strCat(options_.config, "/restore"),
                                    static_cast<std::size_t>(options_.restore_chunks));
    if (!chunks.ok()) {
      return chunks.status();
    }
    auto state = contract::assembleState(*chunks);
    if (!state.ok()) {
      return {state.status().code(),
              strCat("restore backup: ", std::string(state.status().message()))};
    }
    auto summary = contract::inspectState(*state);
    if (!summary.ok()) {
      return {summary.status().code(),
              strCat("restore backup: ", std::string(summary.status().message()))};
    }
    if (options_.restore_resources &&
        std::cmp_not_equal(*options_.restore_resources, summary->managed_resources)) {
      return absl::FailedPreconditionError(
          strCat("restore backup: it holds ", summary->managed_resources,
                 " managed resources, --restore-resources says ", *options_.restore_resources));
    }
    restore_resources_ = summary->managed_resources;
    restore_state_path_ = strCat(options_.workdir, "/", kRestoreStateFile);
    ctx_.log.info("restore backup assembled", {{"chunks", chunks->size()},
                                               {"serial", summary->serial},
                                               {"lineage", summary->lineage},
                                               {"resources", summary->managed_resources}});
    return writeFile(restore_state_path_, *state, 0600);
  }

  void readRuntimeVersion() {
    if (ctx_.stop.stopRequested()) {
      return;
    }
    auto run = invoke({"version", "-json"}, StdoutUse::kCapture, kMaxVersionJsonBytes);
    if (!run.ok() || run->exitCode() != 0 || run->stdout_overflow) {
      ctx_.log.warning("version -json failed; the runtime version stays unknown");
      return;
    }
    auto parsed = contract::parseJson(run->stdout_data, "version -json output");
    const nlohmann::json document = parsed.ok() ? *std::move(parsed) : nlohmann::json();
    if (const auto version = stringMember(document, "terraform_version")) {
      result_.set_runtime_version(*version);
      ctx_.log.info("runtime version", {{"version", result_.runtime_version()}});
    } else {
      ctx_.log.warning("version -json printed no terraform_version");
    }
  }

  void operate() {
    switch (options_.operation) {
    case pb::OPERATION_APPLY:
      apply();
      return;
    case pb::OPERATION_PLAN:
      planOnly();
      return;
    case pb::OPERATION_DRIFT:
      drift();
      return;
    case pb::OPERATION_REFRESH:
      refresh();
      return;
    case pb::OPERATION_DESTROY:
      destroy();
      return;
    case pb::OPERATION_RESTORE:
      restore();
      return;
    default:
      fail(pb::ERROR_KIND_STEP, pb::STEP_PREPARE, kExitUsage, "no operation");
      return;
    }
  }

  // --- Operations ----------------------------------------------------------

  void apply() {
    if (!initialize() || !validate()) {
      return;
    }
    const bool planned = options_.guard_deletes || !options_.expect_plan.empty();
    if (!planned) {
      std::vector<std::string> args = withCommonFlags("apply");
      args.emplace_back("-auto-approve");
      args.emplace_back(kVarFileArg);
      const auto applied = step(pb::STEP_APPLY, std::move(args));
      recordChanges(applied);
      if (!applied) {
        saveErroredState();
      }
      return;
    }
    const PlanOutcome plan = planAndShow(/*refresh=*/true);
    if (!plan.ok) {
      return;
    }
    *result_.mutable_plan() = contract::summarizePlan(plan.changes);
    reportPlan(result_.plan());
    if (!plan.has_changes) {
      ctx_.log.info("the plan has no changes; apply skipped");
      return;
    }
    const std::string hash = contract::planHash(plan.changes);
    if (!options_.expect_plan.empty() && hash != options_.expect_plan) {
      fail(pb::ERROR_KIND_PLAN_CHANGED, pb::STEP_UNSPECIFIED, kExitFailure,
           boundedSummary(strCat("the plan changed since it was approved: approved ",
                                 options_.expect_plan, ", computed ", hash),
                          redactor_));
      return;
    }
    if (options_.guard_deletes && !guardAllows(plan.changes)) {
      return;
    }
    std::vector<std::string> args = withCommonFlags("apply");
    args.push_back(planPath());
    const auto applied = step(pb::STEP_APPLY, std::move(args));
    recordChanges(applied);
    if (!applied) {
      saveErroredState();
    }
  }

  void planOnly() {
    if (!initialize() || !validate()) {
      return;
    }
    const PlanOutcome plan = planAndShow(/*refresh=*/true);
    if (plan.ok) {
      *result_.mutable_plan() = contract::summarizePlan(plan.changes);
      reportPlan(result_.plan());
    }
  }

  void drift() {
    if (!initialize() || !refreshOnly()) {
      return;
    }
    const PlanOutcome plan = planAndShow(/*refresh=*/false);
    if (plan.ok) {
      *result_.mutable_drift() = contract::summarizeDrift(plan.changes);
      pb::PlanSummary counts;
      counts.set_add(result_.drift().add());
      counts.set_change(result_.drift().change());
      counts.set_destroy(result_.drift().destroy());
      reportPlan(counts);
    }
  }

  void refresh() {
    if (initialize()) {
      refreshOnly();
    }
  }

  void destroy() {
    if (!initialize()) {
      return;
    }
    std::vector<std::string> args = withCommonFlags("destroy");
    args.emplace_back("-auto-approve");
    args.emplace_back(kVarFileArg);
    const auto destroyed = step(pb::STEP_DESTROY, std::move(args));
    recordChanges(destroyed);
    if (!destroyed) {
      saveErroredState();
    }
  }

  // An apply or destroy that failed may have changed resources and then
  // failed to write the state (the API server restarting, etcd away): the
  // runtime then leaves the state it could not write in errored.tfstate, in
  // the pod, which ends with it, and the next run would create those
  // resources again. So the runner pushes it, a few times while the API
  // server comes back; the run stays failed either way
  // (docs/behaviour/jobs.md#execution-sequence). The lock is this run's own
  // (its release failed too) or free, and no other run starts while this
  // pod runs, hence -lock=false.
  void saveErroredState() {
    const std::string errored = strCat(root_dir_, "/", kErroredState);
    if (::access(errored.c_str(), F_OK) != 0) {
      return;
    }
    ctx_.log.warning("the runtime could not write the state; pushing errored.tfstate");
    for (int attempt = 1; attempt <= options_.errored_state_push_attempts; ++attempt) {
      if (ctx_.stop.stopRequested() && attempt > 1) {
        break;
      }
      auto run =
          invoke({"state", "push", "-lock=false", std::string(kErroredState)}, StdoutUse::kLog, 0);
      if (run.ok() && run->exitCode() == 0) {
        ctx_.log.info("errored.tfstate pushed: the state is saved", {{"attempt", attempt}});
        return;
      }
      if (attempt < options_.errored_state_push_attempts) {
        waitOrStop(options_.errored_state_push_delay);
      }
    }
    ctx_.log.error("errored.tfstate could not be pushed: the resources this run changed are not "
                   "in the state",
                   {{"attempts", options_.errored_state_push_attempts}});
  }

  // Waits `delay`, or less when a stop is requested.
  void waitOrStop(absl::Duration delay) {
    pollfd stop{ctx_.stop.pollFd(), POLLIN, 0};
    ::poll(&stop, stop.fd < 0 ? 0 : 1, static_cast<int>(absl::ToInt64Milliseconds(delay)));
  }

  void restore() {
    if (!initialize()) {
      return;
    }
    if (!step(pb::STEP_STATE_PUSH, {"state", "push", "-force",
                                    lockTimeoutArg(options_.lock_timeout), restore_state_path_})) {
      return;
    }
    const auto listed =
        step(pb::STEP_STATE_LIST, {"state", "list"}, StdoutUse::kLogAndCapture, kMaxStateListBytes);
    if (!listed) {
      return;
    }
    std::size_t managed = 0;
    std::size_t start = 0;
    const std::string& text = listed->stdout_data;
    while (start < text.size()) {
      const auto end = std::min(text.find('\n', start), text.size());
      if (isManagedAddress(std::string_view(text).substr(start, end - start))) {
        ++managed;
      }
      start = end + 1;
    }
    ctx_.log.info("state restored",
                  {{"listedManagedInstances", managed}, {"backupResources", restore_resources_}});
    if (managed == 0 && restore_resources_ != 0) {
      fail(pb::ERROR_KIND_STEP, pb::STEP_STATE_LIST, kExitFailure,
           strCat("state list shows no managed resource after the push, but the backup has ",
                  restore_resources_));
    }
  }

  // --- Step helpers ----------------------------------------------------------

  bool initialize() {
    std::vector<std::string> args = withCommonFlags("init");
    for (const std::string& value : options_.backend_config) {
      args.push_back(strCat("-backend-config=", value));
    }
    if (!step(pb::STEP_INIT, std::move(args))) {
      return false;
    }
    if (options_.force_unlock.empty()) {
      return true;
    }
    const auto unlocked =
        step(pb::STEP_FORCE_UNLOCK, {"force-unlock", "-force", options_.force_unlock},
             StdoutUse::kLog, 0, unlockAccepted);
    if (unlocked && unlocked->exitCode() != 0) {
      ctx_.log.info("the state was already unlocked", {{"lockID", options_.force_unlock}});
    }
    return unlocked.has_value();
  }

  bool validate() {
    return step(pb::STEP_VALIDATE, {"validate", "-json", "-no-color"}, StdoutUse::kLogAndCapture,
                kMaxValidateJsonBytes)
        .has_value();
  }

  bool refreshOnly() {
    std::vector<std::string> args = withCommonFlags("apply");
    args.emplace_back("-refresh-only");
    args.emplace_back("-auto-approve");
    args.emplace_back(kVarFileArg);
    return step(pb::STEP_APPLY_REFRESH_ONLY, std::move(args)).has_value();
  }

  PlanOutcome planAndShow(bool refresh) {
    PlanOutcome outcome;
    std::vector<std::string> args = withCommonFlags("plan");
    args.emplace_back("-detailed-exitcode");
    if (!refresh) {
      args.emplace_back("-refresh=false");
    }
    args.emplace_back(kVarFileArg);
    args.push_back(strCat("-out=", planPath()));
    const auto plan = step(pb::STEP_PLAN, std::move(args), StdoutUse::kLog, 0, planAccepted);
    if (!plan) {
      return outcome;
    }
    if (plan->exitCode() == 0) {
      outcome.ok = true;
      return outcome;
    }
    // The plan JSON carries input values: captured, never logged.
    const auto show = step(pb::STEP_SHOW_JSON, {"show", "-json", "-no-color", planPath()},
                           StdoutUse::kCapture, kMaxPlanJsonBytes);
    if (!show) {
      return outcome;
    }
    if (show->stdout_overflow) {
      fail(pb::ERROR_KIND_STEP, pb::STEP_SHOW_JSON, kExitFailure,
           strCat("show -json printed more than ", kMaxPlanJsonBytes, " bytes"));
      return outcome;
    }
    auto document = contract::parseJson(show->stdout_data, "show -json output");
    if (!document.ok()) {
      // The parser's message may quote the output; say only where it broke.
      fail(pb::ERROR_KIND_STEP, pb::STEP_SHOW_JSON, kExitFailure,
           "show -json printed output that is not valid JSON");
      return outcome;
    }
    auto changes = contract::plannedChanges(*document);
    if (!changes.ok()) {
      fail(pb::ERROR_KIND_STEP, pb::STEP_SHOW_JSON, kExitFailure,
           boundedSummary(std::string(changes.status().message()), redactor_));
      return outcome;
    }
    outcome.ok = true;
    outcome.has_changes = true;
    outcome.changes = *std::move(changes);
    return outcome;
  }

  // The destructive-plan guard (docs/behaviour/approval.md): a plan that deletes or replaces
  // anything goes through only when --allow-deletes-hash names this apply's
  // inputs hash.
  bool guardAllows(const std::vector<contract::PlannedChange>& changes) {
    std::vector<std::string> destructive;
    for (const contract::PlannedChange& change : changes) {
      if (contract::isDestructive(change)) {
        const auto action = contract::classifyActions(change.actions);
        destructive.push_back(contract::formatPlanResource(
            change.address, action.ok() ? *action : contract::ChangeAction::kDelete));
      }
    }
    if (destructive.empty()) {
      return true;
    }
    if (!options_.allow_deletes_hash.empty() &&
        options_.allow_deletes_hash == options_.inputs_hash) {
      ctx_.log.info("destructive plan approved",
                    {{"inputsHash", options_.inputs_hash}, {"resources", destructive.size()}});
      return true;
    }
    std::sort(destructive.begin(), destructive.end());
    fail(pb::ERROR_KIND_BLOCKED, pb::STEP_UNSPECIFIED, kExitFailure,
         boundedSummary(strCat("destructive plan blocked: ", destructive.size(),
                               " resource(s) would be deleted or replaced (",
                               contract::strJoin(destructive, ", "), "); approve inputs hash ",
                               options_.inputs_hash, " with captf.io/approve-destructive-plan"),
                        redactor_));
    return false;
  }

  std::vector<std::string> withCommonFlags(std::string_view command) const {
    return {std::string(command), "-input=false", "-no-color",
            lockTimeoutArg(options_.lock_timeout)};
  }

  std::string planPath() const { return strCat(options_.workdir, "/", kPlanFile); }

  void recordChanges(const std::optional<StepRun>& run) {
    if (run && run->changes) {
      *result_.mutable_changes() = *run->changes;
      if (ctx_.reporter != nullptr) {
        pb::ReportRequest event;
        *event.mutable_resources_changed() = *run->changes;
        ctx_.reporter->send(std::move(event));
      }
    }
  }

  void recordStep(pb::Step step, int exit_code, absl::Duration duration) {
    pb::StepResult* recorded = result_.add_steps();
    recorded->set_step(step);
    recorded->set_exit_code(exit_code);
    setDuration(recorded->mutable_duration(), duration);
  }

  // Runs one step and records it. Returns nullopt when the run must end
  // (the failure is recorded).
  std::optional<StepRun> step(pb::Step step, std::vector<std::string> args,
                              StdoutUse use = StdoutUse::kLog, std::size_t max_capture = 0,
                              const Accept& accept = exitedZero) {
    if (stoppedBefore(step)) {
      return std::nullopt;
    }
    const std::string name(contract::stepName(step));
    ctx_.log.info("step started", {{"step", name}});
    reportStepStarted(step);
    const absl::Cleanup finished = [this, step] { reportStepFinished(step); };
    auto run = invoke(std::move(args), use, max_capture);
    if (!run.ok()) {
      fail(pb::ERROR_KIND_STEP, step, kExitFailure,
           boundedSummary(
               strCat("step ", name, " could not start: ", std::string(run.status().message())),
               redactor_));
      return std::nullopt;
    }
    const int code = run->exitCode();
    recordStep(step, code, run->process.duration);
    ctx_.log.info(
        "step finished",
        {{"step", name}, {"exitCode", code}, {"durationMs", millis(run->process.duration)}});
    const bool accepted = !run->process.killed && accept(*run);
    if (run->process.stop_forwarded && !accepted) {
      const DiagnosticText text = diagnosticsFromStderr(run->stderr_tail);
      const std::string summary =
          run->process.killed
              ? strCat("interrupted by SIGTERM during step ", name,
                       "; the runtime was killed after the ",
                       absl::ToInt64Seconds(options_.stop_timeout), "s stop timeout")
              : strCat("interrupted by SIGTERM during step ", name, "; the runtime exited ", code);
      const Failure failure = stepFailure(step, code, text, redactor_);
      fail(pb::ERROR_KIND_INTERRUPTED, step, run->process.killed ? kExitFailure : code, summary,
           failure.tail);
      return std::nullopt;
    }
    if (!accepted) {
      DiagnosticText text;
      if (step == pb::STEP_VALIDATE) {
        text = diagnosticsFromValidateJson(run->stdout_data);
      }
      if (text.summary.empty()) {
        text = diagnosticsFromStderr(run->stderr_tail);
      }
      const Failure failure = stepFailure(step, code, text, redactor_);
      fail(pb::ERROR_KIND_STEP, step, run->process.killed ? kExitFailure : code, failure.summary,
           failure.tail);
      return std::nullopt;
    }
    return *std::move(run);
  }

  // Runs the runtime with `args` in the root, not as a recorded step.
  absl::StatusOr<StepRun> invoke(std::vector<std::string> args, StdoutUse use,
                                 std::size_t max_capture) {
    ProcessSpec spec;
    spec.path = options_.bin.front();
    spec.args.assign(options_.bin.begin() + 1, options_.bin.end());
    spec.args.insert(spec.args.end(), std::make_move_iterator(args.begin()),
                     std::make_move_iterator(args.end()));
    spec.env = runtime_env_;
    spec.cwd = root_dir_;
    StepOutput output(
        ctx_.runtime_output, redactor_, use, max_capture,
        ctx_.reporter == nullptr
            ? std::function<void(OutputStream, std::string_view)>()
            : [this](OutputStream stream, std::string_view line) { reportLine(stream, line); });
    auto process = ctx_.processes.run(spec, output);
    output.finish();
    if (!process.ok()) {
      return process.status();
    }
    runtime_time_ += process->duration;
    StepRun run;
    run.process = *process;
    run.stdout_data = std::move(output.captured());
    run.stdout_overflow = output.overflow();
    run.stderr_tail = std::move(output.stderrTail());
    run.changes = output.changes();
    return run;
  }

  // After a successful apply, refresh or drift: the role's outputs, read
  // from state with `output -json` (never logged: values), and checked.
  void checkOutputs() {
    const bool writes_outputs = options_.operation == pb::OPERATION_APPLY ||
                                options_.operation == pb::OPERATION_REFRESH ||
                                options_.operation == pb::OPERATION_DRIFT;
    if (!writes_outputs || !role_ || ctx_.stop.stopRequested()) {
      return;
    }
    const contract::Role role = *role_;
    auto run = invoke({"output", "-json"}, StdoutUse::kCapture, kMaxOutputJsonBytes);
    if (!run.ok()) {
      outputs_ = unreadableOutputs("output -json could not start");
    } else if (run->exitCode() != 0) {
      outputs_ = unreadableOutputs(strCat("output -json exited ", run->exitCode()));
    } else if (run->stdout_overflow) {
      outputs_ = unreadableOutputs(
          strCat("output -json printed more than ", kMaxOutputJsonBytes, " bytes"));
    } else {
      auto document = contract::parseJson(run->stdout_data, "output -json output");
      outputs_ = document.ok() ? runner::checkOutputs(role, *document)
                               : unreadableOutputs("output -json printed no valid JSON");
    }
    for (std::string& error : outputs_->errors) {
      error = boundedSummary(error, redactor_);
    }
    ctx_.log.info("outputs checked", {{"state", outputsStateName(outputs_->state)},
                                      {"pending", outputs_->pending.size()},
                                      {"errors", outputs_->errors.size()}});
  }

  bool stoppedBefore(pb::Step next) {
    if (!ctx_.stop.stopRequested()) {
      return false;
    }
    fail(pb::ERROR_KIND_INTERRUPTED, next, kExitFailure,
         strCat("interrupted by SIGTERM before step ", contract::stepName(next), " started"));
    return true;
  }

  void fail(pb::ErrorKind kind, pb::Step step, int exit_code, std::string summary,
            std::string tail = {}) {
    failed_ = true;
    exit_code_ = std::max(exit_code, kExitFailure);
    pb::RunError* error = result_.mutable_error();
    error->set_kind(kind);
    if (step != pb::STEP_UNSPECIFIED) {
      error->set_step(step);
    }
    error->set_summary(std::move(summary));
    if (!tail.empty()) {
      error->set_tail(std::move(tail));
    }
    result_.set_exit_code(exit_code_);
    ctx_.log.error("run failed", {{"kind", contract::errorKindName(kind)},
                                  {"step", contract::stepName(step)},
                                  {"exitCode", exit_code_},
                                  {"summary", error->summary()}});
  }

  const RunOptions& options_;
  RunContext& ctx_;
  pb::RunResult result_;
  std::optional<OutputsReport> outputs_;
  int exit_code_ = kExitFailure;
  bool failed_ = false;
  // The step whose output lines are being read (for the run reports).
  pb::Step current_step_ = pb::STEP_UNSPECIFIED;
  Redactor redactor_;
  std::vector<std::string> runtime_env_;
  std::string root_dir_;
  std::optional<contract::Role> role_;
  std::string restore_state_path_;
  std::size_t restore_resources_ = 0;
  // Time spent in runtime processes; the rest of the run is the runner's
  // own overhead (logged, for the benchmark).
  absl::Duration runtime_time_;
};

} // namespace

void StdioLogWriter::writeLine(OutputStream stream, std::string_view line) {
  std::string buffer;
  buffer.reserve(line.size() + 1);
  buffer.append(line);
  buffer += '\n';
  writeAll(stream == OutputStream::kStdout ? STDOUT_FILENO : STDERR_FILENO, buffer.data(),
           buffer.size());
}

RunOutcome executeRun(const RunOptions& options, RunContext& context) {
  return Run(options, context).execute();
}

RunOutcome prepareFailure(pb::Operation operation, int exit_code, std::string_view summary) {
  RunOutcome outcome;
  outcome.result.set_operation(operation);
  pb::RunError* error = outcome.result.mutable_error();
  error->set_kind(pb::ERROR_KIND_STEP);
  error->set_step(pb::STEP_PREPARE);
  error->set_summary(
      contract::clipText(contract::sanitizeUtf8(summary), contract::kMaxSummaryBytes));
  outcome.result.set_exit_code(exit_code);
  outcome.exit_code = exit_code;
  return outcome;
}

RunOutcome usageOutcome(pb::Operation operation, std::string_view message) {
  return prepareFailure(operation, kExitUsage, strCat("invalid arguments: ", message));
}

} // namespace captf::runner
