#include "manager/kube/errors.h"

#include <array>
#include <charconv>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

using nlohmann::json;

constexpr absl::string_view kPayloadUrl = "type.captf.io/kube.ApiError";

constexpr std::array<std::pair<Reason, std::string_view>, 17> kReasonNames = {{
    {Reason::kBadRequest, "BadRequest"},
    {Reason::kUnauthorized, "Unauthorized"},
    {Reason::kForbidden, "Forbidden"},
    {Reason::kNotFound, "NotFound"},
    {Reason::kAlreadyExists, "AlreadyExists"},
    {Reason::kConflict, "Conflict"},
    {Reason::kGone, "Gone"},
    {Reason::kExpired, "Expired"},
    {Reason::kInvalid, "Invalid"},
    {Reason::kTooManyRequests, "TooManyRequests"},
    {Reason::kTimeout, "Timeout"},
    {Reason::kServerTimeout, "ServerTimeout"},
    {Reason::kMethodNotAllowed, "MethodNotAllowed"},
    {Reason::kRequestEntityTooLarge, "RequestEntityTooLarge"},
    {Reason::kUnsupportedMediaType, "UnsupportedMediaType"},
    {Reason::kInternalError, "InternalError"},
    {Reason::kServiceUnavailable, "ServiceUnavailable"},
}};

Reason reasonFromText(std::string_view text) {
  for (const auto& [reason, name] : kReasonNames) {
    if (name == text) {
      return reason;
    }
  }
  return Reason::kUnknown;
}

// The reason the API server implies by the code alone (client-go's
// reasonForError fallback for bodies that are not a metav1.Status).
Reason reasonFromCode(int code) {
  switch (code) {
  case 400:
    return Reason::kBadRequest;
  case 401:
    return Reason::kUnauthorized;
  case 403:
    return Reason::kForbidden;
  case 404:
    return Reason::kNotFound;
  case 405:
    return Reason::kMethodNotAllowed;
  case 409:
    return Reason::kConflict;
  case 410:
    return Reason::kGone;
  case 413:
    return Reason::kRequestEntityTooLarge;
  case 415:
    return Reason::kUnsupportedMediaType;
  case 422:
    return Reason::kInvalid;
  case 429:
    return Reason::kTooManyRequests;
  case 500:
    return Reason::kInternalError;
  case 503:
    return Reason::kServiceUnavailable;
  case 504:
    return Reason::kTimeout;
  default:
    return Reason::kUnknown;
  }
}

absl::StatusCode codeFor(Reason reason, int http_code) {
  switch (reason) {
  case Reason::kNotFound:
    return absl::StatusCode::kNotFound;
  case Reason::kAlreadyExists:
    return absl::StatusCode::kAlreadyExists;
  case Reason::kConflict:
    return absl::StatusCode::kAborted;
  case Reason::kInvalid:
  case Reason::kBadRequest:
  case Reason::kRequestEntityTooLarge:
  case Reason::kUnsupportedMediaType:
    return absl::StatusCode::kInvalidArgument;
  case Reason::kForbidden:
    return absl::StatusCode::kPermissionDenied;
  case Reason::kUnauthorized:
    return absl::StatusCode::kUnauthenticated;
  case Reason::kGone:
  case Reason::kExpired:
    return absl::StatusCode::kOutOfRange;
  case Reason::kTooManyRequests:
    return absl::StatusCode::kResourceExhausted;
  case Reason::kTimeout:
  case Reason::kServerTimeout:
    return absl::StatusCode::kDeadlineExceeded;
  case Reason::kMethodNotAllowed:
    return absl::StatusCode::kUnimplemented;
  case Reason::kServiceUnavailable:
    return absl::StatusCode::kUnavailable;
  case Reason::kInternalError:
    return absl::StatusCode::kInternal;
  case Reason::kUnknown:
    break;
  }
  if (http_code >= 500) {
    return absl::StatusCode::kUnavailable;
  }
  return absl::StatusCode::kUnknown;
}

std::optional<std::chrono::seconds> parseRetryAfter(std::string_view header) {
  header = sv(absl::StripAsciiWhitespace(av(header)));
  long long seconds = 0;
  const auto* end = header.data() + header.size();
  // NOLINTNEXTLINE(bugprone-suspicious-stringview-data-usage): from_chars takes [data, end).
  auto [ptr, ec] = std::from_chars(header.data(), end, seconds);
  // HTTP dates are not used by the API server; only delta-seconds count.
  if (ec != std::errc() || ptr != end || seconds < 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(seconds);
}

json toJson(const ApiError& error) {
  json causes = json::array();
  for (const auto& cause : error.causes) {
    causes.push_back({{"reason", cause.type}, {"message", cause.message}, {"field", cause.field}});
  }
  json out = {{"code", error.http_code},    {"reason", error.reason_text},
              {"message", error.message},   {"group", error.group},
              {"kind", error.kind},         {"name", error.name},
              {"causes", std::move(causes)}};
  if (error.retry_after) {
    out["retryAfter"] = error.retry_after->count();
  }
  return out;
}

std::string stringAt(const json& object, const char* key) {
  auto it = object.find(key);
  if (it != object.end() && it->is_string()) {
    return it->get<std::string>();
  }
  return {};
}

} // namespace

