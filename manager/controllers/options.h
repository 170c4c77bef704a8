#pragma once

// The manager's settings that reach the reconcilers (docs/reference/flags.md),
// already parsed and validated by main.cc.

#include <chrono>
#include <set>
#include <string>

namespace captf::controllers {

enum class ClusterOperationGate { kOff, kOn };
enum class RunnerEvents { kOff, kOn };

struct ControllerSettings {
  // --runner-image / $CAPTF_MANAGER_IMAGE: the init container's image.
  std::string runner_image;
  ClusterOperationGate cluster_operation_gate = ClusterOperationGate::kOn;
  RunnerEvents runner_events = RunnerEvents::kOn;
  std::chrono::seconds drift_default_interval{std::chrono::minutes(30)};
  int state_backups = 5;
  // --namespace: empty watches every namespace.
  std::string watch_namespace;
  // --watch-filter: reconcile only objects labeled
  // cluster.x-k8s.io/watch-filter=<value>; empty: all.
  std::string watch_filter;
  std::chrono::seconds sync_period{std::chrono::minutes(10)};
  int terraformcluster_concurrency = 10;
  int terraformmachine_concurrency = 10;
  int terraformmachinepool_concurrency = 10;
  int terraformmachinetemplate_concurrency = 10;
  // --insecure-registry: registries the template controller reads over
  // plain HTTP when HTTPS fails to connect.
  std::set<std::string> insecure_registries;
  // The ref watcher (docs/decisions/git-sources.md): --git-poll-interval,
  // --git-timeout, --git-workers.
  std::chrono::milliseconds git_poll_interval{std::chrono::minutes(1)};
  std::chrono::milliseconds git_timeout{std::chrono::seconds(30)};
  int git_workers = 2;
  // The run reports (docs/decisions/run-reports.md), with --runner-events.
  // `address` (--runner-report-address) is what runners dial, "" for no
  // reports; the server binds `bind_address`
  // (--runner-report-bind-address) and serves the webhook's certificate;
  // runners trust `ca_file` (the certificate Secret's ca.crt, else the
  // certificate itself).
  struct RunReports {
    std::string address;
    std::string bind_address = ":9444";
    std::string cert_file;
    std::string key_file;
    std::string ca_file;
  } run_reports;

  bool runReportsOn() const {
    return runner_events == RunnerEvents::kOn && !run_reports.address.empty();
  }
};

} // namespace captf::controllers
