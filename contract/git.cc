#include "contract/git.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <stop_token>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include <fcntl.h>
#include <git2.h>
#include <git2/sys/stream.h>
#include <netdb.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "absl/time/clock.h"
#include "contract/strings.h"
#include "contract/text.h"

namespace captf::contract::git {
namespace {

namespace fs = std::filesystem;

// A credential file larger than this is not a credential.
constexpr std::size_t kMaxCredentialFileBytes = 1 << 20;
// libgit2's message, as quoted in ours.
constexpr std::size_t kMaxDetailBytes = 300;
// A symlink's target, in bytes (Linux refuses longer ones anyway).
constexpr std::size_t kMaxLinkTargetBytes = 4095;
// Directories nested deeper than this are refused (the walk recurses).
constexpr int kMaxTreeDepth = 256;
// Symlinks followed while resolving one target (the kernel's ELOOP bound).
constexpr int kMaxLinkHops = 40;
// The system CA bundles libgit2's mbedTLS is pointed at, first found wins
// (after $SSL_CERT_FILE): Debian/Ubuntu/Alpine, Fedora/RHEL, openSUSE,
// and the rest.
constexpr std::array<std::string_view, 5> kSystemCaFiles = {
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
};

// --- Sockets bounded by a call's deadline -----------------------------------
//
// libgit2 1.5 has no socket timeout (GIT_OPT_SET_SERVER_TIMEOUT came with
// 1.7) and checks the deadline only in its callbacks, which run between
// reads: a server that accepts the connection and then says nothing would
// hold the call in the kernel until the TCP connection dies. So this library
// registers its own plain socket stream with libgit2, the stream every
// transport it uses connects through (HTTPS wraps it in mbedTLS, SSH hands
// its descriptor to libssh2), and shuts a call's sockets down when the
// call's deadline passes: whatever waits on them (connect, recv, send,
// libssh2's poll) returns at once and the call fails as timed out
// (docs/decisions/git-sources.md, "Deadlines").

// The sockets of one call, and the thread that shuts them down at its
// deadline (started with the first socket). Thread-safe.
class CallSockets {
public:
  explicit CallSockets(absl::Time deadline) : deadline_(deadline) {}
  CallSockets(const CallSockets&) = delete;
  CallSockets& operator=(const CallSockets&) = delete;
  ~CallSockets() = default; // the watchdog, the last member, stops first

  absl::Time deadline() const { return deadline_; }

  // Registers `fd`; false (and expired from now on) when the deadline has
  // passed: the caller closes `fd` and fails.
  bool attach(int fd) {
    const std::scoped_lock lock(mu_);
    if (expired_ || absl::Now() >= deadline_) {
      expired_ = true;
      return false;
    }
    fds_.insert(fd);
    if (!watchdog_.joinable()) {
      watchdog_ = std::jthread([this](std::stop_token stop) { watch(stop); });
    }
    return true;
  }
  // Called before `fd` is closed, so that a number the kernel hands out
  // again is never shut down.
  void detach(int fd) {
    const std::scoped_lock lock(mu_);
    fds_.erase(fd);
  }
  // A wait on a socket of this call ended at the deadline.
  void expire() {
    const std::scoped_lock lock(mu_);
    expired_ = true;
  }
  bool expired() const {
    const std::scoped_lock lock(mu_);
    return expired_;
  }

private:
  void watch(const std::stop_token& stop) {
    std::unique_lock lock(mu_);
    wake_.wait_until(lock, stop, absl::ToChronoTime(deadline_), [] { return false; });
    if (stop.stop_requested()) {
      return;
    }
    expired_ = true;
    for (const int fd : fds_) {
      ::shutdown(fd, SHUT_RDWR);
    }
  }

  const absl::Time deadline_;
  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  std::set<int> fds_;
  bool expired_ = false;
  std::jthread watchdog_;
};

// The call running on this thread, null outside one. libgit2 runs a call's
// transport on the calling thread, and a stream's constructor is given only
// a host and a port: this is how the stream finds its call. Like Global
// below, it exists because libgit2's stream registry is process-global.
std::shared_ptr<CallSockets>& currentCall() {
  thread_local std::shared_ptr<CallSockets> call;
  return call;
}

// Makes `call` the current call of this thread for its scope.
class CallScope {
public:
  explicit CallScope(std::shared_ptr<CallSockets> call)
      : previous_(std::exchange(currentCall(), std::move(call))) {}
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  ~CallScope() { currentCall() = std::move(previous_); }

private:
  std::shared_ptr<CallSockets> previous_;
};

// libgit2 1.5's SSH transport takes the descriptor out of the stream
// git_socket_stream_new gives it as if it were libgit2's own socket stream
// (struct git_socket_stream: parent, host, port, s), so this stream begins
// with the same members in the same order. libgit2 frees it through `free`.
struct BoundedSocket {
  git_stream parent;
  char* host;
  char* port;
  int s;
  std::shared_ptr<CallSockets> call; // null: no deadline
};
static_assert(std::is_standard_layout_v<BoundedSocket>);
static_assert(offsetof(BoundedSocket, parent) == 0);

BoundedSocket& boundedOf(git_stream* stream) {
  return *reinterpret_cast<BoundedSocket*>(stream);
}

// libgit2's own wording, so that messages read the same as before.
void setNetError(int klass, std::string_view what, int error) {
  const std::string message = strCat(what, ": ", std::strerror(error));
  git_error_set_str(klass, message.c_str());
}

// Waits for `events` on `fd` until the call's deadline (forever without a
// call); poll's result, 0 at the deadline.
int pollUntil(int fd, short events, const CallSockets* call) {
  for (;;) {
    int wait_ms = -1;
    if (call != nullptr) {
      const absl::Duration left = call->deadline() - absl::Now();
      if (left <= absl::ZeroDuration()) {
        return 0;
      }
      wait_ms = static_cast<int>(
          std::min<std::int64_t>(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))),
                                 std::numeric_limits<int>::max()));
    }
    pollfd one{fd, events, 0};
    const int n = ::poll(&one, 1, wait_ms);
    if (n >= 0 || errno != EINTR) {
      return n;
    }
  }
}

// Connects `fd` to `address` before the call's deadline; 0, or an errno
// (ETIMEDOUT at the deadline).
int connectBounded(int fd, const addrinfo& address, CallSockets* call) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return errno;
  }
  int error = 0;
  if (::connect(fd, address.ai_addr, address.ai_addrlen) != 0) {
    error = errno;
    if (error == EINPROGRESS || error == EINTR) {
      const int ready = pollUntil(fd, POLLOUT, call);
      socklen_t length = sizeof error;
      if (ready == 0) {
        error = ETIMEDOUT;
        if (call != nullptr) {
          call->expire();
        }
      } else if (ready < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
        error = errno;
      }
    }
  }
  if (error == 0 && ::fcntl(fd, F_SETFL, flags) < 0) {
    error = errno;
  }
  return error;
}

int boundedConnect(git_stream* stream) {
  BoundedSocket& self = boundedOf(stream);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(self.host, self.port, &hints, &found); rc != 0) {
    const std::string message =
        strCat("failed to resolve address for ", self.host, ": ", ::gai_strerror(rc));
    git_error_set_str(GIT_ERROR_NET, message.c_str());
    return -1;
  }
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, ::freeaddrinfo);
  int error = ECONNREFUSED;
  for (const addrinfo* address = found; address != nullptr; address = address->ai_next) {
    const int fd =
        ::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, address->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    if (self.call != nullptr && !self.call->attach(fd)) {
      ::close(fd);
      error = ETIMEDOUT;
      break;
    }
    error = connectBounded(fd, *address, self.call.get());
    if (error == 0) {
      self.s = fd;
      return 0;
    }
    if (self.call != nullptr) {
      self.call->detach(fd);
    }
    ::close(fd);
    if (error == ETIMEDOUT) {
      break;
    }
  }
  setNetError(GIT_ERROR_OS, strCat("failed to connect to ", self.host), error);
  return -1;
}

