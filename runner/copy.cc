#include "runner/copy.h"

#include <cerrno>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contract/strings.h"
#include "runner/fd.h"

namespace captf::runner {
namespace {

constexpr mode_t kExecutableMode = 0755;

std::string directoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

absl::Status copyBytes(int from, int to) {
  // copy_file_range moves the bytes inside the kernel; fall back to
  // read/write where it is not supported (across filesystems on old
  // kernels, some overlay or proc sources).
  for (;;) {
    const ssize_t n = ::copy_file_range(from, nullptr, to, nullptr, 1 << 30, 0);
    if (n == 0) {
      return absl::OkStatus();
    }
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
        break;
      }
      return absl::InternalError(errnoMessage("copy_file_range", errno));
    }
  }
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t n = ::read(from, buffer.data(), buffer.size());
    if (n == 0) {
      return absl::OkStatus();
    }
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return absl::InternalError(errnoMessage("read", errno));
    }
    if (!writeAll(to, buffer.data(), static_cast<std::size_t>(n))) {
      return absl::InternalError(errnoMessage("write", errno));
    }
  }
}

} // namespace

absl::Status copyExecutable(const std::string& source, const std::string& destination) {
  if (destination.empty()) {
    return absl::InvalidArgumentError("copy: the destination is empty");
  }
  UniqueFd in(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) {
    return absl::NotFoundError(errnoMessage(contract::strCat("copy: opening ", source), errno));
  }
  std::string temporary = contract::strCat(directoryOf(destination), "/.runner-copy-XXXXXX");
  UniqueFd out(::mkostemp(temporary.data(), O_CLOEXEC));
  if (!out.valid()) {
    return absl::UnavailableError(errnoMessage(
        contract::strCat("copy: creating a file in ", directoryOf(destination)), errno));
  }
  struct Remover {
    const std::string* path;
    bool armed = true;
    ~Remover() {
      if (armed) {
        ::unlink(path->c_str());
      }
    }
  } remover{&temporary};

  if (auto copied = copyBytes(in.get(), out.get()); !copied.ok()) {
    return {copied.code(), contract::strCat("copy: ", std::string(copied.message()))};
  }
  if (::fchmod(out.get(), kExecutableMode) != 0) {
    return absl::InternalError(errnoMessage("copy: fchmod", errno));
  }
  if (::fsync(out.get()) != 0) {
    return absl::InternalError(errnoMessage("copy: fsync", errno));
  }
  if (::close(out.release()) != 0) {
    return absl::InternalError(errnoMessage("copy: close", errno));
  }
  if (::rename(temporary.c_str(), destination.c_str()) != 0) {
    return absl::UnavailableError(
        errnoMessage(contract::strCat("copy: renaming into ", destination), errno));
  }
  remover.armed = false;
  return absl::OkStatus();
}

} // namespace captf::runner
