// The runner's overhead on the rig: one pod runs the runner's apply and the
// same runtime commands by hand, alternately, on the same noop module, and
// times `runner copy` (sequence.cc); this program sets the pod up the way
// the manager sets up a Job and prints what the pod measured.
//
//   runner_overhead_bench [--iterations N] [--mode machine|cluster]
//                         [--compare hand|reports]
//
// --compare reports serves the manager's report service (real gRPC over TLS,
// Events counted, not written) in this process, and the pod compares the
// runner's apply with reporting off and on.
//
// See README.md for the commands and the figures.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "bench/reports/bench_support.h"
#include "contract/inputs_hash.h"
#include "contract/report.h"
#include "manager/api/keys.h"
#include "manager/kube/metrics.h"
#include "manager/reports/report_server.h"
#include "manager/reports/run_reports.h"
#include "test/runner/e2e_support.h"

namespace {

using nlohmann::json;

using captf::bench::CountingEvents;
using captf::bench::slurp;

// The report service as the manager runs it, for the pod's Job `ns/job`:
// a self-signed serving certificate for 127.0.0.1 (Job pods share the
// node's network on the rig) and a lookup that answers the Job with the
// token's hash, as the Job builder annotates it.
struct ReportService {
  ReportService(const std::string& ns, const std::string& job) {
    dir = std::filesystem::temp_directory_path() / ("runner-bench-reports-" + ns);
    std::filesystem::create_directories(dir);
    const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                            "-addext subjectAltName=IP:127.0.0.1 -keyout " +
                            (dir / "tls.key").string() + " -out " + (dir / "tls.crt").string() +
                            " 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) {
      throw std::runtime_error("openssl could not make the serving certificate");
    }
    ca = slurp(dir / "tls.crt");
    captf::reports::ReportServerOptions options;
    options.bind_address = "127.0.0.1:0";
    options.cert_file = dir / "tls.crt";
    options.key_file = dir / "tls.key";
    const std::string hash = captf::contract::reportTokenHash(token);
    server = std::make_unique<captf::reports::ReportServer>(
        options,
        [ns, job, hash](const std::string& n, const std::string& name) -> absl::StatusOr<json> {
          if (n != ns || name != job) {
            return absl::NotFoundError("no such Job");
          }
          return json{
              {"metadata",
               {{"name", name},
                {"namespace", n},
                {"uid", "bench-job"},
                {"annotations", {{std::string(captf::api::kAnnotationReportTokenHash), hash}}},
                {"ownerReferences",
                 {{{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                   {"kind", "TerraformCluster"},
                   {"name", job},
                   {"uid", "bench-object"},
                   {"controller", true}}}}}}};
        },
        reports, metrics, std::make_shared<spdlog::logger>("bench"));
    if (absl::Status s = server->listen(); !s.ok()) {
      throw std::runtime_error("the report server could not listen: " + s.ToString());
    }
    serving = std::jthread([this](std::stop_token stop) { (void)server->start(stop); });
  }
  ~ReportService() {
    serving.request_stop();
    serving.join();
    std::filesystem::remove_all(dir);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server->port()); }

  std::string token = "bench-token-0123456789abcdef0123456789abcdef0123456789abcdef0123";
  std::filesystem::path dir;
  std::string ca;
  CountingEvents events;
  captf::reports::RunReports reports{events};
  captf::kube::MetricsRegistry metrics;
  std::unique_ptr<captf::reports::ReportServer> server;
  std::jthread serving;
};

} // namespace

int main(int argc, char** argv) {
  using namespace ::captf::runner::e2e;
  namespace contract = ::captf::contract;
  int iterations = 5;
  std::string mode = "machine";
  std::string compare = "hand";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--iterations") {
      iterations = std::atoi(argv[i + 1]);
    } else if (flag == "--mode") {
      mode = argv[i + 1];
    } else if (flag == "--compare") {
      compare = argv[i + 1];
    }
  }
  const contract::Role role =
      mode == "cluster" ? contract::Role::kCluster : contract::Role::kMachine;
  const std::string ns = "runner-bench-" + mode;
  createNamespace(ns);
  const std::string image =
      Images::get().module("bench-" + mode, noopModule(role), env().tofu,
                           {{CAPTF_RUNNER_BENCH_SEQUENCE, "/bench/sequence"}});
  const contract::RenderRequest request = renderRequest(role, ns, "bench");
  const auto hash = contract::inputsHash(request, image);
  if (!hash.ok()) {
    std::cerr << hash.status() << "\n";
    return 1;
  }
  JobRequest job{.ns = ns, .name = "bench", .image = image, .role = role, .object = "bench"};
  job.config = rootFiles(request);
  job.command = {"/bench/sequence",
                 "--iterations",
                 std::to_string(iterations),
                 "--namespace",
                 ns,
                 "--mode",
                 mode,
                 "--inputs-hash",
                 *hash,
                 "--labels",
                 backendLabels(role, "bench")};
  std::unique_ptr<ReportService> service;
  if (compare == "reports") {
    service = std::make_unique<ReportService>(ns, "bench");
    job.config[std::string(contract::kReportTokenKey)] = service->token;
    job.config[std::string(contract::kReportCaKey)] = service->ca;
    for (const std::string& arg :
         {std::string("--compare"), std::string("reports"), std::string("--report-address"),
          service->address(), std::string("--event-object"),
          "infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/" + ns + "/bench/bench-object",
          std::string("--job-name"), std::string("bench")}) {
      job.command.push_back(arg);
    }
  }
  startJob(job);
  const JobOutcome outcome = waitJob(ns, "bench", /*decode=*/false);
  std::string measurements;
  std::size_t start = 0;
  while (start < outcome.log.size()) {
    const auto end = std::min(outcome.log.find('\n', start), outcome.log.size());
    const std::string line = outcome.log.substr(start, end - start);
    if (line.starts_with("{\"iteration\"") || line.starts_with("{\"summary\"") ||
        std::getenv("BENCH_VERBOSE") != nullptr) {
      measurements += line + "\n";
    }
    start = end + 1;
  }
  std::cout << measurements;
  if (service != nullptr) {
    std::cout << R"({"reportServer":{"eventsPosted":)" << service->events.count.load() << "}}\n";
  }
  if (!outcome.succeeded) {
    std::cerr << "the benchmark pod failed (exit code " << outcome.exit_code << "):\n"
              << outcome.log << "\n"
              << podOf(ns, "bench")["status"].dump(2) << "\n";
    std::system(
        ("ls -R " + env().dir + "/pods; cat " + env().dir + "/pods/*bench*/logs/*").c_str());
    return 1;
  }
  return 0;
}
