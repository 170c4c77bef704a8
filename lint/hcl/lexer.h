#pragma once

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "lint/hcl/source.h"
#include "lint/hcl/token.h"

namespace captf::lint::hcl {

enum class LexMode {
  // A configuration file or a standalone expression.
  kNormal,
  // A bare template: the whole input is template text (literals with ${...}
  // and %{...} sequences, no quotes, no backslash escapes), as in the strings
  // of HCL's JSON syntax.
  kTemplate,
};

// Splits `source` into tokens. The input is validated as UTF-8 first. The
// returned tokens view `source`, which must outlive them, and always end with
// one kEOF token. Comments produce no tokens; a line comment is followed by
// the kNewline of its line.
//
// Errors (InvalidArgument, "<filename>:<line>:<column>: <message>"): invalid
// UTF-8, a character that starts no token, an unterminated string, heredoc or
// block comment, a newline inside a quoted string, and an input longer than
// 4 GiB. Runs in time linear in the input.
absl::StatusOr<std::vector<Token>> tokenize(std::string_view source, std::string_view filename,
                                            LexMode mode = LexMode::kNormal, Pos start = {});

} // namespace captf::lint::hcl
