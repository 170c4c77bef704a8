#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/api/field_path.h"
#include "manager/api/schema.h"

// Declares the JSON codec and schema of an API struct. Every API struct has
// these three functions, defined in its .cc from one field description
// (manager/api/describe.h), so encoder, decoder and CRD schema always agree.
//
// encodeJson: writes the object; optional fields that are unset, and empty
//   lists and maps, are omitted (Go's omitempty).
// decodeJson: reads an object. Unknown keys are ignored (the API server
//   prunes them; ignoring keeps older managers working against newer CRDs).
//   Returns InvalidArgument naming the field path on a wrong JSON type, a
//   missing required field or an unknown enum value. It does not check the
//   ranges and patterns of the schema: the API server enforces those.
// schemaFor: the structural OpenAPI v3 schema of the struct.
// NOLINTBEGIN(bugprone-macro-parentheses): T is a type; (T) would not compile.
#define CAPTF_API_DECLARE_CODEC(T)                                                                 \
  void encodeJson(const T& v, nlohmann::json& out);                                                \
  absl::Status decodeJson(const nlohmann::json& in, T& v, const ::captf::api::FieldPath& path);    \
  ::captf::api::Schema schemaFor(const T*)
// NOLINTEND(bugprone-macro-parentheses)

namespace captf::api {

// Parses a JSON document. The one place that catches nlohmann's parse
// exception: the error says what went wrong and at which byte offset.
[[nodiscard]] absl::StatusOr<nlohmann::json> parseJson(std::string_view text);

// Decodes a whole object (a kind, or any struct with a codec).
template <class T> [[nodiscard]] absl::StatusOr<T> fromJson(const nlohmann::json& in) {
  T out{};
  if (absl::Status s = decodeJson(in, out, FieldPath()); !s.ok()) {
    return s;
  }
  return out;
}

template <class T> [[nodiscard]] nlohmann::json toJson(const T& v) {
  nlohmann::json out;
  encodeJson(v, out);
  return out;
}

template <class T> [[nodiscard]] Schema schemaOf() {
  return schemaFor(static_cast<const T*>(nullptr));
}

} // namespace captf::api
