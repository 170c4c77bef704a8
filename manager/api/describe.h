#pragma once

// The field-description language of the API types. Include only from the
// .cc files of manager/api: each API struct is described there exactly once
// (JSON key, C++ member, documentation, constraints, CEL rules), and its
// encoder, decoder and CRD schema are all derived from that description.
//
//   template <> struct Describe<Source> {
//     static constexpr std::string_view kDoc = "...";
//     static auto fields() {
//       return std::tuple{
//           field("image", &Source::image).required().doc("...").minLength(1).maxLength(512),
//           field("imagePullPolicy", &Source::image_pull_policy).doc("..."),
//       };
//     }
//     static void patch(Schema& s);  // optional: object-level constraints
//   };
//   CAPTF_API_DEFINE_CODEC(Source)

#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "manager/api/codec.h"
#include "manager/api/enum_names.h"
#include "manager/api/field_path.h"
#include "manager/api/schema.h"

namespace captf::api {

template <class T> struct Describe;

namespace describe_internal {

inline std::string_view jsonTypeName(const nlohmann::json& j) {
  switch (j.type()) {
  case nlohmann::json::value_t::null:
    return "null";
  case nlohmann::json::value_t::object:
    return "object";
  case nlohmann::json::value_t::array:
    return "array";
  case nlohmann::json::value_t::string:
    return "string";
  case nlohmann::json::value_t::boolean:
    return "boolean";
  case nlohmann::json::value_t::number_integer:
  case nlohmann::json::value_t::number_unsigned:
    return "integer";
  case nlohmann::json::value_t::number_float:
    return "number";
  case nlohmann::json::value_t::binary:
  case nlohmann::json::value_t::discarded:
    break;
  }
  return "unsupported value";
}

inline absl::Status typeError(const FieldPath& path, std::string_view want,
                              const nlohmann::json& got) {
  return absl::InvalidArgumentError(fmt::format("{}: Invalid type: expected {}, got {}",
                                                path.empty() ? "<root>" : path.str(), want,
                                                jsonTypeName(got)));
}

inline Schema scalar(Schema::Type t, std::string_view format = {}) {
  Schema s;
  s.type = t;
  s.format = std::string(format);
  return s;
}

// Reads an integer; accepts integral floating-point values (1.0) the way
// Go's decoder accepts them, and checks the range of the C++ type.
template <class I>
absl::Status decodeInteger(const nlohmann::json& in, I& out, const FieldPath& path) {
  std::int64_t v = 0;
  if (in.is_number_integer()) {
    v = in.get<std::int64_t>();
  } else if (in.is_number_unsigned()) {
    const auto u = in.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return absl::InvalidArgumentError(fmt::format("{}: integer out of range", path.str()));
    }
    v = static_cast<std::int64_t>(u);
  } else if (in.is_number_float()) {
    const double d = in.get<double>();
    if (!(d >= -9.2e18 && d <= 9.2e18) || static_cast<double>(static_cast<std::int64_t>(d)) != d) {
      return typeError(path, "integer", in);
    }
    v = static_cast<std::int64_t>(d);
  } else {
    return typeError(path, "integer", in);
  }
  if (v < static_cast<std::int64_t>(std::numeric_limits<I>::min()) ||
      v > static_cast<std::int64_t>(std::numeric_limits<I>::max())) {
    return absl::InvalidArgumentError(fmt::format("{}: integer out of range", path.str()));
  }
  out = static_cast<I>(v);
  return absl::OkStatus();
}

} // namespace describe_internal

// A struct (or other value type) that has the three codec functions of
// CAPTF_API_DECLARE_CODEC, found by argument-dependent lookup.
template <class T>
concept HasStructCodec =
    requires(const T& c, T& m, nlohmann::json& j, const nlohmann::json& cj, const FieldPath& p) {
      encodeJson(c, j);
      { decodeJson(cj, m, p) } -> std::same_as<absl::Status>;
      { schemaFor(static_cast<const T*>(nullptr)) } -> std::same_as<Schema>;
    };

// ValueCodec<M>: schema, encode, decode and "is empty" (for omitempty) of a
// member type M.
template <class M> struct ValueCodec;

template <> struct ValueCodec<std::string> {
  static Schema schema() { return describe_internal::scalar(Schema::Type::kString); }
  static bool empty(const std::string& v) { return v.empty(); }
  static void encode(const std::string& v, nlohmann::json& out) { out = v; }
  static absl::Status decode(const nlohmann::json& in, std::string& out, const FieldPath& path) {
    if (!in.is_string()) {
      return describe_internal::typeError(path, "string", in);
    }
    out = in.get<std::string>();
    return absl::OkStatus();
  }
};

