#include "manager/flags/flags.h"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

#include "absl/time/time.h"
#include "contract/logging.h"

namespace captf::flags {

std::optional<std::chrono::milliseconds> parseDuration(const std::string& text) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d == absl::InfiniteDuration() || d < absl::ZeroDuration()) {
    return std::nullopt;
  }
  return absl::ToChronoMilliseconds(d);
}

std::vector<std::string> normalizeArgs(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.starts_with("--")) {
      const size_t end = arg.find('=');
      for (size_t j = 2; j < std::min(end, arg.size()); ++j) {
        if (arg[j] == '_') {
          arg[j] = '-';
        }
      }
    }
    args.push_back(arg);
  }
  std::reverse(args.begin(), args.end());
  return args;
}

namespace {

// component-base's logging gates (k8s.io/component-base/logs/api/v1), the
// only ones the spec gives the manager, with their pre-release stage and
// default, plus its AllAlpha and AllBeta.
struct GateSpec {
  std::string_view name;
  std::string_view stage;
  bool enabled_by_default;
};
constexpr std::array<GateSpec, 5> kGates = {{
    {"AllAlpha", "ALPHA", false},
    {"AllBeta", "BETA", false},
    {"ContextualLogging", "BETA", true},
    {"LoggingAlphaOptions", "ALPHA", false},
    {"LoggingBetaOptions", "BETA", true},
}};

// Parses `value` into the gates it sets (a later entry wins); "" or what
// is wrong in component-base's wording.
std::string parseFeatureGates(std::string_view value, std::map<std::string_view, bool>& set) {
  // ParseBool's spellings.
  static constexpr std::array<std::string_view, 6> kTrue = {"1", "t", "T", "TRUE", "true", "True"};
  static constexpr std::array<std::string_view, 6> kFalse = {"0",     "f",     "F",
                                                             "FALSE", "false", "False"};
  const auto trim = [](std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
      text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
      text.remove_suffix(1);
    }
    return text;
  };
  while (!value.empty()) {
    const size_t comma = value.find(',');
    const std::string_view entry = trim(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    if (entry.empty()) {
      continue;
    }
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      return "missing bool value for " + std::string(entry);
    }
    const std::string_view key = trim(entry.substr(0, eq));
    const std::string_view flag = trim(entry.substr(eq + 1));
    const auto* gate = std::find_if(kGates.begin(), kGates.end(),
                                    [&](const GateSpec& g) { return g.name == key; });
    if (gate == kGates.end()) {
      return "unrecognized feature gate: " + std::string(key);
    }
    if (std::find(kTrue.begin(), kTrue.end(), flag) != kTrue.end()) {
      set[gate->name] = true;
    } else if (std::find(kFalse.begin(), kFalse.end(), flag) != kFalse.end()) {
      set[gate->name] = false;
    } else {
      return "invalid value of " + std::string(key) + "=" + std::string(flag) +
             ", err: want true or false";
    }
  }
  return "";
}

} // namespace

std::string checkFeatureGates(std::string_view value) {
  std::map<std::string_view, bool> set;
  return parseFeatureGates(value, set);
}

std::vector<kube::FeatureGate> featureGates(std::string_view value) {
  std::map<std::string_view, bool> set;
  parseFeatureGates(value, set);
  std::vector<kube::FeatureGate> gates;
  gates.reserve(kGates.size());
  for (const GateSpec& spec : kGates) {
    bool enabled = spec.enabled_by_default;
    if (auto it = set.find(spec.name); it != set.end()) {
      enabled = it->second;
    } else if (auto all = set.find(spec.stage == "ALPHA" ? "AllAlpha" : "AllBeta");
               all != set.end()) {
      enabled = all->second; // AllAlpha/AllBeta set the gates of their stage left unset
    }
    gates.push_back({std::string(spec.name), std::string(spec.stage), enabled});
  }
  return gates;
}