std::string_view reasonName(Reason reason) {
  for (const auto& [r, name] : kReasonNames) {
    if (r == reason) {
      return name;
    }
  }
  return "Unknown";
}

absl::Status toStatus(const ApiError& error) {
  std::string message = error.message.empty()
                            ? absl::StrCat("the server responded with HTTP ", error.http_code)
                            : error.message;
  if (!error.reason_text.empty()) {
    message = absl::StrCat(error.reason_text, ": ", message);
  }
  absl::Status status(codeFor(error.reason, error.http_code), message);
  if (status.ok()) {
    status = absl::UnknownError(message);
  }
  status.SetPayload(kPayloadUrl, absl::Cord(toJson(error).dump()));
  return status;
}

absl::Status errorFromResponse(int http_code, std::string_view body,
                               std::string_view retry_after_header) {
  ApiError error;
  error.http_code = http_code;
  json parsed = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status") {
    error.reason_text = stringAt(parsed, "reason");
    error.message = stringAt(parsed, "message");
    if (auto code = parsed.find("code"); code != parsed.end() && code->is_number_integer()) {
      error.http_code = code->get<int>();
    }
    if (auto details = parsed.find("details"); details != parsed.end() && details->is_object()) {
      error.group = stringAt(*details, "group");
      error.kind = stringAt(*details, "kind");
      error.name = stringAt(*details, "name");
      if (auto causes = details->find("causes"); causes != details->end() && causes->is_array()) {
        for (const auto& cause : *causes) {
          if (cause.is_object()) {
            error.causes.push_back(
                {stringAt(cause, "reason"), stringAt(cause, "message"), stringAt(cause, "field")});
          }
        }
      }
      if (auto retry = details->find("retryAfterSeconds");
          retry != details->end() && retry->is_number_integer() && retry->get<long long>() > 0) {
        error.retry_after = std::chrono::seconds(retry->get<long long>());
      }
    }
  } else {
    // Not a metav1.Status (a proxy, or a non-API path): keep a bounded excerpt.
    constexpr size_t kMaxExcerpt = 512;
    error.message = std::string(body.substr(0, kMaxExcerpt));
  }
  error.reason = reasonFromText(error.reason_text);
  if (error.reason == Reason::kUnknown) {
    error.reason = reasonFromCode(error.http_code);
  }
  if (auto header = parseRetryAfter(retry_after_header)) {
    error.retry_after = header;
  }
  return toStatus(error);
}

std::optional<ApiError> apiError(const absl::Status& status) {
  auto payload = status.GetPayload(kPayloadUrl);
  if (!payload) {
    return std::nullopt;
  }
  json parsed = json::parse(std::string(*payload), nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return std::nullopt;
  }
  ApiError error;
  error.http_code = parsed.value("code", 0);
  error.reason_text = stringAt(parsed, "reason");
  error.message = stringAt(parsed, "message");
  error.group = stringAt(parsed, "group");
  error.kind = stringAt(parsed, "kind");
  error.name = stringAt(parsed, "name");
  for (const auto& cause : parsed.value("causes", json::array())) {
    error.causes.push_back(
        {stringAt(cause, "reason"), stringAt(cause, "message"), stringAt(cause, "field")});
  }
  if (auto retry = parsed.find("retryAfter"); retry != parsed.end()) {
    error.retry_after = std::chrono::seconds(retry->get<long long>());
  }
  error.reason = reasonFromText(error.reason_text);
  if (error.reason == Reason::kUnknown) {
    error.reason = reasonFromCode(error.http_code);
  }
  return error;
}

Reason reasonOf(const absl::Status& status) {
  auto error = apiError(status);
  return error ? error->reason : Reason::kUnknown;
}

bool isNotFound(const absl::Status& status) {
  return reasonOf(status) == Reason::kNotFound;
}
absl::Status ignoreNotFound(const absl::Status& status) {
  return isNotFound(status) ? absl::OkStatus() : status;
}
bool isAlreadyExists(const absl::Status& status) {
  return reasonOf(status) == Reason::kAlreadyExists;
}
bool isConflict(const absl::Status& status) {
  return reasonOf(status) == Reason::kConflict;
}
bool isInvalid(const absl::Status& status) {
  return reasonOf(status) == Reason::kInvalid;
}
bool isForbidden(const absl::Status& status) {
  return reasonOf(status) == Reason::kForbidden;
}
bool isUnauthorized(const absl::Status& status) {
  return reasonOf(status) == Reason::kUnauthorized;
}
bool isGone(const absl::Status& status) {
  Reason reason = reasonOf(status);
  return reason == Reason::kGone || reason == Reason::kExpired;
}
bool isTooManyRequests(const absl::Status& status) {
  return reasonOf(status) == Reason::kTooManyRequests;
}

bool isTransient(const absl::Status& status) {
  if (status.ok()) {
    return false;
  }
  auto error = apiError(status);
  if (!error) {
    return status.code() == absl::StatusCode::kUnavailable ||
           status.code() == absl::StatusCode::kDeadlineExceeded;
  }
  return error->http_code == 429 || error->http_code >= 500 || error->reason == Reason::kTimeout ||
         error->reason == Reason::kServerTimeout;
}

std::optional<std::chrono::seconds> retryAfter(const absl::Status& status) {
  auto error = apiError(status);
  return error ? error->retry_after : std::nullopt;
}

} // namespace captf::kube
