// manager: the CAPTF controller manager (spec/captf-core.md §1, §10). Parses
// the flags of §10 (controller-runtime's and component-base's names), sets up
// logging, then wires the manager runtime (manager/kube), the reconcilers
// (manager/controllers) and the validating webhook server (webhooks/) in one
// process, and runs until SIGINT/SIGTERM or lost leadership.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
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
#include "contract/roles.h"
#include "manager/controllers/options.h"
#include "manager/controllers/setup.h"
#include "manager/diagnostics/logging.h"
#include "manager/diagnostics/server.h"
#include "manager/kube/config.h"
#include "manager/kube/diagnostics_server.h"
#include "manager/kube/discovery.h"
#include "manager/kube/manager.h"
#include "webhooks/server.h"
#include "webhooks/service.h"

#ifndef CAPTF_VERSION
#define CAPTF_VERSION "0.0.0"
#endif
#ifndef CAPTF_COMMIT
#define CAPTF_COMMIT "unknown"
#endif

namespace {

using captf::controllers::ControllerSettings;

// §1.3: fixed, not parameterized by --namespace.
constexpr char kLeaderElectionId[] = "controller-leader-election-captf";
constexpr char kDefaultNamespace[] = "captf-system";

// Go durations as cobra takes them: "30m0s", "10s", "1h", "1.5h", "500ms"
// (absl::ParseDuration reads Go's syntax); finite and not negative.
std::optional<std::chrono::milliseconds> parseDuration(const std::string& text) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d == absl::InfiniteDuration() || d < absl::ZeroDuration()) {
    return std::nullopt;
  }
  return absl::ToChronoMilliseconds(d);
}

// CLI11 names the flag in its error: "--sync-period: want a duration ...".
const CLI::Validator kGoDuration(
    [](const std::string& value) {
      return parseDuration(value) ? std::string()
                                  : "want a duration such as 30s, 10m0s or 1h30m, not " + value;
    },
    "DURATION");