ssize_t boundedRead(git_stream* stream, void* data, std::size_t size) {
  const BoundedSocket& self = boundedOf(stream);
  for (;;) {
    const ssize_t n = ::recv(self.s, data, size, 0);
    if (n >= 0 || errno != EINTR) {
      if (n < 0) {
        setNetError(GIT_ERROR_NET, "error receiving socket data", errno);
      }
      return n;
    }
  }
}

ssize_t boundedWrite(git_stream* stream, const char* data, std::size_t size, int flags) {
  const BoundedSocket& self = boundedOf(stream);
  for (;;) {
    const ssize_t n = ::send(self.s, data, size, flags | MSG_NOSIGNAL);
    if (n >= 0 || errno != EINTR) {
      if (n < 0) {
        setNetError(GIT_ERROR_NET, "error sending data", errno);
      }
      return n;
    }
  }
}

int boundedClose(git_stream* stream) {
  BoundedSocket& self = boundedOf(stream);
  const int fd = std::exchange(self.s, -1);
  if (fd < 0) {
    return 0;
  }
  if (self.call != nullptr) {
    self.call->detach(fd);
  }
  if (::close(fd) != 0) {
    setNetError(GIT_ERROR_OS, "error closing socket", errno);
    return -1;
  }
  return 0;
}

void boundedFree(git_stream* stream) {
  boundedClose(stream);
  BoundedSocket* self = &boundedOf(stream);
  std::free(self->host);
  std::free(self->port);
  delete self;
}

// git_stream_registration::init for GIT_STREAM_STANDARD: every plain
// socket libgit2 opens, bound to the current call's deadline.
int boundedSocketNew(git_stream** out, const char* host, const char* port) {
  auto* self = new BoundedSocket{};
  self->parent.version = GIT_STREAM_VERSION;
  self->parent.connect = boundedConnect;
  self->parent.read = boundedRead;
  self->parent.write = boundedWrite;
  self->parent.close = boundedClose;
  self->parent.free = boundedFree;
  self->host = ::strdup(host);
  self->port = ::strdup(port);
  self->s = -1;
  self->call = currentCall();
  if (self->host == nullptr || self->port == nullptr) {
    boundedFree(&self->parent);
    git_error_set_oom();
    return -1;
  }
  *out = &self->parent;
  return 0;
}

// --- libgit2's process-wide state -------------------------------------------
//
// libgit2 is initialised once per process and its options (configuration
// search paths, the TLS trust store) are process-global; so is this state,
// which guards them. It is the one exception to "no mutable statics": it
// mirrors state libgit2 itself keeps globally.
struct Global {
  absl::Status init_status;
  // Shared while an operation relies on the system store being loaded;
  // exclusive while a caller's CA certificates are.
  std::shared_mutex trust;
  std::string system_ca_file;
  std::string system_ca_dir;
};

absl::Status lastError(std::string_view what) {
  const git_error* error = git_error_last();
  return absl::InternalError(
      strCat(what, ": ", error != nullptr && error->message != nullptr ? error->message : "error"));
}

bool isRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool isDirectoryPath(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::Status setTrustStore(const std::string& file, const std::string& dir) {
  if (git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, file.empty() ? nullptr : file.c_str(),
                       dir.empty() ? nullptr : dir.c_str()) < 0) {
    return lastError("loading CA certificates");
  }
  return absl::OkStatus();
}

Global& global() {
  static Global state;
  static std::once_flag once;
  std::call_once(once, [] {
    if (git_libgit2_init() < 0) {
      state.init_status = lastError("initialising libgit2");
      return;
    }
    // No configuration file of the host applies (see git.h).
    for (const int level : {GIT_CONFIG_LEVEL_PROGRAMDATA, GIT_CONFIG_LEVEL_SYSTEM,
                            GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_GLOBAL}) {
      git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, "");
    }
    git_libgit2_opts(GIT_OPT_SET_USER_AGENT, "captf");
    // Every socket bounded by its call's deadline (see CallSockets).
    git_stream_registration sockets{};
    sockets.version = GIT_STREAM_VERSION;
    sockets.init = boundedSocketNew;
    if (git_stream_register(GIT_STREAM_STANDARD, &sockets) < 0) {
      state.init_status = lastError("registering the socket stream");
      return;
    }
    // Debian's libgit2 uses mbedTLS, which trusts nothing until it is told
    // where the system's certificates are.
    if (const char* file = std::getenv("SSL_CERT_FILE"); file != nullptr && isRegularFile(file)) {
      state.system_ca_file = file;
    } else {
      for (const std::string_view candidate : kSystemCaFiles) {
        if (isRegularFile(std::string(candidate))) {
          state.system_ca_file = std::string(candidate);
          break;
        }
      }
    }
    if (state.system_ca_file.empty()) {
      const char* dir = std::getenv("SSL_CERT_DIR");
      const std::string candidate = dir != nullptr ? dir : "/etc/ssl/certs";
      if (isDirectoryPath(candidate)) {
        state.system_ca_dir = candidate;
      }
    }
    if (!state.system_ca_file.empty() || !state.system_ca_dir.empty()) {
      // A store that does not load leaves TLS failing to verify, which is
      // reported per call; it does not make libgit2 unusable.
      (void)setTrustStore(state.system_ca_file, state.system_ca_dir);
    }
  });
  return state;
}

// --- RAII for libgit2 handles ----------------------------------------------

template <typename T, void (*Free)(T*)> struct Deleter {
  void operator()(T* handle) const { Free(handle); }
};
template <typename T, void (*Free)(T*)> using Handle = std::unique_ptr<T, Deleter<T, Free>>;
using Repository = Handle<git_repository, git_repository_free>;
using Remote = Handle<git_remote, git_remote_free>;
using Object = Handle<git_object, git_object_free>;
using Tree = Handle<git_tree, git_tree_free>;
using Blob = Handle<git_blob, git_blob_free>;
using Odb = Handle<git_odb, git_odb_free>;

struct Buf {
  git_buf buf = GIT_BUF_INIT;
  Buf() = default;
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { git_buf_dispose(&buf); }
};

// A file descriptor closed on scope exit.
class Fd {
public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  int get() const { return fd_; }
  // Closes now and reports whether the close succeeded.
  bool close() {
    const int fd = std::exchange(fd_, -1);
    return fd < 0 || ::close(fd) == 0;
  }

private:
  int fd_;
};

// A directory removed with its contents on scope exit.
class TempDirectory {
public:
  TempDirectory() = default;
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  ~TempDirectory() { remove(); }

  absl::Status create(const std::string& parent, std::string_view prefix) {
    std::string pattern = strCat(parent, "/", prefix, "XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(
          strCat("creating a temporary directory in ", parent, ": ", std::strerror(errno)));
    }
    path_ = std::move(pattern);
    return absl::OkStatus();
  }
  void remove() {
    if (!path_.empty()) {
      std::error_code ignored;
      fs::remove_all(path_, ignored);
      path_.clear();
    }
  }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

// --- The TLS trust store ----------------------------------------------------

