#pragma once

// Plain-HTTP diagnostics: /metrics (Prometheus text), /healthz, /readyz and
// /livez with named checks (Kubernetes probe conventions: "/readyz?verbose"
// lists each check, "/readyz/<name>" runs one). The authenticated HTTPS
// metrics endpoint of the manager is built on top of MetricsRegistry
// elsewhere (manager/diagnostics); this server serves probes and local
// scraping. The transport is HttpsServer in plain HTTP (https_server.h):
// one server implementation for every port of the process.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/https_server.h"
#include "manager/kube/metrics.h"

namespace captf::kube {

// A check passes with OK; its message explains a failure.
using HealthCheck = std::function<absl::Status()>;

enum class CheckKind { kHealthz, kReadyz };

class DiagnosticsServer {
public:
  // `address` is "host:port" or ":port" (all interfaces); port 0 picks one.
  // `metrics` may be null (no /metrics).
  DiagnosticsServer(std::string address, MetricsRegistry* metrics,
                    std::shared_ptr<spdlog::logger> logger);
  ~DiagnosticsServer();
  DiagnosticsServer(const DiagnosticsServer&) = delete;
  DiagnosticsServer& operator=(const DiagnosticsServer&) = delete;

  // Thread-safe; checks may be added while serving.
  void addCheck(CheckKind kind, std::string name, HealthCheck check);

  // Binds and starts serving on a background thread. InvalidArgument for
  // a malformed address.
  absl::Status start();
  // Stops serving and joins the server's threads; idempotent.
  void stop();
  // The bound port (after start()).
  int port() const;

  // The response of a probe path (exposed for tests): HTTP status and body.
  std::pair<int, std::string> handle(const std::string& target);

private:
  HttpReply serve(const IncomingRequest& request);

  std::unique_ptr<HttpsServer> server_;
  const std::string address_;
  MetricsRegistry* metrics_;
  std::shared_ptr<spdlog::logger> logger_;
  std::mutex mu_;
  std::vector<std::pair<std::string, HealthCheck>> healthz_;
  std::vector<std::pair<std::string, HealthCheck>> readyz_;
};

} // namespace captf::kube
