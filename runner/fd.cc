#include "runner/fd.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "contract/strings.h"

namespace captf::runner {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) {
    // close() must not be retried on EINTR on Linux: the descriptor is gone.
    ::close(fd_);
  }
  fd_ = fd;
}

absl::StatusOr<Pipe> makePipe() {
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(errnoMessage("pipe2", errno));
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

bool writeAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

std::string errnoMessage(std::string_view what, int errno_value) {
  return contract::strCat(what, ": ", std::strerror(errno_value));
}

} // namespace captf::runner
