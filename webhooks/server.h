#pragma once

// The HTTPS server of the validating webhooks (docs/decisions/webhooks-server.md):
// its own port (:9443), one path per kind (registrations.h), AdmissionReview
// v1 in and out with the request UID echoed, HTTP/1.1 keep-alive, a body
// limit (413 beyond) and a per-request deadline well under the webhook's
// timeoutSeconds. The serving certificate and key are files (the
// cert-manager Secret mounted into the pod); they are re-read when they
// change and new connections use the new pair while open ones finish with
// the old one, so a rotation drops nothing.
//
// The transport (TLS, reload, keep-alive, limits, deadlines) is
// kube::HttpsServer (manager/kube/https_server.h), which knows no kind;
// WebhookServer is that server with the admission routes.

#include <memory>
#include <string_view>

#include <spdlog/logger.h>

#include "absl/status/status.h"
#include "manager/kube/https_server.h"
#include "webhooks/admission.h"

namespace captf::webhooks {

class WebhookServer {
public:
  // `handler` must outlive the server and be safe to call from several
  // threads (AdmissionHandler is).
  WebhookServer(kube::ServerOptions options, const AdmissionHandler& handler,
                std::shared_ptr<spdlog::logger> logger);

  absl::Status start() { return server_.start(); }
  void stop() { server_.stop(); }
  [[nodiscard]] uint16_t port() const { return server_.port(); }
  [[nodiscard]] absl::Status ready() const { return server_.ready(); }
  [[nodiscard]] int certificateGeneration() const { return server_.certificateGeneration(); }

  // Answers one request (exposed for tests): the HTTP status and body.
  using Reply = kube::HttpReply;
  [[nodiscard]] Reply serve(std::string_view method, std::string_view target,
                            std::string_view body) const;

private:
  const AdmissionHandler& handler_;
  kube::HttpsServer server_;
};

} // namespace captf::webhooks