// A self-signed certificate whose key was discarded when it was made. The
// store is reset to it when there is no system store to go back to: mbedTLS
// keeps the previous store when a file does not load, and an empty file
// does not.
constexpr std::string_view kUntrustedPlaceholder = R"(-----BEGIN CERTIFICATE-----
MIIBozCCAUmgAwIBAgIUdrs1UXIgoY6gvBobbifmk1aVQu4wCgYIKoZIzj0EAwIw
JjEkMCIGA1UEAwwbY2FwdGYgdW50cnVzdGVkIHBsYWNlaG9sZGVyMCAXDTI2MTIw
MjAwMzI1OVoYDzIxMjYxMTA4MDAzMjU5WjAmMSQwIgYDVQQDDBtjYXB0ZiB1bnRy
dXN0ZWQgcGxhY2Vob2xkZXIwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATFn7lj
bw7znoXqcJwAyJR+F491KXINJ31/ZliuGIsM5fXoT2IxbpBCPcBj3zigrvZ3nG29
yJhb+RCXzQ+CqdYTo1MwUTAdBgNVHQ4EFgQUu+xKV7SJg5ry+UqJ5ISc07OOUIsw
HwYDVR0jBBgwFoAUu+xKV7SJg5ry+UqJ5ISc07OOUIswDwYDVR0TAQH/BAUwAwEB
/zAKBggqhkjOPQQDAgNIADBFAiEAz/59MVAKcJFIJeHFBU0wFI9V+5LH9PQUnUjK
2rRWQFUCIGnlYls4mnVANFsFDGEj+0dS+uv7PUZ062qL94ML5rd+
-----END CERTIFICATE-----
)";

absl::StatusOr<std::string> writeTemporary(std::string_view contents) {
  std::error_code error;
  fs::path dir = fs::temp_directory_path(error);
  if (error) {
    dir = "/tmp";
  }
  std::string pattern = (dir / "captf-ca-XXXXXX").string();
  Fd fd(::mkstemp(pattern.data()));
  if (fd.get() < 0) {
    return absl::InternalError(
        strCat("writing CA certificates to ", dir.string(), ": ", std::strerror(errno)));
  }
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd.get(), contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      ::unlink(pattern.c_str());
      return absl::InternalError(strCat("writing CA certificates: ", std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (!fd.close()) {
    ::unlink(pattern.c_str());
    return absl::InternalError(strCat("writing CA certificates: ", std::strerror(errno)));
  }
  return pattern;
}

// Loads `contents` as the whole store (mbedTLS reads the file when the
// option is set, so it is removed right away), plus `dir` when not "".
absl::Status loadTrustStore(std::string_view contents, const std::string& dir) {
  auto file = writeTemporary(contents);
  if (!file.ok()) {
    return file.status();
  }
  absl::Status loaded = setTrustStore(*file, dir);
  ::unlink(file->c_str());
  return loaded;
}

// Holds libgit2's trust store for one operation: shared while it is the
// system's, exclusive while it is the system's plus a caller's CA
// certificates; then the system store is loaded again (the placeholder
// when there is none, so the next caller does not trust them).
class TrustScope {
public:
  TrustScope() = default;
  TrustScope(const TrustScope&) = delete;
  TrustScope& operator=(const TrustScope&) = delete;
  ~TrustScope() {
    if (!exclusive_.owns_lock()) {
      return;
    }
    const Global& g = global();
    if (!g.system_ca_file.empty() || !g.system_ca_dir.empty()) {
      (void)setTrustStore(g.system_ca_file, g.system_ca_dir);
    } else {
      (void)loadTrustStore(kUntrustedPlaceholder, "");
    }
  }

  absl::Status enter(const std::string& extra_pem) {
    Global& g = global();
    if (extra_pem.empty()) {
      shared_ = std::shared_lock(g.trust);
      return absl::OkStatus();
    }
    exclusive_ = std::unique_lock(g.trust);
    std::string bundle;
    if (!g.system_ca_file.empty()) {
      std::ifstream in(g.system_ca_file, std::ios::binary);
      std::ostringstream contents;
      contents << in.rdbuf();
      bundle = contents.str();
      bundle += '\n';
    }
    bundle += extra_pem;
    bundle += '\n';
    // With a system directory rather than a bundle, both are loaded.
    if (auto loaded = loadTrustStore(bundle, g.system_ca_file.empty() ? g.system_ca_dir : "");
        !loaded.ok()) {
      return absl::InvalidArgumentError(
          strCat("ca.crt could not be loaded: ", std::string(loaded.message())));
    }
    return absl::OkStatus();
  }

private:
  std::shared_lock<std::shared_mutex> shared_;
  std::unique_lock<std::shared_mutex> exclusive_;
};

// --- known_hosts ------------------------------------------------------------

std::vector<std::string_view> splitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
      ++i;
    }
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
      ++i;
    }
    if (i > start) {
      fields.push_back(line.substr(start, i - start));
    }
  }
  return fields;
}

std::vector<std::string_view> splitOn(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? text.npos : end - start));
    if (end == std::string_view::npos) {
      return parts;
    }
    start = end + 1;
  }
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// OpenSSH's pattern match: '*' any run, '?' one character, case-insensitive.
bool globMatch(std::string_view pattern, std::string_view text) {
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;
  std::size_t resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || lower(pattern[p]) == lower(text[t]))) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

