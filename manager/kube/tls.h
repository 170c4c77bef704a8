#pragma once

// The TLS policy of the servers in this process (the webhooks, the secure
// diagnostics endpoint): the minimum protocol version and the cipher suites
// and curves by the names Kubernetes components take them in
// --tls-min-version, --tls-cipher-suites and --tls-curve-preferences (Go's
// crypto/tls names and tls.CurveID numbers), mapped to OpenSSL
// (docs/decisions/webhooks-server.md).

#include <string>
#include <string_view>
#include <vector>

#include <openssl/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace captf::kube {

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };

// Parses Go's names as --tls-min-version takes them ("VersionTLS12"); empty
// is VersionTLS12.
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

// Applies `tls` to a server context: the minimum version, no renegotiation
// or compression, the server's cipher order, and the suites and curves.
// InvalidArgument naming an unknown suite or curve.
[[nodiscard]] absl::Status applyTlsSettings(SSL_CTX* ctx, const TlsSettings& tls);

// Drains OpenSSL's error queue of this thread into one message.
[[nodiscard]] std::string openSslError();

} // namespace captf::kube
