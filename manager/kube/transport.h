#pragma once

// HTTP/1.1 over TLS to one API server, with connection reuse. The seam below
// the REST client: unit tests replace HttpTransport with a fake.

#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/kube/clock.h"

namespace captf::kube {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";
  std::string target; // path and query string, already escaped
  Headers headers;    // Host and Content-Length are set by the transport
  std::string body;
  // Deadline of the whole exchange (for open(): of the whole stream).
  Duration timeout = std::chrono::seconds(30);
};

struct HttpResponse {
  int status = 0;
  Headers headers;
  std::string body;
  // The first header named `name` (case-insensitive), or "".
  std::string header(std::string_view name) const;
};

// A response whose body is read as it arrives (watches). Not thread-safe;
// one reader at a time.
class BodyStream {
public:
  virtual ~BodyStream() = default;
  virtual int status() const = 0;
  virtual std::string header(std::string_view name) const = 0;
  // Blocks for the next piece of the body. Returns "" at the end of the
  // body, Cancelled after the stop token fired, DeadlineExceeded after the
  // request's timeout, Unavailable when the connection broke.
  virtual absl::StatusOr<std::string> read() = 0;
};

// Thread-safe: any number of threads may send requests concurrently (each
// uses its own connection).
class HttpTransport {
public:
  virtual ~HttpTransport() = default;
  // Sends the request and reads the whole response. Transport failures are
  // Unavailable (or DeadlineExceeded); any HTTP status is a response.
  virtual absl::StatusOr<HttpResponse> roundTrip(const HttpRequest& request) = 0;
  // Sends the request and returns once the response headers arrived.
  virtual absl::StatusOr<std::unique_ptr<BodyStream>> open(const HttpRequest& request,
                                                           std::stop_token stop) = 0;
  // Replaces the client certificate (rotated exec credentials). Pooled
  // connections made with the old one are dropped.
  virtual absl::Status setClientCertificate(const std::string& cert_pem,
                                            const std::string& key_pem) = 0;
};

struct TlsOptions {
  std::string ca_pem; // empty: system trust store
  bool insecure_skip_verify = false;
  std::string server_name; // for SNI and verification; default the host
  std::string client_cert_pem;
  std::string client_key_pem;
};

struct TransportOptions {
  size_t max_idle_connections = 32;
  // A kept-alive connection idle this long is closed instead of reused:
  // below the idle timeouts of the load balancers and NAT gateways between
  // a manager and its API server (60 s and up), which drop a flow without
  // telling either end (docs/decisions/kube-client.md, "Idle connections").
  Duration idle_timeout = std::chrono::seconds(30);
  // Largest response body read whole (lists should paginate below it).
  uint64_t max_body_bytes = 1ULL << 30;
};

// An HTTPS transport to host:port over Boost.Beast and OpenSSL.
absl::StatusOr<std::unique_ptr<HttpTransport>>
makeHttpsTransport(std::string host, std::string port, const TlsOptions& tls,
                   const TransportOptions& options = {});

} // namespace captf::kube
