#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lint/hcl/ast.h"

// The declarations of one Terraform/OpenTofu module directory, as the checks
// of docs/lint.md#module-checks read them. Built by the loader (lint/module/loader.h) from
// native-syntax and JSON files alike; JSON files are converted to the same
// hcl::Body structure, so a check never needs to know which syntax a
// declaration came from unless the spec says so.
namespace captf::lint {

// A position for a finding: the file's path relative to the module directory
// and a 1-based line. Line 0 with an empty file means "the module as a whole".
struct SourceLocation {
  std::string file;
  uint32_t line = 0;

  friend bool operator==(const SourceLocation&, const SourceLocation&) = default;
};

enum class Syntax { kNative, kJson };

// One configuration file of a module directory.
struct ModuleFile {
  std::string name; // the file name, e.g. "main.tf"
  Syntax syntax = Syntax::kNative;
  bool tofu = false; // *.tofu or *.tofu.json
  hcl::File file;    // for JSON, `body` was built from the document
  // JSON only: the canonical JSON text of each attribute's value, keyed by
  // the attribute's expression.
  std::unordered_map<const hcl::Expression*, std::string> json_text;

  // "main" for main.tf, main.tf.json, main.tofu and main.tofu.json.
  std::string_view stem() const;
  // The attribute's value as written (native) or as canonical JSON.
  std::string_view valueText(const hcl::Attribute& attr) const;
  std::string_view text(const hcl::SourceRange& range) const { return file.text(range); }
};

struct Variable {
  std::string name;
  SourceLocation location; // the block header
  const ModuleFile* file = nullptr;
  const hcl::Block* block = nullptr;
  // The type constraint's text as written (native) or the JSON string; empty
  // when the variable has no type argument.
  std::string type_text;
  bool has_type = false;
  // `default = null` counts as a default (terraform-config-inspect).
  bool has_default = false;
  const hcl::Expression* default_value = nullptr;
  bool sensitive = false; // only a literal `true` counts
  bool nullable = true;   // only a literal `false` counts
};

struct Output {
  std::string name;
  SourceLocation location;
  const ModuleFile* file = nullptr;
  const hcl::Block* block = nullptr;
  const hcl::Expression* value = nullptr; // null when there is no value argument
  uint32_t value_line = 0;
  bool sensitive = false;
};

struct Resource {
  enum class Mode { kManaged, kData, kEphemeral };
  Mode mode = Mode::kManaged;
  std::string type;
  std::string name;
  SourceLocation location;
  const ModuleFile* file = nullptr;
  const hcl::Block* block = nullptr;
  // The provider's local name: from the `provider` argument, else the type's
  // prefix before the first "_".
  std::string provider;
};

struct ModuleCall {
  std::string name;
  SourceLocation location;
  const ModuleFile* file = nullptr;
  const hcl::Block* block = nullptr;
  std::string source; // empty when not a literal string
  std::string version;
};

struct ProviderConfig {
  std::string name;
  std::string alias;
  SourceLocation location;
  const ModuleFile* file = nullptr;
  const hcl::Block* block = nullptr;
};

struct RequiredProvider {
  std::string name;
  std::string source; // as written; empty when not given
  std::vector<std::string> version_constraints;
  SourceLocation location;
  bool implied = false; // added for a resource or data source type, not declared
};

// terraform { backend "<type>" { ... } } or terraform { cloud { ... } }.
struct StateBlock {
  std::string type; // the backend type; "cloud" for a cloud block
  SourceLocation location;
  const ModuleFile* file = nullptr;
  const hcl::Block* block = nullptr;
};

struct Local {
  std::string name;
  SourceLocation location;
  const ModuleFile* file = nullptr;
  const hcl::Attribute* attribute = nullptr;
};

// A declaration's identity and canonical content, for module/tofu-shadow.
struct Declaration {
  SourceLocation location;
  std::string content;
};

// The declarations of one set of files (docs/lint.md#module-loading: the terraform set or the
// opentofu set). Pointers refer into the ModuleFiles, which the owning
// LoadedModule keeps alive.
struct Module {
  std::vector<const ModuleFile*> files;
  // Unique by name: a later file (in name order) replaces an earlier
  // declaration, as terraform-config-inspect does.
  std::vector<Variable> variables;
  std::vector<Output> outputs;
  std::vector<Resource> resources;
  std::vector<ModuleCall> module_calls;
  std::vector<ProviderConfig> providers;
  std::vector<RequiredProvider> required_providers; // declared ones first, then implied
  std::vector<std::string> required_version;
  SourceLocation required_version_location;
  std::vector<StateBlock> backends;
  std::vector<StateBlock> clouds;
  std::vector<Local> locals;
  // Keyed as docs/lint.md#module-checks module/tofu-shadow names them: "variable.x",
  // "resource.aws_instance.web", "provider.aws.west", "required_version", ...
  std::map<std::string, Declaration> declarations;

  const Variable* variable(std::string_view name) const;
  const Output* output(std::string_view name) const;
};

} // namespace captf::lint
