#include "lint/oci/extract.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <archive.h>
#include <archive_entry.h>

#include "contract/status_macros.h"
#include "contract/strings.h"

namespace captf::lint::oci {

using contract::strAppend;
using contract::strCat;

namespace {

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";

struct ArchiveDeleter {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveDeleter>;

std::string parentOf(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 ? std::string("/") : std::string(path.substr(0, slash));
}

std::string_view baseOf(std::string_view path) {
  return path.substr(path.rfind('/') + 1);
}

std::string join(std::string_view dir, std::string_view name) {
  return dir == "/" ? strCat("/", name) : strCat(dir, "/", name);
}

bool isUnder(std::string_view path, std::string_view dir) {
  return dir == "/" ||
         (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

// Splits a path into its components ("" ones dropped).
std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::string_view part = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (!part.empty()) {
      out.emplace_back(part);
    }
    if (slash == std::string_view::npos) {
      break;
    }
    start = slash + 1;
  }
  return out;
}

class Flattener {
public:
  Flattener(std::filesystem::path staging, const KeepPredicate& keep, const ExtractLimits& limits)
      : staging_(std::move(staging)), keep_(keep), limits_(limits) {}

  absl::Status layer(const std::filesystem::path& file, std::string_view name) {
    ArchivePtr a(archive_read_new());
    archive_read_support_filter_gzip(a.get());
    archive_read_support_filter_zstd(a.get());
    archive_read_support_format_tar(a.get());
    const auto fail = [&](std::string_view what) {
      const char* detail = archive_error_string(a.get());
      return absl::InvalidArgumentError(
          strCat("layer ", name, ": ", what, detail != nullptr ? strCat(": ", detail) : ""));
    };
    if (archive_read_open_filename(a.get(), file.c_str(), static_cast<size_t>(64 * 1024)) !=
        ARCHIVE_OK) {
      return fail("cannot be read as a tar archive");
    }
    std::unordered_map<std::string, bool> seen; // this layer: path -> blocks lower layers
    std::vector<std::string> whiteouts;
    std::vector<std::string> opaque;
    archive_entry* entry = nullptr;
    int rc = ARCHIVE_OK;
    while ((rc = archive_read_next_header(a.get(), &entry)) == ARCHIVE_OK || rc == ARCHIVE_WARN) {
      kept_ += limits_.entry_cost;
      scanned_ += 512;
      if (archive_entry_size_is_set(entry) != 0 && archive_entry_size(entry) > 0) {
        scanned_ += static_cast<uint64_t>(archive_entry_size(entry));
      }
      CAPTF_RETURN_IF_ERROR(checkCaps(name));
      const char* raw = archive_entry_pathname(entry);
      if (raw == nullptr) {
        continue;
      }
      const std::optional<std::string> path = normalizeEntryName(raw);
      if (!path || *path == "/") {
        continue;
      }
      const std::string_view base = baseOf(*path);
      if (base == kOpaqueMarker) {
        opaque.push_back(parentOf(*path));
        continue;
      }
      if (base.starts_with(kWhiteoutPrefix)) {
        whiteouts.push_back(join(parentOf(*path), base.substr(kWhiteoutPrefix.size())));
        continue;
      }
      if (hiddenByUpper(*path)) {
        continue;
      }
      Node node;
      node.mode = static_cast<uint32_t>(archive_entry_perm(entry)) & 07777;
      node.uid = archive_entry_uid(entry);
      node.gid = archive_entry_gid(entry);
      if (const char* hard = archive_entry_hardlink(entry); hard != nullptr) {
        node.type = NodeType::kHardlink;
        node.link = normalizeEntryName(hard).value_or("");
      } else {
        switch (archive_entry_filetype(entry)) {
        case AE_IFREG:
          node.type = NodeType::kFile;
          break;
        case AE_IFDIR:
          node.type = NodeType::kDir;
          break;
        case AE_IFLNK:
          node.type = NodeType::kSymlink;
          if (const char* target = archive_entry_symlink(entry); target != nullptr) {
            node.link = target;
          }
          break;
        default:
          node.type = NodeType::kOther;
          break;
        }
      }
      if (node.type == NodeType::kFile) {
        node.size = archive_entry_size_is_set(entry) != 0 && archive_entry_size(entry) > 0
                        ? static_cast<uint64_t>(archive_entry_size(entry))
                        : 0;
        if (keep_(*path)) {
          CAPTF_ASSIGN_OR_RETURN(node.content, writeContent(a.get(), name));
        }
      }
      auto [it, inserted] = nodes_.try_emplace(*path, node);
      if (!inserted) { // a later entry of the same layer replaces an earlier one
        if (!it->second.content.empty()) {
          std::error_code ec;
          std::filesystem::remove(it->second.content, ec);
        }
        it->second = std::move(node);
      }
      seen[*path] = it->second.type != NodeType::kDir;
    }
    if (rc != ARCHIVE_EOF) {
      return fail("is not a valid tar archive");
    }
    for (auto& [path, blocks] : seen) {
      upper_.emplace(path, blocks);
    }
    for (std::string& path : whiteouts) {
      upper_[path] = true;
    }
    for (std::string& dir : opaque) {
      upper_opaque_.insert(std::move(dir));
    }
    return absl::OkStatus();
  }

