#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "manager/kube/client.h"
#include "manager/kube/errors.h"
#include "manager/kube/rest_client.h"
#include "test/manager/kube/fakes.h"

namespace captf::kube {
namespace {

using testing::FakeTransport;

using testing::kConfigMap;
using testing::kNamespace;
const GroupVersionKind kWidget{"example.io", "v1", "Widget"};

// Counts refreshes; the token changes after each invalidate().
class RotatingCredentials final : public CredentialSource {
public:
  absl::StatusOr<Credentials> current() override {
    return Credentials{"token-" + std::to_string(generation_), "", ""};
  }
  bool invalidate(const Credentials&) override {
    ++generation_;
    return true;
  }
  int generation_ = 0;
};

class RestClientTest : public ::testing::Test {
protected:
  RestClientTest() {
    auto transport = std::make_unique<FakeTransport>();
    transport_ = transport.get();
    auto credentials = std::make_unique<RotatingCredentials>();
    credentials_ = credentials.get();
    RestConfig config;
    config.server = "https://api.example:6443/base";
    rest_ = std::make_unique<RestClient>(config, std::move(transport), std::move(credentials),
                                         clock_, &metrics_, testing::quietLogger());
    mapper_.add({kConfigMap, "configmaps", true, {}, {}})
        .add({kNamespace, "namespaces", false, {}, {"status"}})
        .add({kWidget, "widgets", true, {}, {"status"}});
    client_ = std::make_unique<ApiClient>(*rest_, mapper_);
  }

  HttpRequest lastRequest() { return transport_->requests().back(); }

