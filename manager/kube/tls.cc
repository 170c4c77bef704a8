#include "manager/kube/tls.h"

#include <array>
#include <map>

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace captf::kube {
namespace {

int protoVersion(TlsVersion v) {
  switch (v) {
  case TlsVersion::kTls10:
    return TLS1_VERSION;
  case TlsVersion::kTls11:
    return TLS1_1_VERSION;
  case TlsVersion::kTls12:
    return TLS1_2_VERSION;
  case TlsVersion::kTls13:
    return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

// Restricts the TLS 1.2 suites to `names` (IANA or Go names). TLS 1.3
// suites are not configurable, as in Go's crypto/tls.
absl::Status setCipherSuites(SSL_CTX* ctx, const std::vector<std::string>& names) {
  if (names.empty()) {
    return absl::OkStatus();
  }
  STACK_OF(SSL_CIPHER)* all = SSL_CTX_get_ciphers(ctx);
  std::string list;
  for (const std::string& want : names) {
    if (want.starts_with("TLS_AES_") || want.starts_with("TLS_CHACHA20_")) {
      continue; // a TLS 1.3 suite: always on
    }
    bool found = false;
    for (int i = 0; i < sk_SSL_CIPHER_num(all); ++i) {
      const SSL_CIPHER* c = sk_SSL_CIPHER_value(all, i);
      const std::string standard = SSL_CIPHER_standard_name(c);
      // Go names the ChaCha20 suites without the _SHA256 suffix.
      if (standard == want || standard == want + "_SHA256") {
        if (!list.empty()) {
          list += ':';
        }
        list += SSL_CIPHER_get_name(c);
        found = true;
        break;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(fmt::format("unsupported TLS cipher suite {}", want));
    }
  }
  if (!list.empty() && SSL_CTX_set_cipher_list(ctx, list.c_str()) != 1) {
    return absl::InvalidArgumentError(
        fmt::format("cannot set the TLS cipher suites: {}", openSslError()));
  }
  return absl::OkStatus();
}

// Restricts the key exchange groups to `ids` (Go's tls.CurveID numbers,
// as --tls-curve-preferences takes them), in that order of preference.
absl::Status setCurvePreferences(SSL_CTX* ctx, const std::vector<int>& ids) {
  if (ids.empty()) {
    return absl::OkStatus();
  }
  static const std::map<int, std::string_view> kGroups = {
      {23, "P-256"}, {24, "P-384"}, {25, "P-521"}, {29, "X25519"}, {4588, "X25519MLKEM768"}};
  std::string list;
  for (int id : ids) {
    auto group = kGroups.find(id);
    if (group == kGroups.end()) {
      return absl::InvalidArgumentError(fmt::format(
          "unsupported TLS curve ID {} (Go's tls.CurveID: 23 P-256, 24 P-384, 25 P-521, "
          "29 X25519, 4588 X25519MLKEM768)",
          id));
    }
    if (!list.empty()) {
      list += ':';
    }
    list += group->second;
  }
  if (SSL_CTX_set1_groups_list(ctx, list.c_str()) != 1) {
    return absl::InvalidArgumentError(
        fmt::format("cannot use the TLS curves {}: {}", list, openSslError()));
  }
  return absl::OkStatus();
}

} // namespace

std::string openSslError() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    std::array<char, 256> buf{};
    ERR_error_string_n(e, buf.data(), buf.size());
    if (!out.empty()) {
      out += "; ";
    }
    out += buf.data();
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

absl::StatusOr<TlsVersion> parseTlsVersion(std::string_view name) {
  if (name == "VersionTLS10") {
    return TlsVersion::kTls10;
  }
  if (name == "VersionTLS11") {
    return TlsVersion::kTls11;
  }
  if (name == "VersionTLS12" || name.empty()) {
    return TlsVersion::kTls12;
  }
  if (name == "VersionTLS13") {
    return TlsVersion::kTls13;
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown TLS version {}: want VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13",
      name));
}

absl::Status applyTlsSettings(SSL_CTX* ctx, const TlsSettings& tls) {
  SSL_CTX_set_min_proto_version(ctx, protoVersion(tls.min_version));
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                               SSL_OP_NO_COMPRESSION);
  if (absl::Status s = setCipherSuites(ctx, tls.cipher_suites); !s.ok()) {
    return s;
  }
  return setCurvePreferences(ctx, tls.curve_preferences);
}

} // namespace captf::kube