// A hashed entry: |1|base64(salt)|base64(HMAC-SHA1(salt, name)).
bool hashedMatch(std::string_view pattern, const std::string& name) {
  const std::vector<std::string_view> parts = splitOn(pattern.substr(3), '|');
  if (parts.size() != 2) {
    return false;
  }
  std::string salt;
  std::string expected;
  if (!absl::Base64Unescape(av(parts[0]), &salt) ||
      !absl::Base64Unescape(av(parts[1]), &expected)) {
    return false;
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (HMAC(EVP_sha1(), salt.data(), static_cast<int>(salt.size()),
           reinterpret_cast<const unsigned char*>(name.data()), name.size(), digest.data(),
           &length) == nullptr) {
    return false;
  }
  return expected.size() == length && std::memcmp(expected.data(), digest.data(), length) == 0;
}

// Whether the host patterns of a known_hosts line name `name` (no negated
// pattern matching it, at least one positive one).
bool hostsMatch(std::string_view patterns, const std::string& name) {
  if (patterns.starts_with("|1|")) {
    return hashedMatch(patterns, name);
  }
  bool matched = false;
  for (std::string_view pattern : splitOn(patterns, ',')) {
    const bool negated = pattern.starts_with('!');
    if (negated) {
      pattern.remove_prefix(1);
    }
    if (globMatch(pattern, name)) {
      if (negated) {
        return false;
      }
      matched = true;
    }
  }
  return matched;
}

struct KnownHostLine {
  std::string_view marker; // "", "@revoked", "@cert-authority"
  std::string_view hosts;
  std::string_view type;
  std::string key; // decoded: the SSH wire-format public key
};

std::vector<KnownHostLine> parseKnownHosts(std::string_view text) {
  std::vector<KnownHostLine> lines;
  for (std::string_view line : splitOn(text, '\n')) {
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    std::vector<std::string_view> fields = splitFields(line);
    if (fields.empty() || fields.front().starts_with('#')) {
      continue;
    }
    KnownHostLine parsed;
    if (fields.front().starts_with('@')) {
      parsed.marker = fields.front();
      fields.erase(fields.begin());
    }
    if (fields.size() < 3) {
      continue;
    }
    parsed.hosts = fields[0];
    parsed.type = fields[1];
    if (!absl::Base64Unescape(av(fields[2]), &parsed.key) || parsed.key.empty()) {
      continue;
    }
    lines.push_back(std::move(parsed));
  }
  return lines;
}

// How known_hosts names a host: "host" on port 22, "[host]:port" otherwise.
std::string knownHostsName(const GitUrl& url) {
  std::string host = url.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (url.port.empty() || url.port == "22") {
    return host;
  }
  return strCat("[", host, "]:", url.port);
}

// The SSH wire-format public key the server presented is listed for the
// host, and not revoked. @cert-authority lines are not supported (ignored).
bool hostKeyKnownImpl(std::string_view known_hosts, const GitUrl& url, std::string_view presented) {
  const std::string name = knownHostsName(url);
  bool known = false;
  for (const KnownHostLine& line : parseKnownHosts(known_hosts)) {
    if (line.marker == "@cert-authority" || !hostsMatch(line.hosts, name)) {
      continue;
    }
    if (line.key != presented) {
      continue;
    }
    if (line.marker == "@revoked") {
      return false;
    }
    if (line.marker.empty()) {
      known = true;
    }
  }
  return known;
}

// --- One network operation --------------------------------------------------

enum class Stop {
  kNone,
  kTimeout,
  kCancelled,
  kTooLarge,
  kHostKey,
  kCertificate,
  kNoCredentials,
  kAuthRefused,
};

struct Session {
  std::string action; // "ls-remote https://host/repo.git"
  const GitUrl* url = nullptr;
  const Credentials* credentials = nullptr;
  absl::Duration timeout;
  absl::Time deadline;
  std::function<bool()> cancelled;
  std::uint64_t max_received = std::numeric_limits<std::uint64_t>::max();
  // Bytes received by earlier downloads of the same fetch.
  std::uint64_t received_before = 0;
  Stop stop = Stop::kNone;
  int password_offers = 0;
  int key_offers = 0;
  // The call's sockets, shut down at `deadline` (CallScope makes them the
  // thread's while libgit2 runs).
  std::shared_ptr<CallSockets> sockets;

  // False (with `stop` set) when the operation must end now.
  bool proceed() {
    if (stop != Stop::kNone) {
      return false;
    }
    if (cancelled && cancelled()) {
      stop = Stop::kCancelled;
    } else if (absl::Now() > deadline) {
      stop = Stop::kTimeout;
    }
    return stop == Stop::kNone;
  }
};

Session& sessionOf(void* payload) {
  return *static_cast<Session*>(payload);
}

int credentialsCallback(git_credential** out, const char* /*url*/, const char* username_from_url,
                        unsigned int allowed, void* payload) {
  Session& session = sessionOf(payload);
  if (!session.proceed()) {
    return GIT_EUSER;
  }
  const Credentials& credentials = *session.credentials;
  const std::string ssh_user = username_from_url != nullptr && *username_from_url != '\0'
                                   ? std::string(username_from_url)
                                   : session.url->user;
  if ((allowed & GIT_CREDENTIAL_SSH_MEMORY) != 0 && !credentials.ssh_private_key.empty()) {
    if (session.key_offers++ > 0) {
      session.stop = Stop::kAuthRefused;
      return GIT_EAUTH;
    }
    return git_credential_ssh_key_memory_new(out, ssh_user.c_str(), nullptr,
                                             credentials.ssh_private_key.c_str(), nullptr);
  }
  if ((allowed & GIT_CREDENTIAL_USERNAME) != 0 && !ssh_user.empty()) {
    return git_credential_username_new(out, ssh_user.c_str());
  }
  if ((allowed & GIT_CREDENTIAL_USERPASS_PLAINTEXT) != 0 && !credentials.password.empty()) {
    if (session.password_offers++ > 0) {
      session.stop = Stop::kAuthRefused;
      return GIT_EAUTH;
    }
    return git_credential_userpass_plaintext_new(out, credentials.username.c_str(),
                                                 credentials.password.c_str());
  }
  session.stop =
      session.password_offers + session.key_offers > 0 ? Stop::kAuthRefused : Stop::kNoCredentials;
  return GIT_EAUTH;
}

int certificateCallback(git_cert* cert, int valid, const char* /*host*/, void* payload) {
  Session& session = sessionOf(payload);
  if (!session.proceed()) {
    return GIT_EUSER;
  }
  if (cert->cert_type == GIT_CERT_HOSTKEY_LIBSSH2) {
    // git_cert is the first member of git_cert_hostkey (libgit2's C
    // inheritance).
    const auto* hostkey = reinterpret_cast<const git_cert_hostkey*>(cert);
    if ((hostkey->type & GIT_CERT_SSH_RAW) != 0 && hostkey->hostkey != nullptr &&
        hostKeyKnownImpl(session.credentials->known_hosts, *session.url,
                         std::string_view(hostkey->hostkey, hostkey->hostkey_len))) {
      return 0;
    }
    session.stop = Stop::kHostKey;
    return GIT_ECERTIFICATE;
  }
  if (valid != 0) {
    return 0;
  }
  session.stop = Stop::kCertificate;
  return GIT_ECERTIFICATE;
}

int transferCallback(const git_indexer_progress* stats, void* payload) {
  Session& session = sessionOf(payload);
  if (!session.proceed()) {
    return GIT_EUSER;
  }
  if (session.received_before + stats->received_bytes > session.max_received) {
    session.stop = Stop::kTooLarge;
    return GIT_EUSER;
  }
  return 0;
}

int sidebandCallback(const char* /*text*/, int /*length*/, void* payload) {
  return sessionOf(payload).proceed() ? 0 : GIT_EUSER;
}

git_remote_callbacks callbacksFor(Session& session) {
  git_remote_callbacks callbacks;
  git_remote_init_callbacks(&callbacks, GIT_REMOTE_CALLBACKS_VERSION);
  callbacks.credentials = credentialsCallback;
  callbacks.certificate_check = certificateCallback;
  callbacks.transfer_progress = transferCallback;
  callbacks.sideband_progress = sidebandCallback;
  callbacks.payload = &session;
  return callbacks;
}

// Connects for a fetch and lists the remote's refs (one ref advertisement);
// libgit2's return code.
int connectAndList(git_remote* remote, const git_remote_callbacks& callbacks,
                   const git_proxy_options& proxy, const git_remote_head**& heads,
                   std::size_t& count) {
  if (const int rc = git_remote_connect(remote, GIT_DIRECTION_FETCH, &callbacks, &proxy, nullptr);
      rc < 0) {
    return rc;
  }
  return git_remote_ls(&heads, &count, remote);
}

git_proxy_options proxyOptions() {
  git_proxy_options proxy;
  git_proxy_options_init(&proxy, GIT_PROXY_OPTIONS_VERSION);
  proxy.type = GIT_PROXY_AUTO;
  return proxy;
}

void replaceAll(std::string& text, std::string_view secret) {
  if (secret.empty()) {
    return;
  }
  for (std::size_t at = text.find(secret); at != std::string::npos;
       at = text.find(secret, at + 10)) {
    text.replace(at, secret.size(), "[redacted]");
  }
}

// libgit2's last message, bounded, one line, without a credential.
std::string detailOf(const Session& session) {
  const git_error* error = git_error_last();
  std::string detail =
      error != nullptr && error->message != nullptr ? error->message : "unknown error";
  for (char& c : detail) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = ' ';
    }
  }
  replaceAll(detail, session.credentials->password);
  replaceAll(detail, session.credentials->ssh_private_key);
  detail = clipText(sanitizeUtf8(detail), kMaxDetailBytes);
  return detail;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The status of a failed libgit2 call `rc` during `session`.
