#pragma once

// Early-return helpers for absl::Status and absl::StatusOr, for every folder
// (header-only; docs/architecture.md lists the arrow). Errors are values on
// every path of the tree; these keep a chain of fallible steps readable.

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define CAPTF_STATUS_CONCAT_INNER(a, b) a##b
#define CAPTF_STATUS_CONCAT(a, b) CAPTF_STATUS_CONCAT_INNER(a, b)

// Evaluates `expr` (an absl::Status) once and returns it from the enclosing
// function if it is not OK.
#define CAPTF_RETURN_IF_ERROR(expr)                                                                \
  do {                                                                                             \
    if (absl::Status captf_status = (expr); !captf_status.ok()) {                                  \
      return captf_status;                                                                         \
    }                                                                                              \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>) once; returns its status if it is
// not OK, otherwise moves the value into `lhs` (a declaration such as
// `auto x` or `const Foo foo`, or an lvalue). Expands to more than one
// statement: not for the body of an unbraced if.
#define CAPTF_ASSIGN_OR_RETURN(lhs, rexpr)                                                         \
  CAPTF_ASSIGN_OR_RETURN_IMPL(CAPTF_STATUS_CONCAT(captf_statusor_, __LINE__), lhs, rexpr)

// `lhs` may be a declaration, so it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define CAPTF_ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr)                                          \
  auto statusor = (rexpr);                                                                         \
  if (!statusor.ok()) {                                                                            \
    return std::move(statusor).status();                                                           \
  }                                                                                                \
  lhs = std::move(*statusor)
// NOLINTEND(bugprone-macro-parentheses)
