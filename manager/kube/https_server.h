#pragma once

// The HTTP/1.1 server of this process, the role controller-runtime's
// webhook and metrics servers play: HTTPS with the certificate pair read
// from files and re-read when it changes (new connections use the new pair
// while open ones finish with the old one, so a rotation drops nothing), or
// a self-signed pair generated at start; or plain HTTP for the probes.
// Keep-alive, a body limit (413 beyond), a per-request deadline, an idle
// timeout, a handshake-and-header timeout, a cap on open connections, and a
// pool for handlers that block (docs/decisions/webhooks-server.md).
//
// It serves any route table given as an HttpHandler. Its users: the
// validating webhooks (webhooks::WebhookServer), the secure diagnostics
// endpoint (manager/diagnostics) and the plain probes and metrics server
// (kube::DiagnosticsServer).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/logger.h>

#include "absl/status/status.h"
#include "manager/kube/tls.h"

namespace captf::kube {

// What start() does when neither certificate file exists.
enum class MissingCertificate {
  kFail,       // an error (the webhooks: the API server must trust the pair)
  kSelfSigned, // serve a self-signed pair generated in memory, never reloaded
};

enum class Transport {
  kTls,       // HTTPS with the certificate of cert_dir
  kPlaintext, // HTTP; the certificate and TLS options are not used
};

struct ServerOptions {
  // Names the server in logs and errors ("webhook", "diagnostics").
  std::string name = "webhook";
  Transport transport = Transport::kTls;
  // An IP address; empty: every interface, IPv6 and IPv4 (a dual-stack
  // socket).
  std::string address = "0.0.0.0";
  uint16_t port = 9443; // 0: pick a free port (tests)
  std::string cert_dir = "/tmp/k8s-webhook-server/serving-certs/";
  std::string cert_name = "tls.crt";
  std::string key_name = "tls.key";
  MissingCertificate missing_certificate = MissingCertificate::kFail;
  TlsSettings tls;
  std::size_t max_body_bytes = std::size_t{3} * 1024U * 1024U;
  // From the first byte of a request to the last of its answer; the
  // configuration's timeoutSeconds is 10.
  std::chrono::milliseconds request_timeout{8000};
  // An idle keep-alive connection is closed after this long.
  std::chrono::milliseconds idle_timeout{90000};
  // From accept to the end of the first request's headers (the TLS
  // handshake included), and from the first byte of each later request on a
  // keep-alive connection to the end of its headers; a client that has not
  // sent its headers by then is disconnected (Go's ReadHeaderTimeout).
  std::chrono::milliseconds header_timeout{10000};
  // Open connections at most (at least 1). At the cap a new connection
  // closes the oldest one that has not sent a complete request, else the
  // oldest waiting between requests, else it is closed itself: a connection
  // in a request is never closed for another (docs/decisions/webhooks-server.md#bounds).
  std::size_t max_connections = 1024;
  // How often the certificate files are checked for a change.
  std::chrono::milliseconds reload_interval{1000};
  int io_threads = 2;
  // Threads running the handler (it may block on the API server for
  // lookups and access reviews).
  int handler_threads = 8;
  // Header fields added to every response (e.g. Cache-Control: no-store).
  std::vector<std::pair<std::string, std::string>> response_headers;
};

// One HTTP request as a handler sees it (views valid during the call). Not
// kube::HttpRequest (transport.h), which is a request the client sends.
struct IncomingRequest {
  std::string_view method;
  std::string_view target;        // path and query
  std::string_view authorization; // the Authorization header; empty if absent
  std::string_view body;
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// Answers one request. It must be safe to call concurrently.
using HttpHandler = std::function<HttpReply(const IncomingRequest&)>;

// Whether the handler may block (call the API server) for a request to
// `target`. Such requests run on the handler threads; the others run on the
// connection's I/O thread, saving two thread hand-offs (each a wake-up the
// scheduler may delay). Null: every request may block.
using MayBlock = std::function<bool(std::string_view target)>;

// A metav1.Status failure document (apiVersion v1, kind Status), as the
// API server writes errors: the body of the 413 and of routing errors.
[[nodiscard]] std::string failureStatusJson(int code, std::string_view reason,
                                            std::string_view message);

class HttpsServer {
public:
  HttpsServer(ServerOptions options, HttpHandler handler, std::shared_ptr<spdlog::logger> logger,
              MayBlock may_block = nullptr);
  ~HttpsServer();
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;

  // Over TLS, loads the certificate (an error when it cannot; a self-signed
  // pair when neither file exists and options.missing_certificate says so);
  // binds and starts the I/O, handler and (TLS) reload threads.
  absl::Status start();
  // Stops accepting, closes connections and joins every thread. Idempotent.
  void stop();
  // The bound port, after start().
  [[nodiscard]] uint16_t port() const;
  // Connections counted against options.max_connections now.
  [[nodiscard]] std::size_t openConnections() const;
  // The readiness check (kube::HealthCheck shape): OK while serving with a
  // loaded certificate (plain HTTP: while serving).
  [[nodiscard]] absl::Status ready() const;
  // How many certificate pairs were loaded (1 after start() over TLS; 0 in
  // plain HTTP).
  [[nodiscard]] int certificateGeneration() const;
  // Whether start() fell back to a generated self-signed pair.
  [[nodiscard]] bool selfSigned() const;

  // Opaque; public only so that the connection sessions in https_server.cc
  // can name it.
  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace captf::kube
