#pragma once

// File descriptors owned by value. Every descriptor the runner opens is held
// by a UniqueFd, so an early return can never leak one into a child process
// or keep a pipe open after its reader is gone.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace captf::runner {

class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset(std::exchange(other.fd_, -1));
    }
    return *this;
  }
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release() { return std::exchange(fd_, -1); }
  // Closes the held descriptor (if any) and holds `fd` instead.
  void reset(int fd = -1);

private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// A pipe whose both ends are close-on-exec. Errors: Internal with errno text.
absl::StatusOr<Pipe> makePipe();

// Writes all of `size` bytes, retrying on EINTR and short writes. Returns
// false on any other error (EPIPE included: the reader went away).
bool writeAll(int fd, const char* data, std::size_t size);

// "<what>: <strerror(errno_value)>".
std::string errnoMessage(std::string_view what, int errno_value);

} // namespace captf::runner
