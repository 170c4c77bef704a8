#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "lint/hcl/ast.h"

// Terraform type constraints (`type = ...` in a variable block) and the
// compatibility rule of `input/type` (docs/lint.md#type-compatibility).
namespace captf::lint {

struct TypeConstraint {
  enum class Kind { kString, kNumber, kBool, kAny, kList, kSet, kMap, kTuple, kObject };

  struct Attribute;

  Kind kind = Kind::kAny;
  // kList, kSet, kMap: exactly one element type. kTuple: one per position.
  std::vector<TypeConstraint> elements;
  // kObject, in declaration order.
  std::vector<Attribute> attributes;

  bool isSequence() const {
    return kind == Kind::kList || kind == Kind::kSet || kind == Kind::kTuple;
  }
};

struct TypeConstraint::Attribute {
  std::string name;
  TypeConstraint type;
  bool optional = false; // declared as optional(T) or optional(T, default)
};

// Reads a type constraint expression: the primitives string, number, bool and
// any; list(T), set(T), map(T), tuple([T, ...]); object({k = T, ...}) whose
// attributes may be optional(T[, default]) (the default is not interpreted).
// Errors are InvalidArgument with a message that names the problem (no
// position: callers report the variable's).
absl::StatusOr<TypeConstraint> parseTypeConstraint(const hcl::Expression& expr);

// Parses `text` as an HCL expression, then as a type constraint. Trailing
// tokens after the expression are an error.
absl::StatusOr<TypeConstraint> parseTypeConstraint(std::string_view text);

// Whether a variable declared with type `declared` accepts every value of the
// contract's type `contract`, by the structural rule of docs/lint.md#type-compatibility (no
// primitive conversions; `any` on either side matches; optional declared
// object attributes may be missing from the contract type).
bool compatible(const TypeConstraint& declared, const TypeConstraint& contract);

// A canonical spelling: `object({host=string, port=number})`,
// `optional(T)` for optional attributes.
std::string toString(const TypeConstraint& type);

} // namespace captf::lint