absl::Status failure(const Session& session, int rc) {
  const std::string& action = session.action;
  const std::string host = session.url->host.empty() ? session.url->canonical : session.url->host;
  Stop stop = session.stop;
  if (stop == Stop::kNone && session.sockets != nullptr && session.sockets->expired()) {
    stop = Stop::kTimeout; // a socket was shut down, or a connect ran out of time
  }
  switch (stop) {
  case Stop::kTimeout:
    return absl::UnavailableError(
        strCat(action, ": timed out after ", absl::FormatDuration(session.timeout)));
  case Stop::kCancelled:
    return absl::CancelledError(strCat(action, ": cancelled"));
  case Stop::kTooLarge:
    return absl::ResourceExhaustedError(
        strCat(action, ": more than ", session.max_received, " bytes received"));
  case Stop::kHostKey:
    return absl::FailedPreconditionError(
        strCat(action, ": host key of ", host, " does not match known_hosts"));
  case Stop::kCertificate:
    return absl::FailedPreconditionError(
        strCat(action, ": the TLS certificate of ", host,
               " does not verify against the system's CA certificates or the Secret's ca.crt"));
  case Stop::kNoCredentials:
    return absl::UnauthenticatedError(
        strCat(action, ": the server asks for credentials and there are none"));
  case Stop::kAuthRefused:
    return absl::UnauthenticatedError(strCat(action, ": authentication refused"));
  case Stop::kNone:
    break;
  }
  const git_error* error = git_error_last();
  const int klass = error != nullptr ? error->klass : GIT_ERROR_NONE;
  const std::string detail = detailOf(session);
  if (rc == GIT_EAUTH || contains(detail, "status code: 401") ||
      contains(detail, "status code: 403")) {
    return absl::UnauthenticatedError(strCat(action, ": authentication refused (", detail, ")"));
  }
  if (rc == GIT_ECERTIFICATE || klass == GIT_ERROR_SSL) {
    return absl::FailedPreconditionError(strCat(action, ": TLS: ", detail));
  }
  if (contains(detail, "status code: 404")) {
    return absl::NotFoundError(strCat(action, ": repository not found (HTTP 404)"));
  }
  if (rc == GIT_ENOTFOUND) {
    return absl::NotFoundError(strCat(action, ": ", detail));
  }
  if (klass == GIT_ERROR_NET || klass == GIT_ERROR_OS || klass == GIT_ERROR_SSH ||
      klass == GIT_ERROR_HTTP) {
    return absl::UnavailableError(strCat(action, ": ", detail));
  }
  return absl::InternalError(strCat(action, ": ", detail));
}

Session makeSession(std::string_view verb, const GitUrl& url, const Credentials& credentials,
                    absl::Duration timeout) {
  Session session;
  session.action = strCat(verb, " ", url.canonical);
  session.url = &url;
  session.credentials = &credentials;
  session.timeout = timeout;
  session.deadline = absl::Now() + timeout;
  session.sockets = std::make_shared<CallSockets>(session.deadline);
  return session;
}

std::string oidHex(const git_oid& oid) {
  std::array<char, GIT_OID_HEXSZ + 1> hex{};
  git_oid_tostr(hex.data(), hex.size(), &oid);
  return {hex.data()};
}

std::string shortCommit(std::string_view commit) {
  return std::string(commit.substr(0, 12));
}

// --- Credentials --------------------------------------------------------------

void trimNewlines(std::string& value) {
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) {
    value.pop_back();
  }
}

absl::Status invalidCredential(std::string_view what) {
  return absl::InvalidArgumentError(strCat("git credentials: ", what));
}

// --- The tree -----------------------------------------------------------------

enum class EntryKind { kDirectory, kFile, kExecutable, kSymlink };

struct TreeEntry {
  std::string path; // relative, '/'-separated
  EntryKind kind = EntryKind::kFile;
  git_oid oid{};
  std::uint64_t size = 0;
  std::string target; // symlinks
};

bool isDotGit(std::string_view name) {
  return name.size() == 4 && name[0] == '.' && lower(name[1]) == 'g' && lower(name[2]) == 'i' &&
         lower(name[3]) == 't';
}

class TreeReader {
public:
  TreeReader(git_repository* repo, git_odb* odb, Session& session, std::uint64_t max_bytes)
      : repo_(repo), odb_(odb), session_(session), max_bytes_(max_bytes) {}

  absl::Status read(const git_tree* tree, const std::string& prefix, int depth) {
    if (depth > kMaxTreeDepth) {
      return absl::ResourceExhaustedError(
          strCat("the tree nests directories deeper than ", kMaxTreeDepth));
    }
    const std::size_t count = git_tree_entrycount(tree);
    for (std::size_t i = 0; i < count; ++i) {
      const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
      const std::string name = git_tree_entry_name(entry);
      const std::string path = prefix.empty() ? name : strCat(prefix, "/", name);
      if (name.empty() || name == "." || name == ".." || isDotGit(name) ||
          name.find('/') != std::string::npos) {
        return absl::InvalidArgumentError(strCat("the tree has an entry named \"",
                                                 sanitizeUtf8(clipText(path, 200)),
                                                 "\", which git refuses to check out"));
      }
      if (!paths_.insert(path).second) {
        return absl::InvalidArgumentError(strCat("the tree lists ", path, " twice"));
      }
      if (++entries_ > kMaxTreeEntries) {
        return absl::ResourceExhaustedError(
            strCat("the tree has more than ", kMaxTreeEntries, " entries"));
      }
      if (entries_ % 256 == 0 && !session_.proceed()) {
        return absl::CancelledError("stopped");
      }
      const git_filemode_t mode = git_tree_entry_filemode(entry);
      TreeEntry out;
      out.path = path;
      git_oid_cpy(&out.oid, git_tree_entry_id(entry));
      switch (mode) {
      case GIT_FILEMODE_COMMIT:
        return absl::InvalidArgumentError(
            strCat("the tree has a submodule at ", path, "; submodules are not supported"));
      case GIT_FILEMODE_TREE: {
        out.kind = EntryKind::kDirectory;
        entries_out_.push_back(out);
        git_tree* raw = nullptr;
        if (git_tree_lookup(&raw, repo_, &out.oid) < 0) {
          return lastError(strCat("reading directory ", path));
        }
        const Tree child(raw);
        if (auto status = read(child.get(), path, depth + 1); !status.ok()) {
          return status;
        }
        continue;
      }
      case GIT_FILEMODE_BLOB:
      case GIT_FILEMODE_BLOB_EXECUTABLE:
      case GIT_FILEMODE_LINK:
        break;
      default:
        return absl::InvalidArgumentError(
            strCat("the tree has ", path, " with an unknown file mode"));
      }
      if (prefix.empty() && name == ".gitmodules") {
        return absl::InvalidArgumentError(
            "the tree has a .gitmodules file; submodules are not supported");
      }
      std::size_t size = 0;
      git_object_t type = GIT_OBJECT_INVALID;
      if (git_odb_read_header(&size, &type, odb_, &out.oid) < 0 || type != GIT_OBJECT_BLOB) {
        return absl::InternalError(strCat("the blob of ", path, " is missing or not a blob"));
      }
      out.size = size;
      if (mode == GIT_FILEMODE_LINK) {
        out.kind = EntryKind::kSymlink;
        if (size > kMaxLinkTargetBytes) {
          return absl::InvalidArgumentError(
              strCat("the symlink ", path, " has a target over ", kMaxLinkTargetBytes, " bytes"));
        }
        git_blob* raw = nullptr;
        if (git_blob_lookup(&raw, repo_, &out.oid) < 0) {
          return lastError(strCat("reading symlink ", path));
        }
        const Blob blob(raw);
        out.target.assign(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                          static_cast<std::size_t>(git_blob_rawsize(blob.get())));
        if (out.target.empty() || out.target.find('\0') != std::string::npos) {
          return absl::InvalidArgumentError(strCat("the symlink ", path, " has no valid target"));
        }
        links_[path] = out.target;
      } else {
        out.kind = mode == GIT_FILEMODE_BLOB_EXECUTABLE ? EntryKind::kExecutable : EntryKind::kFile;
        bytes_ += size;
        ++files_;
        if (bytes_ > max_bytes_) {
          return absl::ResourceExhaustedError(
              strCat("the tree has more than ", max_bytes_, " bytes of files"));
        }
      }
      entries_out_.push_back(std::move(out));
    }
    return absl::OkStatus();
  }

