#pragma once

// Test doubles for the seams of manager/kube: an HTTP transport with
// scripted answers, a ListerWatcher with scripted lists and watch events,
// and a quiet logger.

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "manager/kube/informer.h"
#include "manager/kube/transport.h"
#include "manager/kube/watch.h"

namespace captf::kube::testing {

// Core kinds the tests read and write.
inline const GroupVersionKind kConfigMap{"", "v1", "ConfigMap"};
inline const GroupVersionKind kNamespace{"", "v1", "Namespace"};

inline std::shared_ptr<spdlog::logger> quietLogger() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// Answers requests from a queue of responses (or a handler) and records them.
class FakeTransport final : public HttpTransport {
public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  void respond(int status, std::string body, Headers headers = {}) {
    std::scoped_lock lock(mu_);
    responses_.push_back({status, std::move(headers), std::move(body)});
  }
  void setHandler(Handler handler) {
    std::scoped_lock lock(mu_);
    handler_ = std::move(handler);
  }
  std::vector<HttpRequest> requests() const {
    std::scoped_lock lock(mu_);
    return requests_;
  }
  std::vector<std::string> certificates() const {
    std::scoped_lock lock(mu_);
    return certificates_;
  }

  absl::StatusOr<HttpResponse> roundTrip(const HttpRequest& request) override {
    std::scoped_lock lock(mu_);
    requests_.push_back(request);
    if (handler_) {
      return handler_(request);
    }
    if (responses_.empty()) {
      return absl::UnavailableError("no scripted response");
    }
    HttpResponse response = std::move(responses_.front());
    responses_.pop_front();
    return response;
  }

  absl::StatusOr<std::unique_ptr<BodyStream>> open(const HttpRequest& request,
                                                   std::stop_token) override {
    auto response = roundTrip(request);
    if (!response.ok()) {
      return response.status();
    }
    return std::unique_ptr<BodyStream>(std::make_unique<Body>(*std::move(response)));
  }

  absl::Status setClientCertificate(const std::string& cert, const std::string&) override {
    std::scoped_lock lock(mu_);
    if (certificates_.empty() || certificates_.back() != cert) {
      certificates_.push_back(cert);
    }
    return absl::OkStatus();
  }

private:
  // Hands the body out in 7-byte pieces to exercise stream framing.
  class Body final : public BodyStream {
  public:
    explicit Body(HttpResponse response) : response_(std::move(response)) {}
    int status() const override { return response_.status; }
    std::string header(std::string_view name) const override { return response_.header(name); }
    absl::StatusOr<std::string> read() override {
      std::string piece = response_.body.substr(pos_, 7);
      pos_ += piece.size();
      return piece;
    }

  private:
    HttpResponse response_;
    size_t pos_ = 0;
  };

  mutable std::mutex mu_;
  std::deque<HttpResponse> responses_;
  Handler handler_;
  std::vector<HttpRequest> requests_;
  std::vector<std::string> certificates_;
};

// An EventStream over a fixed list of results; then ends with `end`.
class ScriptedEventStream final : public EventStream {
public:
  ScriptedEventStream(std::vector<WatchEvent> events, absl::Status end)
      : events_(events.begin(), events.end()), end_(std::move(end)) {}
  absl::StatusOr<std::optional<WatchEvent>> next() override {
    if (!events_.empty()) {
      WatchEvent event = std::move(events_.front());
      events_.pop_front();
      return std::optional<WatchEvent>(std::move(event));
    }
    if (!end_.ok()) {
      return end_;
    }
    return std::optional<WatchEvent>();
  }

private:
  std::deque<WatchEvent> events_;
  absl::Status end_;
};

// Scripted lists and watches. When the script runs out, watch() blocks
// until stopped, like a quiet server.
class FakeListerWatcher final : public ListerWatcher {
public:
  struct Watch {
    std::vector<WatchEvent> events;
    absl::Status end = absl::OkStatus(); // after the events
    absl::Status open_error = absl::OkStatus();
  };

  void addList(absl::StatusOr<ObjectList> list) {
    std::scoped_lock lock(mu_);
    lists_.push_back(std::move(list));
  }
  void addWatch(Watch watch) {
    {
      std::scoped_lock lock(mu_);
      watches_.push_back(std::move(watch));
    }
    cv_.notify_all();
  }
  std::vector<ListOptions> listCalls() const {
    std::scoped_lock lock(mu_);
    return list_calls_;
  }
  std::vector<ListOptions> watchCalls() const {
    std::scoped_lock lock(mu_);
    return watch_calls_;
  }
  // Blocks until watch() was called `n` times.
  void awaitWatchCalls(size_t n) const {
    std::unique_lock lock(mu_);
    calls_cv_.wait(lock, [&] { return watch_calls_.size() >= n; });
  }

  absl::StatusOr<ObjectList> list(const ListOptions& options) override {
    std::scoped_lock lock(mu_);
    list_calls_.push_back(options);
    if (lists_.empty()) {
      return absl::UnavailableError("no scripted list");
    }
    auto list = std::move(lists_.front());
    lists_.pop_front();
    return list;
  }

  absl::StatusOr<std::unique_ptr<EventStream>> watch(const ListOptions& options,
                                                     std::stop_token stop) override {
    std::unique_lock lock(mu_);
    watch_calls_.push_back(options);
    calls_cv_.notify_all();
    cv_.wait(lock, stop, [&] { return !watches_.empty(); });
    if (watches_.empty()) {
      return absl::CancelledError("stopped");
    }
    Watch watch = std::move(watches_.front());
    watches_.pop_front();
    if (!watch.open_error.ok()) {
      return watch.open_error;
    }
    return std::unique_ptr<EventStream>(
        std::make_unique<ScriptedEventStream>(std::move(watch.events), watch.end));
  }

private:
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  mutable std::condition_variable_any calls_cv_;
  std::deque<absl::StatusOr<ObjectList>> lists_;
  std::deque<Watch> watches_;
  std::vector<ListOptions> list_calls_;
  std::vector<ListOptions> watch_calls_;
};

inline Json configMap(const std::string& ns, const std::string& name, const std::string& rv,
                      Json labels = Json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"namespace", ns},
            {"name", name},
            {"resourceVersion", rv},
            {"uid", "uid-" + name},
            {"labels", std::move(labels)}}},
          {"data", {{"k", "v"}}}};
}

inline WatchEvent event(WatchEventType type, Json object) {
  return {type, std::move(object)};
}

} // namespace captf::kube::testing
