#pragma once

// One run of one operation (docs/behaviour/jobs.md): preflight of the image layout,
// prepare (the generated root, the environment, the CLI configuration, the
// restore backup), `version -json`, the operation's steps in
// <workdir>/root, the destructive-plan guard and the approved-plan check,
// and the outputs check. Whatever fails, the outcome holds a complete
// RunResult for the termination message.
//
// Steps per operation (every runtime call with cwd <workdir>/root; init,
// plan, apply and destroy take -input=false -no-color -lock-timeout=<n>s):
//   apply            init [force-unlock] validate apply -auto-approve
//   apply, planned   init [force-unlock] validate plan -out [show-json
//   (--guard-deletes   guard, approval] [apply <planfile>]
//    or --expect-plan)
//   plan             init [force-unlock] validate plan -out [show-json]
//   drift            init [force-unlock] apply -refresh-only
//                    plan -refresh=false -out [show-json]
//   refresh          init [force-unlock] apply -refresh-only
//   destroy          init [force-unlock] destroy -auto-approve
//   restore          init [force-unlock] state push -force, state list
// show-json runs only when plan exits 2 (changes present); an apply whose
// plan exits 0 skips the apply step and succeeds.

#include <optional>
#include <string>
#include <string_view>

#include "captf/runner/v1alpha1/result.pb.h"
#include "runner/clock.h"
#include "runner/environment.h"
#include "runner/logging.h"
#include "runner/options.h"
#include "runner/outputs.h"
#include "runner/process.h"
#include "runner/report.h"

namespace captf::runner {

// The identity's credential files (docs/runner.md#mounts). Their names are also the
// names of the environment variables the credential mirror sets.
inline constexpr char kCredentialsDir[] = "/var/run/captf/credentials";

// Where the runtime's output goes: the pod log. Lines come redacted, without
// their newline.
class LogWriter {
public:
  virtual ~LogWriter() = default;
  virtual void writeLine(OutputStream stream, std::string_view line) = 0;
};

// Writes stdout lines to fd 1 and stderr lines to fd 2.
class StdioLogWriter final : public LogWriter {
public:
  void writeLine(OutputStream stream, std::string_view line) override;
};

struct RunContext {
  ProcessRunner& processes;
  StopSource& stop;
  const Clock& clock;
  LogWriter& runtime_output;
  Log& log;
  // The container's environment, before shaping.
  Environment container_env;
  std::string credentials_dir = kCredentialsDir;
  // Live run reports (runner/report.h); null: none.
  Reporter* reporter = nullptr;
};

struct RunOutcome {
  captf::runner::v1alpha1::RunResult result;
  // Set after a successful apply, refresh or drift whose inputs name the
  // role.
  std::optional<OutputsReport> outputs;
  int exit_code = kExitFailure;
};

RunOutcome executeRun(const RunOptions& options, RunContext& context);

// A run that failed before (or outside) executeRun: a `prepare` step error
// with `exit_code` and `summary` (bounded, UTF-8-safe).
RunOutcome prepareFailure(captf::runner::v1alpha1::Operation operation, int exit_code,
                          std::string_view summary);

// The outcome of `run` with an unusable command line: a prepare error with
// exit code 2 (and no operation when --op itself was the problem).
RunOutcome usageOutcome(captf::runner::v1alpha1::Operation operation, std::string_view message);

} // namespace captf::runner