  // Every symlink resolves inside the repository (git.h).
  absl::Status checkLinks() const {
    for (const auto& [path, target] : links_) {
      if (auto status = checkLink(path, target); !status.ok()) {
        return status;
      }
    }
    return absl::OkStatus();
  }

  std::vector<TreeEntry>& entries() { return entries_out_; }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t files() const { return files_; }

private:
  // Resolves `target` the way the kernel would, but over the tree: from the
  // link's directory, through the tree's other symlinks, refusing any step
  // above the root.
  absl::Status checkLink(const std::string& path, const std::string& target) const {
    const auto escapes = [&path](std::string_view why) {
      return absl::InvalidArgumentError(strCat("the symlink ", path, " ", why));
    };
    if (target.front() == '/') {
      return escapes("is absolute; a symlink must stay inside the repository");
    }
    std::vector<std::string> resolved = directoryOf(path);
    std::deque<std::string> pending;
    for (std::string_view part : splitOn(target, '/')) {
      pending.emplace_back(part);
    }
    int hops = 0;
    while (!pending.empty()) {
      std::string part = std::move(pending.front());
      pending.pop_front();
      if (part.empty() || part == ".") {
        continue;
      }
      if (part == "..") {
        if (resolved.empty()) {
          return escapes(strCat("points outside the repository (", sanitizeUtf8(target), ")"));
        }
        resolved.pop_back();
        continue;
      }
      resolved.push_back(std::move(part));
      const auto link = links_.find(strJoin(resolved, "/"));
      if (link == links_.end()) {
        continue;
      }
      if (++hops > kMaxLinkHops) {
        return escapes("does not resolve (too many levels of symlinks)");
      }
      if (link->second.front() == '/') {
        return escapes("leads to an absolute symlink");
      }
      resolved.pop_back();
      const std::vector<std::string_view> parts = splitOn(link->second, '/');
      for (std::size_t i = parts.size(); i > 0; --i) {
        pending.emplace_front(parts[i - 1]);
      }
    }
    return absl::OkStatus();
  }

  static std::vector<std::string> directoryOf(const std::string& path) {
    std::vector<std::string> parts;
    for (std::string_view part : splitOn(path, '/')) {
      parts.emplace_back(part);
    }
    parts.pop_back();
    return parts;
  }

  git_repository* repo_;
  git_odb* odb_;
  Session& session_;
  std::uint64_t max_bytes_;
  std::uint64_t entries_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t files_ = 0;
  std::set<std::string> paths_;
  std::map<std::string, std::string> links_;
  std::vector<TreeEntry> entries_out_;
};

