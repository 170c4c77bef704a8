#pragma once

// Typed Kubernetes API errors carried in absl::Status.
//
// Every non-2xx answer of the API server becomes an absl::Status whose code
// follows the metav1.Status reason (NotFound -> kNotFound, Conflict ->
// kAborted, ...) and whose payload keeps the full ApiError, so callers branch
// with isNotFound(status) etc. instead of parsing messages.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace captf::kube {

// metav1.StatusReason values callers branch on. kUnknown covers reasons this
// client does not name; ApiError::reason_text keeps what the server sent.
enum class Reason {
  kUnknown,
  kBadRequest,
  kUnauthorized,
  kForbidden,
  kNotFound,
  kAlreadyExists,
  kConflict,
  kGone,
  kExpired,
  kInvalid,
  kTooManyRequests,
  kTimeout,
  kServerTimeout,
  kMethodNotAllowed,
  kRequestEntityTooLarge,
  kUnsupportedMediaType,
  kInternalError,
  kServiceUnavailable,
};

// One metav1.StatusCause: for Invalid, one per rejected field.
struct StatusCause {
  std::string type; // e.g. "FieldValueRequired"
  std::string message;
  std::string field; // e.g. "spec.replicas"
  bool operator==(const StatusCause&) const = default;
};

struct ApiError {
  int http_code = 0;
  Reason reason = Reason::kUnknown;
  std::string reason_text; // metav1.Status.reason as sent (may be empty)
  std::string message;
  std::string group; // details.group
  std::string kind;  // details.kind
  std::string name;  // details.name
  std::vector<StatusCause> causes;
  // From the Retry-After header or details.retryAfterSeconds.
  std::optional<std::chrono::seconds> retry_after;
};

// Converts an error into a Status carrying it. Never returns OK.
absl::Status toStatus(const ApiError& error);

// Builds the error for an HTTP answer with status code `http_code` (not 2xx)
// and body `body` (a metav1.Status when the API server produced it; any text
// otherwise). `retry_after_header` is the raw Retry-After header, if any.
absl::Status errorFromResponse(int http_code, std::string_view body,
                               std::string_view retry_after_header = {});

// The ApiError inside `status`, if the status came from the API server.
std::optional<ApiError> apiError(const absl::Status& status);
Reason reasonOf(const absl::Status& status);

bool isNotFound(const absl::Status& status);
// `status`, with NotFound counted as success: for a delete, a cleanup or a
// read where "already gone" is the goal (controller-runtime's
// client.IgnoreNotFound).
absl::Status ignoreNotFound(const absl::Status& status);
bool isAlreadyExists(const absl::Status& status);
bool isConflict(const absl::Status& status);
bool isInvalid(const absl::Status& status);
bool isForbidden(const absl::Status& status);
bool isUnauthorized(const absl::Status& status);
// True for 410 answers: reason Gone or Expired ("too old resource version").
bool isGone(const absl::Status& status);
bool isTooManyRequests(const absl::Status& status);
// True for errors worth retrying later without a change: 429, 5xx, timeouts
// and transport failures (kUnavailable / kDeadlineExceeded without payload).
bool isTransient(const absl::Status& status);
std::optional<std::chrono::seconds> retryAfter(const absl::Status& status);

std::string_view reasonName(Reason reason);

} // namespace captf::kube
