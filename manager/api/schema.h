#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace captf::api {

// A CEL rule placed in a schema node (x-kubernetes-validations). The API
// server evaluates it; CAPTF never does.
struct CelRule {
  std::string rule;
  std::string message;
  // Optional: the field the error is reported at, relative to the node
  // (".configMapRef"); empty reports at the node itself.
  std::string field_path;
  // Optional: FieldValueInvalid (the API server's default), FieldValueForbidden,
  // FieldValueRequired or FieldValueDuplicate.
  std::string reason;
};

struct Property;

// A deep-copying owning pointer: lets Schema hold child schemas by value.
template <class T> class Box {
public:
  Box() = default;
  explicit Box(T v) : p_(std::make_unique<T>(std::move(v))) {}
  Box(const Box& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Box(Box&&) noexcept = default;
  Box& operator=(const Box& o) {
    if (this != &o) {
      p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    }
    return *this;
  }
  Box& operator=(Box&&) noexcept = default;
  ~Box() = default;

  [[nodiscard]] explicit operator bool() const { return p_ != nullptr; }
  T& operator*() const { return *p_; }
  T* operator->() const { return p_.get(); }

private:
  std::unique_ptr<T> p_;
};

// One node of an OpenAPI v3 structural schema, restricted to what a
// Kubernetes CustomResourceDefinition accepts. Derived from the API type
// descriptions (manager/api/describe.h) and never written by hand, so the
// CRDs cannot drift from the C++ types.
struct Schema {
  enum class Type { kUnset, kObject, kArray, kString, kInteger, kNumber, kBoolean };

  Type type = Type::kUnset;
  std::string format;
  std::string description;
  std::vector<Property> properties; // sorted by name when emitted
  std::vector<std::string> required;
  Box<Schema> items;
  Box<Schema> additional_properties;
  std::vector<Schema> any_of;
  std::vector<std::string> enum_values;
  std::optional<std::int64_t> minimum;
  std::optional<std::int64_t> maximum;
  std::optional<std::int64_t> min_length;
  std::optional<std::int64_t> max_length;
  std::optional<std::int64_t> min_items;
  std::optional<std::int64_t> max_items;
  std::optional<std::int64_t> min_properties;
  std::optional<std::int64_t> max_properties;
  std::string pattern;
  bool preserve_unknown_fields = false;
  bool int_or_string = false;
  std::string list_type; // "atomic", "set" or "map"
  std::vector<std::string> list_map_keys;
  std::string map_type; // "atomic" or "granular"
  std::vector<CelRule> validations;

  // Returns the property named `name`, or nullptr.
  [[nodiscard]] const Schema* property(std::string_view name) const;
  [[nodiscard]] Schema* property(std::string_view name);
  [[nodiscard]] bool isRequired(std::string_view name) const;
};

struct Property {
  std::string name;
  Schema schema;
};

[[nodiscard]] std::string_view typeName(Schema::Type t);

// The schema as the JSON document a CRD carries under openAPIV3Schema,
// with properties and keys in a canonical (sorted) order.
[[nodiscard]] nlohmann::json schemaToJson(const Schema& s);

} // namespace captf::api
