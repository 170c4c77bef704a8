// libFuzzer target for image mode's layer extraction (docs/lint.md#image-mode,
// lint/oci/extract.h): layer blobs are untrusted (anyone can push an image),
// and libarchive unpacks them (tar, gzip, zstd). The bytes are one or two
// layers: when the first byte is odd, the next four (big-endian) give the
// length of the lower layer and the rest is the upper one; otherwise the
// rest is one layer. Each layer is read from memory (a memfd, passed by its
// /proc/self/fd path, so no layer touches the disk) by flattenLayers, with
// the checks' keep rule; /captf/module is then materialized. Invariants:
//   - no crash, leak or undefined behaviour; a gzip or zstd bomb stops at
//     the limits (ResourceExhausted), not at memory;
//   - flattenLayers' errors never quote the layer (test/fuzz_check.h's
//     canary, which the seeds use in entry names and link targets);
//   - the flattened tree holds only absolute, normalized paths ("/", no
//     empty, "." or ".." component), "/" is a directory and every path's
//     parent is in the tree; only kept paths have content, staged below the
//     staging directory, and the kept bytes stay within the limit;
//   - realpath() of every path ends at a path of the tree;
//   - materializing /captf/module writes only below its destination, and
//     every symlink it writes is relative and stays below it.
// The limits are the linter's divided by 64 (8 MiB kept, 256 MiB scanned):
// the same code paths, at a size a fuzzing run can reach many times a second.
// Inputs go up to 1 MiB (LLVMFuzzerInitialize sets -max_len unless given
// one): layers are larger, but a layer's structure (headers, names, links,
// whiteouts, compression frames) fits, and so does a bomb. Run:
//   build/fuzz/test/lint/captf_lint_oci_layer_fuzz -max_total_time=600
//       /tmp/layer-corpus test/lint/fuzz/oci_layer_corpus
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "lint/oci/extract.h"
#include "test/fuzz_check.h"

namespace {

namespace fs = std::filesystem;
namespace oci = captf::lint::oci;
using captf::fuzz::check;

constexpr oci::ExtractLimits kLimits{.max_kept_bytes = std::uint64_t{8} << 20,
                                     .max_scanned_bytes = std::uint64_t{256} << 20,
                                     .entry_cost = 512};

// A layer in memory: a memfd and the path that opens it.
class MemoryFile {
public:
  explicit MemoryFile(std::string_view bytes) : fd_(memfd_create("layer", MFD_CLOEXEC)) {
    check(fd_ >= 0, "memfd_create works");
    for (std::size_t at = 0; at < bytes.size();) {
      const ssize_t n = write(fd_, bytes.data() + at, bytes.size() - at);
      check(n > 0, "a memfd takes the layer");
      at += static_cast<std::size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  const fs::path& path() const { return path_; }

private:
  int fd_;
  fs::path path_;
};

// The run's scratch directory in /dev/shm (RAM) for the staging directory
// and the destination, removed when the process exits.
class Scratch {
public:
  Scratch() {
    std::string tmpl = "/dev/shm/captf-layer-fuzz-XXXXXX";
    check(mkdtemp(tmpl.data()) != nullptr, "mkdtemp works");
    dir_ = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& dir() const { return dir_; }

private:
  fs::path dir_;
};

const fs::path& scratch() {
  static const Scratch kScratch;
  return kScratch.dir();
}

bool normalized(std::string_view path) {
  if (path == "/") {
    return true;
  }
  if (!path.starts_with('/') || path.ends_with('/')) {
    return false;
  }
  for (std::size_t start = 1; start <= path.size();) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") {
      return false;
    }
    start = slash + 1;
  }
  return true;
}

std::string parentOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

bool lexicallyUnder(const fs::path& path, const fs::path& dir) {
  const fs::path rel = path.lexically_normal().lexically_relative(dir.lexically_normal());
  return !rel.empty() && *rel.begin() != "..";
}

void checkTree(const oci::ImageFs& image, const fs::path& staging) {
  const auto& nodes = image.nodes();
  const auto root = nodes.find("/");
  check(root != nodes.end() && root->second.type == oci::NodeType::kDir, "/ is a directory");
  std::uint64_t kept = 0;
  for (const auto& [path, node] : nodes) {
    check(normalized(path), "every path is absolute and normalized");
    if (path != "/") {
      check(nodes.contains(parentOf(path)), "every path's parent is in the tree");
    }
    if (!node.content.empty()) {
      check(node.type == oci::NodeType::kFile && oci::keepForChecks(path),
            "only kept files have content");
      check(lexicallyUnder(node.content, staging), "content is staged below the staging dir");
      std::error_code ec;
      kept += fs::file_size(node.content, ec);
      check(!ec, "staged content exists");
    }
    if (node.type == oci::NodeType::kHardlink && !node.link.empty()) {
      check(normalized(node.link), "a hard link's target is normalized");
    }
    auto real = image.realpath(path);
    if (real.ok()) {
      check(image.lstat(*real) != nullptr, "realpath ends at a path of the tree");
    }
  }
  check(kept <= kLimits.max_kept_bytes, "the kept bytes stay within the limit");
}

void checkMaterialized(const fs::path& dest) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dest, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    check(lexicallyUnder(path, dest), "materialized entries are below the destination");
    if (it->is_symlink(ec)) {
      const fs::path target = fs::read_symlink(path, ec);
      check(!ec && target.is_relative(), "a materialized symlink is relative");
      check(lexicallyUnder(path.parent_path() / target, dest),
            "a materialized symlink stays below the destination");
    }
  }
}

} // namespace

// Without a -max_len of its own, a run gets -max_len=1048576.
// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer looks for.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  captf::fuzz::defaultMaxLen(argc, argv, 1048576);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> blobs;
  if (!bytes.empty() && (static_cast<unsigned char>(bytes[0]) & 1U) != 0 && bytes.size() >= 5) {
    std::size_t lower = 0;
    for (const char c : bytes.substr(1, 4)) {
      lower = (lower << 8) | static_cast<unsigned char>(c);
    }
    bytes.remove_prefix(5);
    lower = std::min(lower, bytes.size());
    blobs = {bytes.substr(0, lower), bytes.substr(lower)};
  } else {
    blobs = {bytes.empty() ? bytes : bytes.substr(1)};
  }
  std::vector<std::unique_ptr<MemoryFile>> files;
  std::vector<fs::path> layers;
  std::vector<std::string> names;
  for (const std::string_view blob : blobs) {
    files.push_back(std::make_unique<MemoryFile>(blob));
    layers.push_back(files.back()->path());
    names.push_back("sha256:layer" + std::to_string(names.size()));
  }
  const fs::path staging = scratch() / "staging";
  const fs::path dest = scratch() / "module";
  auto image = oci::flattenLayers(layers, names, staging, oci::keepForChecks, kLimits);
  if (!image.ok()) {
    captf::fuzz::checkNoCanary(image.status(), "flattenLayers' error");
  } else {
    checkTree(*image, staging);
    auto problems = oci::materializeTree(*image, "/captf/module", dest);
    checkMaterialized(dest);
    (void)problems;
  }
  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::remove_all(dest, ec);
  return 0;
}
