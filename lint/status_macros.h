#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Early-return helpers for absl::Status / absl::StatusOr, used inside lint/
// where nearly every step of parsing or loading can fail with a value.

#define CAPTF_LINT_CONCAT_INNER(a, b) a##b
#define CAPTF_LINT_CONCAT(a, b) CAPTF_LINT_CONCAT_INNER(a, b)

// Evaluates `expr` (an absl::Status) and returns it from the enclosing
// function if it is not OK.
#define CAPTF_RETURN_IF_ERROR(expr)                                                                \
  do {                                                                                             \
    if (absl::Status captf_lint_status = (expr); !captf_lint_status.ok()) {                        \
      return captf_lint_status;                                                                    \
    }                                                                                              \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); returns its status if it is not
// OK, otherwise moves the value into `lhs` (a declaration or an lvalue).
#define CAPTF_ASSIGN_OR_RETURN(lhs, rexpr)                                                         \
  CAPTF_ASSIGN_OR_RETURN_IMPL(CAPTF_LINT_CONCAT(captf_lint_statusor_, __LINE__), lhs, rexpr)

// `lhs` may be a declaration, so it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define CAPTF_ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr)                                          \
  auto statusor = (rexpr);                                                                         \
  if (!statusor.ok()) {                                                                            \
    return std::move(statusor).status();                                                           \
  }                                                                                                \
  lhs = std::move(*statusor)
// NOLINTEND(bugprone-macro-parentheses)