template <> struct ValueCodec<bool> {
  static Schema schema() { return describe_internal::scalar(Schema::Type::kBoolean); }
  static bool empty(bool v) { return !v; }
  static void encode(bool v, nlohmann::json& out) { out = v; }
  static absl::Status decode(const nlohmann::json& in, bool& out, const FieldPath& path) {
    if (!in.is_boolean()) {
      return describe_internal::typeError(path, "boolean", in);
    }
    out = in.get<bool>();
    return absl::OkStatus();
  }
};

template <class I>
  requires(std::same_as<I, std::int32_t> || std::same_as<I, std::int64_t>)
struct ValueCodec<I> {
  static Schema schema() {
    return describe_internal::scalar(Schema::Type::kInteger,
                                     sizeof(I) == 4 ? std::string_view("int32") : "int64");
  }
  static bool empty(I v) { return v == 0; }
  static void encode(I v, nlohmann::json& out) { out = v; }
  static absl::Status decode(const nlohmann::json& in, I& out, const FieldPath& path) {
    return describe_internal::decodeInteger(in, out, path);
  }
};

// Free-form JSON object (runtime.RawExtension with Type: object).
template <> struct ValueCodec<nlohmann::json> {
  static Schema schema() {
    Schema s = describe_internal::scalar(Schema::Type::kObject);
    s.preserve_unknown_fields = true;
    return s;
  }
  static bool empty(const nlohmann::json& v) { return v.is_null(); }
  static void encode(const nlohmann::json& v, nlohmann::json& out) { out = v; }
  static absl::Status decode(const nlohmann::json& in, nlohmann::json& out, const FieldPath& path) {
    if (!in.is_object()) {
      return describe_internal::typeError(path, "object", in);
    }
    out = in;
    return absl::OkStatus();
  }
};

template <class E>
  requires std::is_enum_v<E>
struct ValueCodec<E> {
  static Schema schema() {
    Schema s = describe_internal::scalar(Schema::Type::kString);
    for (const auto& [e, name] : EnumNames<E>::kValues) {
      s.enum_values.emplace_back(name);
    }
    return s;
  }
  static bool empty(E) { return false; }
  static void encode(E v, nlohmann::json& out) { out = std::string(enumName(v)); }
  static absl::Status decode(const nlohmann::json& in, E& out, const FieldPath& path) {
    if (!in.is_string()) {
      return describe_internal::typeError(path, "string", in);
    }
    const auto& s = in.get_ref<const std::string&>();
    if (auto e = parseEnum<E>(s)) {
      out = *e;
      return absl::OkStatus();
    }
    std::string supported;
    for (const auto& [e, name] : EnumNames<E>::kValues) {
      supported += fmt::format("{}\"{}\"", supported.empty() ? "" : ", ", name);
    }
    return absl::InvalidArgumentError(fmt::format("{}: Unsupported value: {}: supported values: {}",
                                                  path.str(), in.dump(), supported));
  }
};

template <HasStructCodec T> struct ValueCodec<T> {
  static Schema schema() { return schemaFor(static_cast<const T*>(nullptr)); }
  static bool empty(const T&) { return false; }
  static void encode(const T& v, nlohmann::json& out) { encodeJson(v, out); }
  static absl::Status decode(const nlohmann::json& in, T& out, const FieldPath& path) {
    return decodeJson(in, out, path);
  }
};

template <class X> struct ValueCodec<std::optional<X>> {
  static Schema schema() { return ValueCodec<X>::schema(); }
  static bool empty(const std::optional<X>& v) { return !v.has_value(); }
  static void encode(const std::optional<X>& v, nlohmann::json& out) {
    if (v) {
      ValueCodec<X>::encode(*v, out);
    }
  }
  static absl::Status decode(const nlohmann::json& in, std::optional<X>& out,
                             const FieldPath& path) {
    if (in.is_null()) {
      out.reset();
      return absl::OkStatus();
    }
    X v{};
    if (absl::Status s = ValueCodec<X>::decode(in, v, path); !s.ok()) {
      return s;
    }
    out = std::move(v);
    return absl::OkStatus();
  }
};

