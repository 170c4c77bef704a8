#pragma once

// A throwaway CA and serving certificates signed by it (OpenSSL, EC P-256),
// for the webhook server tests.

#include <string>
#include <vector>

namespace captf::webhooks::testing {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

// A self-signed CA named `common_name`.
KeyPair makeCa(const std::string& common_name);

// A serving certificate for `dns_names` and IP 127.0.0.1, signed by `ca`,
// with serial `serial` (so tests can tell rotated certificates apart).
KeyPair makeServingCert(const KeyPair& ca, const std::vector<std::string>& dns_names, long serial);

// Writes `pair` as DIR/tls.crt and DIR/tls.key, atomically (rename), as the
// kubelet's atomic writer does for a mounted Secret.
void writePair(const std::string& dir, const KeyPair& pair);

// The serial number of a PEM certificate.
long serialOf(const std::string& cert_pem);

} // namespace captf::webhooks::testing
