#pragma once

// The manager's secure diagnostics endpoint (docs/reference/metrics.md, docs/reference/flags.md):
// HTTPS on --diagnostics-address through kube::HttpsServer, as the webhooks
// (same TLS settings, reload, keep-alive, limits and deadlines), every request
// authenticated and authorized by DelegatingAuth, then routed:
//
//   GET /metrics          the manager's registry (Prometheus text)
//   PUT /debug/flags/v    body = klog level; sets the logger's level as -v
//   /debug/pprof/*        404: a C++ process has no Go profiles
//
// The certificate is tls.crt/tls.key in kMetricsCertDir, reloaded when they
// change, or a self-signed pair generated at startup when neither exists.
// With --insecure-diagnostics the manager serves plain HTTP through
// kube::DiagnosticsServer instead, without any of this.

#include <memory>
#include <string_view>

#include <spdlog/logger.h>

#include "manager/diagnostics/auth.h"
#include "manager/kube/authorization.h"
#include "manager/kube/https_server.h"
#include "manager/kube/metrics.h"

namespace captf::diagnostics {

// Where controller-runtime's metrics server looks for its pair; no flag
// (docs/reference/metrics.md), ServerOptions::cert_dir overrides it in tests.
inline constexpr char kMetricsCertDir[] = "/tmp/k8s-metrics-server/serving-certs/";

// The HTTPS server options of the endpoint: name "diagnostics", port 8443 on
// every interface, kMetricsCertDir with the self-signed fallback, small
// bodies. Callers set address, port and tls from the flags.
[[nodiscard]] kube::ServerOptions serverOptions();

// klog verbosity to spdlog level, as -v and PUT /debug/flags/v map it:
// 0-2 info, 3-4 debug, 5 and more trace.
[[nodiscard]] spdlog::level::level_enum levelForVerbosity(int verbosity);

// Splits --diagnostics-address ("host:port", ":port", "[v6]:port") into the
// server's address ("0.0.0.0" for an empty host) and port.
[[nodiscard]] absl::Status parseAddress(std::string_view address, kube::ServerOptions& options);

// Authorization then routing of one request. Thread-safe. `metrics`,
// `auth` and `logger` must outlive it; PUT /debug/flags/v changes `logger`'s
// level (the manager's one logger).
class DiagnosticsHandler {
public:
  DiagnosticsHandler(const kube::MetricsRegistry& metrics, DelegatingAuth& auth,
                     std::shared_ptr<spdlog::logger> logger);

  [[nodiscard]] kube::HttpReply serve(const kube::IncomingRequest& request) const;

private:
  [[nodiscard]] kube::HttpReply route(std::string_view method, std::string_view path,
                                      std::string_view body) const;

  const kube::MetricsRegistry& metrics_;
  DelegatingAuth& auth_;
  std::shared_ptr<spdlog::logger> logger_;
};

// The endpoint: DiagnosticsHandler over KubeTokenReviewer and
// KubeAccessReviewer on the manager's REST client, served by HttpsServer.
class SecureDiagnosticsServer {
public:
  SecureDiagnosticsServer(kube::ServerOptions options, const kube::MetricsRegistry& metrics,
                          kube::RestClient& rest, kube::Clock& clock,
                          const std::shared_ptr<spdlog::logger>& logger,
                          AuthCacheOptions cache = {});

  absl::Status start() { return server_.start(); }
  void stop() { server_.stop(); }
  [[nodiscard]] uint16_t port() const { return server_.port(); }
  [[nodiscard]] absl::Status ready() const { return server_.ready(); }
  [[nodiscard]] bool selfSigned() const { return server_.selfSigned(); }

private:
  KubeTokenReviewer tokens_;
  kube::KubeAccessReviewer access_;
  DelegatingAuth auth_;
  DiagnosticsHandler handler_;
  kube::HttpsServer server_;
};

} // namespace captf::diagnostics
