// The runner's overhead on the rig: one pod runs the runner's apply and the
// same runtime commands by hand, alternately, on the same noop module, and
// times `runner copy` (sequence.cc); this program sets the pod up the way
// the manager sets up a Job and prints what the pod measured.
//
//   runner_overhead_bench [--iterations N] [--mode machine|cluster]
//
// See README.md for the commands and the figures.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "contract/inputs_hash.h"
#include "test/runner/e2e_support.h"

int main(int argc, char** argv) {
  using namespace ::captf::runner::e2e; // NOLINT(google-build-using-namespace)
  namespace contract = ::captf::contract;
  int iterations = 5;
  std::string mode = "machine";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--iterations") {
      iterations = std::atoi(argv[i + 1]);
    } else if (flag == "--mode") {
      mode = argv[i + 1];
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
