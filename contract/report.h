#pragma once

// The run reports' handshake (docs/decisions/run-reports.md): how a runner
// proves which run it reports for. The manager writes a random token into
// the run's per-run Secret and only the token's hash onto the Job; the
// runner sends the token and its Job's name with every Report call.

#include <string>
#include <string_view>

namespace captf::contract {

// Keys of the per-run Secret (files under the runner's --config directory).
inline constexpr std::string_view kReportTokenKey = "report-token";
inline constexpr std::string_view kReportCaKey = "report-ca.crt";

// Call metadata: `authorization: Bearer <token>` and this one, naming the
// Job as <namespace>/<name>.
inline constexpr std::string_view kReportJobHeader = "x-captf-job";

// A fresh token: 32 random bytes (OpenSSL's CSPRNG), lower-case hex.
std::string newReportToken();

// What the Job's annotation holds: "sha256:<hex of the token>".
std::string reportTokenHash(std::string_view token);

// Whether `token` hashes to `hash`, compared in constant time.
bool reportTokenMatches(std::string_view token, std::string_view hash);

} // namespace captf::contract
