#pragma once

// A JSON Schema (draft 2020-12) validator for the subset of keywords that
// contract/schemas/ uses, so the tests can check the examples and the
// renderer's output against the shipped schemas. It refuses any keyword it
// does not implement (rather than ignoring it), so a schema edit can never
// silently weaken what these tests check.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace captf::contract::testing {

struct SchemaError {
  // JSON pointer of the offending instance location ("" for the root).
  std::string instance_path;
  std::string message;
};

class SchemaSet {
public:
  // Loads every *.json schema in `directory` (not recursively), keyed by $id.
  static absl::StatusOr<SchemaSet> load(const std::string& directory);

  // Validates `instance` against the schema with this $id. Errors: unknown
  // $id, or a schema that uses an unsupported keyword or an unresolvable
  // $ref (InvalidArgument).
  absl::StatusOr<std::vector<SchemaError>> validate(const std::string& id,
                                                    const nlohmann::json& instance) const;

  // Resolves a $ref relative to the document `base_id` ("definitions.json#/$defs/x",
  // "#/$defs/x"); returns the target schema and the id of its document.
  absl::StatusOr<std::pair<const nlohmann::json*, std::string>>
  resolve(const std::string& base_id, const std::string& ref) const;

  const std::map<std::string, nlohmann::json>& documents() const { return documents_; }

private:
  std::map<std::string, nlohmann::json> documents_;
};

} // namespace captf::contract::testing
