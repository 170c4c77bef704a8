#include "runner/workspace.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <map>
#include <string_view>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contract/state.h"
#include "contract/strings.h"
#include "runner/fd.h"

namespace captf::runner {
namespace {

using contract::strCat;

constexpr std::array<std::string_view, 4> kModuleSuffixes = {".tf", ".tf.json", ".tofu",
                                                             ".tofu.json"};
// One backup chunk is at most a Secret's 1 MiB; allow the base64-free bytes
// plus slack.
constexpr std::size_t kMaxChunkBytes = std::size_t{2} * 1024 * 1024;

bool hasModuleSuffix(std::string_view name) {
  return std::any_of(kModuleSuffixes.begin(), kModuleSuffixes.end(), [name](std::string_view s) {
    return name.size() > s.size() && name.ends_with(s);
  });
}

struct DirCloser {
  DIR* dir;
  ~DirCloser() {
    if (dir != nullptr) {
      ::closedir(dir);
    }
  }
};

absl::StatusOr<std::vector<std::string>> entries(const std::string& dir) {
  DirCloser handle{::opendir(dir.c_str())};
  if (handle.dir == nullptr) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(strCat(dir, " does not exist"));
    }
    return absl::FailedPreconditionError(errnoMessage(strCat("reading ", dir), error));
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(handle.dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") {
      names.emplace_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

bool isDirectory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool isRegularFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

absl::Status checkModuleDirectory(const std::string& module_dir) {
  if (!isDirectory(module_dir)) {
    return absl::FailedPreconditionError(
        strCat("the module directory ", module_dir, " does not exist or is not a directory"));
  }
  auto names = entries(module_dir);
  if (!names.ok()) {
    return absl::FailedPreconditionError(std::string(names.status().message()));
  }
  for (const std::string& name : *names) {
    if (hasModuleSuffix(name) && isRegularFile(strCat(module_dir, "/", name))) {
      return absl::OkStatus();
    }
  }
  return absl::FailedPreconditionError(
      strCat("the module directory ", module_dir,
             " has no .tf, .tf.json, .tofu or .tofu.json file at its top level"));
}

absl::Status checkRuntime(const std::string& runtime) {
  struct stat info {};
  if (::stat(runtime.c_str(), &info) != 0) {
    return absl::FailedPreconditionError(
        errnoMessage(strCat("the runtime ", runtime, " is missing or broken"), errno));
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::FailedPreconditionError(strCat("the runtime ", runtime, " is not a regular file"));
  }
  if (::access(runtime.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        errnoMessage(strCat("the runtime ", runtime, " is not executable"), errno));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> readFile(const std::string& path, std::size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(strCat(path, " does not exist"));
    }
    return absl::FailedPreconditionError(errnoMessage(strCat("opening ", path), error));
  }
  std::string contents;
  std::array<char, static_cast<std::size_t>(64 * 1024)> buffer{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n == 0) {
      return contents;
    }
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return absl::FailedPreconditionError(errnoMessage(strCat("reading ", path), errno));
    }
    if (contents.size() + static_cast<std::size_t>(n) > max_bytes) {
      return absl::ResourceExhaustedError(strCat(path, " is larger than ", max_bytes, " bytes"));
    }
    contents.append(buffer.data(), static_cast<std::size_t>(n));
  }
}

absl::Status writeFile(const std::string& path, std::string_view contents, unsigned mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd.valid()) {
    return absl::FailedPreconditionError(errnoMessage(strCat("creating ", path), errno));
  }
  if (::fchmod(fd.get(), mode) != 0 || !writeAll(fd.get(), contents.data(), contents.size())) {
    return absl::FailedPreconditionError(errnoMessage(strCat("writing ", path), errno));
  }
  if (::close(fd.release()) != 0) {
    return absl::FailedPreconditionError(errnoMessage(strCat("closing ", path), errno));
  }
  return absl::OkStatus();
}

absl::Status makeDirectories(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("makeDirectories: empty path");
  }
  std::size_t at = 0;
  while (at != std::string::npos) {
    at = path.find('/', at + 1);
    const std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(errnoMessage(strCat("creating ", prefix), errno));
    }
  }
  if (!isDirectory(path)) {
    return absl::FailedPreconditionError(strCat(path, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> sameDirectory(const std::string& a, const std::string& b) {
  struct stat first {};
  struct stat second {};
  if (::stat(a.c_str(), &first) != 0) {
    return absl::FailedPreconditionError(errnoMessage(strCat("stat ", a), errno));
  }
  if (::stat(b.c_str(), &second) != 0) {
    return absl::FailedPreconditionError(errnoMessage(strCat("stat ", b), errno));
  }
  return first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

absl::StatusOr<std::vector<std::string>> listFiles(const std::string& dir) {
  auto names = entries(dir);
  if (!names.ok()) {
    if (absl::IsNotFound(names.status())) {
      return std::vector<std::string>{};
    }
    return names.status();
  }
  std::vector<std::string> files;
  for (const std::string& name : *names) {
    if (!name.starts_with('.') && isRegularFile(strCat(dir, "/", name))) {
      files.push_back(name);
    }
  }
  return files;
}

absl::StatusOr<std::vector<std::string>> readRestoreChunks(const std::string& dir,
                                                           std::size_t expected) {
  auto names = listFiles(dir);
  if (!names.ok()) {
    return names.status();
  }
  std::map<std::size_t, std::string> by_index;
  for (const std::string& name : *names) {
    std::size_t index = 0;
    const auto parsed = std::from_chars(name.data(), name.data() + name.size(), index);
    if (parsed.ec != std::errc() || parsed.ptr != name.data() + name.size() ||
        (name.size() > 1 && name.front() == '0')) {
      return absl::FailedPreconditionError(
          strCat("restore chunks: ", dir, "/", name, " is not named by a chunk index"));
    }
    by_index.emplace(index, name);
  }
  if (by_index.empty()) {
    return absl::FailedPreconditionError(strCat("restore chunks: ", dir, " holds no chunk"));
  }
  if (by_index.size() > contract::kMaxStateChunks) {
    return absl::FailedPreconditionError(strCat("restore chunks: ", by_index.size(),
                                                " chunks, over the limit of ",
                                                contract::kMaxStateChunks));
  }
  if (expected > 0 && by_index.size() != expected) {
    return absl::FailedPreconditionError(strCat("restore chunks: ", dir, " holds ", by_index.size(),
                                                " chunks, --restore-chunks says ", expected));
  }
  std::vector<std::string> chunks;
  std::size_t next = 0;
  for (const auto& [index, name] : by_index) {
    if (index != next) {
      return absl::FailedPreconditionError(
          strCat("restore chunks: chunk ", next, " is missing from ", dir));
    }
    auto data = readFile(strCat(dir, "/", name), kMaxChunkBytes);
    if (!data.ok()) {
      return data.status();
    }
    chunks.push_back(*std::move(data));
    ++next;
  }
  return chunks;
}

} // namespace captf::runner
