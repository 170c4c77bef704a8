#pragma once

// The HTTPS server of the validating webhooks (spec/captf-core.md §1.3, §10):
// its own port (:9443), one path per kind (registrations.h), AdmissionReview
// v1 in and out with the request UID echoed, HTTP/1.1 keep-alive, a body
// limit (413 beyond) and a per-request deadline well under the webhook's
// timeoutSeconds. The serving certificate and key are files (the
// cert-manager Secret mounted into the pod); they are re-read when they
// change and new connections use the new pair while open ones finish with
// the old one, so a rotation drops nothing.
//
// The transport (TLS, reload, keep-alive, limits, deadlines) is HttpsServer,
// which serves any route table given as an HttpHandler; WebhookServer is
// HttpsServer with the admission routes. The manager's secure diagnostics
// endpoint (manager/diagnostics) is the other user.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/logger.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "webhooks/admission.h"

namespace captf::webhooks {

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };

// Parses Go's names as --tls-min-version takes them ("VersionTLS12").
[[nodiscard]] absl::StatusOr<TlsVersion> parseTlsVersion(std::string_view name);

struct TlsSettings {
  TlsVersion min_version = TlsVersion::kTls12;
  // IANA / Go names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...); empty:
  // OpenSSL's defaults.
  std::vector<std::string> cipher_suites;
  // Go tls.CurveID numbers, most preferred first (23 P-256, 24 P-384,
  // 25 P-521, 29 X25519, 4588 X25519MLKEM768); empty: OpenSSL's defaults.
  std::vector<int> curve_preferences;
};

// What start() does when neither certificate file exists.
enum class MissingCertificate {
  kFail,       // an error (the webhooks: the API server must trust the pair)
  kSelfSigned, // serve a self-signed pair generated in memory, never reloaded
};

struct ServerOptions {
  // Names the server in logs and errors ("webhook", "diagnostics").
  std::string name = "webhook";
  std::string address = "0.0.0.0";
  uint16_t port = 9443; // 0: pick a free port (tests)
  std::string cert_dir = "/tmp/k8s-webhook-server/serving-certs/";
  std::string cert_name = "tls.crt";
  std::string key_name = "tls.key";
  MissingCertificate missing_certificate = MissingCertificate::kFail;
  TlsSettings tls;
  std::size_t max_body_bytes = 3U * 1024U * 1024U;
  // From the first byte of a request to the last of its answer; the
  // configuration's timeoutSeconds is 10.
  std::chrono::milliseconds request_timeout{8000};
  // An idle keep-alive connection is closed after this long.
  std::chrono::milliseconds idle_timeout{90000};
  // How often the certificate files are checked for a change.
  std::chrono::milliseconds reload_interval{1000};
  int io_threads = 2;
  // Threads running the handler (it may block on the API server for
  // lookups and access reviews).
  int handler_threads = 8;
};

// Builds SSL contexts from the certificate files and notices rotations.
// Thread-safe.
class CertificateReloader {
public:
  CertificateReloader(std::string cert_file, std::string key_file, TlsSettings tls,
                      std::shared_ptr<spdlog::logger> logger);
  ~CertificateReloader();
  CertificateReloader(const CertificateReloader&) = delete;
  CertificateReloader& operator=(const CertificateReloader&) = delete;

  // Re-reads both files; when their content changed and forms a valid
  // pair, the next current() returns a context with it. On error the
  // previous context stays. Returns whether a new pair was loaded.
  absl::StatusOr<bool> reload();
  // Serves `cert_pem`/`key_pem` (e.g. a generated self-signed pair) until a
  // reload() loads the files.
  absl::Status install(const std::string& cert_pem, const std::string& key_pem);
  // The context for new connections (an opaque boost::asio::ssl::context);
  // null before the first successful reload().
  [[nodiscard]] std::shared_ptr<void> current() const;
  [[nodiscard]] int generation() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A PEM certificate and its private key.
struct PemPair {
  std::string cert_pem;
  std::string key_pem;
};

// A self-signed serving pair (EC P-256, one year) for `host`, also valid for
// localhost and 127.0.0.1.
[[nodiscard]] absl::StatusOr<PemPair> selfSignedPair(std::string_view host);

// One HTTP request as a handler sees it (views valid during the call).
struct HttpRequest {
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
using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

// Whether the handler may block (call the API server) for a request to
// `target`. Such requests run on the handler threads; the others run on the
// connection's I/O thread, saving two thread hand-offs (each a wake-up the
// scheduler may delay). Null: every request may block.
using MayBlock = std::function<bool(std::string_view target)>;

class HttpsServer {
public:
  HttpsServer(ServerOptions options, HttpHandler handler, std::shared_ptr<spdlog::logger> logger,
              MayBlock may_block = nullptr);
  ~HttpsServer();
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;

  // Loads the certificate (an error when it cannot; a self-signed pair when
  // neither file exists and options.missing_certificate says so), binds
  // and starts the I/O, handler and reload threads.
  absl::Status start();
  // Stops accepting, closes connections and joins every thread. Idempotent.
  void stop();
  // The bound port, after start().
  [[nodiscard]] uint16_t port() const;
  // The readiness check (kube::HealthCheck shape): OK while serving with a
  // loaded certificate.
  [[nodiscard]] absl::Status ready() const;
  // How many certificate pairs were loaded (1 after start()).
  [[nodiscard]] int certificateGeneration() const;
  // Whether start() fell back to a generated self-signed pair.
  [[nodiscard]] bool selfSigned() const;

  // Opaque; public only so that the connection sessions in server.cc can
  // name it.
  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

class WebhookServer {
public:
  // `handler` must outlive the server and be safe to call from several
  // threads (AdmissionHandler is).
  WebhookServer(ServerOptions options, const AdmissionHandler& handler,
                std::shared_ptr<spdlog::logger> logger);

  absl::Status start() { return server_.start(); }
  void stop() { server_.stop(); }
  [[nodiscard]] uint16_t port() const { return server_.port(); }
  [[nodiscard]] absl::Status ready() const { return server_.ready(); }
  [[nodiscard]] int certificateGeneration() const { return server_.certificateGeneration(); }

  // Answers one request (exposed for tests): the HTTP status and body.
  using Reply = HttpReply;
  [[nodiscard]] Reply serve(std::string_view method, std::string_view target,
                            std::string_view body) const;

private:
  const AdmissionHandler& handler_;
  HttpsServer server_;
};

} // namespace captf::webhooks