  FakeClock clock_;
  MetricsRegistry metrics_;
  FakeTransport* transport_ = nullptr;
  RotatingCredentials* credentials_ = nullptr;
  std::unique_ptr<RestClient> rest_;
  StaticRestMapper mapper_;
  std::unique_ptr<ApiClient> client_;
};

TEST_F(RestClientTest, GetBuildsPathAndHeaders) {
  transport_->respond(200, R"({"metadata":{"name":"x"}})");
  auto object = client_->get(kConfigMap, {"team a", "x"});
  ASSERT_TRUE(object.ok()) << object.status();
  HttpRequest request = lastRequest();
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/base/api/v1/namespaces/team%20a/configmaps/x");
  EXPECT_EQ(request.headers[0],
            (std::pair<std::string, std::string>{"Accept", "application/json"}));
  bool has_token = false;
  for (const auto& [name, value] : request.headers) {
    has_token |= name == "Authorization" && value == "Bearer token-0";
  }
  EXPECT_TRUE(has_token);
  EXPECT_EQ(request.timeout, std::chrono::seconds(30));
  EXPECT_NE(
      metrics_.render().find(
          "rest_client_requests_total{code=\"200\",host=\"api.example:6443\",method=\"GET\"} 1"),
      std::string::npos);
}

TEST_F(RestClientTest, TypedErrors) {
  transport_->respond(404, R"({"kind":"Status","reason":"NotFound","code":404})");
  EXPECT_TRUE(isNotFound(client_->get(kConfigMap, {"ns", "x"}).status()));
  transport_->respond(409, R"({"kind":"Status","reason":"Conflict","code":409})");
  EXPECT_TRUE(isConflict(client_
                             ->update(Json::parse(R"({"apiVersion":"v1","kind":"ConfigMap",
        "metadata":{"namespace":"ns","name":"x","resourceVersion":"1"}})"))
                             .status()));
  EXPECT_FALSE(client_->get(kConfigMap, {"", "x"}).ok()) << "namespaced kinds need a namespace";
  EXPECT_TRUE(absl::IsNotFound(client_->get({"", "v1", "Nope"}, {"", "x"}).status()));
}

TEST_F(RestClientTest, RetriesAfterRetryAfterThenGivesUp) {
  transport_->respond(429, R"({"kind":"Status","reason":"TooManyRequests","code":429})",
                      {{"Retry-After", "0"}});
  transport_->respond(200, "{}");
  EXPECT_TRUE(client_->get(kNamespace, {"", "x"}).ok());
  EXPECT_EQ(transport_->requests().size(), 2U);

  transport_->setHandler([](const HttpRequest&) {
    return HttpResponse{503, {{"Retry-After", "0"}}, "busy"};
  });
  auto status = client_->get(kNamespace, {"", "x"}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(retryAfter(status), std::chrono::seconds(0));
  EXPECT_EQ(transport_->requests().size(), 2U + 1 + RestClient::kMaxRetries);

  transport_->setHandler([](const HttpRequest&) { return HttpResponse{500, {}, "no"}; });
  size_t before = transport_->requests().size();
  EXPECT_FALSE(client_->get(kNamespace, {"", "x"}).ok());
  EXPECT_EQ(transport_->requests().size(), before + 1) << "no Retry-After, no retry";
}

TEST_F(RestClientTest, UnauthorizedRefreshesCredentialsOnce) {
  transport_->respond(401, R"({"kind":"Status","reason":"Unauthorized","code":401})");
  transport_->respond(200, "{}");
  EXPECT_TRUE(client_->get(kNamespace, {"", "x"}).ok());
  EXPECT_EQ(credentials_->generation_, 1);
  bool refreshed = false;
  for (const auto& [name, value] : lastRequest().headers) {
    refreshed |= value == "Bearer token-1";
  }
  EXPECT_TRUE(refreshed);

  transport_->setHandler([](const HttpRequest&) {
    return HttpResponse{401, {}, R"({"kind":"Status","reason":"Unauthorized","code":401})"};
  });
  EXPECT_TRUE(isUnauthorized(client_->get(kNamespace, {"", "x"}).status()));
  EXPECT_EQ(credentials_->generation_, 2);
}

TEST_F(RestClientTest, WritesUseTheRightVerbsAndOptions) {
  transport_->setHandler([](const HttpRequest& request) {
    return HttpResponse{200, {}, request.body.empty() ? "{}" : request.body};
  });
  Json widget = Json::parse(R"({"apiVersion":"example.io/v1","kind":"Widget",
    "metadata":{"namespace":"ns","name":"w"},"spec":{"a":1}})");

  ASSERT_TRUE(client_->create(widget, {DryRun::kAll, "captf"}).ok());
  EXPECT_EQ(lastRequest().method, "POST");
  EXPECT_EQ(lastRequest().target,
            "/base/apis/example.io/v1/namespaces/ns/widgets?dryRun=All&fieldManager=captf");

  ASSERT_TRUE(client_->updateStatus(widget).ok());
  EXPECT_EQ(lastRequest().method, "PUT");
  EXPECT_EQ(lastRequest().target, "/base/apis/example.io/v1/namespaces/ns/widgets/w/status");

  ASSERT_TRUE(client_->patch(kWidget, {"ns", "w"}, PatchType::kMerge, {{"spec", {{"a", 2}}}}).ok());
  EXPECT_EQ(lastRequest().method, "PATCH");
  bool merge = false;
  for (const auto& [name, value] : lastRequest().headers) {
    merge |= name == "Content-Type" && value == "application/merge-patch+json";
  }
  EXPECT_TRUE(merge);

  ASSERT_TRUE(client_
                  ->apply(widget, {.field_manager = "captf",
                                   .force = Force::kYes,
                                   .dry_run = DryRun::kNo,
                                   .subresource = ""})
                  .ok());
  EXPECT_EQ(lastRequest().target,
            "/base/apis/example.io/v1/namespaces/ns/widgets/w?fieldManager=captf&force=true");
  EXPECT_FALSE(client_->apply(widget, {}).ok()) << "apply needs a field manager";
  EXPECT_FALSE(client_
                   ->patch(kWidget, {"ns", "w"}, PatchType::kMerge, Json::object(),
                           {.dry_run = DryRun::kNo,
                            .field_manager = "",
                            .force = Force::kYes,
                            .subresource = ""})
                   .ok())
      << "force is for apply only";

  DeleteOptions remove;
  remove.propagation = PropagationPolicy::kForeground;
  remove.preconditions.uid = "u1";
  remove.preconditions.resource_version = "9";
  remove.grace_period_seconds = 0;
  ASSERT_TRUE(client_->remove(kWidget, {"ns", "w"}, remove).ok());
  EXPECT_EQ(lastRequest().method, "DELETE");
  EXPECT_EQ(Json::parse(lastRequest().body),
            Json::parse(R"({"apiVersion":"v1","kind":"DeleteOptions",
              "propagationPolicy":"Foreground","gracePeriodSeconds":0,
              "preconditions":{"uid":"u1","resourceVersion":"9"}})"));
}

TEST_F(RestClientTest, ListFillsKindsAndPagesWithListAll) {
  transport_->respond(200, R"({"metadata":{"resourceVersion":"10","continue":"c1",
    "remainingItemCount":1},"items":[{"metadata":{"name":"a"}}]})");
  transport_->respond(200, R"({"metadata":{"resourceVersion":"10"},
    "items":[{"metadata":{"name":"b"}}]})");
  ListOptions options;
  options.ns = "ns";
  options.label_selector = "app=web";
  options.limit = 1;
  auto all = listAll(*client_, kConfigMap, options);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->items.size(), 2U);
  EXPECT_EQ(all->items[0]["kind"], "ConfigMap");
  EXPECT_EQ(all->items[1]["apiVersion"], "v1");
  EXPECT_EQ(all->resource_version, "10");
  auto requests = transport_->requests();
  EXPECT_EQ(requests[0].target,
            "/base/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dweb&limit=1");
  EXPECT_EQ(requests[1].target,
            "/base/api/v1/namespaces/ns/configmaps?labelSelector=app%3Dweb&limit=1&continue=c1");
}

TEST_F(RestClientTest, ExpiredContinueFallsBackToAFullList) {
  transport_->respond(200, R"({"metadata":{"resourceVersion":"10","continue":"c1"},
    "items":[{"metadata":{"name":"a"}}]})");
  transport_->respond(410, R"({"kind":"Status","reason":"Expired","code":410})");
  transport_->respond(200, R"({"metadata":{"resourceVersion":"30"},
    "items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  auto all = listAll(*client_, kConfigMap, {});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->items.size(), 2U);
  EXPECT_EQ(all->resource_version, "30");
  EXPECT_EQ(transport_->requests()[2].target, "/base/api/v1/configmaps");
}