template <class X> struct ValueCodec<std::vector<X>> {
  static Schema schema() {
    Schema s = describe_internal::scalar(Schema::Type::kArray);
    s.items = Box<Schema>(ValueCodec<X>::schema());
    return s;
  }
  static bool empty(const std::vector<X>& v) { return v.empty(); }
  static void encode(const std::vector<X>& v, nlohmann::json& out) {
    out = nlohmann::json::array();
    for (const X& x : v) {
      nlohmann::json item;
      ValueCodec<X>::encode(x, item);
      out.push_back(std::move(item));
    }
  }
  static absl::Status decode(const nlohmann::json& in, std::vector<X>& out, const FieldPath& path) {
    out.clear();
    if (in.is_null()) {
      return absl::OkStatus();
    }
    if (!in.is_array()) {
      return describe_internal::typeError(path, "array", in);
    }
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      X x{};
      if (absl::Status s = ValueCodec<X>::decode(in[i], x, path.index(i)); !s.ok()) {
        return s;
      }
      out.push_back(std::move(x));
    }
    return absl::OkStatus();
  }
};

template <class X> struct ValueCodec<std::map<std::string, X>> {
  static Schema schema() {
    Schema s = describe_internal::scalar(Schema::Type::kObject);
    s.additional_properties = Box<Schema>(ValueCodec<X>::schema());
    return s;
  }
  static bool empty(const std::map<std::string, X>& v) { return v.empty(); }
  static void encode(const std::map<std::string, X>& v, nlohmann::json& out) {
    out = nlohmann::json::object();
    for (const auto& [k, x] : v) {
      ValueCodec<X>::encode(x, out[k]);
    }
  }
  static absl::Status decode(const nlohmann::json& in, std::map<std::string, X>& out,
                             const FieldPath& path) {
    out.clear();
    if (in.is_null()) {
      return absl::OkStatus();
    }
    if (!in.is_object()) {
      return describe_internal::typeError(path, "object", in);
    }
    for (const auto& [k, v] : in.items()) {
      X x{};
      if (absl::Status s = ValueCodec<X>::decode(v, x, path.key(k)); !s.ok()) {
        return s;
      }
      out.emplace(k, std::move(x));
    }
    return absl::OkStatus();
  }
};

// One field of an API struct: JSON key, C++ member, documentation, and the
// schema constraints that the API server enforces. Builder methods return
// *this so a description reads as one expression.
template <class Owner, class M> class Field {
public:
  using SchemaPatch = std::function<void(Schema&)>;

  Field(std::string_view key, M Owner::*member) : key_(key), member_(member) {}

  Field& doc(std::string_view d) {
    doc_ = std::string(d);
    return *this;
  }
  Field& required() {
    required_ = true;
    return *this;
  }
  Field& minLength(std::int64_t n) {
    return patch([n](Schema& s) { s.min_length = n; });
  }
  Field& maxLength(std::int64_t n) {
    return patch([n](Schema& s) { s.max_length = n; });
  }
  Field& length(std::int64_t min, std::int64_t max) { return minLength(min).maxLength(max); }
  Field& pattern(std::string_view p) {
    return patch([p = std::string(p)](Schema& s) { s.pattern = p; });
  }
  Field& minimum(std::int64_t n) {
    return patch([n](Schema& s) { s.minimum = n; });
  }
  Field& maximum(std::int64_t n) {
    return patch([n](Schema& s) { s.maximum = n; });
  }
  Field& range(std::int64_t min, std::int64_t max) { return minimum(min).maximum(max); }
  Field& minItems(std::int64_t n) {
    return patch([n](Schema& s) { s.min_items = n; });
  }
  Field& maxItems(std::int64_t n) {
    return patch([n](Schema& s) { s.max_items = n; });
  }
  Field& items(std::int64_t min, std::int64_t max) { return minItems(min).maxItems(max); }
  Field& minProperties(std::int64_t n) {
    return patch([n](Schema& s) { s.min_properties = n; });
  }
  Field& maxProperties(std::int64_t n) {
    return patch([n](Schema& s) { s.max_properties = n; });
  }
  Field& format(std::string_view f) {
    return patch([f = std::string(f)](Schema& s) { s.format = f; });
  }
  // Constraints on each item of a list of strings.
  Field& itemLength(std::int64_t min, std::int64_t max) {
    return patch([min, max](Schema& s) {
      s.items->min_length = min;
      s.items->max_length = max;
    });
  }
  Field& itemPattern(std::string_view p) {
    return patch([p = std::string(p)](Schema& s) { s.items->pattern = p; });
  }
  Field& itemRange(std::int64_t min, std::int64_t max) {
    return patch([min, max](Schema& s) {
      s.items->minimum = min;
      s.items->maximum = max;
    });
  }
  Field& listType(std::string_view t) {
    return patch([t = std::string(t)](Schema& s) { s.list_type = t; });
  }
  Field& listMapKey(std::string_view k) {
    return patch([k = std::string(k)](Schema& s) {
      s.list_type = "map";
      s.list_map_keys.push_back(k);
    });
  }
  Field& mapType(std::string_view t) {
    return patch([t = std::string(t)](Schema& s) { s.map_type = t; });
  }
  Field& cel(std::string_view rule, std::string_view message, std::string_view field_path = {},
             std::string_view reason = {}) {
    return patch([r = CelRule{std::string(rule), std::string(message), std::string(field_path),
                              std::string(reason)}](Schema& s) { s.validations.push_back(r); });
  }
  // Replaces the derived schema wholesale (for example the top-level
  // `metadata`, which a CRD must declare as a bare object).
  Field& schemaOverride(Schema replacement) {
    return patch([r = std::move(replacement)](Schema& s) { s = r; });
  }
  Field& patch(SchemaPatch p) {
    patches_.push_back(std::move(p));
    return *this;
  }

  [[nodiscard]] std::string_view key() const { return key_; }
  [[nodiscard]] bool isRequired() const { return required_; }

  void addTo(Schema& parent) const {
    Schema s = ValueCodec<M>::schema();
    if (!doc_.empty()) {
      s.description = doc_;
    }
    for (const SchemaPatch& p : patches_) {
      p(s);
    }
    parent.properties.push_back(Property{key_, std::move(s)});
    if (required_) {
      parent.required.push_back(key_);
    }
  }

  void encode(const Owner& o, nlohmann::json& out) const {
    const M& v = o.*member_;
    if (!required_ && ValueCodec<M>::empty(v)) {
      return;
    }
    ValueCodec<M>::encode(v, out[key_]);
  }

  absl::Status decode(const nlohmann::json& in, Owner& o, const FieldPath& path) const {
    const auto it = in.find(key_);
    if (it == in.end() || it->is_null()) {
      if (required_) {
        return absl::InvalidArgumentError(
            fmt::format("{}: Required value", path.child(key_).str()));
      }
      o.*member_ = M{};
      return absl::OkStatus();
    }
    return ValueCodec<M>::decode(*it, o.*member_, path.child(key_));
  }

private:
  std::string key_;
  M Owner::*member_;
  bool required_ = false;
  std::string doc_;
  std::vector<SchemaPatch> patches_;
};

