// manager: the CAPTF controller manager (docs/behaviour/components.md, docs/reference/flags.md).
// Parses the flags of docs/reference/flags.md (controller-runtime's and component-base's names),
// sets up logging, then wires the manager runtime (manager/kube), the reconcilers
// (manager/controllers) and the validating webhook server (webhooks/) in one
// process, and runs until SIGINT/SIGTERM or lost leadership.
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cctype>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include "absl/time/time.h"
#include "contract/logging.h"
#include "contract/roles.h"
#include "manager/controllers/options.h"
#include "manager/controllers/setup.h"
#include "manager/diagnostics/logging.h"
#include "manager/diagnostics/server.h"
#include "manager/flags/flags.h"
#include "manager/kube/config.h"
#include "manager/kube/diagnostics_server.h"
#include "manager/kube/discovery.h"
#include "manager/kube/https_server.h"
#include "manager/kube/manager.h"
#include "manager/kube/tls.h"
#include "webhooks/service.h"

#ifndef CAPTF_VERSION
#define CAPTF_VERSION "0.0.0"
#endif
#ifndef CAPTF_COMMIT
#define CAPTF_COMMIT "unknown"
#endif

namespace {

using captf::controllers::ControllerSettings;

// docs/behaviour/components.md: fixed, not parameterized by --namespace.
constexpr char kLeaderElectionId[] = "controller-leader-election-captf";
constexpr char kDefaultNamespace[] = "captf-system";

using captf::flags::parseDuration;

// A duration flag's value. Every one passed the Go duration check while
// parsing (manager/flags), so the zero fallback is never taken.
std::chrono::milliseconds flagDuration(const std::string& text) {
  const std::optional<std::chrono::milliseconds> d = parseDuration(text);
  assert(d.has_value());
  return d.value_or(std::chrono::milliseconds(0));
}

std::string leaderElectionNamespace() {
  if (const char* ns = std::getenv("POD_NAMESPACE"); ns != nullptr && *ns != '\0') {
    return ns;
  }
  std::ifstream in("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
  std::string ns;
  if (in && std::getline(in, ns) && !ns.empty()) {
    return ns;
  }
  return kDefaultNamespace;
}

std::string versionString() {
  return std::string("captf manager ") + CAPTF_VERSION + " (commit " + CAPTF_COMMIT +
         ", contract " + std::string(captf::contract::kContractVersion) + ")";
}

int run(int argc, char** argv) {
  CLI::App app{captf::flags::kManagerDescription, "manager"};
  captf::flags::ManagerFlags flags;
  if (const char* image = std::getenv("CAPTF_MANAGER_IMAGE"); image != nullptr) {
    flags.runner_image = image;
  }
  CLI::App* version_cmd = captf::flags::defineManagerFlags(app, flags, versionString());
  ControllerSettings& settings = flags.settings;
  captf::kube::ServerOptions& webhook = flags.webhook;

  try {
    app.parse(captf::flags::normalizeArgs(argc, argv));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (version_cmd->parsed()) {
    std::cout << versionString() << '\n';
    return 0;
  }

  captf::diagnostics::LogOptions log_options;
  log_options.json = flags.logging_format == "json";
  log_options.verbosity = flags.verbosity;
  log_options.split_stream =
      log_options.json ? flags.log_json_split_stream : flags.log_text_split_stream;
  log_options.flush_frequency = flagDuration(flags.log_flush_frequency);
  auto buffer = log_options.json
                    ? captf::diagnostics::parseBufferSize("--log-json-info-buffer-size",
                                                          flags.log_json_info_buffer_size)
                    : captf::diagnostics::parseBufferSize("--log-text-info-buffer-size",
                                                          flags.log_text_info_buffer_size);
  if (!buffer.ok()) {
    std::cerr << "invalid flags: " << buffer.status().message() << '\n';
    return 2;
  }
  log_options.info_buffer_bytes = *buffer;
  auto logger = captf::diagnostics::makeLogger(log_options);
  // docs/reference/flags.md: log the parsed flags.
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_name() == "--help" || option->get_name() == "--version") {
      continue;
    }
    std::string value = option->results().empty() ? option->get_default_str()
                                                  : CLI::detail::join(option->results(), ",");
    logger->info("FLAG: {}=\"{}\"", option->get_name(), value);
  }

  // Refuse invalid combinations.
  auto fail = [&](const std::string& message) {
    logger->error("invalid flags: {}", message);
    return 2;
  };
  if (flags.runner_image.empty()) {
    return fail("no runner image: set --runner-image or $CAPTF_MANAGER_IMAGE");
  }
  settings.runner_image = flags.runner_image;
  settings.cluster_operation_gate = flags.cluster_operation_gate
                                        ? captf::controllers::ClusterOperationGate::kOn
                                        : captf::controllers::ClusterOperationGate::kOff;
  settings.runner_events = flags.runner_events ? captf::controllers::RunnerEvents::kOn
                                               : captf::controllers::RunnerEvents::kOff;
  const auto drift = flagDuration(flags.drift_default_interval);
  const auto sync = flagDuration(flags.sync_period);
  const auto lease = flagDuration(flags.leader_elect_lease_duration);
  const auto renew = flagDuration(flags.leader_elect_renew_deadline);
  const auto retry = flagDuration(flags.leader_elect_retry_period);
  settings.drift_default_interval = std::chrono::duration_cast<std::chrono::seconds>(drift);
  settings.sync_period = std::chrono::duration_cast<std::chrono::seconds>(sync);
  settings.git_poll_interval =
      std::chrono::duration_cast<std::chrono::milliseconds>(flagDuration(flags.git_poll_interval));
  settings.git_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(flagDuration(flags.git_timeout));
  if (settings.git_poll_interval <= std::chrono::milliseconds(0) ||
      settings.git_timeout <= std::chrono::milliseconds(0) || settings.git_workers < 1) {
    return fail("--git-poll-interval and --git-timeout must be positive, --git-workers >= 1");
  }
  if (settings.state_backups < 0) {
    return fail("--state-backups must be >= 0");
  }
  // Checked by the flag's validator already; read once here.
  const std::optional<std::int64_t> secret_data_cache_bytes =
      captf::contract::parseByteQuantity(flags.secret_data_cache_size);
  if (!secret_data_cache_bytes) {
    return fail("--secret-data-cache-size must be a byte quantity such as 32Mi");
  }
  for (int c :
       {settings.terraformcluster_concurrency, settings.terraformmachine_concurrency,
        settings.terraformmachinepool_concurrency, settings.terraformmachinetemplate_concurrency}) {
    if (c < 1) {
      return fail("concurrency flags must be >= 1");
    }
  }
  if (flags.webhook_port < 0 || flags.webhook_port > 65535) {
    return fail("--webhook-port out of range");
  }
  webhook.port = static_cast<uint16_t>(flags.webhook_port);
  // The run reports serve the webhook's certificate; runners trust the
  // Secret's ca.crt, or the certificate itself when it is self-signed
  // (docs/decisions/run-reports.md).
  settings.run_reports.cert_file = webhook.cert_dir + "/" + webhook.cert_name;
  settings.run_reports.key_file = webhook.cert_dir + "/" + webhook.key_name;
  settings.run_reports.ca_file = std::filesystem::exists(webhook.cert_dir + "/ca.crt")
                                     ? webhook.cert_dir + "/ca.crt"
                                     : settings.run_reports.cert_file;
  auto min_version = captf::kube::parseTlsVersion(flags.tls_min_version);
  if (!min_version.ok()) {
    return fail(std::string(min_version.status().message()));
  }
  webhook.tls.min_version = *min_version;
  webhook.tls.cipher_suites = flags.tls_cipher_suites;
  webhook.tls.curve_preferences = flags.tls_curve_preferences;
  if (!flags.profiler_address.empty()) {
    logger->warn("--profiler-address is not supported by this build; ignored");
  }
  // docs/reference/metrics.md: HTTPS with TokenReview + SubjectAccessReview unless
  // --insecure-diagnostics; the same TLS settings as the webhook server.
  const bool diagnostics_enabled =
      !flags.diagnostics_address.empty() && flags.diagnostics_address != "0";
  captf::kube::ServerOptions diagnostics_options = captf::diagnostics::serverOptions();
  diagnostics_options.tls = webhook.tls;
  if (diagnostics_enabled && !flags.insecure_diagnostics) {
    if (absl::Status s =
            captf::diagnostics::parseAddress(flags.diagnostics_address, diagnostics_options);
        !s.ok()) {
      return fail("--diagnostics-address: " + std::string(s.message()));
    }
  }

  captf::kube::LoadOptions load;
  load.kubeconfig = flags.kubeconfig;
  auto config = captf::kube::loadConfig(load);
  if (!config.ok()) {
    logger->error("cannot load the Kubernetes configuration error=\"{}\"",
                  std::string(config.status().message()));
    return 1;
  }
  config->user_agent = "captf-manager/" CAPTF_VERSION;

  captf::kube::ManagerOptions options;
  options.name = "captf-manager";
  options.cache.ns = settings.watch_namespace;
  options.cache.resync_period = settings.sync_period;
  captf::controllers::configureCache(options.cache, settings);
  options.cache.payload_memo_bytes = static_cast<std::size_t>(*secret_data_cache_bytes);
  options.health_probe_address = flags.health_addr;
  options.probe_metrics = captf::kube::ProbeMetrics::kOmit;
  options.graceful_shutdown_timeout = flagDuration(flags.graceful_shutdown_timeout);
  options.feature_gates = captf::flags::featureGates(flags.feature_gates);
  if (flags.leader_elect) {
    options.leader_election = captf::kube::LeaderElectionMode::kEnabled;
    // One Lease per --watch-filter value: shards that split the objects
    // between them lead side by side (docs/decisions/manager-binary.md).
    options.leader_election_id = settings.watch_filter.empty()
                                     ? std::string(kLeaderElectionId)
                                     : std::string(kLeaderElectionId) + "-" + settings.watch_filter;
    options.leader_election_namespace = leaderElectionNamespace();
    options.leader_election_config.lease_duration = lease;
    options.leader_election_config.renew_deadline = renew;
    options.leader_election_config.retry_period = retry;
  }

  // Block the signals before any thread starts so that only sigwait sees
  // them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto manager = captf::kube::Manager::create(*config, std::move(options), logger);
  if (!manager.ok()) {
    logger->error("cannot create the manager error=\"{}\"",
                  std::string(manager.status().message()));
    return 1;
  }
  captf::kube::Manager& mgr = **manager;

  if (absl::Status s =
          captf::controllers::setupControllers(mgr, settings, CAPTF_VERSION, CAPTF_COMMIT, logger);
      !s.ok()) {
    logger->error("cannot set up the controllers error=\"{}\"", std::string(s.message()));
    return 1;
  }

  // The webhooks: every replica serves them, leader or not (docs/behaviour/components.md,
  // docs/reference/flags.md); the readiness probe includes the server. The manager owns the
  // service, and with it the server its checks point into.
  auto webhooks = captf::webhooks::AdmissionService::create(*config, std::move(webhook), logger,
                                                            &mgr.metrics());
  if (!webhooks.ok()) {
    logger->error("cannot set up the webhooks error=\"{}\"",
                  std::string(webhooks.status().message()));
    return 1;
  }
  captf::webhooks::AdmissionService* webhook_server = webhooks->get();
  if (absl::Status s = webhook_server->listen(); !s.ok()) {
    logger->error("cannot start the webhook server error=\"{}\"", std::string(s.message()));
    return 1;
  }
  logger->info("webhook server listening port={}", webhook_server->port());
  mgr.addCheck(captf::kube::CheckKind::kReadyz, "webhook",
               [webhook_server] { return webhook_server->ready(); });
  mgr.addCheck(captf::kube::CheckKind::kHealthz, "webhook",
               [webhook_server] { return webhook_server->ready(); });
  mgr.add(*std::move(webhooks), captf::kube::NeedLeaderElection::kNo);

  // Declared after the manager, whose metrics and client they read: they go
  // first.
  std::unique_ptr<captf::kube::DiagnosticsServer> insecure;
  std::unique_ptr<captf::diagnostics::SecureDiagnosticsServer> secure;
  if (diagnostics_enabled && flags.insecure_diagnostics) {
    insecure = std::make_unique<captf::kube::DiagnosticsServer>(flags.diagnostics_address,
                                                                &mgr.metrics(), logger);
    if (absl::Status s = insecure->start(); !s.ok()) {
      logger->error("cannot start the diagnostics server error=\"{}\"", std::string(s.message()));
      return 1;
    }
    logger->warn("diagnostics served over plain HTTP without authentication port={}",
                 insecure->port());
  } else if (diagnostics_enabled) {
    secure = std::make_unique<captf::diagnostics::SecureDiagnosticsServer>(
        diagnostics_options, mgr.metrics(), mgr.apiClient().rest(), captf::kube::realClock(),
        logger);
    if (absl::Status s = secure->start(); !s.ok()) {
      logger->error("cannot start the diagnostics server error=\"{}\"", std::string(s.message()));
      return 1;
    }
  }

  // The first SIGINT/SIGTERM stops the manager in order; a second one, or
  // the graceful shutdown timeout, ends the process at once, non-zero (a Job
  // a cut-short pass created is found and bookkept by the next leader).
  std::stop_source stop;
  std::atomic<bool> stopped{false};
  std::jthread signal_thread([&] {
    int received = 0;
    sigwait(&signals, &received);
    if (stopped.load()) {
      return;
    }
    logger->info("stopping, waiting for in-flight reconciles signal={} gracePeriod={}", received,
                 flags.graceful_shutdown_timeout);
    stop.request_stop();
    sigwait(&signals, &received);
    if (stopped.load()) {
      return;
    }
    logger->error("second signal, exiting at once with in-flight work abandoned signal={}",
                  received);
    logger->flush();
    std::_Exit(1);
  });
  logger->info("starting manager version={} identity={}", CAPTF_VERSION, mgr.identity());
  absl::Status status = mgr.run(stop.get_token());
  if (absl::IsDeadlineExceeded(status) || !stop.stop_requested()) {
    // Leadership lost, a runnable failed, or in-flight work outlived the
    // grace period: exit at once, as controller-runtime does, without
    // destroying what that work may still use.
    logger->error("manager stopped error=\"{}\"", std::string(status.message()));
    logger->flush();
    std::_Exit(1);
  }
  if (insecure) {
    insecure->stop();
  }
  if (secure) {
    secure->stop();
  }
  // Wake the signal thread, which still waits for a second signal.
  stopped.store(true);
  // NOLINTNEXTLINE(bugprone-bad-signal-to-kill-thread): it wakes sigwait, which then returns.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  logger->info("manager stopped");
  logger->flush();
  return status.ok() ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  // glibc gives each thread that allocates its own arena (up to 8 per core),
  // and the reconcile workers, informers and HTTP threads each keep freed
  // memory in theirs: two arenas cut the manager's peak RSS at 200 objects
  // from 88 to 59 MiB at about the same CPU (bench/manager/README.md). An
  // operator's MALLOC_ARENA_MAX still wins.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) {
    mallopt(M_ARENA_MAX, 2);
  }
  // A peer that closes its connection mid-write (libgit2's HTTPS and SSH
  // transports of the ref watcher write to sockets without MSG_NOSIGNAL) is a
  // write error to handle, not the end of the process.
  std::signal(SIGPIPE, SIG_IGN);
  // Errors are Status values; an exception reaching here (flag parsing,
  // allocation) is reported rather than left to std::terminate.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "manager: %s\n", e.what());
    return 1;
  }
}
