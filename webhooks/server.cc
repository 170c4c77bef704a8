#include "webhooks/server.h"

#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "webhooks/registrations.h"

namespace captf::webhooks {
namespace {

using kube::failureStatusJson;

// request.uid of a review parseAdmissionReview refused, so the denial still
// echoes it when there is one.
std::string bestEffortUid(std::string_view body) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object()) {
    return "";
  }
  const auto req = doc.find("request");
  if (req == doc.end() || !req->is_object()) {
    return "";
  }
  const auto uid = req->find("uid");
  return uid != req->end() && uid->is_string() ? uid->get<std::string>() : "";
}

} // namespace

WebhookServer::WebhookServer(kube::ServerOptions options, const AdmissionHandler& handler,
                             std::shared_ptr<spdlog::logger> logger)
    : handler_(handler), server_(
                             std::move(options),
                             [this](const kube::IncomingRequest& request) {
                               return serve(request.method, request.target, request.body);
                             },
                             std::move(logger),
                             [](std::string_view target) {
                               const WebhookRegistration* reg =
                                   registrationForPath(target.substr(0, target.find('?')));
                               return reg != nullptr && reg->calls_api_server;
                             }) {}

WebhookServer::Reply WebhookServer::serve(std::string_view method, std::string_view target,
                                          std::string_view body) const {
  const std::string_view path = target.substr(0, target.find('?'));
  if (path == "/readyz" || path == "/healthz") {
    return {200, "text/plain", "ok"};
  }
  const WebhookRegistration* reg = registrationForPath(path);
  if (reg == nullptr) {
    return {404, "application/json",
            failureStatusJson(404, "NotFound", fmt::format("no webhook is served at {}", path))};
  }
  if (method != "POST") {
    return {405, "application/json",
            failureStatusJson(405, "MethodNotAllowed", "admission reviews are POSTed")};
  }
  absl::StatusOr<AdmissionRequest> request = parseAdmissionReview(body);
  if (!request.ok()) {
    return {200, "application/json",
            encodeAdmissionReview(
                badRequest(bestEffortUid(body), std::string(request.status().message())))};
  }
  if (request->kind != reg->kind) {
    return {200, "application/json",
            encodeAdmissionReview(
                badRequest(request->uid, fmt::format("{} validates {} objects, not {}", reg->path,
                                                     reg->kind, request->kind)))};
  }
  return {200, "application/json", encodeAdmissionReview(handler_.handle(*request))};
}

} // namespace captf::webhooks
