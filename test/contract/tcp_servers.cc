#include "test/contract/tcp_servers.h"

#include <array>
#include <cerrno>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace captf::contract::testing {
namespace {

// A listening socket on 127.0.0.1 and its port; -1 when it cannot be had.
int listenOnLoopback(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return -1;
  }
  port = ntohs(address.sin_port);
  return fd;
}

// Ends a blocking accept() on `listener`.
void stopListening(int listener) {
  ::shutdown(listener, SHUT_RDWR);
}

} // namespace

Tarpit::Tarpit(Greet greet) : greet_(std::move(greet)) {
  listener_ = listenOnLoopback(port_);
  if (listener_ >= 0) {
    thread_ = std::jthread([this] { serve(); });
  }
}

Tarpit::~Tarpit() {
  stopping_ = true;
  if (listener_ >= 0) {
    stopListening(listener_);
  }
  if (thread_.joinable()) {
    thread_.join();
  }
  release();
  if (listener_ >= 0) {
    ::close(listener_);
  }
}

int Tarpit::accepted() const {
  const std::scoped_lock lock(mu_);
  return accepted_;
}

void Tarpit::release() {
  const std::scoped_lock lock(mu_);
  for (const int fd : held_) {
    ::close(fd);
  }
  held_.clear();
}

void Tarpit::serve() {
  while (!stopping_) {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      return;
    }
    if (greet_) {
      greet_(fd);
    }
    const std::scoped_lock lock(mu_);
    ++accepted_;
    held_.push_back(fd);
  }
}

std::string httpResponse(int status, std::string_view reason,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         std::string_view body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
  for (const auto& [name, value] : headers) {
    out += name + ": " + value + "\r\n";
  }
  out += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  out += body;
  return out;
}

CannedHttpServer::CannedHttpServer(std::string response) : response_(std::move(response)) {
  listener_ = listenOnLoopback(port_);
  if (listener_ >= 0) {
    thread_ = std::jthread([this] { serve(); });
  }
}

CannedHttpServer::~CannedHttpServer() {
  stopping_ = true;
  if (listener_ >= 0) {
    stopListening(listener_);
  }
  if (thread_.joinable()) {
    thread_.join();
  }
  if (listener_ >= 0) {
    ::close(listener_);
  }
}

std::string CannedHttpServer::host() const {
  return "127.0.0.1:" + std::to_string(port_);
}

void CannedHttpServer::route(const std::string& path, std::string response) {
  const std::scoped_lock lock(mu_);
  routes_[path] = std::move(response);
}

std::vector<std::string> CannedHttpServer::requests() const {
  const std::scoped_lock lock(mu_);
  return requests_;
}

void CannedHttpServer::serve() {
  while (!stopping_) {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      return;
    }
    // A client that connects and sends nothing does not hold the server.
    const timeval wait{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    std::string request;
    std::array<char, 4096> buffer{};
    bool http = true;
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
      const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
      if (n <= 0) {
        break;
      }
      request.append(buffer.data(), static_cast<std::size_t>(n));
      if (request.front() < 'A' || request.front() > 'Z') {
        http = false;
        break;
      }
    }
    if (http && request.find("\r\n\r\n") != std::string::npos) {
      // "GET /v2/x?y HTTP/1.1": the path is between the spaces, before '?'.
      const std::size_t start = request.find(' ') + 1;
      const std::string path = request.substr(start, request.find_first_of(" ?\r", start) - start);
      std::string response;
      {
        const std::scoped_lock lock(mu_);
        requests_.push_back(request.substr(0, request.find("\r\n\r\n")));
        const auto routed = routes_.find(path);
        response = routed != routes_.end() ? routed->second : response_;
      }
      std::size_t sent = 0;
      while (sent < response.size()) {
        const ssize_t n = ::send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
          break;
        }
        sent += static_cast<std::size_t>(n);
      }
      ::shutdown(fd, SHUT_WR);
    }
    ::close(fd);
  }
}

} // namespace captf::contract::testing
