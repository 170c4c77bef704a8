#pragma once

// The manager's command line (docs/reference/flags.md, cobra's and
// component-base's flag names): every flag with its default, help text and
// validation, bound to the fields of ManagerFlags. main.cc parses with it;
// the reference page docs/reference/flags.md is generated from it
// (test/docs/reference_pages.cc), so the page lists exactly what the binary
// accepts.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "manager/controllers/options.h"
#include "manager/kube/https_server.h"
#include "manager/kube/standard_metrics.h"

namespace captf::flags {

// What `manager --help` says the program is.
inline constexpr char kManagerDescription[] =
    "CAPTF, the Cluster API infrastructure provider for Terraform/OpenTofu modules";

// The parsed values. Defaults are the ones a command line without the flag
// gets; `settings` and `webhook` carry the defaults of the structs they are.
// Durations stay text until parsed (parseDuration): every duration flag is
// checked with the Go syntax while parsing, so main's parseDuration of them
// cannot fail.
struct ManagerFlags {
  controllers::ControllerSettings settings;
  bool cluster_operation_gate = true;
  bool runner_events = true;
  std::string drift_default_interval = "30m0s";
  std::string sync_period = "10m0s";
  std::string secret_data_cache_size = "32Mi";
  // The caller puts $CAPTF_MANAGER_IMAGE here before defining the flags.
  std::string runner_image;
  std::string git_poll_interval = "1m0s";
  std::string git_timeout = "30s";
  bool leader_elect = false;
  std::string leader_elect_lease_duration = "15s";
  std::string leader_elect_renew_deadline = "10s";
  std::string leader_elect_retry_period = "2s";
  std::string graceful_shutdown_timeout = "5s";
  kube::ServerOptions webhook;
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
};

// "" when `value` is a valid --feature-gates value (key=bool,... over the
// logging gates AllAlpha, AllBeta, ContextualLogging, LoggingAlphaOptions
// and LoggingBetaOptions, bools spelled as Go's ParseBool takes them), else
// what is wrong, naming the gate: component-base's wording.
std::string checkFeatureGates(std::string_view value);

// Every gate --feature-gates knows, in name order, with its component-base
// stage ("ALPHA" or "BETA") and whether `value` (which passed
// checkFeatureGates) leaves it enabled: as set, else as AllAlpha or AllBeta
// set the gates of their stage, else the default (ContextualLogging and
// LoggingBetaOptions on, the rest off). What kubernetes_feature_enabled
// reports.
std::vector<kube::FeatureGate> featureGates(std::string_view value);

// Defines every flag of the manager on `app`, bound to `flags` (which must
// outlive the parse), --version printing `version`, and the `version`
// subcommand, which is returned (parsed() after a `manager version`).
CLI::App* defineManagerFlags(CLI::App& app, ManagerFlags& flags, const std::string& version);

// Go durations as cobra takes them: "30m0s", "10s", "1h", "1.5h", "500ms";
// finite and not negative. nullopt otherwise.
std::optional<std::chrono::milliseconds> parseDuration(const std::string& text);

// argv[1..] with "--a_b" normalized to "--a-b" (component-base's word
// separator normalization, which CLI11 lacks), reversed as CLI11's
// App::parse(std::vector) takes it.
std::vector<std::string> normalizeArgs(int argc, char** argv);

} // namespace captf::flags
