#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "lint/hcl/ast.h"
#include "lint/hcl/parser.h"

// JSON documents with source positions, for the .tf.json / .tofu.json files
// of a module, and their conversion to HCL expressions.
namespace captf::lint::hcl {

struct JsonMember;

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  // Where the value starts (for strings, the opening quote; for containers,
  // the bracket).
  Pos pos;
  bool boolean = false;
  // kString: the decoded value. kNumber: the number exactly as written.
  std::string text;
  std::vector<JsonValue> elements;
  // In document order. Duplicate keys are kept: HCL's JSON syntax gives them
  // meaning (repeated blocks), so the reader decides.
  std::vector<JsonMember> members;

  bool isObject() const { return type == Type::kObject; }
  bool isArray() const { return type == Type::kArray; }
  bool isString() const { return type == Type::kString; }
  // The first member with this key, or nullptr.
  const JsonValue* find(std::string_view key) const;
};

struct JsonMember {
  std::string key;
  Pos pos; // the key's opening quote
  JsonValue value;
};

// Parses one JSON document (RFC 8259, via nlohmann/json's SAX parser).
// Errors are InvalidArgument "<filename>:<line>:<column>: <message>", for
// syntax errors, invalid UTF-8, and containers nested deeper than
// `max_depth`.
absl::StatusOr<JsonValue> parseJson(std::string_view source, std::string_view filename,
                                    int max_depth = kDefaultMaxNestingDepth);

// Converts a JSON value to an HCL expression the way HCL's JSON syntax reads
// an attribute value: strings (and object keys) are templates, so
// "${var.x}" is a reference; numbers, bools and null are literals; arrays are
// tuples and objects are object constructors. Fails on a template syntax
// error inside a string.
absl::StatusOr<ExprPtr> jsonToExpression(const JsonValue& value, std::string_view filename,
                                         const ParseOptions& options = {});

// A compact, canonical rendering of a JSON value (keys in document order),
// used to compare JSON declarations.
std::string jsonToString(const JsonValue& value);

} // namespace captf::lint::hcl
