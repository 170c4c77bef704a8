// Run reports at load (bench/reports/README.md): one process serves the
// manager's ReportServer (real gRPC, real TLS; the Job lookup answers from
// memory and Events are counted, not written), another runs N runners'
// GrpcReporters at once, each sending one run's events.
//
//   report_bench serve DIR             writes DIR/port, serves until killed
//   report_bench send DIR N EVENTS     N concurrent reporters, EVENTS each
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "bench/reports/bench_support.h"
#include "contract/report.h"
#include "manager/api/keys.h"
#include "manager/kube/metrics.h"
#include "manager/reports/report_server.h"
#include "manager/reports/run_reports.h"
#include "runner/report.h"

namespace {

namespace pb = captf::runner::v1alpha1;
using nlohmann::json;

constexpr char kToken[] = "bench-token-0123456789abcdef0123456789abcdef0123456789abcdef0123";

using captf::bench::CountingEvents;
using captf::bench::slurp;

int serve(const std::string& dir) {
  CountingEvents events;
  captf::reports::RunReports reports(events);
  captf::kube::MetricsRegistry metrics;
  captf::reports::ReportServerOptions options;
  options.bind_address = "127.0.0.1:0";
  options.cert_file = dir + "/tls.crt";
  options.key_file = dir + "/tls.key";
  const std::string hash = captf::contract::reportTokenHash(kToken);
  captf::reports::ReportServer server(
      options,
      [&hash](const std::string& ns, const std::string& name) -> absl::StatusOr<json> {
        return json{
            {"metadata",
             {{"name", name},
              {"namespace", ns},
              {"uid", name},
              {"annotations", {{std::string(captf::api::kAnnotationReportTokenHash), hash}}},
              {"ownerReferences",
               {{{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                 {"kind", "TerraformCluster"},
                 {"name", name},
                 {"uid", "u"},
                 {"controller", true}}}}}}};
      },
      reports, metrics, std::make_shared<spdlog::logger>("bench"));
  if (!server.listen().ok()) {
    return 1;
  }
  std::ofstream(dir + "/port") << server.port();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sig = 0;
  sigwait(&set, &sig);
  std::printf("server: events posted %ld\n", events.count.load());
  return 0;
}

int send(const std::string& dir, int runners, int events) {
  const std::string address = "127.0.0.1:" + slurp(dir + "/port");
  const std::string ca = slurp(dir + "/tls.crt");
  captf::runner::SystemClock clock;
  std::atomic<unsigned long> accepted{0}, dropped{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(std::max(runners, 0)));
  for (int i = 0; i < runners; ++i) {
    threads.emplace_back([&, i] {
      captf::runner::ReportOptions options;
      options.address = address;
      options.token = kToken;
      options.ca_pem = ca;
      options.job = "bench/run-" + std::to_string(i);
      auto reporter = captf::runner::GrpcReporter::start(options, clock);
      if (!reporter.ok()) {
        return;
      }
      for (int e = 0; e < events; ++e) {
        pb::ReportRequest event;
        if (e % 10 == 0) {
          event.mutable_step_started()->set_step(pb::STEP_APPLY);
        } else {
          event.mutable_log_line()->set_text("module.net.aws_vpc.main: Still creating... [10s]");
        }
        (*reporter)->send(std::move(event));
        if (e % 50 == 49) { // a runtime prints in bursts, not all at once
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
      const captf::runner::ReportStats stats = (*reporter)->close(absl::Seconds(60));
      accepted += stats.accepted;
      dropped += stats.dropped;
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("runners %d, events each %d: accepted %lu, dropped %lu in %.2f s = %.0f events/s\n",
              runners, events, accepted.load(), dropped.load(), seconds,
              static_cast<double>(accepted.load()) / seconds);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "serve") {
    return serve(argv[2]);
  }
  if (argc == 5 && std::string(argv[1]) == "send") {
    return send(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  }
  std::fprintf(stderr, "usage: report_bench serve DIR | send DIR RUNNERS EVENTS\n");
  return 2;
}
