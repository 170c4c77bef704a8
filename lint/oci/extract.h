#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

// Flattening an image's layers (docs/lint.md#image-mode "Extraction"): whiteouts applied,
// the metadata of every entry kept, and the content of only the files the
// checks read (everything under /captf/module, the *.json files under
// /captf/providers) written to a staging directory. Layers are untrusted:
// names with "..", absolute link targets and link chains are never followed
// on the host; entries are only ever created by this code at paths it built
// from validated components.
namespace captf::lint::oci {

struct ExtractLimits {
  uint64_t max_kept_bytes = 512ull << 20; // DefaultMaxBytes
  uint64_t max_scanned_bytes = 32ull * (512ull << 20);
  uint64_t entry_cost = 512; // charged to the kept budget for every tar entry
};

enum class NodeType { kFile, kDir, kSymlink, kHardlink, kOther };

struct Node {
  NodeType type = NodeType::kDir;
  uint32_t mode = 0755; // permission bits (07777)
  int64_t uid = 0;
  int64_t gid = 0;
  uint64_t size = 0;
  std::string link;      // a symlink's target as written; a hard link's target path (normalized)
  std::string content;   // the staged copy of a kept file; "" when not kept
  bool implicit = false; // a parent directory no entry described
};

// The flattened filesystem: absolute normalized paths ("/captf/module/main.tf")
// to nodes. "/" is always a directory.
class ImageFs {
public:
  const std::map<std::string, Node>& nodes() const { return nodes_; }
  std::map<std::string, Node>& mutableNodes() { return nodes_; }

  // The node at `path` without following a final symlink.
  const Node* lstat(std::string_view path) const;

  // Resolves `path` within the image: symlinks in every component are
  // followed (absolute targets from the image root, ".." clamped at the
  // root), at most `max_hops` of them. Returns the final path, whose node
  // may be a file, directory or other type (never a symlink); NotFound when
  // a component is missing or not a directory, FailedPrecondition after too
  // many hops.
  absl::StatusOr<std::string> realpath(std::string_view path, int max_hops = 40) const;

  // realpath() then lstat(), with a hard link replaced by its target node.
  const Node* stat(std::string_view path, std::string* resolved = nullptr) const;

  // The paths under `dir` (exclusive), in order.
  std::vector<std::string> under(std::string_view dir) const;

private:
  std::map<std::string, Node> nodes_;
};

// Normalizes a tar entry name to an absolute path: leading "./" and "/" and
// "." components dropped, repeated slashes collapsed. std::nullopt for a
// name with a ".." component or with nothing left (the entry is skipped).
std::optional<std::string> normalizeEntryName(std::string_view name);

// Whether the content of a regular file at `path` is kept.
using KeepPredicate = std::function<bool(std::string_view path)>;

// Files under /captf/module, and *.json files under /captf/providers.
bool keepForChecks(std::string_view path);

// Flattens `layers` (bottom first; gzip, zstd or uncompressed tar) into an
// ImageFs, writing kept file contents below `staging_dir`. Errors name the
// layer (`layer_names[i]`): an unreadable archive, or a cap exceeded
// (ResourceExhausted; the linter's exit 2).
absl::StatusOr<ImageFs> flattenLayers(std::span<const std::filesystem::path> layers,
                                      std::span<const std::string> layer_names,
                                      const std::filesystem::path& staging_dir,
                                      const KeepPredicate& keep, const ExtractLimits& limits);

} // namespace captf::lint::oci

namespace captf::lint::oci {

// A link under the materialized tree that is not materialized
// (image/module-link).
struct LinkProblem {
  std::string path;   // the link's image path
  std::string detail; // why, for the message
};

// Writes the subtree `image_dir` of `fs` (e.g. "/captf/module") to `dest`:
// directories, kept files, symlinks and hard links that end at a regular
// file inside the subtree (copied), and symlinks that end at a directory
// inside it (re-created as relative symlinks). Every other link is returned
// as a problem and not written.
absl::StatusOr<std::vector<LinkProblem>>
materializeTree(const ImageFs& fs, std::string_view image_dir, const std::filesystem::path& dest);

} // namespace captf::lint::oci
