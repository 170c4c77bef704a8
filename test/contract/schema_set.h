#pragma once

// The JSON Schemas of contract/schemas/ validated with valijson (Debian's
// libvalijson-dev), a third-party validator as module authors' tools would
// use one, for the tests of the examples and of the renderer's output
// (docs/decisions/build-libraries.md).
//
// valijson 1.0 implements drafts 4 and 7; the schemas say draft 2020-12. The
// keywords they use mean the same in both, with one exception this adapter
// bridges: in 2020-12 the siblings of "$ref" apply beside the referenced
// schema, while draft 7 ignores them, so every {"$ref": r, ...} reaches
// valijson as {"allOf": [{"$ref": r}], ...}, which is what 2020-12 means by
// it. Any other keyword that valijson would not enforce the same way makes
// loading fail, so a schema edit can never silently weaken what the tests
// check.

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace captf::contract::testing {

struct SchemaError {
  // JSON pointer of the offending instance location ("" for the root).
  std::string instance_path;
  // valijson's description.
  std::string message;
};

// The keywords a schema may use: annotations ("$schema", "$id", "$defs",
// "$comment", "title", "description", "default") and the assertions and
// applicators that valijson enforces with their draft 2020-12 meaning, each
// proven in test/contract/schemas_test.cc.
const std::set<std::string, std::less<>>& allowedKeywords();
// The annotations among them: no validation effect.
bool isAnnotation(std::string_view keyword);

// Every place in `schema` (a document, walked through its subschemas) that
// uses a keyword outside allowedKeywords(), or "items" in its array form, as
// "<schema pointer>: <keyword>".
std::vector<std::string> unenforcedKeywords(const nlohmann::json& schema);

class SchemaSet {
public:
  // Loads every *.json schema in `directory` (not recursively).
  static absl::StatusOr<SchemaSet> load(const std::string& directory);
  // The set of these documents, keyed by their "$id". InvalidArgument when
  // one has no "$id" or uses a keyword valijson would not enforce.
  static absl::StatusOr<SchemaSet> fromDocuments(std::vector<nlohmann::json> documents);

  // Validates `instance` against the schema with this $id. Every violation is
  // returned where valijson locates it; valijson's restatements of a child's
  // failure at its parent ("Failed to validate item #0", ...) are left out.
  // Errors: unknown $id (NotFound), a schema valijson cannot parse or an
  // unresolvable $ref (InvalidArgument).
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