absl::Status osError(std::string_view what, const std::string& path) {
  return absl::InternalError(strCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status writeAll(int fd, const char* data, std::size_t size, const std::string& path) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return osError("writing", path);
    }
    done += static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

// Writes the entries (parents before children) under `root`, which exists.
absl::Status writeTree(git_repository* repo, const std::vector<TreeEntry>& entries,
                       const std::string& root, Session& session, std::uint64_t max_bytes) {
  std::uint64_t written = 0;
  for (const TreeEntry& entry : entries) {
    if (!session.proceed()) {
      return absl::CancelledError("stopped");
    }
    const std::string full = strCat(root, "/", entry.path);
    switch (entry.kind) {
    case EntryKind::kDirectory:
      if (::mkdir(full.c_str(), 0755) != 0 || ::chmod(full.c_str(), 0755) != 0) {
        return osError("creating directory", entry.path);
      }
      continue;
    case EntryKind::kSymlink:
      if (::symlink(entry.target.c_str(), full.c_str()) != 0) {
        return osError("creating symlink", entry.path);
      }
      continue;
    case EntryKind::kFile:
    case EntryKind::kExecutable:
      break;
    }
    git_blob* raw = nullptr;
    if (git_blob_lookup(&raw, repo, &entry.oid) < 0) {
      return lastError(strCat("reading ", entry.path));
    }
    const Blob blob(raw);
    const auto size = static_cast<std::uint64_t>(git_blob_rawsize(blob.get()));
    written += size;
    if (written > max_bytes) {
      return absl::ResourceExhaustedError(
          strCat("the tree has more than ", max_bytes, " bytes of files"));
    }
    const mode_t mode = entry.kind == EntryKind::kExecutable ? 0755 : 0644;
    Fd fd(::open(full.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (fd.get() < 0) {
      return osError("creating", entry.path);
    }
    if (auto status = writeAll(fd.get(), static_cast<const char*>(git_blob_rawcontent(blob.get())),
                               static_cast<std::size_t>(size), entry.path);
        !status.ok()) {
      return status;
    }
    if (::fchmod(fd.get(), mode) != 0 || !fd.close()) {
      return osError("writing", entry.path);
    }
  }
  return absl::OkStatus();
}

// Moves the written tree to `destination`: a rename when it does not exist,
// else each top-level entry (it may be a mount point). On failure, what was
// moved is removed again.
absl::Status publish(const std::string& tree, const std::string& destination, bool exists) {
  if (!exists) {
    if (::rename(tree.c_str(), destination.c_str()) != 0) {
      return osError("renaming the checkout to", destination);
    }
    return absl::OkStatus();
  }
  std::vector<std::string> moved;
  std::error_code error;
  for (const auto& item : fs::directory_iterator(tree, error)) {
    const std::string name = item.path().filename().string();
    const std::string target = strCat(destination, "/", name);
    if (::rename(item.path().c_str(), target.c_str()) != 0) {
      absl::Status status = osError("moving the checkout into", destination);
      for (const std::string& done : moved) {
        std::error_code ignored;
        fs::remove_all(done, ignored);
      }
      return status;
    }
    moved.push_back(target);
  }
  if (error) {
    return absl::InternalError(strCat("listing the checkout: ", error.message()));
  }
  return absl::OkStatus();
}

// The fetch attempts, cheapest first (git.h).
std::vector<std::vector<std::string>> fetchPlans(const git_remote_head* const* heads,
                                                 std::size_t count, const git_oid& want,
                                                 std::string_view commit,
                                                 const std::string& ref_hint) {
  std::vector<std::vector<std::string>> plans;
  std::string tip;
  bool hint_advertised = false;
  for (std::size_t i = 0; i < count; ++i) {
    std::string name = heads[i]->name;
    const bool peeled = name.ends_with("^{}");
    if (peeled) {
      name.resize(name.size() - 3);
    }
    if (name == ref_hint) {
      hint_advertised = true;
    }
    if (git_oid_equal(&heads[i]->oid, &want) != 0 &&
        (name.starts_with("refs/heads/") || name.starts_with("refs/tags/")) &&
        (tip.empty() || name == ref_hint)) {
      tip = name;
    }
  }
  if (!tip.empty()) {
    plans.push_back({strCat("+", tip, ":refs/captf/tip")});
  }
  plans.push_back({strCat("+", commit, ":refs/captf/commit")});
  if (!ref_hint.empty() && hint_advertised && ref_hint != tip) {
    plans.push_back({strCat("+", ref_hint, ":refs/captf/hint")});
  }
  plans.push_back({"+refs/heads/*:refs/captf/heads/*", "+refs/tags/*:refs/captf/tags/*"});
  return plans;
}

absl::Status checkDestination(const std::string& destination, bool& exists) {
  struct stat st {};
  if (::stat(destination.c_str(), &st) == 0) {
    std::error_code error;
    if (!S_ISDIR(st.st_mode) || !fs::is_empty(destination, error) || error) {
      return absl::FailedPreconditionError(
          strCat("the checkout directory ", destination, " is not an empty directory"));
    }
    exists = true;
    return absl::OkStatus();
  }
  if (errno != ENOENT) {
    return osError("reading", destination);
  }
  exists = false;
  std::string parent = fs::path(destination).parent_path().string();
  if (parent.empty()) {
    parent = ".";
  }
  if (!isDirectoryPath(parent)) {
    return absl::FailedPreconditionError(
        strCat("the parent of the checkout directory ", destination, " is not a directory"));
  }
  return absl::OkStatus();
}

absl::Status stopped(const Session& session) {
  return failure(session, GIT_EUSER);
}

} // namespace

bool knownHostsAccept(std::string_view known_hosts, const GitUrl& url, std::string_view key) {
  return hostKeyKnownImpl(known_hosts, url, key);
}

bool Credentials::empty() const {
  return username.empty() && password.empty() && ssh_private_key.empty() && known_hosts.empty() &&
         ca_certificates.empty();
}

absl::StatusOr<Credentials> credentialsFromData(const std::map<std::string, std::string>& data) {
  const auto value = [&data](std::string_view key) {
    const auto found = data.find(std::string(key));
    return found == data.end() ? std::string() : found->second;
  };
  Credentials out;
  out.username = value(kKeyUsername);
  out.password = value(kKeyPassword);
  std::string token = value(kKeyToken);
  trimNewlines(out.username);
  trimNewlines(out.password);
  trimNewlines(token);
  out.ssh_private_key = value(kKeySshPrivateKey);
  out.known_hosts = value(kKeyKnownHosts);
  out.ca_certificates = value(kKeyCaCert);
  if (!token.empty() && !out.password.empty()) {
    return invalidCredential("both token and password are set; give one");
  }
  if (!token.empty()) {
    out.password = std::move(token);
    if (out.username.empty()) {
      out.username = std::string(kTokenUsername);
    }
  } else if (!out.password.empty() && out.username.empty()) {
    return invalidCredential("password without username");
  }
  if (!out.ssh_private_key.empty()) {
    if (out.known_hosts.empty()) {
      return invalidCredential(
          "ssh-privatekey without known_hosts; the server's host key must be known");
    }
    if (!contains(out.ssh_private_key, "-----BEGIN ") ||
        !contains(out.ssh_private_key, "PRIVATE KEY-----")) {
      return invalidCredential("ssh-privatekey is not a PEM or OpenSSH private key");
    }
    if (contains(out.ssh_private_key, "ENCRYPTED")) {
      return invalidCredential("ssh-privatekey is encrypted; a passphrase is not supported");
    }
  }
  if (!out.known_hosts.empty() && parseKnownHosts(out.known_hosts).empty()) {
    return invalidCredential("known_hosts has no \"host keytype base64-key\" line");
  }
  if (!out.ca_certificates.empty() &&
      !contains(out.ca_certificates, "-----BEGIN CERTIFICATE-----")) {
    return invalidCredential("ca.crt has no PEM certificate");
  }
  return out;
}

absl::StatusOr<Credentials> credentialsFromDirectory(const std::string& dir) {
  if (!isDirectoryPath(dir)) {
    return invalidCredential(strCat("the directory ", dir, " does not exist"));
  }
  std::map<std::string, std::string> data;
  for (const std::string_view key :
       {kKeyUsername, kKeyPassword, kKeyToken, kKeySshPrivateKey, kKeyKnownHosts, kKeyCaCert}) {
    const std::string path = strCat(dir, "/", key);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) {
        continue;
      }
      return invalidCredential(strCat(path, ": ", std::strerror(errno)));
    }
    if (!S_ISREG(st.st_mode)) {
      return invalidCredential(strCat(path, " is not a file"));
    }
    if (std::cmp_greater(st.st_size, kMaxCredentialFileBytes)) {
      return invalidCredential(strCat(path, " is larger than 1 MiB"));
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream contents;
    contents << in.rdbuf();
    if (!in.good() && !in.eof()) {
      return invalidCredential(strCat(path, " could not be read"));
    }
    data[std::string(key)] = contents.str();
  }
  return credentialsFromData(data);
}

absl::StatusOr<RemoteListing> listRemoteWithHead(const GitUrl& url, const Credentials& credentials,
                                                 absl::Duration timeout) {
  Global& g = global();
  if (!g.init_status.ok()) {
    return g.init_status;
  }
  Session session = makeSession("ls-remote", url, credentials, timeout);
  const CallScope call(session.sockets);
  TrustScope trust;
  if (auto status = trust.enter(credentials.ca_certificates); !status.ok()) {
    return status;
  }
  git_remote* raw = nullptr;
  if (git_remote_create_detached(&raw, url.canonical.c_str()) < 0) {
    return absl::InvalidArgumentError(strCat(session.action, ": ", detailOf(session)));
  }
  const Remote remote(raw);
  const git_remote_callbacks callbacks = callbacksFor(session);
  const git_proxy_options proxy = proxyOptions();
  const git_remote_head** heads = nullptr;
  std::size_t count = 0;
  if (const int rc = connectAndList(remote.get(), callbacks, proxy, heads, count); rc < 0) {
    return failure(session, rc);
  }
  std::map<std::string, std::string> direct;
  std::map<std::string, std::string> peeled;
  for (std::size_t i = 0; i < count; ++i) {
    std::string name = heads[i]->name;
    if (name.ends_with("^{}")) {
      name.resize(name.size() - 3);
      peeled[name] = oidHex(heads[i]->oid);
    } else {
      direct[name] = oidHex(heads[i]->oid);
    }
  }
  RemoteListing listing;
  for (const auto& [name, oid] : direct) {
    if (!name.starts_with("refs/heads/") && !name.starts_with("refs/tags/")) {
      continue;
    }
    const auto peel = peeled.find(name);
    listing.refs.push_back(RemoteRef{name, peel == peeled.end() ? oid : peel->second});
  }
  Buf head;
  if (git_remote_default_branch(&head.buf, remote.get()) == 0 && head.buf.ptr != nullptr) {
    listing.head = head.buf.ptr;
  }
  git_error_clear();
  return listing;
}

absl::StatusOr<std::vector<RemoteRef>> listRemote(const GitUrl& url, const Credentials& credentials,
                                                  absl::Duration timeout) {
  auto listing = listRemoteWithHead(url, credentials, timeout);
  if (!listing.ok()) {
    return listing.status();
  }
  return std::move(listing->refs);
}

absl::StatusOr<std::string> resolve(const std::vector<RemoteRef>& refs, const GitRef& ref) {
  if (ref.kind == GitRefKind::kCommit) {
    return ref.name;
  }
  const std::string full = fullRefName(ref);
  for (const RemoteRef& remote : refs) {
    if (remote.name == full) {
      return remote.commit;
    }
  }
  return absl::NotFoundError(strCat("the remote has no ", describeGitRef(ref)));
}

absl::StatusOr<GitRef> resolveName(const std::vector<RemoteRef>& refs, std::string_view name) {
  if (isCommitId(name)) {
    return GitRef{GitRefKind::kCommit, std::string(name)};
  }
  for (const GitRefKind kind : {GitRefKind::kTag, GitRefKind::kBranch}) {
    GitRef ref{kind, std::string(name)};
    if (auto status = validateGitRef(ref); !status.ok()) {
      return status;
    }
    const std::string full = fullRefName(ref);
    if (std::any_of(refs.begin(), refs.end(),
                    [&full](const RemoteRef& remote) { return remote.name == full; })) {
      return ref;
    }
  }
  return absl::NotFoundError(strCat("the remote has no tag or branch named ", name));
}

absl::StatusOr<FetchResult> fetchCommit(const GitUrl& url, const Credentials& credentials,
                                        std::string_view commit, const std::string& destination,
                                        const FetchOptions& options) {
  if (!isCommitId(commit)) {
    return absl::InvalidArgumentError(
        strCat("fetch ", url.canonical, ": the commit is not 40 lower-case hex digits"));
  }
  Global& g = global();
  if (!g.init_status.ok()) {
    return g.init_status;
  }
  Session session = makeSession("fetch", url, credentials, options.timeout);
  const CallScope call(session.sockets);
  session.cancelled = options.cancelled;
  session.max_received = options.max_bytes;
  const auto fail = [&session](const absl::Status& status) {
    return absl::Status(status.code(), strCat(session.action, ": ", std::string(status.message())));
  };

  bool exists = false;
  if (auto status = checkDestination(destination, exists); !status.ok()) {
    return fail(status);
  }
  TempDirectory staging;
  {
    std::string parent = exists ? destination : fs::path(destination).parent_path().string();
    if (parent.empty()) {
      parent = ".";
    }
    if (auto status = staging.create(parent, ".captf-fetch-"); !status.ok()) {
      return fail(status);
    }
  }
  const std::string objects = strCat(staging.path(), "/objects.git");
  const std::string tree_dir = strCat(staging.path(), "/tree");

  git_repository* raw_repo = nullptr;
  if (git_repository_init(&raw_repo, objects.c_str(), 1) < 0) {
    return fail(lastError("creating the temporary repository"));
  }
  const Repository repo(raw_repo);
  git_odb* raw_odb = nullptr;
  if (git_repository_odb(&raw_odb, repo.get()) < 0) {
    return fail(lastError("opening the temporary repository"));
  }
  const Odb odb(raw_odb);
  git_oid want;
  git_oid_fromstrn(&want, commit.data(), commit.size());

  {
    TrustScope trust;
    if (auto status = trust.enter(credentials.ca_certificates); !status.ok()) {
      return fail(status);
    }
    git_remote* raw_remote = nullptr;
    git_remote_create_options create;
    git_remote_create_options_init(&create, GIT_REMOTE_CREATE_OPTIONS_VERSION);
    create.repository = repo.get();
    // In memory, no url.insteadOf (see git.h: hermetic), and the refspecs
    // come from the attempts below.
    create.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
    if (git_remote_create_with_opts(&raw_remote, url.canonical.c_str(), &create) < 0) {
      return absl::InvalidArgumentError(strCat(session.action, ": ", detailOf(session)));
    }
    const Remote remote(raw_remote);
    const git_remote_callbacks callbacks = callbacksFor(session);
    const git_proxy_options proxy = proxyOptions();
    const git_remote_head** heads = nullptr;
    std::size_t count = 0;
    if (const int rc = connectAndList(remote.get(), callbacks, proxy, heads, count); rc < 0) {
      return failure(session, rc);
    }
    const std::vector<std::vector<std::string>> plans =
        fetchPlans(heads, count, want, commit, options.ref_hint);
    git_fetch_options fetch;
    git_fetch_options_init(&fetch, GIT_FETCH_OPTIONS_VERSION);
    fetch.callbacks = callbacks;
    fetch.proxy_opts = proxy;
    fetch.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
    fetch.update_fetchhead = 0;
    fetch.prune = GIT_FETCH_NO_PRUNE;
    bool found = false;
    for (std::size_t i = 0; i < plans.size() && !found; ++i) {
      std::vector<char*> specs;
      for (const std::string& spec : plans[i]) {
        specs.push_back(const_cast<char*>(spec.c_str())); // git_strarray is not const
      }
      const git_strarray array{specs.data(), specs.size()};
      const int rc = git_remote_download(remote.get(), &array, &fetch);
      if (const git_indexer_progress* stats = git_remote_stats(remote.get()); stats != nullptr) {
        session.received_before += stats->received_bytes;
      }
      if (rc < 0) {
        // A server that does not serve this want (a commit by id, most
        // often) refuses the attempt; the next one asks for more. The last
        // attempt's error, and any stop, is the answer.
        if (session.stop != Stop::kNone || i + 1 == plans.size()) {
          return failure(session, rc);
        }
      } else {
        found = git_odb_exists(odb.get(), &want) != 0;
      }
      git_error_clear();
      git_remote_disconnect(remote.get());
    }
    if (!found) {
      return absl::NotFoundError(
          strCat(session.action, ": commit ", shortCommit(commit), " is not in the repository"));
    }
  }

  git_object* raw_object = nullptr;
  if (git_object_lookup(&raw_object, repo.get(), &want, GIT_OBJECT_ANY) < 0) {
    return absl::NotFoundError(
        strCat(session.action, ": commit ", shortCommit(commit), " is not in the repository"));
  }
  const Object object(raw_object);
  if (git_object_type(object.get()) != GIT_OBJECT_COMMIT) {
    return absl::NotFoundError(strCat(session.action, ": ", shortCommit(commit), " names a ",
                                      git_object_type2string(git_object_type(object.get())),
                                      ", not a commit"));
  }
  git_tree* raw_tree = nullptr;
  if (git_commit_tree(&raw_tree, reinterpret_cast<const git_commit*>(object.get())) < 0) {
    return fail(lastError("reading the commit's tree"));
  }
  const Tree root(raw_tree);

  TreeReader reader(repo.get(), odb.get(), session, options.max_bytes);
  const auto stopped_or = [&](const absl::Status& status) {
    return session.stop != Stop::kNone ? stopped(session) : fail(status);
  };
  if (auto status = reader.read(root.get(), "", 0); !status.ok()) {
    return stopped_or(status);
  }
  if (auto status = reader.checkLinks(); !status.ok()) {
    return fail(status);
  }
  if (::mkdir(tree_dir.c_str(), 0755) != 0 || ::chmod(tree_dir.c_str(), 0755) != 0) {
    return fail(osError("creating", tree_dir));
  }
  if (auto status = writeTree(repo.get(), reader.entries(), tree_dir, session, options.max_bytes);
      !status.ok()) {
    return stopped_or(status);
  }
  if (auto status = publish(tree_dir, destination, exists); !status.ok()) {
    return fail(status);
  }
  staging.remove();
  return FetchResult{std::string(commit), reader.bytes(), reader.files()};
}

absl::StatusOr<RemoteListing> LibGit2Client::listRemote(const GitUrl& url,
                                                        const Credentials& credentials,
                                                        absl::Duration timeout) const {
  return listRemoteWithHead(url, credentials, timeout);
}

absl::StatusOr<FetchResult> LibGit2Client::fetchCommit(const GitUrl& url,
                                                       const Credentials& credentials,
                                                       std::string_view commit,
                                                       const std::string& destination,
                                                       const FetchOptions& options) const {
  return git::fetchCommit(url, credentials, commit, destination, options);
}

} // namespace captf::contract::git
