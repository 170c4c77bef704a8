#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "manager/kube/diagnostics_server.h"
#include "manager/kube/metrics.h"
#include "test/manager/kube/fakes.h"
#include "test/webhooks/https_client.h"

namespace captf::kube {
namespace {

TEST(MetricsTest, RendersTheTextFormat) {
  MetricsRegistry registry;
  auto& requests = registry.counter("rest_client_requests_total", "Number of HTTP requests.",
                                    {"code", "method"});
  requests.withLabels({"200", "GET"}).inc();
  requests.withLabels({"200", "GET"}).inc(2);
  requests.withLabels({"404", "GET"}).inc();
  registry.gauge("workqueue_depth", "Current depth", {"name"}).withLabels({"a\"b\\c\nd"}).set(4);
  auto& latency = registry.histogram("op_seconds", "Latency\nof ops", {}, {0.1, 1});
  latency.withLabels({}).observe(0.05);
  latency.withLabels({}).observe(0.5);
  latency.withLabels({}).observe(5);

  EXPECT_EQ(registry.render(), "# HELP op_seconds Latency\\nof ops\n"
                               "# TYPE op_seconds histogram\n"
                               "op_seconds_bucket{le=\"0.1\"} 1\n"
                               "op_seconds_bucket{le=\"1\"} 2\n"
                               "op_seconds_bucket{le=\"+Inf\"} 3\n"
                               "op_seconds_sum 5.55\n"
                               "op_seconds_count 3\n"
                               "# HELP rest_client_requests_total Number of HTTP requests.\n"
                               "# TYPE rest_client_requests_total counter\n"
                               "rest_client_requests_total{code=\"200\",method=\"GET\"} 3\n"
                               "rest_client_requests_total{code=\"404\",method=\"GET\"} 1\n"
                               "# HELP workqueue_depth Current depth\n"
                               "# TYPE workqueue_depth gauge\n"
                               "workqueue_depth{name=\"a\\\"b\\\\c\\nd\"} 4\n");
}

TEST(MetricsTest, SameNameReturnsTheSameFamilyAndChildrenCanBeRemoved) {
  MetricsRegistry registry;
  auto& first = registry.gauge("captf_ready", "Ready", {"name"});
  auto& second = registry.gauge("captf_ready", "Ready", {"name"});
  EXPECT_EQ(&first, &second);
  first.withLabels({"x"}).set(1);
  first.remove({"x"});
  EXPECT_EQ(registry.render(), "# HELP captf_ready Ready\n# TYPE captf_ready gauge\n");
}

TEST(MetricsTest, GaugeFuncsAreCollectedAtScrape) {
  MetricsRegistry registry;
  int calls = 0;
  registry.gaugeFunc("captf_cache_objects", "Objects", {"kind"}, [&](auto& samples) {
    ++calls;
    samples.push_back({{"Secret"}, 2});
    samples.push_back({{"ConfigMap"}, 1.5});
  });
  std::string text = registry.render();
  EXPECT_EQ(calls, 1);
  EXPECT_NE(text.find("captf_cache_objects{kind=\"ConfigMap\"} 1.5\n"
                      "captf_cache_objects{kind=\"Secret\"} 2\n"),
            std::string::npos)
      << text;
}

TEST(MetricsTest, CounterFuncsAreCollectedAtScrapeAndTypedCounter) {
  MetricsRegistry registry;
  double cpu = 1.25;
  registry.counterFunc("process_cpu_seconds_total", "CPU", {}, [&](auto& samples) {
    samples.push_back({{}, cpu});
  });
  EXPECT_EQ(registry.render(), "# HELP process_cpu_seconds_total CPU\n"
                               "# TYPE process_cpu_seconds_total counter\n"
                               "process_cpu_seconds_total 1.25\n");
  cpu = 1700000012.34; // every digit kept, not 1.7e+09
  EXPECT_THAT(registry.render(), ::testing::HasSubstr("process_cpu_seconds_total 1700000012.34\n"));
  EXPECT_EQ(registry.describe().front().type, MetricType::kCounter);
}

TEST(MetricsTest, ExponentialBuckets) {
  EXPECT_EQ(exponentialBuckets(1, 10, 3), (std::vector<double>{1, 10, 100}));
  EXPECT_EQ(reconcileTimeBuckets().front(), 0.005);
  EXPECT_EQ(reconcileTimeBuckets().back(), 60);
}

TEST(DiagnosticsServerTest, ProbesFollowKubernetesConventions) {
  MetricsRegistry registry;
  registry.counter("c_total", "C", {}).withLabels({}).inc();
  DiagnosticsServer server("127.0.0.1:0", &registry, testing::quietLogger());
  bool synced = false;
  server.addCheck(CheckKind::kHealthz, "ping", [] { return absl::OkStatus(); });
  server.addCheck(CheckKind::kReadyz, "informer-sync", [&] {
    return synced ? absl::OkStatus() : absl::UnavailableError("secret detail");
  });

  EXPECT_EQ(server.handle("/healthz"), (std::pair<int, std::string>{200, "ok"}));
  auto not_ready = server.handle("/readyz?verbose");
  EXPECT_EQ(not_ready.first, 500);
  EXPECT_NE(not_ready.second.find("[-]informer-sync failed"), std::string::npos);
  EXPECT_EQ(not_ready.second.find("secret detail"), std::string::npos);
  synced = true;
  EXPECT_EQ(server.handle("/readyz").first, 200);
  EXPECT_EQ(server.handle("/readyz?verbose").second, "[+]informer-sync ok\nreadyz check passed\n");
  EXPECT_EQ(server.handle("/readyz/informer-sync").first, 200);
  EXPECT_EQ(server.handle("/readyz/nope").first, 404);
  EXPECT_EQ(server.handle("/livez").first, 200);
  EXPECT_EQ(server.handle("/other").first, 404);
  auto metrics = server.handle("/metrics");
  EXPECT_EQ(metrics.first, 200);
  EXPECT_NE(metrics.second.find("c_total 1\n"), std::string::npos);
}

TEST(DiagnosticsServerTest, ServesOverHttp) {
  DiagnosticsServer server("127.0.0.1:0", nullptr, testing::quietLogger());
  server.addCheck(CheckKind::kHealthz, "ping", [] { return absl::OkStatus(); });
  ASSERT_TRUE(server.start().ok());
  ASSERT_GT(server.port(), 0);
  const std::string response = webhooks::testing::plainExchange(
      static_cast<uint16_t>(server.port()),
      "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0U) << response;
  EXPECT_EQ(response.substr(response.size() - 2), "ok");
  EXPECT_NE(response.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos)
      << response;
  EXPECT_NE(response.find("Cache-Control: no-store\r\n"), std::string::npos) << response;
  server.stop();
}

TEST(DiagnosticsServerTest, AnswersHeadWithoutABodyAndMetricsAsPrometheusText) {
  MetricsRegistry registry;
  registry.counter("c_total", "C", {}).withLabels({}).inc();
  DiagnosticsServer server("127.0.0.1:0", &registry, testing::quietLogger());
  ASSERT_TRUE(server.start().ok());
  // Two requests on one keep-alive connection.
  const std::string response = webhooks::testing::plainExchange(
      static_cast<uint16_t>(server.port()),
      "HEAD /livez HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const size_t second = response.find("HTTP/1.1 200 OK\r\n", 1);
  ASSERT_NE(second, std::string::npos) << response;
  const std::string head = response.substr(0, second);
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0U) << head;
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n") << head;
  const std::string metrics = response.substr(second);
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("c_total 1\n"), std::string::npos) << metrics;
}

TEST(DiagnosticsServerTest, RefusesMalformedAddresses) {
  for (const char* address : {"no-port", "127.0.0.1:x", "127.0.0.1:70000", "not-an-ip:0"}) {
    DiagnosticsServer server(address, nullptr, testing::quietLogger());
    const absl::Status started = server.start();
    EXPECT_TRUE(absl::IsInvalidArgument(started)) << address << ": " << started;
    EXPECT_EQ(server.port(), 0);
  }
}

} // namespace
} // namespace captf::kube
