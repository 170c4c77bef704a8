// The shipped alerts on a real Prometheus (the version the rig builds,
// test/rig/build/prometheus.sh) scraping the real manager on the rig's capi
// tier: the manager serves its secure diagnostics endpoint (TokenReview +
// SubjectAccessReview), Prometheus scrapes it with the token of the
// ServiceAccount config/prometheus's captf-metrics-reader binding names, and
// evaluates config/prometheus/rules.yaml. A TerraformCluster whose module
// always fails its plan makes its apply Jobs fail (retried after 1, 2, 4
// minutes), and CAPTFJobFailing fires (from the second failure on) for kind TerraformCluster, op
// apply, with its runbook link. The exposition the manager serves passes `promtool check metrics`.
// docs/runbooks/CAPTFJobFailing.md says what the alert means.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "contract/roles.h"
#include "test/manager/controllers/manager_e2e.h"
#include "test/prometheus/support.h"
#include "test/runner/e2e_support.h"

namespace captf::prometheus {
namespace {

namespace e2e = controllers::e2e;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kNamespace[] = "prom-e2e";
// The subject of config/prometheus/metrics_reader_role_binding.yaml.
constexpr char kScraperNamespace[] = "monitoring";
constexpr char kScraper[] = "prometheus-k8s";

class PrometheusE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    manager_.runner_image = runner::e2e::Images::get().runner();
    e2e::createTenant(kNamespace, kNamespace, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    // The secure endpoint, as config/manager runs it.
    manager_.start({"--insecure-diagnostics=false"});
    dir_ = e2e::env().dir + "/prometheus-e2e";
    std::filesystem::create_directories(dir_ + "/data");
  }

  static void TearDownTestSuite() {
    if (prometheus_pid_ > 0) {
      ::kill(prometheus_pid_, SIGTERM);
      int status = 0;
      ::waitpid(prometheus_pid_, &status, 0);
    }
    manager_.stopCleanly();
  }

