#pragma once

// The runner's filesystem work: the image-layout preflight (docs/behaviour/jobs.md
// step 1, docs/behaviour/components.md), the files of the generated root, the restore chunks and
// the credential mount. Every function reports errors naming paths, never
// file contents.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace captf::runner {

// /captf/module holds at least one .tf, .tf.json, .tofu or .tofu.json file
// at its top level (a regular file, or a symlink to one).
absl::Status checkModuleDirectory(const std::string& module_dir);

// The runtime is a regular file (or a symlink to one) that this process may
// execute.
absl::Status checkRuntime(const std::string& runtime);

bool isDirectory(const std::string& path);
bool isRegularFile(const std::string& path);

// Reads a whole file, refusing one larger than `max_bytes`.
absl::StatusOr<std::string> readFile(const std::string& path, std::size_t max_bytes);

// Writes a file (created or truncated) with `mode`.
absl::Status writeFile(const std::string& path, std::string_view contents, unsigned mode);

// mkdir -p.
absl::Status makeDirectories(const std::string& path);

// Whether `a` and `b` name the same directory (same device and inode).
absl::StatusOr<bool> sameDirectory(const std::string& a, const std::string& b);

// The regular files directly in `dir` whose names do not start with '.'
// (a Secret volume's `..data` links are skipped), sorted by name. A missing
// directory has none.
absl::StatusOr<std::vector<std::string>> listFiles(const std::string& dir);

// The restore chunks under `dir`: files named by their decimal index, 0 to
// n-1, each the decoded `tfstate` data of one backup chunk. With
// `expected` > 0 there must be exactly that many. Returns their contents in
// index order.
absl::StatusOr<std::vector<std::string>> readRestoreChunks(const std::string& dir,
                                                           std::size_t expected);

} // namespace captf::runner
