#pragma once

// Servers on 127.0.0.1, port 0, for the tests of outbound calls whose far
// end a tenant chooses (Git remotes, image registries and their token
// realms): a tarpit that accepts and never answers, and an HTTP server with
// one canned answer. Library target: captf_net_testing.

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace captf::contract::testing {

// Accepts every connection and never writes to it (beyond what `greet`
// does with the new connection's descriptor, e.g. a TLS handshake). The
// connections stay open until release() or the destructor.
class Tarpit {
public:
  using Greet = std::function<void(int fd)>;
  explicit Tarpit(Greet greet = {});
  Tarpit(const Tarpit&) = delete;
  Tarpit& operator=(const Tarpit&) = delete;
  ~Tarpit();

  int port() const { return port_; }
  // Connections accepted so far.
  int accepted() const;
  // Closes every connection held: a client still waiting on one sees the
  // end of the stream (a test that failed can still end).
  void release();

private:
  void serve();

  Greet greet_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::vector<int> held_;
  int accepted_ = 0;
  std::jthread thread_;
};

// An HTTP/1.1 answer as sent: status line, the headers plus Content-Length
// and Connection: close, the body.
std::string httpResponse(int status, std::string_view reason,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         std::string_view body);

// Answers every HTTP request with `response` (or with what route() set for
// its path) and closes the connection. A connection whose first byte is
// not an upper-case letter (a TLS ClientHello, say) is closed at once.
class CannedHttpServer {
public:
  explicit CannedHttpServer(std::string response);
  CannedHttpServer(const CannedHttpServer&) = delete;
  CannedHttpServer& operator=(const CannedHttpServer&) = delete;
  ~CannedHttpServer();

  // Requests for exactly `path` (the target without its query) get
  // `response` instead.
  void route(const std::string& path, std::string response);

  int port() const { return port_; }
  // "127.0.0.1:PORT"
  std::string host() const;
  // The HTTP requests answered so far (request line and headers).
  std::vector<std::string> requests() const;

private:
  void serve();

  std::string response_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::map<std::string, std::string> routes_;
  std::vector<std::string> requests_;
  std::jthread thread_;
};

} // namespace captf::contract::testing