  ImageFs finish() {
    ImageFs fs;
    auto& nodes = fs.mutableNodes();
    nodes = std::move(nodes_);
    // Parents that no entry described are directories.
    std::vector<std::string> missing;
    for (const auto& [path, node] : nodes) {
      for (std::string p = parentOf(path); p != "/"; p = parentOf(p)) {
        if (nodes.contains(p)) {
          break;
        }
        missing.push_back(p);
      }
    }
    for (const std::string& p : missing) {
      Node dir;
      dir.implicit = true;
      nodes.try_emplace(p, dir);
    }
    nodes.try_emplace("/", Node{});
    return fs;
  }

private:
  absl::Status checkCaps(std::string_view name) const {
    if (kept_ > limits_.max_kept_bytes) {
      return absl::ResourceExhaustedError(
          strCat("layer ", name, ": the image exceeds the extraction limit of ",
                 limits_.max_kept_bytes, " bytes (kept files plus 512 bytes per entry)"));
    }
    if (scanned_ > limits_.max_scanned_bytes) {
      return absl::ResourceExhaustedError(strCat("layer ", name,
                                                 ": the image exceeds the scan limit of ",
                                                 limits_.max_scanned_bytes, " bytes"));
    }
    return absl::OkStatus();
  }

  bool hiddenByUpper(const std::string& path) const {
    if (upper_.contains(path)) {
      return true;
    }
    if (upper_opaque_.contains("/")) {
      return true;
    }
    for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      const std::string ancestor = path.substr(0, slash);
      if (const auto it = upper_.find(ancestor); it != upper_.end() && it->second) {
        return true;
      }
      if (upper_opaque_.contains(ancestor)) {
        return true;
      }
    }
    return false;
  }

  absl::StatusOr<std::string> writeContent(archive* a, std::string_view name) {
    const std::filesystem::path dir = staging_ / "content";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::filesystem::path file = dir / std::to_string(seq_++);
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    if (!out) {
      return absl::InternalError(strCat("cannot write ", file.string()));
    }
    std::array<char, static_cast<std::size_t>(64 * 1024)> buf{};
    while (true) {
      const la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
      if (n < 0) {
        const char* detail = archive_error_string(a);
        return absl::InvalidArgumentError(strCat("layer ", name, ": reading a file failed",
                                                 detail != nullptr ? strCat(": ", detail) : ""));
      }
      if (n == 0) {
        break;
      }
      kept_ += static_cast<uint64_t>(n);
      CAPTF_RETURN_IF_ERROR(checkCaps(name));
      out.write(buf.data(), n);
    }
    if (!out) {
      return absl::InternalError(strCat("writing ", file.string(), " failed"));
    }
    return file.string();
  }

