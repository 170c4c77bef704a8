// webhook-server: the validating webhooks on their own, for tests and
// benchmarks (the manager serves the same WebhookServer in-process). Parses
// flags, sets up logging, wires AdmissionHandler to the API server and
// serves until SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "manager/kube/config.h"
#include "manager/kube/https_server.h"
#include "manager/kube/tls.h"
#include "webhooks/registrations.h"
#include "webhooks/service.h"

namespace {

using captf::kube::ServerOptions;

int run(int argc, char** argv) {
  CLI::App app{"CAPTF validating webhook server", "webhook-server"};
  ServerOptions options;
  std::string kubeconfig;
  std::string context;
  std::string tls_min_version = "VersionTLS12";
  std::string log_level = "info";
  bool print_configuration = false;
  app.add_option("--webhook-port", options.port, "Port of the webhook server")
      ->capture_default_str();
  app.add_option("--webhook-bind-address", options.address, "Address to listen on")
      ->capture_default_str();
  app.add_option("--webhook-cert-dir", options.cert_dir,
                 "Directory of the serving certificate and key")
      ->capture_default_str();
  app.add_option("--webhook-cert-name", options.cert_name, "Certificate file name")
      ->capture_default_str();
  app.add_option("--webhook-key-name", options.key_name, "Key file name")->capture_default_str();
  app.add_option("--tls-min-version", tls_min_version, "VersionTLS10..VersionTLS13")
      ->capture_default_str();
  app.add_option("--tls-cipher-suites", options.tls.cipher_suites,
                 "TLS 1.2 cipher suites (IANA names), comma-separated")
      ->delimiter(',');
  app.add_option("--kubeconfig", kubeconfig, "kubeconfig (out of cluster)");
  app.add_option("--context", context, "kubeconfig context");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.add_flag("--print-webhook-configuration", print_configuration,
               "Print the ValidatingWebhookConfiguration of config/webhook and exit");
  // CLI11 takes the arguments last first.
  std::vector<std::string> args;
  for (int i = argc - 1; i > 0; --i) {
    args.emplace_back(argv[i]);
  }
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (print_configuration) {
    std::cout << captf::webhooks::toYaml(
        captf::webhooks::validatingWebhookConfiguration(captf::webhooks::ServiceClientConfig{}));
    return 0;
  }

  auto logger = std::make_shared<spdlog::logger>("webhook-server",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_level(spdlog::level::from_str(log_level));

  absl::StatusOr<captf::kube::TlsVersion> min_version =
      captf::kube::parseTlsVersion(tls_min_version);
  if (!min_version.ok()) {
    logger->error("invalid flags error={}", std::string(min_version.status().message()));
    return 2;
  }
  options.tls.min_version = *min_version;

  captf::kube::LoadOptions load;
  load.kubeconfig = kubeconfig;
  load.context = context;
  absl::StatusOr<captf::kube::RestConfig> config = captf::kube::loadConfig(load);
  if (!config.ok()) {
    logger->error("cannot load the Kubernetes configuration error={}",
                  std::string(config.status().message()));
    return 1;
  }
  config->user_agent = "captf-webhook-server";
  auto service = captf::webhooks::AdmissionService::create(*config, options, logger);
  if (!service.ok()) {
    logger->error("cannot create the Kubernetes client error={}",
                  std::string(service.status().message()));
    return 1;
  }

  // Block the signals before any thread starts so that only sigwait sees
  // them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (absl::Status s = (*service)->listen(); !s.ok()) {
    logger->error("cannot start the webhook server error={}", std::string(s.message()));
    return 1;
  }
  // Tests read the port from here when they pass --webhook-port=0: flushed
  // now, since stdout is a pipe there and the process then waits.
  std::cout << "listening on port " << (*service)->port() << '\n' << std::flush;
  int received = 0;
  sigwait(&signals, &received);
  logger->info("stopping signal={}", received);
  (*service)->stop();
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Errors are Status values; an exception reaching here (flag parsing,
  // allocation) is reported rather than left to std::terminate.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "webhook-server: %s\n", e.what());
    return 1;
  }
}
