#include "manager/kube/rest_client.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "contract/status_macros.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

bool isUnreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string percentEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (isUnreserved(c) || (keep_slash && c == '/')) {
      out += c;
    } else {
      auto byte = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
  }
  return out;
}

bool isSuccess(int status) {
  return status >= 200 && status < 300;
}

} // namespace

RestRequest restRequest(std::string method, std::string path, Query query, std::string body,
                        std::string content_type) {
  RestRequest request;
  request.method = std::move(method);
  request.path = std::move(path);
  request.query = std::move(query);
  request.body = std::move(body);
  request.content_type = std::move(content_type);
  return request;
}

std::string urlEscape(std::string_view text) {
  return percentEncode(text, false);
}
std::string pathEscape(std::string_view text) {
  return percentEncode(text, false);
}

absl::StatusOr<ServerUrl> parseServerUrl(std::string_view server_text) {
  absl::string_view server = av(server_text);
  absl::string_view rest = server;
  if (!absl::ConsumePrefix(&rest, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("server \"", server, "\" must be an https:// URL"));
  }
  ServerUrl url;
  size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  if (slash != absl::string_view::npos) {
    url.prefix = std::string(absl::StripSuffix(rest.substr(slash), "/"));
  }
  if (absl::StartsWith(authority, "[")) {
    size_t close = authority.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("invalid server \"", server, "\""));
    }
    url.host = std::string(authority.substr(1, close - 1));
    absl::string_view after = authority.substr(close + 1);
    url.port = absl::ConsumePrefix(&after, ":") ? std::string(after) : "443";
  } else if (size_t colon = authority.rfind(':'); colon != absl::string_view::npos) {
    url.host = std::string(authority.substr(0, colon));
    url.port = std::string(authority.substr(colon + 1));
  } else {
    url.host = std::string(authority);
    url.port = "443";
  }
  int port = 0;
  if (url.host.empty() || !absl::SimpleAtoi(url.port, &port) || port <= 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("invalid server \"", server, "\""));
  }
  return url;
}

RestClient::RestClient(RestConfig config, std::unique_ptr<HttpTransport> transport,
                       std::unique_ptr<CredentialSource> credentials, Clock& clock,
                       MetricsRegistry* metrics, std::shared_ptr<spdlog::logger> logger)
    : config_(std::move(config)), transport_(std::move(transport)),
      credentials_(std::move(credentials)), clock_(clock), logger_(std::move(logger)) {
  if (auto url = parseServerUrl(config_.server); url.ok()) {
    prefix_ = url->prefix;
    host_ = absl::StrCat(url->host, ":", url->port);
  }
  if (config_.qps > 0) {
    limiter_ = std::make_unique<TokenBucket>(config_.qps, std::max(1, config_.burst), clock_);
  }
  if (metrics != nullptr) {
    requests_ = &metrics->counter("rest_client_requests_total",
                                  "Number of HTTP requests, partitioned by status code, method, "
                                  "and host.",
                                  {"code", "host", "method"});
    latency_ = &metrics->histogram(
        "rest_client_request_duration_seconds",
        "Request latency in seconds. Broken down by verb, and host.", {"host", "verb"},
        {0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0});
  }
}

absl::StatusOr<std::unique_ptr<RestClient>>
RestClient::create(const RestConfig& config, Clock& clock, MetricsRegistry* metrics,
                   std::shared_ptr<spdlog::logger> logger) {
  auto url = parseServerUrl(config.server);
  if (!url.ok()) {
    return url.status();
  }
  TlsOptions tls;
  tls.ca_pem = config.ca_pem;
  tls.insecure_skip_verify = config.insecure_skip_tls_verify;
  tls.server_name = config.tls_server_name;
  tls.client_cert_pem = config.client_cert_pem;
  tls.client_key_pem = config.client_key_pem;
  TransportOptions options;
  options.idle_timeout = config.idle_connection_timeout;
  auto transport = makeHttpsTransport(url->host, url->port, tls, options);
  if (!transport.ok()) {
    return transport.status();
  }
  auto credentials = makeCredentialSource(config, clock, logger);
  return std::make_unique<RestClient>(config, *std::move(transport), std::move(credentials), clock,
                                      metrics, std::move(logger));
}

absl::StatusOr<HttpRequest> RestClient::prepare(const RestRequest& request,
                                                const Credentials& credentials,
                                                Duration timeout) const {
  HttpRequest http;
  http.method = request.method;
  http.target = absl::StrCat(prefix_, request.path);
  char separator = '?';
  for (const auto& [name, value] : request.query) {
    absl::StrAppend(&http.target, absl::string_view(&separator, 1), urlEscape(name), "=",
                    urlEscape(value));
    separator = '&';
  }
  http.headers.emplace_back("Accept", request.accept);
  http.headers.emplace_back("User-Agent", config_.user_agent);
  if (!credentials.bearer_token.empty()) {
    http.headers.emplace_back("Authorization", absl::StrCat("Bearer ", credentials.bearer_token));
  }
  if (!request.body.empty()) {
    http.headers.emplace_back("Content-Type", request.content_type);
  }
  http.body = request.body;
  http.timeout = timeout;
  return http;
}

