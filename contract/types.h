#pragma once

// The value types of the module contract: a small, constexpr type tree that
// describes every contract input and output once. From it come the type
// expressions the generated root declares and tfcapi-lint compares against
// (terraformType), the structural check of rendered inputs and decoded
// outputs (checkValue), and the agreement test against the JSON Schemas.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace captf::contract {

// Terraform has one `number` type; every number in the contract is an
// integer (ports, replicas, autoscaling bounds), so the tree says kInteger and
// spells it `number` in Terraform.
enum class TypeKind { kAny, kString, kBool, kInteger, kList, kMap, kObject };

enum class Nullability { kNonNull, kNullable };

// Whether an object attribute may be absent (Terraform `optional(T[, d])`).
enum class Optionality { kRequired, kOptional };

struct TypeSpec;

struct Attribute {
  std::string_view name;
  const TypeSpec* type = nullptr;
  Optionality optionality = Optionality::kRequired;
  // For an optional attribute: the default the controller applies, as JSON
  // text ("true", "{}", "[]", "null"); empty when the default is null and
  // Terraform's `optional(T)` form applies.
  std::string_view default_json = {};
};

struct TypeSpec {
  TypeKind kind = TypeKind::kAny;
  Nullability nullability = Nullability::kNonNull;
  // Element type of kList and kMap.
  const TypeSpec* element = nullptr;
  // Attributes of kObject, in declaration order.
  std::span<const Attribute> attributes = {};
  // For kString: the closed set of allowed values; empty means any string.
  std::span<const std::string_view> enum_values = {};
  // For kMap: when non-empty, exactly these keys must be present
  // (`captf_tags`: a map(string) with fixed keys).
  std::span<const std::string_view> required_keys = {};
};

// Terraform type expression, spelled as tfcapi-lint messages and the
// generated root's variable declarations use it: "string", "map(string)",
// "object({host=string, port=number})",
// "list(object({name=string, control_plane=optional(bool, true)}))".
// Nullability is not part of a Terraform type and is not printed.
std::string terraformType(const TypeSpec& type);

// Whether undeclared object attributes are errors. Rendered inputs are
// closed (the schema says additionalProperties:false); module outputs are
// open (extra attributes are ignored).
enum class Closure { kClosed, kOpen };

// Checks `value` against `type` and appends one message per violation to
// `errors`, each prefixed with its path below `path` ("cluster_network.pods[1]:
// must be a string"). Checks kinds, nullability, integers (a fractional or
// exponent number is an error), string enums, required map keys, required
// and (when closed) unknown object attributes. It checks no lengths or
// patterns: those live in the JSON Schemas and in the callers' validation.
void checkValue(const TypeSpec& type, const nlohmann::json& value, Closure closure,
                const std::string& path, std::vector<std::string>& errors);

} // namespace captf::contract
