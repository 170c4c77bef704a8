#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "lint/hcl/parser.h"
#include "lint/module/module.h"

// Reading a module directory and the local modules it calls (docs/lint.md#module-loading).
namespace captf::lint {

struct LoadOptions {
  // Larger files are a load error: no real configuration file comes close.
  std::uintmax_t max_file_bytes = 16u << 20;
  hcl::ParseOptions parse;
};

// A local module source or module file that leaves the root directory or
// cannot be resolved; reported as module/source-escape.
struct SourceProblem {
  enum class Kind {
    kCallEscapes,        // the source path leaves the root
    kCallSymlinkOutside, // the source resolves, through a symlink, outside the root
    kCallUnresolvable,   // the source does not resolve to a directory
    kFileSymlinkOutside, // a module file is a symlink to a file outside the root
    kFileUnresolvable,   // a module file is a dangling or looping symlink
  };
  Kind kind = Kind::kCallEscapes;
  std::string name;   // the module call's name, or the file's path
  std::string source; // the call's source argument (calls only)
  std::string detail; // the real path, the symlink target, or the error
  SourceLocation location;
};

// One module directory of the tree.
struct LoadedModule {
  // The directory relative to the root module ("" for the root itself),
  // with "/" separators. Locations in `terraform` and `opentofu` carry it as
  // a prefix, so findings of nested modules name the nested file.
  std::string path;
  std::filesystem::path dir;                      // canonical
  std::vector<std::unique_ptr<ModuleFile>> files; // in name order
  bool has_tf_files = false;                      // any *.tf or *.tf.json
  bool has_tofu_files = false;                    // any *.tofu or *.tofu.json
  Module terraform;                               // *.tf and *.tf.json
  Module opentofu; // *.tofu, *.tofu.json, and the unshadowed *.tf, *.tf.json
  std::vector<SourceProblem> source_problems;
  // The local module calls that loaded, by call name. A call that would
  // close a cycle is not linked.
  std::map<std::string, const LoadedModule*> children;

  // Declarations (variables, outputs, required_providers, required_version,
  // module calls) come from the terraform set unless the module has no
  // .tf/.tf.json files at all.
  const Module& declarations() const {
    return has_tf_files || !has_tofu_files ? terraform : opentofu;
  }
  // Expression checks read the opentofu set when any .tofu file exists.
  const Module& expressions() const { return has_tofu_files ? opentofu : terraform; }
  // "terraform" or "opentofu": the set the expression checks read.
  std::string_view fileSet() const { return has_tofu_files ? "opentofu" : "terraform"; }
};

// The root module and every local module reached from it. modules[0] is the
// root; each directory appears once.
struct ModuleTree {
  std::vector<std::unique_ptr<LoadedModule>> modules;
  const LoadedModule& root() const { return *modules.front(); }
};

// Loads `dir` and, recursively, the local modules its calls reach. Only the
// top-level *.tf, *.tf.json, *.tofu and *.tofu.json files of each directory
// are read; names starting with ".", ending with "~" or wrapped in "#...#"
// are skipped. Remote module sources are ignored.
//
// Errors (the linter's exit 2): the directory cannot be read; any file in the
// tree cannot be read, is larger than the limit, or has an HCL or JSON syntax
// error; a top-level block has the wrong number of labels. Messages carry the
// file's path relative to `dir`, its line and column. Local sources that
// escape or do not resolve are not errors: they are SourceProblems.
absl::StatusOr<ModuleTree> loadModuleTree(const std::filesystem::path& dir,
                                          const LoadOptions& options = {});

// Builds the declarations of one file set. `path` is the module's path
// relative to the root, prefixed to every location.
Module buildModule(std::span<const ModuleFile* const> files, std::string_view path);

// Reads one configuration file from memory (syntax chosen by the name's
// extension); `display_name` is used in messages. Exposed for tests and the
// fuzzer.
absl::StatusOr<std::unique_ptr<ModuleFile>> parseModuleFile(std::string name,
                                                            std::string display_name,
                                                            std::string content,
                                                            const hcl::ParseOptions& options = {});

} // namespace captf::lint
