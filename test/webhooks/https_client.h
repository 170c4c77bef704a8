#pragma once

// A blocking HTTPS/1.1 client with one keep-alive connection, verifying the
// server against a given CA: the webhook tests' stand-in for the API
// server's admission client.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace captf::webhooks::testing {

struct HttpsReply {
  int status = 0;
  std::string body;
  bool keep_alive = false;
};

class HttpsClient {
public:
  // `max_tls12`: offer at most TLS 1.2 (to test --tls-min-version). An
  // empty `ca_pem` accepts any server certificate (as a ServiceMonitor with
  // insecureSkipVerify does).
  HttpsClient(std::string host, int port, std::string ca_pem, bool max_tls12 = false);
  ~HttpsClient();
  HttpsClient(const HttpsClient&) = delete;
  HttpsClient& operator=(const HttpsClient&) = delete;

  // Offers only the TLS key exchange groups `list` (OpenSSL names, e.g.
  // "X25519:P-384") from the next connection on.
  void offerGroups(const std::string& list);
  // Connects (handshake) unless connected.
  absl::Status connect();
  // Sends one request on the current connection, connecting first when
  // needed.
  absl::StatusOr<HttpsReply> post(const std::string& target, const std::string& body);
  absl::StatusOr<HttpsReply> get(const std::string& target);
  absl::StatusOr<HttpsReply> put(const std::string& target, const std::string& body);
  // Sends `Authorization: Bearer <token>` from now on (empty: none).
  void setBearerToken(std::string token);
  // Whether the certificate the server presented is self-signed (it names
  // itself as its issuer and its own key verifies its signature).
  bool peerSelfSigned() const;
  // The serial number of the certificate the server presented.
  long peerSerial() const;
  void close();

private:
  absl::StatusOr<HttpsReply> send(const std::string& method, const std::string& target,
                                  const std::string& body);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An AdmissionReview of `kind` (CREATE of `object`) with request uid `uid`.
std::string admissionReview(const std::string& uid, const std::string& kind,
                            const std::string& object_json);

// One request over a plain TCP socket to 127.0.0.1:port (no HTTP client
// code in the way), the write side shut after it: the whole response as
// received until the server closes; "" when no connection was made.
std::string plainExchange(uint16_t port, const std::string& request);

} // namespace captf::webhooks::testing