  static std::string metricsUrl() {
    return "https://127.0.0.1:" + std::to_string(manager_.metrics_port) + "/metrics";
  }
  // GET of the manager's /metrics with `token` ("" for none): the HTTP status
  // code, then the body.
  static std::pair<std::string, std::string> scrape(const std::string& token) {
    std::vector<std::string> argv = {"curl", "-sk",         "-o", dir_ + "/scrape.txt",
                                     "-w",   "%{http_code}"};
    if (!token.empty()) {
      argv.emplace_back("-H");
      argv.push_back("Authorization: Bearer " + token);
    }
    argv.push_back(metricsUrl());
    const rig::CommandResult r = rig::run(argv);
    return {r.output, readFile(dir_ + "/scrape.txt")};
  }
  static std::string token(const std::string& ns, const std::string& account) {
    const rig::CommandResult r =
        e2e::kubectl({"-n", ns, "create", "token", account, "--duration=2h"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::string t = r.output;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) {
      t.pop_back();
    }
    return t;
  }
  static json prometheusApi(const std::string& path) {
    const rig::CommandResult r =
        rig::run({"curl", "-sf", "http://127.0.0.1:" + std::to_string(prometheus_port_) + path});
    return r.exit_code == 0 ? json::parse(r.output, nullptr, false) : json();
  }

  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static inline e2e::ManagerRig manager_;
  static inline std::string dir_;
  static inline pid_t prometheus_pid_ = -1;
  static inline int prometheus_port_ = 0;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

TEST_F(PrometheusE2eTest, TheJobFailingAlertFiresFromTheSecureEndpoint) {
  // The scraper's identity and rights exactly as config/prometheus ships them.
  e2e::kubectl({"create", "namespace", kScraperNamespace});
  e2e::kubectl({"-n", kScraperNamespace, "create", "serviceaccount", kScraper});
  e2e::kubectl({"-n", kScraperNamespace, "create", "serviceaccount", "not-a-scraper"});
  for (const char* file : {"metrics_reader_role.yaml", "metrics_reader_role_binding.yaml"}) {
    const rig::CommandResult r = e2e::kubectl(
        {"apply", "--server-side", "-f", e2e::sourceDir() + "/config/prometheus/" + file});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const std::string scraper_token = token(kScraperNamespace, kScraper);
  ASSERT_FALSE(scraper_token.empty());
  writeFile(dir_ + "/token", scraper_token);

  // The endpoint: 401 without a token, 403 for an account without the
  // binding, the exposition for the scraper.
  std::pair<std::string, std::string> got;
  ASSERT_TRUE(e2e::eventually([&] {
    got = scrape(scraper_token);
    return got.first == "200";
  })) << got.first
      << " " << got.second << manager_.processLog();
  EXPECT_THAT(got.second, HasSubstr("# TYPE captf_jobs_total counter"));
  EXPECT_EQ(scrape("").first, "401");
  EXPECT_EQ(scrape(token(kScraperNamespace, "not-a-scraper")).first, "403");
  const rig::CommandResult lint = rig::run({e2e::env().promtool, "check", "metrics"}, got.second);
  EXPECT_EQ(lint.exit_code, 0) << "promtool check metrics on the manager's /metrics:\n"
                               << lint.output;

  // Prometheus with the shipped rules, scraping every 2 seconds.
  ASSERT_TRUE(std::filesystem::is_regular_file(e2e::env().prometheus)) << e2e::env().prometheus;
  writeFile(dir_ + "/captf-rules.yaml", ruleFile(shippedRule()));
  writeFile(dir_ + "/prometheus.yaml", "global: {scrape_interval: 2s, evaluation_interval: 2s}\n"
                                       "rule_files: [" +
                                           dir_ +
                                           "/captf-rules.yaml]\n"
                                           "scrape_configs:\n"
                                           "- job_name: captf\n"
                                           "  scheme: https\n"
                                           "  authorization: {type: Bearer, credentials_file: " +
                                           dir_ +
                                           "/token}\n"
                                           // As config/prometheus/monitor.yaml: the manager's
                                           // certificate is self-signed unless one is mounted.
                                           "  tls_config: {insecure_skip_verify: true}\n"
                                           "  static_configs: [{targets: ['127.0.0.1:" +
                                           std::to_string(manager_.metrics_port) + "']}]\n");
  prometheus_port_ = e2e::freePort();
  prometheus_pid_ =
      rig::spawn({e2e::env().prometheus, "--config.file=" + dir_ + "/prometheus.yaml",
                  "--storage.tsdb.path=" + dir_ + "/data",
                  "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)},
                 dir_ + "/prometheus.log");
  ASSERT_GT(prometheus_pid_, 0);
  json targets;
  EXPECT_TRUE(e2e::eventually([&] {
    targets = prometheusApi("/api/v1/targets");
    if (!targets.is_object()) {
      return false;
    }
    for (const json& t : targets["data"]["activeTargets"]) {
      if (t.value("health", "") == "up") {
        return true;
      }
    }
    return false;
  })) << targets.dump(2)
      << readFile(dir_ + "/prometheus.log");
  json rules = prometheusApi("/api/v1/rules");
  ASSERT_TRUE(rules.is_object()) << readFile(dir_ + "/prometheus.log");
  EXPECT_EQ(rules["data"]["groups"][0]["rules"].size(), 11U) << rules.dump(2);

  // A cluster whose plan always fails. failedJobsHistoryLimit 10 keeps the
  // backoff at 1, 2, 4 minutes (the 10-minute cap starts at the limit).
  const std::string main_tf = runner::e2e::noopModule(contract::Role::kCluster, "1") +
                              "resource \"terraform_data\" \"broken\" {\n"
                              "  lifecycle {\n"
                              "    precondition {\n"
                              "      condition     = false\n"
                              "      error_message = \"prometheus e2e: this apply always fails\"\n"
                              "    }\n"
                              "  }\n"
                              "}\n";
  const std::string image =
      runner::e2e::Images::get().module("prom-e2e-failing", main_tf, e2e::env().tofu);
  e2e::createClusterPair(kNamespace, "failing", "failing",
                         {{"source", {{"image", image}}},
                          {"identityRef", {{"name", kNamespace}}},
                          {"jobs", {{"failedJobsHistoryLimit", 10}}}});

  json firing;
  const bool fired = e2e::eventually(
      [&] {
        const json alerts = prometheusApi("/api/v1/alerts");
        if (!alerts.is_object()) {
          return false;
        }
        for (const json& a : alerts["data"]["alerts"]) {
          const json& labels = a["labels"];
          if (labels.value("alertname", "") == "CAPTFJobFailing" &&
              a.value("state", "") == "firing") {
            firing = a;
            return true;
          }
        }
        return false;
      },
      std::chrono::seconds(900));
  const json tc = e2e::getJson({"-n", kNamespace, "get", "terraformcluster", "failing"});
  ASSERT_TRUE(fired) << tc.dump(2) << prometheusApi("/api/v1/alerts").dump(2)
                     << e2e::metricValue(scrape(scraper_token).second, "captf_jobs_total",
                                         {{"result", "failed"}})
                            .value_or(-1);
  EXPECT_EQ(firing["labels"].value("kind", ""), "TerraformCluster");
  EXPECT_EQ(firing["labels"].value("op", ""), "apply");
  EXPECT_EQ(firing["labels"].value("severity", ""), "warning");
  EXPECT_EQ(firing["annotations"].value("runbook_url", ""),
            "https://github.com/captf-io/cluster-api-provider-terraform/blob/main/docs/runbooks/"
            "CAPTFJobFailing.md");
  // What fired it: failed apply Jobs of this object.
  EXPECT_EQ(e2e::conditionOf(tc, "ApplyJobSucceeded", "reason"), "ApplyFailed") << tc.dump(2);
  // Two failures can be enough: the counter's child starts at 0 and
  // increase() extrapolates over the young series, so two failures a minute
  // apart read as a little more than 2 (docs/runbooks/CAPTFJobFailing.md).
  EXPECT_GE(e2e::runJobs(kNamespace, "failing", "apply").size(), 2U);
  EXPECT_GE(e2e::metricValue(scrape(scraper_token).second, "captf_jobs_total",
                             {{"kind", "TerraformCluster"}, {"op", "apply"}, {"result", "failed"}})
                .value_or(0),
            2);
}

} // namespace
} // namespace captf::prometheus
