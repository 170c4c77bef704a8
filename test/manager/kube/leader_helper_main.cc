// A manager process for the leader-election integration test:
//   kube_leader_helper KUBECONFIG NAMESPACE LEASE IDENTITY
// Prints "STARTED <identity>" when its non-leader runnable starts and
// "LEADING <identity>" when it becomes the leader. Exits 0 after SIGTERM
// (releasing the lease), 3 when leadership is lost, 1 on other errors.

#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "manager/kube/config.h"
#include "manager/kube/manager.h"

namespace {

using captf::kube::LeaderElectionMode;
using captf::kube::Manager;
using captf::kube::ManagerOptions;
using captf::kube::NeedLeaderElection;
using captf::kube::RunnableFunc;

absl::Status waitForStop(std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait(lock, stop, [] { return false; });
  return absl::OkStatus();
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: kube_leader_helper KUBECONFIG NAMESPACE LEASE IDENTITY\n";
    return 1;
  }
  std::string identity = argv[4];
  auto logger =
      std::make_shared<spdlog::logger>(identity, std::make_shared<spdlog::sinks::stderr_sink_mt>());

  // Signals are taken by a thread with sigwait so they turn into a stop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  captf::kube::LoadOptions load;
  load.kubeconfig = argv[1];
  auto config = captf::kube::loadConfig(load);
  if (!config.ok()) {
    logger->error("cannot load config: {}", config.status().ToString());
    return 1;
  }
  ManagerOptions options;
  options.leader_election = LeaderElectionMode::kEnabled;
  options.leader_election_namespace = argv[2];
  options.leader_election_id = argv[3];
  options.leader_election_config.identity = identity;
  options.leader_election_config.lease_duration = std::chrono::seconds(4);
  options.leader_election_config.renew_deadline = std::chrono::seconds(3);
  options.leader_election_config.retry_period = std::chrono::milliseconds(500);
  options.health_probe_address = "127.0.0.1:0";
  auto manager = Manager::create(*config, options, logger);
  if (!manager.ok()) {
    logger->error("cannot create the manager: {}", manager.status().ToString());
    return 1;
  }
  (*manager)->add(std::make_unique<RunnableFunc>([&](std::stop_token stop) {
                    std::printf("STARTED %s\n", identity.c_str());
                    std::fflush(stdout);
                    return waitForStop(stop);
                  }),
                  NeedLeaderElection::kNo);
  (*manager)->add(std::make_unique<RunnableFunc>([&](std::stop_token stop) {
                    std::printf("LEADING %s\n", identity.c_str());
                    std::fflush(stdout);
                    return waitForStop(stop);
                  }),
                  NeedLeaderElection::kYes);

  std::stop_source stop;
  std::jthread signal_thread([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    stop.request_stop();
  });
  absl::Status result = (*manager)->run(stop.get_token());
  std::printf("EXIT %s %s\n", identity.c_str(), result.ToString().c_str());
  std::fflush(stdout);
  if (absl::IsAborted(result)) {
    std::_Exit(3); // leadership lost: exit at once, as controller-runtime does
  }
  // The signal thread still waits: end it with the signal it waits for.
  if (!stop.stop_requested()) {
    // NOLINTNEXTLINE(bugprone-bad-signal-to-kill-thread): it wakes sigwait, which then returns.
    pthread_kill(signal_thread.native_handle(), SIGTERM);
  }
  return result.ok() ? 0 : 1;
}
