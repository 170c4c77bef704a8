#include "manager/kube/diagnostics_server.h"

#include <cstddef>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

// Probes and scrapes answer at once; a connection idle this long closes.
constexpr auto kSessionTimeout = std::chrono::seconds(10);
// Probes carry no body.
constexpr std::size_t kMaxBodyBytes = std::size_t{64} * 1024U;

} // namespace

DiagnosticsServer::DiagnosticsServer(std::string address, MetricsRegistry* metrics,
                                     std::shared_ptr<spdlog::logger> logger)
    : address_(std::move(address)), metrics_(metrics), logger_(std::move(logger)) {}

DiagnosticsServer::~DiagnosticsServer() {
  stop();
}

void DiagnosticsServer::addCheck(CheckKind kind, std::string name, HealthCheck check) {
  std::scoped_lock lock(mu_);
  (kind == CheckKind::kHealthz ? healthz_ : readyz_)
      .emplace_back(std::move(name), std::move(check));
}

absl::Status DiagnosticsServer::start() {
  absl::string_view address = address_;
  size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("invalid address \"", address_, "\""));
  }
  std::string host(absl::StripSuffix(absl::StripPrefix(address.substr(0, colon), "["), "]"));
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid port in \"", address_, "\""));
  }
  ServerOptions options;
  options.name = metrics_ == nullptr ? "health" : "diagnostics";
  options.transport = Transport::kPlaintext;
  options.address = host; // empty: every interface, dual-stack
  options.port = static_cast<uint16_t>(port);
  options.max_body_bytes = kMaxBodyBytes;
  options.request_timeout = kSessionTimeout;
  options.idle_timeout = kSessionTimeout;
  // Checks are quick and run on the one I/O thread, as probes expect.
  options.io_threads = 1;
  options.handler_threads = 1;
  options.response_headers = {{"Cache-Control", "no-store"}};
  server_ = std::make_unique<HttpsServer>(
      std::move(options), [this](const IncomingRequest& request) { return serve(request); },
      logger_, [](std::string_view) { return false; });
  if (absl::Status started = server_->start(); !started.ok()) {
    server_.reset();
    if (absl::IsInvalidArgument(started)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid host in \"", address_, "\""));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address_, ": ", started.message()));
  }
  return absl::OkStatus();
}

void DiagnosticsServer::stop() {
  if (server_) {
    server_->stop();
  }
}

int DiagnosticsServer::port() const {
  return server_ ? server_->port() : 0;
}

HttpReply DiagnosticsServer::serve(const IncomingRequest& request) {
  std::string target(request.target);
  auto [status, body] = handle(target);
  HttpReply reply;
  reply.status = status;
  reply.content_type = absl::StartsWith(target, "/metrics")
                           ? "text/plain; version=0.0.4; charset=utf-8"
                           : "text/plain; charset=utf-8";
  if (request.method != "HEAD") {
    reply.body = std::move(body);
  }
  return reply;
}

std::pair<int, std::string> DiagnosticsServer::handle(const std::string& target) {
  absl::string_view path = target;
  absl::string_view query;
  if (size_t q = path.find('?'); q != absl::string_view::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  if (path == "/metrics") {
    if (metrics_ == nullptr) {
      return {404, "404 page not found\n"};
    }
    return {200, metrics_->render()};
  }
  std::vector<std::pair<std::string, HealthCheck>> checks;
  absl::string_view endpoint;
  for (absl::string_view candidate : {"/healthz", "/livez", "/readyz"}) {
    if (path == candidate || absl::StartsWith(path, absl::StrCat(candidate, "/"))) {
      endpoint = candidate;
    }
  }
  if (endpoint.empty()) {
    return {404, "404 page not found\n"};
  }
  {
    std::scoped_lock lock(mu_);
    checks = endpoint == "/readyz" ? readyz_ : healthz_;
  }
  absl::string_view only = path.substr(endpoint.size());
  absl::ConsumePrefix(&only, "/");
  bool verbose = absl::StrContains(query, "verbose");
  std::string body;
  bool healthy = true;
  bool found = only.empty();
  for (const auto& [name, check] : checks) {
    if (!only.empty() && name != only) {
      continue;
    }
    found = true;
    absl::Status status = check();
    if (status.ok()) {
      absl::StrAppend(&body, "[+]", name, " ok\n");
    } else {
      healthy = false;
      // The reason goes to the log, not to the unauthenticated response.
      absl::StrAppend(&body, "[-]", name, " failed: reason withheld\n");
      logger_->info("health check failed endpoint={} check={} error=\"{}\"", sv(endpoint), name,
                    msg(status));
    }
  }
  if (!found) {
    return {404, "404 page not found\n"};
  }
  if (!healthy) {
    return {500, absl::StrCat(body, endpoint.substr(1), " check failed\n")};
  }
  if (verbose) {
    return {200, absl::StrCat(body, endpoint.substr(1), " check passed\n")};
  }
  return {200, "ok"};
}

} // namespace captf::kube
