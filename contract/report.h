#pragma once

// The run reports' handshake (docs/decisions/run-reports.md): how a runner
// proves which run it reports for. The manager writes a random token into
// the run's per-run Secret and only the token's hash onto the Job; the
// runner sends the token and its Job's name with every Report call.

#include <cstddef>
#include <string>
#include <string_view>

namespace captf::contract {

// Keys of the per-run Secret (files under the runner's --config directory).
inline constexpr std::string_view kReportTokenKey = "report-token";
inline constexpr std::string_view kReportCaKey = "report-ca.crt";

// Call metadata: `authorization: Bearer <token>` and this one, naming the
// Job as <namespace>/<name>.
inline constexpr std::string_view kReportJobHeader = "x-captf-job";

// Bounds of one Report call: the manager ends a call that breaks one with
// RESOURCE_EXHAUSTED, and the runner never sends one that would. A runner
// sends at most kMaxReportEventsPerCall events per call, no message over
// kMaxReportMessageBytes (it clips log lines to kMaxReportLineBytes and
// drops anything else that large) and stops a call's batch before
// kMaxReportCallBytes (docs/decisions/run-reports.md).
inline constexpr std::size_t kMaxReportEventsPerCall = 128;
inline constexpr std::size_t kMaxReportMessageBytes = std::size_t{64} * 1024;
inline constexpr std::size_t kMaxReportCallBytes = std::size_t{1024} * 1024;
inline constexpr std::size_t kMaxReportLineBytes = std::size_t{4} * 1024;

// A fresh token: 32 random bytes (OpenSSL's CSPRNG), lower-case hex.
std::string newReportToken();

// What the Job's annotation holds: "sha256:<hex of the token>".
std::string reportTokenHash(std::string_view token);

// Whether `token` hashes to `hash`, compared in constant time.
bool reportTokenMatches(std::string_view token, std::string_view hash);

} // namespace captf::contract