void RestClient::record(const std::string& method, int code, Duration elapsed) {
  if (requests_ != nullptr) {
    requests_->withLabels({code > 0 ? absl::StrCat(code) : "<error>", host_, method}).inc();
  }
  if (latency_ != nullptr) {
    latency_->withLabels({host_, method}).observe(std::chrono::duration<double>(elapsed).count());
  }
}

absl::StatusOr<HttpResponse> RestClient::send(const RestRequest& request) {
  Duration timeout =
      request.timeout > Duration::zero() ? request.timeout : Duration(config_.timeout);
  SteadyTime deadline = clock_.now() + timeout;
  bool refreshed_credentials = false;
  for (int attempt = 0;; ++attempt) {
    if (limiter_ && !limiter_->wait(std::stop_token())) {
      return absl::CancelledError("rate limiter stopped");
    }
    auto credentials = credentials_->current();
    if (!credentials.ok()) {
      return credentials.status();
    }
    CAPTF_RETURN_IF_ERROR(transport_->setClientCertificate(credentials->client_cert_pem,
                                                           credentials->client_key_pem));
    Duration remaining = deadline - clock_.now();
    if (remaining <= Duration::zero()) {
      return absl::DeadlineExceededError(
          absl::StrCat(request.method, " ", request.path, ": timed out"));
    }
    auto http = prepare(request, *credentials, remaining);
    if (!http.ok()) {
      return http.status();
    }
    SteadyTime started = clock_.now();
    const WallTime sent = server_time_ != nullptr ? server_time_->localNow() : WallTime{};
    auto response = transport_->roundTrip(*http);
    record(request.method, response.ok() ? response->status : 0, clock_.now() - started);
    if (!response.ok()) {
      return response.status();
    }
    if (server_time_ != nullptr) {
      server_time_->observe(response->header("Date"), sent, server_time_->localNow());
    }
    if (isSuccess(response->status)) {
      return response;
    }
    auto error =
        errorFromResponse(response->status, response->body, response->header("Retry-After"));
    if (response->status == 401 && !refreshed_credentials &&
        credentials_->invalidate(*credentials)) {
      refreshed_credentials = true;
      logger_->info("request unauthorized, refreshing credentials method={} path={}",
                    request.method, request.path);
      continue;
    }
    auto retry_after = retryAfter(error);
    bool retryable = retry_after && (response->status == 429 || response->status >= 500);
    if (!retryable || attempt >= kMaxRetries || clock_.now() + *retry_after >= deadline) {
      return error;
    }
    logger_->debug("server asked to retry method={} path={} code={} retryAfterSeconds={}",
                   request.method, request.path, response->status, retry_after->count());
    clock_.sleepFor(*retry_after, std::stop_token());
  }
}

absl::StatusOr<Json> RestClient::sendJson(const RestRequest& request) {
  auto response = send(request);
  if (!response.ok()) {
    return response.status();
  }
  auto parsed = parseJson(response->body);
  if (!parsed.ok()) {
    return absl::InternalError(absl::StrCat(request.method, " ", request.path,
                                            ": the server answered ", parsed.status().message()));
  }
  return parsed;
}

absl::StatusOr<std::unique_ptr<BodyStream>> RestClient::stream(const RestRequest& request,
                                                               std::stop_token stop) {
  Duration timeout =
      request.timeout > Duration::zero() ? request.timeout : Duration(config_.timeout);
  bool refreshed_credentials = false;
  while (true) {
    if (limiter_ && !limiter_->wait(stop)) {
      return absl::CancelledError("stopped");
    }
    auto credentials = credentials_->current();
    if (!credentials.ok()) {
      return credentials.status();
    }
    CAPTF_RETURN_IF_ERROR(transport_->setClientCertificate(credentials->client_cert_pem,
                                                           credentials->client_key_pem));
    auto http = prepare(request, *credentials, timeout);
    if (!http.ok()) {
      return http.status();
    }
    SteadyTime started = clock_.now();
    const WallTime sent = server_time_ != nullptr ? server_time_->localNow() : WallTime{};
    auto body = transport_->open(*http, stop);
    record(request.method, body.ok() ? (*body)->status() : 0, clock_.now() - started);
    if (!body.ok()) {
      return body.status();
    }
    if (server_time_ != nullptr) {
      server_time_->observe((*body)->header("Date"), sent, server_time_->localNow());
    }
    int status = (*body)->status();
    if (isSuccess(status)) {
      return body;
    }
    // Read the (small) error body.
    std::string text;
    constexpr size_t kMaxErrorBody = 1 << 20;
    while (text.size() < kMaxErrorBody) {
      auto chunk = (*body)->read();
      if (!chunk.ok() || chunk->empty()) {
        break;
      }
      text += *chunk;
    }
    auto error = errorFromResponse(status, text, (*body)->header("Retry-After"));
    if (status == 401 && !refreshed_credentials && credentials_->invalidate(*credentials)) {
      refreshed_credentials = true;
      continue;
    }
    return error;
  }
}

} // namespace captf::kube
