#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// A small blocking HTTP/1.1 client over Boost.Beast and OpenSSL, enough for
// the distribution API (docs/decisions/lint-image-registry.md). lint/ may
// depend only on contract/, so it cannot share manager/kube's transport.
// One connection per request; every step (resolve, connect, TLS handshake,
// each write and read) has a deadline, so an unreachable or stalled server
// is an error, never a hang.
namespace captf::lint::oci {

struct Url {
  std::string scheme; // "http" or "https"
  std::string host;   // without brackets for IPv6
  std::string port;   // "443" / "80" when not given
  std::string target; // path and query, "/" at least

  bool defaultPort() const {
    return (scheme == "https" && port == "443") || (scheme == "http" && port == "80");
  }
  // host[:port] as a Host header carries it.
  std::string authority() const;
  std::string str() const;
};

// Parses an absolute http(s) URL.
absl::StatusOr<Url> parseUrl(std::string_view text);

// Resolves `location` (absolute, or absolute-path "/x", or relative) against
// `base`.
absl::StatusOr<Url> resolveUrl(const Url& base, std::string_view location);

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  int status = 0;
  Headers headers;  // as received; names keep their case
  std::string body; // for download(): only a non-2xx answer's body
  std::string url;  // the URL that answered (after redirects)

  // The first value of a header (names compare case-insensitively); "" when absent.
  std::string header(std::string_view name) const;
  // Every value of a header, in order.
  std::vector<std::string> headerValues(std::string_view name) const;
};

struct HttpOptions {
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(15)}; // resolve + connect + TLS
  std::chrono::milliseconds io_timeout{std::chrono::seconds(30)};      // each write or read
  int max_redirects = 5;
};

// Asked before each request of a get() or download(): the URL given and
// every redirect. An error stops it and is the call's result.
using UrlCheck = std::function<absl::Status(const Url&)>;

class HttpClient {
public:
  explicit HttpClient(HttpOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // GET `url`; a 2xx body is returned whole and may be at most `max_body`
  // bytes (other answers keep their first 64 KiB, which callers may read but
  // never quote: docs/decisions/lint-image-registry.md, "Error answers").
  // Redirects are followed (an Authorization header is dropped when the host changes), each
  // passing `check` first when one is given. Any HTTP status is a successful result; transport
  // failures, timeouts and oversize bodies are Unavailable / DeadlineExceeded / ResourceExhausted
  // errors naming the URL.
  absl::StatusOr<HttpResponse> get(std::string_view url, const Headers& headers, uint64_t max_body,
                                   const UrlCheck& check = {});

  // Like get(), but a 2xx body is passed to `sink` in pieces instead of
  // being kept (at most `max_body` bytes; a sink error stops the transfer).
  // Other answers keep up to 64 KiB of body, as get() says.
  absl::StatusOr<HttpResponse> download(std::string_view url, const Headers& headers,
                                        uint64_t max_body,
                                        const std::function<absl::Status(std::string_view)>& sink);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace captf::lint::oci
