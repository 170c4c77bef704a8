#pragma once

// The HTTPS server of the validating webhooks (spec/captf-core.md §1.3, §10):
// its own port (:9443), one path per kind (registrations.h), AdmissionReview
// v1 in and out with the request UID echoed, HTTP/1.1 keep-alive, a body
// limit (413 beyond) and a per-request deadline well under the webhook's
// timeoutSeconds. The serving certificate and key are files (the
// cert-manager Secret mounted into the pod); they are re-read when they
// change and new connections use the new pair while open ones finish with
// the old one, so a rotation drops nothing.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
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
};

struct ServerOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 9443; // 0: pick a free port (tests)
  std::string cert_dir = "/tmp/k8s-webhook-server/serving-certs/";
  std::string cert_name = "tls.crt";
  std::string key_name = "tls.key";
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
  // Threads running AdmissionHandler::handle (it may block on the API
  // server for lookups and SubjectAccessReviews).
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
  // The context for new connections (an opaque boost::asio::ssl::context);
  // null before the first successful reload().
  [[nodiscard]] std::shared_ptr<void> current() const;
  [[nodiscard]] int generation() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class WebhookServer {
public:
  // `handler` must outlive the server and be safe to call from several
  // threads (AdmissionHandler is).
  WebhookServer(ServerOptions options, const AdmissionHandler& handler,
                std::shared_ptr<spdlog::logger> logger);
  ~WebhookServer();
  WebhookServer(const WebhookServer&) = delete;
  WebhookServer& operator=(const WebhookServer&) = delete;

  // Loads the certificate (an error when it cannot), binds and starts the
  // I/O, handler and reload threads.
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

  // Answers one request (exposed for tests): the HTTP status and body.
  struct Reply {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
  };
  [[nodiscard]] Reply serve(std::string_view method, std::string_view target,
                            std::string_view body) const;

  // Opaque; public only so that the connection sessions in server.cc can
  // name it.
  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace captf::webhooks
