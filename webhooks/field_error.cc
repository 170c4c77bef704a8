#include "webhooks/field_error.h"

#include <algorithm>

#include <fmt/format.h>

#include "manager/api/keys.h"

namespace captf::webhooks {

FieldError invalid(const api::FieldPath& path, std::string_view value, std::string_view detail) {
  return {FieldErrorType::kInvalid, path.str(), quote(value), std::string(detail)};
}

FieldError invalid(const api::FieldPath& path, std::int64_t value, std::string_view detail) {
  return {FieldErrorType::kInvalid, path.str(), std::to_string(value), std::string(detail)};
}

FieldError invalidObject(const api::FieldPath& path, std::string_view detail) {
  return {FieldErrorType::kInvalid, path.str(), std::nullopt, std::string(detail)};
}

FieldError required(const api::FieldPath& path, std::string_view detail) {
  return {FieldErrorType::kRequired, path.str(), std::nullopt, std::string(detail)};
}

FieldError forbidden(const api::FieldPath& path, std::string_view detail) {
  return {FieldErrorType::kForbidden, path.str(), std::nullopt, std::string(detail)};
}

FieldError duplicate(const api::FieldPath& path, std::string_view value) {
  return {FieldErrorType::kDuplicate, path.str(), quote(value), ""};
}

FieldError tooMany(const api::FieldPath& path, std::int64_t actual, std::int64_t max) {
  return {FieldErrorType::kTooMany, path.str(), std::to_string(actual),
          fmt::format("must have at most {} items", max)};
}

FieldError notSupported(const api::FieldPath& path, std::string_view value,
                        const std::vector<std::string>& supported) {
  std::string list;
  for (const std::string& s : supported) {
    list += fmt::format("{}{}", list.empty() ? "" : ", ", quote(s));
  }
  return {FieldErrorType::kNotSupported, path.str(), quote(value),
          fmt::format("supported values: {}", list)};
}

FieldError internal(const api::FieldPath& path, std::string_view detail) {
  return {FieldErrorType::kInternal, path.str(), std::nullopt, std::string(detail)};
}

std::string_view typeString(FieldErrorType t) {
  switch (t) {
  case FieldErrorType::kRequired:
    return "Required value";
  case FieldErrorType::kInvalid:
    return "Invalid value";
  case FieldErrorType::kForbidden:
    return "Forbidden";
  case FieldErrorType::kDuplicate:
    return "Duplicate value";
  case FieldErrorType::kTooMany:
    return "Too many";
  case FieldErrorType::kNotSupported:
    return "Unsupported value";
  case FieldErrorType::kInternal:
    return "Internal error";
  }
  return "Invalid value";
}

std::string_view causeReason(FieldErrorType t) {
  switch (t) {
  case FieldErrorType::kRequired:
    return "FieldValueRequired";
  case FieldErrorType::kInvalid:
    return "FieldValueInvalid";
  case FieldErrorType::kForbidden:
    return "FieldValueForbidden";
  case FieldErrorType::kDuplicate:
    return "FieldValueDuplicate";
  case FieldErrorType::kTooMany:
    return "FieldValueTooMany";
  case FieldErrorType::kNotSupported:
    return "FieldValueNotSupported";
  case FieldErrorType::kInternal:
    return "InternalError";
  }
  return "FieldValueInvalid";
}

std::string errorBody(const FieldError& e) {
  std::string s(typeString(e.type));
  if (e.bad_value && e.type != FieldErrorType::kRequired && e.type != FieldErrorType::kForbidden &&
      e.type != FieldErrorType::kInternal) {
    s += ": " + *e.bad_value;
  }
  if (!e.detail.empty()) {
    s += ": " + e.detail;
  }
  return s;
}

std::string toString(const FieldError& e) {
  return e.field.empty() ? errorBody(e) : e.field + ": " + errorBody(e);
}

std::string quote(std::string_view s) {
  // nlohmann's dump escapes control characters and quotes; invalid UTF-8 is
  // replaced rather than thrown on, since values come from users.
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

nlohmann::json statusFor(int code, std::string_view reason, std::string_view verb,
                         std::string_view kind, std::string_view name,
                         const FieldErrorList& errors) {
  std::string aggregate;
  if (errors.size() == 1) {
    aggregate = toString(errors.front());
  } else {
    aggregate = "[";
    for (std::size_t i = 0; i < errors.size(); ++i) {
      aggregate += (i == 0 ? "" : ", ") + toString(errors[i]);
    }
    aggregate += ']';
  }
  nlohmann::json causes = nlohmann::json::array();
  for (const FieldError& e : errors) {
    causes.push_back({{"reason", std::string(causeReason(e.type))},
                      {"message", errorBody(e)},
                      {"field", e.field}});
  }
  const std::string qualified = fmt::format("{}.{}", kind, api::kGroup);
  return {
      {"apiVersion", "v1"},
      {"kind", "Status"},
      {"metadata", nlohmann::json::object()},
      {"status", "Failure"},
      {"message", fmt::format("{} {} is {}: {}", qualified, quote(name), verb, aggregate)},
      {"reason", std::string(reason)},
      {"details",
       {{"name", std::string(name)},
        {"group", std::string(api::kGroup)},
        {"kind", std::string(kind)},
        {"causes", std::move(causes)}}},
      {"code", code},
  };
}

} // namespace

nlohmann::json invalidStatus(std::string_view kind, std::string_view name,
                             const FieldErrorList& errors) {
  return statusFor(422, "Invalid", "invalid", kind, name, errors);
}

nlohmann::json forbiddenStatus(std::string_view kind, std::string_view name,
                               const FieldErrorList& errors) {
  return statusFor(403, "Forbidden", "forbidden", kind, name, errors);
}

FieldErrorList ratchet(const FieldErrorList& current, const FieldErrorList& previous) {
  FieldErrorList out;
  for (const FieldError& e : current) {
    if (std::find(previous.begin(), previous.end(), e) == previous.end()) {
      out.push_back(e);
    }
  }
  return out;
}

} // namespace captf::webhooks
