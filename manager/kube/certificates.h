#pragma once

// Serving certificates: a pair read from files (a mounted Secret, as
// cert-manager writes it) and re-read when it changes, as controller-
// runtime's certwatcher does, or a self-signed pair generated in memory
// (docs/decisions/webhooks-server.md).

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/logger.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/kube/tls.h"

namespace captf::kube {

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

} // namespace captf::kube