  std::filesystem::path staging_;
  const KeepPredicate& keep_;
  ExtractLimits limits_;
  std::map<std::string, Node> nodes_;
  std::unordered_map<std::string, bool> upper_; // decided by upper layers: path -> blocks
  std::unordered_set<std::string> upper_opaque_;
  uint64_t kept_ = 0;
  uint64_t scanned_ = 0;
  uint64_t seq_ = 0;
};

} // namespace

std::optional<std::string> normalizeEntryName(std::string_view name) {
  std::string out;
  for (const std::string& part : components(name)) {
    if (part == ".") {
      continue;
    }
    if (part == "..") {
      return std::nullopt;
    }
    strAppend(out, "/", part);
  }
  if (out.empty()) {
    return name.empty() ? std::nullopt : std::optional<std::string>("/");
  }
  return out;
}

bool keepForChecks(std::string_view path) {
  return isUnder(path, "/captf/module") ||
         (isUnder(path, "/captf/providers") && path.ends_with(".json"));
}

const Node* ImageFs::lstat(std::string_view path) const {
  const auto it = nodes_.find(std::string(path));
  return it == nodes_.end() ? nullptr : &it->second;
}

absl::StatusOr<std::string> ImageFs::realpath(std::string_view path, int max_hops) const {
  std::vector<std::string> todo = components(path);
  std::reverse(todo.begin(), todo.end());
  std::string cur = "/";
  int hops = 0;
  while (!todo.empty()) {
    const std::string part = std::move(todo.back());
    todo.pop_back();
    if (part == ".") {
      continue;
    }
    if (part == "..") {
      cur = cur == "/" ? cur : parentOf(cur);
      continue;
    }
    const std::string next = join(cur, part);
    const Node* node = lstat(next);
    if (node == nullptr) {
      return absl::NotFoundError(strCat(next, " does not exist"));
    }
    if (node->type == NodeType::kSymlink) {
      if (++hops > max_hops) {
        return absl::FailedPreconditionError(
            strCat(path, ": more than ", max_hops, " levels of symbolic links"));
      }
      std::vector<std::string> target = components(node->link);
      if (node->link.starts_with('/')) {
        cur.assign(1, '/'); // not `cur = "/"`: GCC 12 -O3 warns (-Wrestrict) on that
      }
      // Reverse iterators, not std::views::reverse: clang 14 (the fuzz
      // preset) cannot compile that view over libstdc++ 12's ranges.
      todo.insert(todo.end(), std::make_move_iterator(target.rbegin()),
                  std::make_move_iterator(target.rend()));
      continue;
    }
    if (!todo.empty() && node->type != NodeType::kDir) {
      return absl::NotFoundError(strCat(next, " is not a directory"));
    }
    cur = next;
  }
  return cur;
}

const Node* ImageFs::stat(std::string_view path, std::string* resolved) const {
  absl::StatusOr<std::string> real = realpath(path);
  if (!real.ok()) {
    return nullptr;
  }
  const Node* node = lstat(*real);
  if (node != nullptr && node->type == NodeType::kHardlink) {
    *real = node->link;
    node = lstat(node->link);
    if (node != nullptr && node->type != NodeType::kFile) {
      node = nullptr; // a hard link only ever names a regular file
    }
  }
  if (resolved != nullptr) {
    *resolved = *real;
  }
  return node;
}

std::vector<std::string> ImageFs::under(std::string_view dir) const {
  std::vector<std::string> out;
  const std::string prefix = dir == "/" ? std::string("/") : strCat(dir, "/");
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end() && it->first.starts_with(prefix);
       ++it) {
    out.push_back(it->first);
  }
  return out;
}

