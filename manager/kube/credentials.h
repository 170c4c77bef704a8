#pragma once

// Credentials for each request: a bearer token and/or a client certificate.
// Sources that rotate (token files, exec plugins) are re-read here so the
// REST client always asks for the current value.

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/clock.h"
#include "manager/kube/config.h"

namespace captf::kube {

struct Credentials {
  std::string bearer_token;    // empty: no Authorization header
  std::string client_cert_pem; // empty: no client certificate
  std::string client_key_pem;
  bool operator==(const Credentials&) const = default;
};

// Thread-safe.
class CredentialSource {
public:
  virtual ~CredentialSource() = default;
  // The credentials to use now. Errors (an unreadable token file, a failing
  // plugin) fail the request that asked.
  virtual absl::StatusOr<Credentials> current() = 0;
  // The API server answered 401 to `used`: forget cached values so the next
  // current() fetches fresh ones. Returns true when that may help (a retry is
  // worthwhile), false for static credentials.
  virtual bool invalidate(const Credentials& used) = 0;
};

class StaticCredentials final : public CredentialSource {
public:
  explicit StaticCredentials(Credentials credentials) : credentials_(std::move(credentials)) {}
  absl::StatusOr<Credentials> current() override { return credentials_; }
  bool invalidate(const Credentials&) override { return false; }

private:
  Credentials credentials_;
};

// A bearer token in a file (projected service-account tokens rotate every
// hour or so): re-read when older than `refresh` or after a 401. Client
// certificates from the config are passed along unchanged.
class TokenFileCredentials final : public CredentialSource {
public:
  TokenFileCredentials(std::string path, Credentials base, Clock& clock,
                       Duration refresh = std::chrono::minutes(1));
  absl::StatusOr<Credentials> current() override;
  bool invalidate(const Credentials& used) override;

private:
  const std::string path_;
  const Credentials base_;
  Clock& clock_;
  const Duration refresh_;
  std::mutex mu_;
  std::optional<Credentials> cached_;
  SteadyTime read_at_{};
};

// A client.authentication.k8s.io exec plugin. Runs the command (never
// interactively: a controller has no terminal), caches the ExecCredential
// until its expirationTimestamp, and runs it again after a 401.
class ExecCredentials final : public CredentialSource {
public:
  ExecCredentials(ExecConfig exec, std::string server, std::string ca_pem, Clock& clock,
                  std::shared_ptr<spdlog::logger> logger,
                  Duration timeout = std::chrono::seconds(60));
  absl::StatusOr<Credentials> current() override;
  bool invalidate(const Credentials& used) override;

  // Parses the plugin's standard output (exposed for tests).
  static absl::StatusOr<std::pair<Credentials, std::optional<WallTime>>>
  parseExecCredential(const std::string& output, const std::string& expected_api_version);

private:
  absl::StatusOr<std::string> runPlugin();

  const ExecConfig exec_;
  const std::string server_;
  const std::string ca_pem_;
  Clock& clock_;
  std::shared_ptr<spdlog::logger> logger_;
  const Duration timeout_;
  std::mutex mu_;
  std::optional<Credentials> cached_;
  std::optional<WallTime> expiry_;
};

// Chooses the source for a RestConfig: exec plugin, token file, or static.
std::unique_ptr<CredentialSource> makeCredentialSource(const RestConfig& config, Clock& clock,
                                                       std::shared_ptr<spdlog::logger> logger);

} // namespace captf::kube
