#pragma once

// The REST layer: turns (method, path, query, body) into HTTP requests with
// authentication, the optional client-side rate limit, Retry-After handling,
// timeouts and rest_client_* metrics, and non-2xx answers into typed errors
// (errors.h).

#include <memory>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/clock.h"
#include "manager/kube/config.h"
#include "manager/kube/credentials.h"
#include "manager/kube/metrics.h"
#include "manager/kube/object.h"
#include "manager/kube/rate_limiter.h"
#include "manager/kube/transport.h"

namespace captf::kube {

using Query = std::vector<std::pair<std::string, std::string>>;

struct RestRequest {
  std::string method = "GET";
  std::string path; // "/api/v1/namespaces/x/pods", without the server prefix
  Query query;
  std::string body;
  std::string content_type = "application/json";
  std::string accept = "application/json";
  // Overrides RestConfig::timeout when set (> 0).
  Duration timeout = Duration::zero();
};

// Builds a request (designated initializers of RestRequest trip GCC 12's
// -Wmissing-field-initializers).
RestRequest restRequest(std::string method, std::string path, Query query = {},
                        std::string body = {}, std::string content_type = "application/json");

// Percent-encodes a query component (RFC 3986 unreserved set kept).
std::string urlEscape(std::string_view text);
// Encodes a path segment (names may not contain '/', but be safe).
std::string pathEscape(std::string_view text);

// Thread-safe.
class RestClient {
public:
  // `metrics` may be null.
  RestClient(RestConfig config, std::unique_ptr<HttpTransport> transport,
             std::unique_ptr<CredentialSource> credentials, Clock& clock, MetricsRegistry* metrics,
             std::shared_ptr<spdlog::logger> logger);

  // Builds the HTTPS transport and credential source for `config`.
  static absl::StatusOr<std::unique_ptr<RestClient>> create(const RestConfig& config, Clock& clock,
                                                            MetricsRegistry* metrics,
                                                            std::shared_ptr<spdlog::logger> logger);

  // Sends the request; a non-2xx answer is an error (errors.h). 429 and 5xx
  // answers with Retry-After are retried after that delay (at most
  // `max_retries` times, and never past the request's timeout), as client-go
  // does; a 401 is retried once with refreshed credentials.
  absl::StatusOr<HttpResponse> send(const RestRequest& request);
  // send() and parse the body as JSON.
  absl::StatusOr<Json> sendJson(const RestRequest& request);
  // Opens a streaming response (watch). `request.timeout` bounds the whole
  // stream. Errors as send().
  absl::StatusOr<std::unique_ptr<BodyStream>> stream(const RestRequest& request,
                                                     std::stop_token stop);

  // Every answer's Date header goes to `clock` (ServerClock::observe).
  void observeServerTime(ServerClock& clock) { server_time_ = &clock; }

  const RestConfig& config() const { return config_; }
  Clock& clock() const { return clock_; }
  const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }

  static constexpr int kMaxRetries = 10;

private:
  absl::StatusOr<HttpRequest> prepare(const RestRequest& request, const Credentials& credentials,
                                      Duration timeout) const;
  void record(const std::string& method, int code, Duration elapsed);

  const RestConfig config_;
  std::string prefix_; // path prefix of the server URL
  std::string host_;   // host:port for metrics
  std::unique_ptr<HttpTransport> transport_;
  std::unique_ptr<CredentialSource> credentials_;
  Clock& clock_;
  ServerClock* server_time_ = nullptr;
  std::unique_ptr<TokenBucket> limiter_;
  CounterFamily* requests_ = nullptr;
  HistogramFamily* latency_ = nullptr;
  std::shared_ptr<spdlog::logger> logger_;
};

// Splits "https://host:port/prefix" into its parts. InvalidArgument for
// other schemes.
struct ServerUrl {
  std::string host;
  std::string port;
  std::string prefix;
};
absl::StatusOr<ServerUrl> parseServerUrl(std::string_view server);

} // namespace captf::kube
