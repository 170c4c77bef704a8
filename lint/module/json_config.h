#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "lint/hcl/ast.h"
#include "lint/hcl/json.h"

namespace captf::lint {

struct JsonConfigBody {
  hcl::Body body;
  // The canonical JSON text of each attribute's value, keyed by expression.
  std::unordered_map<const hcl::Expression*, std::string> value_text;
};

// Reads a Terraform JSON configuration document (.tf.json, .tofu.json) into
// the block/attribute structure of the native syntax, using Terraform's
// schema for what is a block and how many labels it has: at the top level
// terraform, variable, output, locals, provider, resource, data, ephemeral,
// module, check, moved, import, removed; inside them the meta blocks
// (validation, lifecycle, provisioner, connection, dynamic, backend, cloud,
// required_providers, ...). Every other property is an attribute whose value
// is converted with hcl::jsonToExpression, except the arguments Terraform
// reads as references (provider, depends_on, ignore_changes, ...), whose
// strings are parsed as expressions. Properties named "//" are comments.
//
// Unknown top-level properties are skipped, as Terraform's partial decoding
// of the root does. Errors (InvalidArgument with file:line:column): a
// top-level value that is not an object, a block body that is not an object,
// a repeated argument in one body, and template syntax errors in strings.
absl::StatusOr<JsonConfigBody> jsonConfigBody(const hcl::JsonValue& document,
                                              std::string_view filename);

} // namespace captf::lint