CLI::App* defineManagerFlags(CLI::App& app, ManagerFlags& f, const std::string& version) {
  // CLI11 names the flag in its error: "--sync-period: want a duration ...".
  const CLI::Validator go_duration(
      [](const std::string& value) {
        return parseDuration(value) ? std::string()
                                    : "want a duration such as 30s, 10m0s or 1h30m, not " + value;
      },
      "DURATION");
  const CLI::Validator byte_quantity(
      [](const std::string& value) {
        return contract::parseByteQuantity(value)
                   ? std::string()
                   : "want a size in bytes such as 0, 4096, 64Ki or 32Mi, not " + value;
      },
      "SIZE");
  const CLI::Validator feature_gates(
      [](const std::string& value) { return checkFeatureGates(value); }, "GATES");
  controllers::ControllerSettings& s = f.settings;

  app.set_version_flag("--version", version);
  CLI::App* version_cmd = app.add_subcommand("version", "Print the build stamp and exit");

  app.add_flag("--cluster-operation-gate", f.cluster_operation_gate,
               "Serialize cluster apply/destroy/restore against machine and pool operations")
      ->default_str("true");
  app.add_option("--drift-default-interval", f.drift_default_interval,
                 "Drift interval of objects whose spec sets none")
      ->check(go_duration)
      ->capture_default_str();
  app.add_flag("--runner-events", f.runner_events, "Runners emit progress events")
      ->default_str("true");
  app.add_option("--runner-report-address", s.run_reports.address,
                 "host:port runners send their run reports to (the report Service); empty: none")
      ->capture_default_str();
  app.add_option("--runner-report-bind-address", s.run_reports.bind_address,
                 "Address the run report server (gRPC, TLS) binds")
      ->capture_default_str();
  app.add_option("--runner-image", f.runner_image,
                 "Image of the runner init container (default $CAPTF_MANAGER_IMAGE)");
  app.add_option("--state-backups", s.state_backups,
                 "State backups kept per object; 0 takes none (existing ones stay restorable)")
      ->capture_default_str();
  app.add_option("--secret-data-cache-size", f.secret_data_cache_size,
                 "Bytes of managed Secrets' data kept in memory between reads (state, backups, "
                 "inputs); the cache holds only their metadata (a quantity such as 32Mi)")
      ->check(byte_quantity)
      ->capture_default_str();
  app.add_option("--namespace", s.watch_namespace,
                 "Watch a single namespace (empty: all; identities are always cluster-wide)");
  app.add_option("--sync-period", f.sync_period,
                 "Informer resync period; also the orphan sweep's cadence")
      ->check(go_duration)
      ->capture_default_str();
  app.add_option("--git-poll-interval", f.git_poll_interval,
                 "How often each Git remote's branches and tags are listed")
      ->check(go_duration)
      ->capture_default_str();
  app.add_option("--git-timeout", f.git_timeout, "Upper bound of one Git remote listing")
      ->check(go_duration)
      ->capture_default_str();
  app.add_option("--git-workers", s.git_workers, "Git remotes listed at once")
      ->capture_default_str();
  app.add_option("--terraformcluster-concurrency", s.terraformcluster_concurrency,
                 "TerraformClusters reconciled at once")
      ->capture_default_str();
  app.add_option("--terraformmachine-concurrency", s.terraformmachine_concurrency,
                 "TerraformMachines reconciled at once")
      ->capture_default_str();
  app.add_option("--terraformmachinepool-concurrency", s.terraformmachinepool_concurrency,
                 "TerraformMachinePools reconciled at once")
      ->capture_default_str();
  app.add_option("--terraformmachinetemplate-concurrency", s.terraformmachinetemplate_concurrency,
                 "TerraformMachineTemplates reconciled at once")
      ->capture_default_str();
  app.add_option("--insecure-registry", s.insecure_registries,
                 "Registry host[:port] the machine template controller may read over plain "
                 "HTTP (repeatable)")
      ->delimiter(',');
  app.add_option("--watch-filter", s.watch_filter,
                 "Reconcile only objects labeled cluster.x-k8s.io/watch-filter=<value>");
  app.add_flag("--leader-elect", f.leader_elect, "Enable leader election")->default_str("false");
  app.add_option("--leader-elect-lease-duration", f.leader_elect_lease_duration,
                 "How long non-leaders wait before they try to take a lease not renewed")
      ->check(go_duration)
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", f.leader_elect_renew_deadline,
                 "How long the leader retries renewing before it gives leadership up")
      ->check(go_duration)
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", f.leader_elect_retry_period,
                 "Wait between attempts to take or renew the lease")
      ->check(go_duration)
      ->capture_default_str();
  app.add_option("--graceful-shutdown-timeout", f.graceful_shutdown_timeout,
                 "How long in-flight reconciles may run after SIGTERM before the process exits "
                 "non-zero (keep it well under terminationGracePeriodSeconds)")
      ->check(go_duration)
      ->capture_default_str();
  app.add_option("--webhook-cert-dir", f.webhook.cert_dir,
                 "Directory of the webhook's serving certificate (also the run reports')")
      ->capture_default_str();
  app.add_option("--webhook-cert-name", f.webhook.cert_name,
                 "Certificate file in --webhook-cert-dir")
      ->capture_default_str();
  app.add_option("--webhook-key-name", f.webhook.key_name, "Private key file in --webhook-cert-dir")
      ->capture_default_str();
  app.add_option("--webhook-port", f.webhook_port, "Webhook server port (0: any)")
      ->capture_default_str();
  app.add_option("--diagnostics-address", f.diagnostics_address,
                 "Metrics (and, when secure, /debug/flags/v) address; 0 disables")
      ->capture_default_str();
  app.add_flag("--insecure-diagnostics", f.insecure_diagnostics,
               "Serve diagnostics over plain HTTP without authentication (development only)")
      ->default_str("false");
  app.add_option("--tls-cipher-suites", f.tls_cipher_suites,
                 "Cipher suites (Go names) of the webhook and diagnostics servers; empty: the "
                 "library's defaults")
      ->delimiter(',');
  app.add_option("--tls-curve-preferences", f.tls_curve_preferences,
                 "Key exchange curves as numeric Go CurveIDs")
      ->delimiter(',');
  app.add_option("--tls-min-version", f.tls_min_version,
                 "Lowest TLS version served: VersionTLS10 to VersionTLS13")
      ->capture_default_str();
  app.add_option("--feature-gates", f.feature_gates,
                 "Logging feature gates (key=bool,...): AllAlpha, AllBeta, ContextualLogging, "
                 "LoggingAlphaOptions, LoggingBetaOptions")
      ->check(feature_gates);
  app.add_option("--log-flush-frequency", f.log_flush_frequency,
                 "Longest time buffered log lines wait before they are written")
      ->check(go_duration)
      ->capture_default_str();
  app.add_option("--log-json-info-buffer-size", f.log_json_info_buffer_size,
                 "Bytes of info lines buffered with --logging-format=json and split streams "
                 "(a quantity such as 64Ki)")
      ->capture_default_str();
  app.add_flag("--log-json-split-stream", f.log_json_split_stream,
               "With --logging-format=json: errors to stderr, info to stdout")
      ->default_str("false");
  app.add_option("--log-text-info-buffer-size", f.log_text_info_buffer_size,
                 "Bytes of info lines buffered with text output and split streams")
      ->capture_default_str();
  app.add_flag("--log-text-split-stream", f.log_text_split_stream,
               "With text output: errors to stderr, info to stdout")
      ->default_str("false");
  app.add_option("--logging-format", f.logging_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("-v,--v", f.verbosity, "Log verbosity")->capture_default_str();
  app.add_option("--vmodule", f.vmodule, "pattern=N,... (text only)");
  app.add_option("--health-addr", f.health_addr, "Health and readiness probes address")
      ->capture_default_str();
  app.add_option("--kubeconfig", f.kubeconfig, "kubeconfig (out of cluster)");
  app.add_option("--profiler-address", f.profiler_address, "pprof bind address (unsupported)");
  return version_cmd;
}

} // namespace captf::flags