template <class Owner, class M> Field<Owner, M> field(std::string_view key, M Owner::*member) {
  return Field<Owner, M>(key, member);
}

// The field tuple of T, built once (immutable afterwards).
template <class T> const auto& fieldsOf() {
  static const auto kFields = Describe<T>::fields();
  return kFields;
}

template <class T> Schema describedSchema() {
  Schema s;
  s.type = Schema::Type::kObject;
  s.description = std::string(Describe<T>::kDoc);
  std::apply([&s](const auto&... f) { (f.addTo(s), ...); }, fieldsOf<T>());
  if constexpr (requires(Schema& x) { Describe<T>::patch(x); }) {
    Describe<T>::patch(s);
  }
  return s;
}

template <class T> void describedEncode(const T& v, nlohmann::json& out) {
  out = nlohmann::json::object();
  std::apply([&](const auto&... f) { (f.encode(v, out), ...); }, fieldsOf<T>());
}

template <class T>
absl::Status describedDecode(const nlohmann::json& in, T& v, const FieldPath& path) {
  if (!in.is_object()) {
    return describe_internal::typeError(path, "object", in);
  }
  absl::Status status;
  std::apply(
      [&](const auto&... f) { ((status.ok() ? (status = f.decode(in, v, path), 0) : 0), ...); },
      fieldsOf<T>());
  return status;
}

} // namespace captf::api

// NOLINTBEGIN(bugprone-macro-parentheses): T is a type name; "(T)& v" does not parse.
#define CAPTF_API_DEFINE_CODEC(T)                                                                  \
  void encodeJson(const T& v, nlohmann::json& out) {                                               \
    ::captf::api::describedEncode(v, out);                                                         \
  }                                                                                                \
  absl::Status decodeJson(const nlohmann::json& in, T& v, const ::captf::api::FieldPath& path) {   \
    return ::captf::api::describedDecode(in, v, path);                                             \
  }                                                                                                \
  ::captf::api::Schema schemaFor(const T*) {                                                       \
    return ::captf::api::describedSchema<T>();                                                     \
  }
// NOLINTEND(bugprone-macro-parentheses)