absl::StatusOr<ImageFs> flattenLayers(std::span<const std::filesystem::path> layers,
                                      std::span<const std::string> layer_names,
                                      const std::filesystem::path& staging_dir,
                                      const KeepPredicate& keep, const ExtractLimits& limits) {
  Flattener flattener(staging_dir, keep, limits);
  for (std::size_t i = layers.size(); i-- > 0;) {
    const std::string name = i < layer_names.size() ? layer_names[i] : layers[i].string();
    CAPTF_RETURN_IF_ERROR(flattener.layer(layers[i], name));
  }
  return flattener.finish();
}

absl::StatusOr<std::vector<LinkProblem>>
materializeTree(const ImageFs& fs, std::string_view image_dir, const std::filesystem::path& dest) {
  std::vector<LinkProblem> problems;
  std::error_code ec;
  std::filesystem::create_directories(dest, ec);
  if (ec) {
    return absl::InternalError(strCat("cannot create ", dest.string(), ": ", ec.message()));
  }
  const auto copy = [&](const Node& file, const std::filesystem::path& to) -> absl::Status {
    if (file.content.empty()) {
      return absl::OkStatus();
    }
    std::error_code copy_ec;
    std::filesystem::copy_file(file.content, to, std::filesystem::copy_options::overwrite_existing,
                               copy_ec);
    return copy_ec
               ? absl::InternalError(strCat("cannot write ", to.string(), ": ", copy_ec.message()))
               : absl::OkStatus();
  };
  for (const std::string& path : fs.under(image_dir)) {
    const Node& node = *fs.lstat(path);
    const std::string rel = path.substr(image_dir.size() + 1);
    const std::filesystem::path to = dest / rel;
    // Parents are created by their own (earlier) entries; a parent that is
    // a problem link leaves its children unwritten.
    if (!std::filesystem::is_directory(to.parent_path(), ec) ||
        std::filesystem::is_symlink(to.parent_path(), ec)) {
      continue;
    }
    switch (node.type) {
    case NodeType::kDir:
      std::filesystem::create_directory(to, ec);
      break;
    case NodeType::kFile:
      CAPTF_RETURN_IF_ERROR(copy(node, to));
      break;
    case NodeType::kOther:
      break;
    case NodeType::kHardlink: {
      const Node* target = fs.lstat(node.link);
      if (node.link.empty() || !isUnder(node.link, image_dir) || target == nullptr ||
          target->type != NodeType::kFile) {
        problems.push_back(
            {path, strCat("is a hard link to ",
                          node.link.empty() ? std::string("an invalid path") : node.link,
                          ", not to a regular file inside ", image_dir)});
        break;
      }
      CAPTF_RETURN_IF_ERROR(copy(*target, to));
      break;
    }
    case NodeType::kSymlink: {
      std::string resolved;
      const Node* target = fs.stat(path, &resolved);
      if (target == nullptr) {
        problems.push_back(
            {path, strCat("is a symlink to ", node.link, ", which does not resolve in the image")});
        break;
      }
      if (resolved != image_dir && !isUnder(resolved, image_dir)) {
        problems.push_back({path, strCat("is a symlink to ", node.link, ", which resolves to ",
                                         resolved, ", outside ", image_dir)});
        break;
      }
      if (target->type == NodeType::kFile) {
        CAPTF_RETURN_IF_ERROR(copy(*target, to));
      } else if (target->type == NodeType::kDir) {
        const std::filesystem::path rel_target =
            std::filesystem::path(resolved == image_dir ? std::string(".")
                                                        : resolved.substr(image_dir.size() + 1))
                .lexically_relative(std::filesystem::path(rel).parent_path());
        std::filesystem::create_directory_symlink(rel_target.empty() ? "." : rel_target, to, ec);
      } else {
        problems.push_back({path, strCat("is a symlink to ", node.link,
                                         ", which is not a regular file or directory")});
      }
      break;
    }
    }
  }
  return problems;
}

} // namespace captf::lint::oci
