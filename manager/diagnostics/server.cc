#include "manager/diagnostics/server.h"

#include <cctype>
#include <charconv>
#include <cstddef>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "absl/status/status.h"

namespace captf::diagnostics {
namespace {

constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kTextContentType[] = "text/plain; charset=utf-8";

kube::HttpReply text(int status, std::string body) {
  return {status, kTextContentType, std::move(body) + "\n"};
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) {
    s.remove_suffix(1);
  }
  return s;
}

} // namespace

kube::ServerOptions serverOptions() {
  kube::ServerOptions options;
  options.name = "diagnostics";
  options.port = 8443;
  options.cert_dir = kMetricsCertDir;
  options.missing_certificate = kube::MissingCertificate::kSelfSigned;
  options.max_body_bytes = static_cast<std::size_t>(64U * 1024U);
  // Two API calls on a cold cache (each bounded by the client's timeout)
  // and a registry render.
  options.request_timeout = std::chrono::seconds(30);
  options.handler_threads = 2;
  options.io_threads = 1;
  // Prometheus and a person or two: a TLS connection waiting for its
  // request holds about 80 KiB, so the webhook's 1,024 would be 80 MiB here
  // (docs/decisions/webhooks-server.md#bounds).
  options.max_connections = 64;
  return options;
}

spdlog::level::level_enum levelForVerbosity(int verbosity) {
  return verbosity >= 5   ? spdlog::level::trace
         : verbosity >= 3 ? spdlog::level::debug
                          : spdlog::level::info;
}

absl::Status parseAddress(std::string_view address, kube::ServerOptions& options) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    return absl::InvalidArgumentError(
        fmt::format("invalid address \"{}\": want host:port or :port", address));
  }
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string_view port_text = address.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return absl::InvalidArgumentError(fmt::format("invalid port in address \"{}\"", address));
  }
  options.address = host.empty() ? "0.0.0.0" : std::string(host);
  options.port = static_cast<uint16_t>(port);
  return absl::OkStatus();
}

DiagnosticsHandler::DiagnosticsHandler(const kube::MetricsRegistry& metrics, DelegatingAuth& auth,
                                       std::shared_ptr<spdlog::logger> logger)
    : metrics_(metrics), auth_(auth), logger_(std::move(logger)) {}

kube::HttpReply DiagnosticsHandler::serve(const kube::IncomingRequest& request) const {
  const std::string_view path = request.target.substr(0, request.target.find('?'));
  // Kubernetes names a non-resource verb by the lowercased method.
  const std::string verb = lower(request.method);
  // Every path is authorized, known or not, as behind controller-runtime's
  // filter: an anonymous caller learns nothing about the routes.
  const AuthResult auth = auth_.check(request.authorization, path, verb);
  switch (auth.verdict) {
  case Verdict::kAllowed:
    break;
  case Verdict::kUnauthenticated:
    logger_->debug("diagnostics request unauthenticated path={} verb={} reason=\"{}\"", path, verb,
                   auth.reason);
    return text(401, "Unauthorized");
  case Verdict::kAuthnError:
    logger_->warn("diagnostics request not authenticated path={} verb={} error=\"{}\"", path, verb,
                  auth.reason);
    return text(401, "Unauthorized");
  case Verdict::kForbidden:
    logger_->debug("diagnostics request forbidden path={} verb={} user={} reason=\"{}\"", path,
                   verb, auth.username, auth.reason);
    return text(403,
                fmt::format("Forbidden: user \"{}\" may not {} {}", auth.username, verb, path));
  case Verdict::kError:
    logger_->warn("diagnostics request not authorized path={} verb={} user={} error=\"{}\"", path,
                  verb, auth.username, auth.reason);
    return text(500, "Internal Server Error: the authorization check failed");
  }
  return route(request.method, path, request.body);
}

kube::HttpReply DiagnosticsHandler::route(std::string_view method, std::string_view path,
                                          std::string_view body) const {
  if (path == "/metrics") {
    if (method != "GET") {
      return text(405, "Method Not Allowed: GET /metrics");
    }
    return {200, kMetricsContentType, metrics_.render()};
  }
  if (path == "/debug/flags/v") {
    if (method != "PUT") {
      return text(405, "Method Not Allowed: PUT /debug/flags/v with the level as the body");
    }
    const std::string_view value = trim(body);
    int level = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), level);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || level < 0) {
      return text(400, fmt::format("invalid verbosity \"{}\": want a level >= 0", value));
    }
    logger_->set_level(levelForVerbosity(level));
    logger_->info("log verbosity changed v={}", level);
    return text(200, fmt::format("successfully set the log verbosity to {}", level));
  }
  if (path == "/debug/pprof" || path.starts_with("/debug/pprof/")) {
    return text(404, "Not Found: the manager is a C++ program and has no Go pprof profiles "
                     "(docs/decisions/manager-binary.md)");
  }
  return text(404, fmt::format("Not Found: {}", path));
}

SecureDiagnosticsServer::SecureDiagnosticsServer(kube::ServerOptions options,
                                                 const kube::MetricsRegistry& metrics,
                                                 kube::RestClient& rest, kube::Clock& clock,
                                                 const std::shared_ptr<spdlog::logger>& logger,
                                                 AuthCacheOptions cache)
    : tokens_(rest), access_(rest), auth_(tokens_, access_, clock, cache),
      handler_(metrics, auth_, logger),
      server_(
          std::move(options),
          [this](const kube::IncomingRequest& request) { return handler_.serve(request); },
          logger) {}

} // namespace captf::diagnostics