TEST_F(RestClientTest, WatchQueryAndStream) {
  transport_->respond(200, R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})");
  ListOptions options;
  options.resource_version = "5";
  options.allow_watch_bookmarks = true;
  options.timeout_seconds = 300;
  options.limit = 10; // ignored by watches
  auto stream = client_->watch(kConfigMap, options, std::stop_token());
  ASSERT_TRUE(stream.ok()) << stream.status();
  EXPECT_EQ(lastRequest().target,
            "/base/api/v1/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=300&"
            "resourceVersion=5");
  EXPECT_EQ(lastRequest().timeout, std::chrono::seconds(360));
  auto event = (*stream)->next();
  ASSERT_TRUE(event.ok());
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ(meta::name((*event)->object), "a");

  transport_->respond(410, R"({"kind":"Status","reason":"Expired","code":410})");
  EXPECT_TRUE(isGone(client_->watch(kConfigMap, options, std::stop_token()).status()));
}

TEST(ServerUrlTest, Parses) {
  auto url = parseServerUrl("https://[::1]:6443/prefix/");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, "6443");
  EXPECT_EQ(url->prefix, "/prefix");
  EXPECT_EQ(parseServerUrl("https://k8s.example")->port, "443");
  EXPECT_FALSE(parseServerUrl("http://k8s.example").ok());
  EXPECT_FALSE(parseServerUrl("https://k8s.example:99999").ok());
  EXPECT_EQ(urlEscape("a=b&c d/é"), "a%3Db%26c%20d%2F%C3%A9");
}

// An answer's Date header in IMF-fixdate.
std::string httpDate(WallTime t) {
  return absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", absl::FromChrono(t), absl::UTCTimeZone());
}

double secondsOf(Duration d) {
  return std::chrono::duration<double>(d).count();
}

// The client hands every answer's Date to the ServerClock: a server whose
// clock is 15 minutes ahead of this machine's moves wallNow() 15 minutes
// on, for requests and watches alike; answers in step with the local clock
// leave it at the local time.
TEST_F(RestClientTest, AnswersDatesSetTheServerClock) {
  ServerClock server(clock_);
  rest_->observeServerTime(server);
  transport_->respond(200, "{}", {{"Date", httpDate(clock_.wallNow())}});
  ASSERT_TRUE(client_->get(kConfigMap, {"ns", "x"}).ok());
  EXPECT_EQ(server.offset(), Duration::zero());
  EXPECT_EQ(server.wallNow(), clock_.wallNow());

  transport_->respond(200, "{}", {{"date", httpDate(clock_.wallNow() + std::chrono::minutes(15))}});
  ASSERT_TRUE(client_->get(kConfigMap, {"ns", "x"}).ok());
  EXPECT_NEAR(secondsOf(server.offset()), 900, 1);
  EXPECT_NEAR(secondsOf(server.wallNow() - clock_.wallNow()), 900, 1);
  EXPECT_EQ(server.now(), clock_.now()) << "steady time stays local";

  transport_->respond(200, "", {{"Date", httpDate(clock_.wallNow())}});
  std::stop_source stop;
  ASSERT_TRUE(rest_->stream(restRequest("GET", "/api/v1/configmaps"), stop.get_token()).ok());
  EXPECT_NEAR(secondsOf(server.offset()), 0, 1) << "a watch's answer counts too";
}

// The offset moves only when an answer proves it wrong, and only by what an
// answer can tell.
TEST(ServerClockTest, MovesOnlyOnAnswersThatContradictIt) {
  FakeClock local;
  ServerClock server(local);
  const WallTime t = local.wallNow();
  // In step (the header's second is truncated): nothing moves.
  server.observe(httpDate(t - std::chrono::milliseconds(400)), t, t);
  EXPECT_EQ(server.offset(), Duration::zero());
  // A slow answer (sent 5 s before it was read) could be anything within
  // those 5 s: ignored, whatever its Date.
  server.observe(httpDate(t + std::chrono::minutes(15)), t - std::chrono::seconds(5), t);
  EXPECT_EQ(server.offset(), Duration::zero());
  // A header that does not parse, or none: ignored.
  server.observe("yesterday", t, t);
  server.observe("", t, t);
  EXPECT_EQ(server.offset(), Duration::zero());
  // The server 15 minutes behind: the offset goes there, and back to about
  // 0 once the answers are in step again (a clock stepped by NTP).
  server.observe(httpDate(t - std::chrono::minutes(15)), t, t);
  EXPECT_NEAR(secondsOf(server.offset()), -899.5, 0.01);
  server.observe(httpDate(t), t, t);
  EXPECT_NEAR(secondsOf(server.offset()), 0.5, 0.01);
  // Answers that agree with the current offset within their window keep it.
  server.observe(httpDate(t + std::chrono::milliseconds(900)), t,
                 t + std::chrono::milliseconds(300));
  EXPECT_NEAR(secondsOf(server.offset()), 0.5, 0.01);
}

} // namespace
} // namespace captf::kube
