#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "lint/hcl/ast.h"

namespace captf::lint::hcl {

// The deepest nesting of expressions, blocks and template directives the
// parser accepts. Real modules stay far below it; the limit keeps recursion
// (in the parser and in every walk over the tree) within the stack for any
// input. Chains of binary operators and traversal steps count one level per
// link, because they nest in the tree just the same.
inline constexpr int kDefaultMaxNestingDepth = 256;

struct ParseOptions {
  int max_nesting_depth = kDefaultMaxNestingDepth;
};

// Parses a file in HCL's native syntax (.tf, .tofu). `filename` is used only
// in messages and kept in the result. Errors are InvalidArgument with the
// message "<filename>:<line>:<column>: <what is wrong>"; parsing stops at the
// first error. Never crashes or loops; time is linear in the input.
//
// The parser enforces the syntax rules Terraform depends on: newlines end
// arguments, a single-line block holds at most one argument, an argument may
// not be set twice in one body, block labels are identifiers or literal
// strings.
absl::StatusOr<File> parseFile(std::string filename, std::string source,
                               const ParseOptions& options = {});

// Parses a standalone expression (as in a JSON file's "type" string or a
// test). Newlines around and inside the expression are insignificant except
// where an object constructor uses them to separate items. `start` is the
// position of source[0] for error messages and node ranges.
absl::StatusOr<ExprPtr> parseExpression(std::string_view source, std::string_view filename,
                                        const ParseOptions& options = {}, Pos start = {});

// Parses a bare template: literal text with ${...} and %{...} sequences and
// no surrounding quotes or backslash escapes, as HCL's JSON syntax reads
// strings. Always yields a TemplateExpr.
absl::StatusOr<ExprPtr> parseTemplate(std::string_view source, std::string_view filename,
                                      const ParseOptions& options = {}, Pos start = {});

} // namespace captf::lint::hcl
