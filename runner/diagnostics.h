#pragma once

// Reading the runtime's output: the failure summary of a step (docs/behaviour/jobs.md:
// from validate's JSON diagnostics, else from the `Error:` header lines of
// stderr, else a fallback), and the resource counts of an apply or destroy.

#include <optional>
#include <string>
#include <string_view>

#include "captf/runner/v1alpha1/result.pb.h"
#include "runner/redact.h"

namespace captf::runner {

// `text` without ANSI escape sequences (CSI, OSC, two-byte escapes) and
// without the box-drawing gutter (╷ │ ╵) the runtimes draw around
// diagnostics when colour is on.
std::string stripTerminalDecoration(std::string_view text);

struct DiagnosticText {
  // "<summary> (<file> line <n>)" of each error, distinct, joined by "; ";
  // empty when none was found.
  std::string summary;
  // The error blocks in full (header, location, detail), decoration stripped.
  std::string tail;
};

// From a step's stderr (or its captured tail).
DiagnosticText diagnosticsFromStderr(std::string_view stderr_text);

// From `validate -json` output; empty when it is not a validate document or
// holds no error.
DiagnosticText diagnosticsFromValidateJson(std::string_view json_text);

// The counts of an "Apply complete! Resources: 1 imported, 2 added,
// 0 changed, 1 destroyed." or "Destroy complete! Resources: 3 destroyed."
// line (decoration already stripped), or nullopt for any other line.
std::optional<captf::runner::v1alpha1::ResourceChanges> parseChangeSummary(std::string_view line);

struct Failure {
  std::string summary;
  std::string tail;
};

// What a failed step reports: `text` redacted, then bounded (summary at most
// 512 bytes, tail at most the contract's tail bound); the fallback
// "step <name> exited <code>; see the Job's logs" when no diagnostic was
// found. Redaction comes before clipping, so a clip can never leave part of
// a secret behind.
Failure stepFailure(captf::runner::v1alpha1::Step step, int exit_code, const DiagnosticText& text,
                    const Redactor& redactor);

// Redacts and bounds a summary the runner wrote itself.
std::string boundedSummary(std::string_view summary, const Redactor& redactor);

} // namespace captf::runner
