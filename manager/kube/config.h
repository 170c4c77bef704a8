#pragma once

// Where the API server is and how to authenticate to it: kubeconfig files
// (client-go's clientcmd subset that controllers use) and in-cluster service
// account configuration, resolved in controller-runtime's order.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace captf::kube {

// users[].user.exec of a kubeconfig (client.authentication.k8s.io).
struct ExecConfig {
  std::string api_version; // client.authentication.k8s.io/v1 or v1beta1
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  bool provide_cluster_info = false;
  std::string interactive_mode = "IfAvailable"; // Never, IfAvailable, Always
  std::string install_hint;
};

struct RestConfig {
  std::string server; // https://host[:port][/prefix]
  std::string tls_server_name;
  bool insecure_skip_tls_verify = false;
  std::string ca_pem; // empty: the system trust store

  // Static client certificate (PEM). Empty when none.
  std::string client_cert_pem;
  std::string client_key_pem;
  // Bearer token, or a file holding it (re-read when it rotates). The file
  // wins when both are set, as in client-go.
  std::string bearer_token;
  std::string bearer_token_file;
  std::optional<ExecConfig> exec;

  // The kubeconfig context's namespace, or the pod's namespace in-cluster.
  std::string ns;

  // Client-side rate limit; qps <= 0 turns it off (the default: the API
  // server's priority and fairness does the limiting).
  double qps = 0;
  int burst = 0;
  // Deadline of every request except watches (which end server-side).
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  // How long a kept-alive connection may sit idle and still be reused
  // (TransportOptions::idle_timeout).
  std::chrono::milliseconds idle_connection_timeout{std::chrono::seconds(30)};
  std::string user_agent = "captf-manager";
};

// Looks up environment variables; injected for tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup processEnv();

// Parses kubeconfig YAML. `context` selects a context by name; empty means
// current-context. Relative file paths resolve against `base_dir`.
absl::StatusOr<RestConfig> parseKubeconfig(const std::string& yaml, const std::string& context,
                                           const std::string& base_dir);

// Loads and merges kubeconfig files in order: for every cluster, user and
// context name the first file that defines it wins, and so does the first
// current-context (client-go's KUBECONFIG merge rules).
absl::StatusOr<RestConfig> loadKubeconfigFiles(const std::vector<std::string>& paths,
                                               const std::string& context);

struct InClusterPaths {
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::string namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
};

// In-cluster configuration from KUBERNETES_SERVICE_HOST/_PORT and the
// projected service account token (kept as a file so rotation is seen).
// NotFound when not running in a pod.
absl::StatusOr<RestConfig> inClusterConfig(const EnvLookup& env, const InClusterPaths& paths = {});

struct LoadOptions {
  std::string kubeconfig; // --kubeconfig
  std::string context;    // --context (empty: current-context)
  EnvLookup env = processEnv();
  InClusterPaths in_cluster;
};

// controller-runtime's GetConfig order: --kubeconfig, then $KUBECONFIG
// (colon-separated, merged), then in-cluster, then $HOME/.kube/config.
absl::StatusOr<RestConfig> loadConfig(const LoadOptions& options);

absl::StatusOr<std::string> readFile(const std::string& path);

} // namespace captf::kube