// cobra/pflag accept "--a_b" for "--a-b" (component-base's word-sepatator
// normalization); CLI11 does not, so names are normalized before parsing.
std::vector<std::string> normalizeArgs(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0) {
      const size_t end = arg.find('=');
      for (size_t j = 2; j < std::min(end, arg.size()); ++j) {
        if (arg[j] == '_') {
          arg[j] = '-';
        }
      }
    }
    args.push_back(arg);
  }
  std::reverse(args.begin(), args.end()); // CLI11 takes a reversed vector
  return args;
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
  CLI::App app{"CAPTF, the Cluster API infrastructure provider for Terraform/OpenTofu modules",
               "manager"};
  app.set_version_flag("--version", versionString());
  auto* version_cmd = app.add_subcommand("version", "Print the build stamp and exit");

  ControllerSettings settings;
  bool gate = true;
  bool runner_events = true;
  std::string drift_default_interval = "30m0s";
  std::string sync_period = "10m0s";
  std::string runner_image;
  if (const char* image = std::getenv("CAPTF_MANAGER_IMAGE"); image != nullptr) {
    runner_image = image;
  }
  bool leader_elect = false;
  std::string le_lease_duration = "15s";
  std::string le_renew_deadline = "10s";
  std::string le_retry_period = "2s";
  std::string graceful_shutdown_timeout = "5s";
  captf::webhooks::ServerOptions webhook;
  int webhook_port = 9443;
  std::string diagnostics_address = ":8443";
  bool insecure_diagnostics = false;
  std::vector<std::string> tls_cipher_suites;
  std::vector<int> tls_curve_preferences;
  std::string tls_min_version = "VersionTLS12";
  std::string feature_gates;
  std::string log_flush_frequency = "5s";
  std::string log_json_info_buffer_size = "0";
  bool log_json_split_stream = false;
  std::string log_text_info_buffer_size = "0";
  bool log_text_split_stream = false;
  std::string logging_format = "text";
  int verbosity = 2;
  std::string vmodule;
  std::string health_addr = ":9440";
  std::string kubeconfig;
  std::string profiler_address;

  app.add_flag("--cluster-operation-gate", gate,
               "Serialize cluster apply/destroy/restore against machine and pool operations")
      ->default_str("true");
  app.add_option("--drift-default-interval", drift_default_interval, "Fallback drift interval")
      ->check(kGoDuration)
      ->capture_default_str();
  app.add_flag("--runner-events", runner_events, "Runners emit progress events")
      ->default_str("true");
  app.add_option("--runner-report-address", settings.run_reports.address,
                 "host:port runners send their run reports to (the report Service); empty: none")
      ->capture_default_str();
  app.add_option("--runner-report-bind-address", settings.run_reports.bind_address,
                 "Address the run report server (gRPC, TLS) binds")
      ->capture_default_str();
  app.add_option("--runner-image", runner_image,
                 "Image of the runner init container (default $CAPTF_MANAGER_IMAGE)");
  app.add_option("--state-backups", settings.state_backups, "State backups kept per object")
      ->capture_default_str();
  app.add_option("--namespace", settings.watch_namespace, "Watch a single namespace (empty: all)");
  app.add_option("--sync-period", sync_period, "Informer resync period")
      ->check(kGoDuration)
      ->capture_default_str();
  std::string git_poll_interval = "1m0s";
  std::string git_timeout = "30s";
  app.add_option("--git-poll-interval", git_poll_interval,
                 "How often each Git remote's branches and tags are listed")
      ->check(kGoDuration)
      ->capture_default_str();
  app.add_option("--git-timeout", git_timeout, "Upper bound of one Git remote listing")
      ->check(kGoDuration)
      ->capture_default_str();
  app.add_option("--git-workers", settings.git_workers, "Git remotes listed at once")
      ->capture_default_str();
  app.add_option("--terraformcluster-concurrency", settings.terraformcluster_concurrency)
      ->capture_default_str();
  app.add_option("--terraformmachine-concurrency", settings.terraformmachine_concurrency)
      ->capture_default_str();
  app.add_option("--terraformmachinepool-concurrency", settings.terraformmachinepool_concurrency)
      ->capture_default_str();
  app.add_option("--terraformmachinetemplate-concurrency",
                 settings.terraformmachinetemplate_concurrency)
      ->capture_default_str();
  app.add_option("--insecure-registry", settings.insecure_registries,
                 "Registry host[:port] the machine template controller may read over plain "
                 "HTTP (repeatable)")
      ->delimiter(',');
  app.add_option("--watch-filter", settings.watch_filter,
                 "Reconcile only objects labeled cluster.x-k8s.io/watch-filter=<value>");
  app.add_flag("--leader-elect", leader_elect, "Enable leader election")->default_str("false");
  app.add_option("--leader-elect-lease-duration", le_lease_duration)
      ->check(kGoDuration)
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", le_renew_deadline)
      ->check(kGoDuration)
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", le_retry_period)
      ->check(kGoDuration)
      ->capture_default_str();
  app.add_option("--graceful-shutdown-timeout", graceful_shutdown_timeout,
                 "How long in-flight reconciles may run after SIGTERM before the process exits "
                 "non-zero (keep it well under terminationGracePeriodSeconds)")
      ->check(kGoDuration)
      ->capture_default_str();
  app.add_option("--webhook-cert-dir", webhook.cert_dir)->capture_default_str();
  app.add_option("--webhook-cert-name", webhook.cert_name)->capture_default_str();
  app.add_option("--webhook-key-name", webhook.key_name)->capture_default_str();
  app.add_option("--webhook-port", webhook_port, "Webhook server port (0: any)")
      ->capture_default_str();
  app.add_option("--diagnostics-address", diagnostics_address,
                 "Metrics (and, when secure, /debug/flags/v) address; 0 disables")
      ->capture_default_str();
  app.add_flag("--insecure-diagnostics", insecure_diagnostics,
               "Serve diagnostics over plain HTTP without authentication (development only)")
      ->default_str("false");
  app.add_option("--tls-cipher-suites", tls_cipher_suites)->delimiter(',');
  app.add_option("--tls-curve-preferences", tls_curve_preferences)->delimiter(',');
  app.add_option("--tls-min-version", tls_min_version)->capture_default_str();
  app.add_option("--feature-gates", feature_gates, "Logging feature gates (key=bool,...)");
  app.add_option("--log-flush-frequency", log_flush_frequency)
      ->check(kGoDuration)
      ->capture_default_str();
  app.add_option("--log-json-info-buffer-size", log_json_info_buffer_size)->capture_default_str();
  app.add_flag("--log-json-split-stream", log_json_split_stream)->default_str("false");
  app.add_option("--log-text-info-buffer-size", log_text_info_buffer_size)->capture_default_str();
  app.add_flag("--log-text-split-stream", log_text_split_stream)->default_str("false");
  app.add_option("--logging-format", logging_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("-v,--v", verbosity, "Log verbosity")->capture_default_str();
  app.add_option("--vmodule", vmodule, "pattern=N,... (text only)");
  app.add_option("--health-addr", health_addr, "Health and readiness probes address")
      ->capture_default_str();
  app.add_option("--kubeconfig", kubeconfig, "kubeconfig (out of cluster)");
  app.add_option("--profiler-address", profiler_address, "pprof bind address (unsupported)");

  try {
    app.parse(normalizeArgs(argc, argv));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (version_cmd->parsed()) {
    std::cout << versionString() << std::endl;
    return 0;
  }

  captf::diagnostics::LogOptions log_options;
  log_options.json = logging_format == "json";
  log_options.verbosity = verbosity;
  log_options.split_stream = log_options.json ? log_json_split_stream : log_text_split_stream;
  log_options.flush_frequency = *parseDuration(log_flush_frequency);
  auto buffer = log_options.json
                    ? captf::diagnostics::parseBufferSize("--log-json-info-buffer-size",
                                                          log_json_info_buffer_size)
                    : captf::diagnostics::parseBufferSize("--log-text-info-buffer-size",
                                                          log_text_info_buffer_size);
  if (!buffer.ok()) {
    std::cerr << "invalid flags: " << buffer.status().message() << std::endl;
    return 2;
  }
  log_options.info_buffer_bytes = *buffer;
  auto logger = captf::diagnostics::makeLogger(log_options);
  // §10: log the parsed flags.
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
  if (runner_image.empty()) {
    return fail("no runner image: set --runner-image or $CAPTF_MANAGER_IMAGE");
  }
  settings.runner_image = runner_image;
  settings.cluster_operation_gate = gate ? captf::controllers::ClusterOperationGate::kOn
                                         : captf::controllers::ClusterOperationGate::kOff;
  settings.runner_events = runner_events ? captf::controllers::RunnerEvents::kOn
                                         : captf::controllers::RunnerEvents::kOff;
  const auto drift = parseDuration(drift_default_interval);
  const auto sync = parseDuration(sync_period);
  const auto lease = parseDuration(le_lease_duration);
  const auto renew = parseDuration(le_renew_deadline);
  const auto retry = parseDuration(le_retry_period);
  // Every duration flag passed kGoDuration while parsing.
  settings.drift_default_interval = std::chrono::duration_cast<std::chrono::seconds>(*drift);
  settings.sync_period = std::chrono::duration_cast<std::chrono::seconds>(*sync);
  settings.git_poll_interval =
      std::chrono::duration_cast<std::chrono::milliseconds>(*parseDuration(git_poll_interval));
  settings.git_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(*parseDuration(git_timeout));
  if (settings.git_poll_interval <= std::chrono::milliseconds(0) ||
      settings.git_timeout <= std::chrono::milliseconds(0) || settings.git_workers < 1) {
    return fail("--git-poll-interval and --git-timeout must be positive, --git-workers >= 1");
  }
  if (settings.state_backups < 0) {
    return fail("--state-backups must be >= 0");
  }
  for (int c :
       {settings.terraformcluster_concurrency, settings.terraformmachine_concurrency,
        settings.terraformmachinepool_concurrency, settings.terraformmachinetemplate_concurrency}) {
    if (c < 1) {
      return fail("concurrency flags must be >= 1");
    }
  }
  if (webhook_port < 0 || webhook_port > 65535) {
    return fail("--webhook-port out of range");
  }
  webhook.port = static_cast<uint16_t>(webhook_port);
  // The run reports serve the webhook's certificate; runners trust the
  // Secret's ca.crt, or the certificate itself when it is self-signed
  // (docs/decisions/run-reports.md).
  settings.run_reports.cert_file = webhook.cert_dir + "/" + webhook.cert_name;
  settings.run_reports.key_file = webhook.cert_dir + "/" + webhook.key_name;
  settings.run_reports.ca_file = std::filesystem::exists(webhook.cert_dir + "/ca.crt")
                                     ? webhook.cert_dir + "/ca.crt"
                                     : settings.run_reports.cert_file;
  auto min_version = captf::webhooks::parseTlsVersion(tls_min_version);
  if (!min_version.ok()) {
    return fail(std::string(min_version.status().message()));
  }
  webhook.tls.min_version = *min_version;
  webhook.tls.cipher_suites = tls_cipher_suites;
  webhook.tls.curve_preferences = tls_curve_preferences;
  if (!profiler_address.empty()) {
    logger->warn("--profiler-address is not supported by this build; ignored");
  }
  // §8: HTTPS with TokenReview + SubjectAccessReview unless
  // --insecure-diagnostics; the same TLS settings as the webhook server.
  const bool diagnostics_enabled = !diagnostics_address.empty() && diagnostics_address != "0";
  captf::webhooks::ServerOptions diagnostics_options = captf::diagnostics::serverOptions();
  diagnostics_options.tls = webhook.tls;
  if (diagnostics_enabled && !insecure_diagnostics) {
    if (absl::Status s = captf::diagnostics::parseAddress(diagnostics_address, diagnostics_options);
        !s.ok()) {
      return fail("--diagnostics-address: " + std::string(s.message()));
    }
  }

  captf::kube::LoadOptions load;
  load.kubeconfig = kubeconfig;
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
  options.health_probe_address = health_addr;
  options.probe_metrics = captf::kube::ProbeMetrics::kOmit;
  options.graceful_shutdown_timeout = *parseDuration(graceful_shutdown_timeout);
  if (leader_elect) {
    options.leader_election = captf::kube::LeaderElectionMode::kEnabled;
    options.leader_election_id = kLeaderElectionId;
    options.leader_election_namespace = leaderElectionNamespace();
    options.leader_election_config.lease_duration = *lease;
    options.leader_election_config.renew_deadline = *renew;
    options.leader_election_config.retry_period = *retry;
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

  // The webhooks: every replica serves them, leader or not (§1, §10); the
  // readiness probe includes the server. The manager owns the service, and
  // with it the server its checks point into.
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
  if (diagnostics_enabled && insecure_diagnostics) {
    insecure = std::make_unique<captf::kube::DiagnosticsServer>(diagnostics_address, &mgr.metrics(),
                                                                logger);
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
                 graceful_shutdown_timeout);
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
  return run(argc, argv);
}
