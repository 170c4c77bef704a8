#pragma once

// Field errors in the shape of Kubernetes' apimachinery field.Error, and
// their conversion into the Status an admission response carries.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "manager/api/field_path.h"

namespace captf::webhooks {

enum class FieldErrorType {
  kRequired,     // FieldValueRequired
  kInvalid,      // FieldValueInvalid
  kForbidden,    // FieldValueForbidden
  kDuplicate,    // FieldValueDuplicate
  kTooMany,      // FieldValueTooMany
  kNotSupported, // FieldValueNotSupported
  kInternal,     // InternalError
};

struct FieldError {
  FieldErrorType type = FieldErrorType::kInvalid;
  // "spec.source.image", "spec.variables[captf_x]".
  std::string field;
  // The offending value as Kubernetes prints it ("\"foo\"", "3"); unset
  // when the value is not shown (Required, Forbidden, whole objects).
  std::optional<std::string> bad_value;
  std::string detail;

  friend bool operator==(const FieldError&, const FieldError&) = default;
};

using FieldErrorList = std::vector<FieldError>;

// Constructors mirroring apimachinery's field.Invalid, field.Required, ...
[[nodiscard]] FieldError invalid(const api::FieldPath& path, std::string_view value,
                                 std::string_view detail);
[[nodiscard]] FieldError invalid(const api::FieldPath& path, std::int64_t value,
                                 std::string_view detail);
// Invalid without showing the value (objects, lists).
[[nodiscard]] FieldError invalidObject(const api::FieldPath& path, std::string_view detail);
[[nodiscard]] FieldError required(const api::FieldPath& path, std::string_view detail);
[[nodiscard]] FieldError forbidden(const api::FieldPath& path, std::string_view detail);
[[nodiscard]] FieldError duplicate(const api::FieldPath& path, std::string_view value);
[[nodiscard]] FieldError tooMany(const api::FieldPath& path, std::int64_t actual, std::int64_t max);
[[nodiscard]] FieldError notSupported(const api::FieldPath& path, std::string_view value,
                                      const std::vector<std::string>& supported);
[[nodiscard]] FieldError internal(const api::FieldPath& path, std::string_view detail);

// "Invalid value", "Required value", ... (field.ErrorType.String()).
[[nodiscard]] std::string_view typeString(FieldErrorType t);
// "FieldValueInvalid", ... (the Status cause type).
[[nodiscard]] std::string_view causeReason(FieldErrorType t);
// The error without its field: `Invalid value: "x": detail` (ErrorBody()).
[[nodiscard]] std::string errorBody(const FieldError& e);
// `spec.source.image: Invalid value: "x": detail` (Error()).
[[nodiscard]] std::string toString(const FieldError& e);

// Go's %q for a string: quoted, with JSON-style escapes.
[[nodiscard]] std::string quote(std::string_view s);

// The Status an admission response carries to reject an object. For CREATE
// and UPDATE: 422 Invalid, as apierrors.NewInvalid builds it
// (`TerraformMachine.infrastructure.cluster.x-k8s.io "m" is invalid: [...]`).
// Each error becomes one entry of details.causes {reason, message, field}.
[[nodiscard]] nlohmann::json invalidStatus(std::string_view kind, std::string_view name,
                                           const FieldErrorList& errors);
// For DELETE: 403 Forbidden (`... "m" is forbidden: ...`), same causes.
[[nodiscard]] nlohmann::json forbiddenStatus(std::string_view kind, std::string_view name,
                                             const FieldErrorList& errors);

// Errors of `current` that are not also errors of `previous`: lets an
// update through when it leaves an already-stored violation unchanged, so a
// rule added in a later release never blocks finalizer removal or other
// unrelated writes (the API server ratchets CRD validation the same way).
[[nodiscard]] FieldErrorList ratchet(const FieldErrorList& current, const FieldErrorList& previous);

} // namespace captf::webhooks
