#include "manager/kube/config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "contract/status_macros.h"

namespace captf::kube {
namespace {

namespace fs = std::filesystem;

std::string resolvePath(const std::string& path, const std::string& base_dir) {
  if (path.empty() || fs::path(path).is_absolute() || base_dir.empty()) {
    return path;
  }
  return (fs::path(base_dir) / path).string();
}

std::string scalar(const YAML::Node& node, const char* key) {
  YAML::Node value = node[key];
  return value && value.IsScalar() ? value.as<std::string>() : std::string();
}

// Reads "<key>-data" (base64) or else "<key>" (a file path).
absl::StatusOr<std::string> dataOrFile(const YAML::Node& node, const std::string& key,
                                       const std::string& base_dir) {
  std::string data = scalar(node, (key + "-data").c_str());
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat(key, "-data is not valid base64"));
    }
    return decoded;
  }
  std::string path = scalar(node, key.c_str());
  if (path.empty()) {
    return std::string();
  }
  return readFile(resolvePath(path, base_dir));
}

// One named entry (cluster, user or context) with the directory of the file
// that defined it, for relative paths.
struct Entry {
  YAML::Node node;
  std::string base_dir;
};

struct Merged {
  std::map<std::string, Entry> clusters;
  std::map<std::string, Entry> users;
  std::map<std::string, Entry> contexts;
  std::string current_context;
};

absl::Status mergeInto(Merged& merged, const YAML::Node& root, const std::string& base_dir) {
  if (!root.IsMap()) {
    return root.IsNull() ? absl::OkStatus()
                         : absl::InvalidArgumentError("kubeconfig is not a YAML mapping");
  }
  auto collect = [&](const char* list, const char* field, std::map<std::string, Entry>& into) {
    YAML::Node items = root[list];
    if (!items || !items.IsSequence()) {
      return;
    }
    for (const auto& item : items) {
      std::string name = scalar(item, "name");
      if (!name.empty() && item[field]) {
        into.emplace(name, Entry{item[field], base_dir}); // the first definition wins
      }
    }
  };
  collect("clusters", "cluster", merged.clusters);
  collect("users", "user", merged.users);
  collect("contexts", "context", merged.contexts);
  if (merged.current_context.empty()) {
    merged.current_context = scalar(root, "current-context");
  }
  return absl::OkStatus();
}

absl::StatusOr<ExecConfig> parseExec(const YAML::Node& node) {
  ExecConfig exec;
  exec.api_version = scalar(node, "apiVersion");
  exec.command = scalar(node, "command");
  if (exec.command.empty()) {
    return absl::InvalidArgumentError("exec plugin has no command");
  }
  if (exec.api_version != "client.authentication.k8s.io/v1" &&
      exec.api_version != "client.authentication.k8s.io/v1beta1") {
    return absl::InvalidArgumentError(
        absl::StrCat("exec plugin apiVersion \"", exec.api_version, "\" is not supported"));
  }
  if (YAML::Node args = node["args"]; args && args.IsSequence()) {
    for (const auto& arg : args) {
      exec.args.push_back(arg.as<std::string>());
    }
  }
  if (YAML::Node env = node["env"]; env && env.IsSequence()) {
    for (const auto& var : env) {
      exec.env.emplace_back(scalar(var, "name"), scalar(var, "value"));
    }
  }
  if (YAML::Node provide = node["provideClusterInfo"]; provide && provide.IsScalar()) {
    exec.provide_cluster_info = provide.as<bool>();
  }
  if (std::string mode = scalar(node, "interactiveMode"); !mode.empty()) {
    if (mode != "Never" && mode != "IfAvailable" && mode != "Always") {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid exec interactiveMode \"", mode, "\""));
    }
    exec.interactive_mode = mode;
  } else if (exec.api_version == "client.authentication.k8s.io/v1") {
    return absl::InvalidArgumentError("exec plugin of apiVersion v1 needs interactiveMode");
  }
  exec.install_hint = scalar(node, "installHint");
  return exec;
}

absl::StatusOr<RestConfig> resolve(const Merged& merged, const std::string& context_name) {
  std::string name = context_name.empty() ? merged.current_context : context_name;
  if (name.empty()) {
    return absl::InvalidArgumentError("kubeconfig has no current-context and none was chosen");
  }
  auto context = merged.contexts.find(name);
  if (context == merged.contexts.end()) {
    return absl::NotFoundError(absl::StrCat("context \"", name, "\" not found in kubeconfig"));
  }
  std::string cluster_name = scalar(context->second.node, "cluster");
  std::string user_name = scalar(context->second.node, "user");
  auto cluster = merged.clusters.find(cluster_name);
  if (cluster == merged.clusters.end()) {
    return absl::NotFoundError(absl::StrCat("cluster \"", cluster_name, "\" of context \"", name,
                                            "\" not found in kubeconfig"));
  }

  RestConfig config;
  config.ns = scalar(context->second.node, "namespace");
  if (config.ns.empty()) {
    config.ns = "default";
  }
  const YAML::Node& c = cluster->second.node;
  config.server = scalar(c, "server");
  if (config.server.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("cluster \"", cluster_name, "\" has no server"));
  }
  config.tls_server_name = scalar(c, "tls-server-name");
  if (YAML::Node insecure = c["insecure-skip-tls-verify"]; insecure && insecure.IsScalar()) {
    config.insecure_skip_tls_verify = insecure.as<bool>();
  }
  if (!scalar(c, "proxy-url").empty()) {
    return absl::UnimplementedError("kubeconfig proxy-url is not supported");
  }
  auto ca = dataOrFile(c, "certificate-authority", cluster->second.base_dir);
  if (!ca.ok()) {
    return ca.status();
  }
  config.ca_pem = *std::move(ca);

  if (user_name.empty()) {
    return config;
  }
  auto user = merged.users.find(user_name);
  if (user == merged.users.end()) {
    return absl::NotFoundError(
        absl::StrCat("user \"", user_name, "\" of context \"", name, "\" not found in kubeconfig"));
  }
  const YAML::Node& u = user->second.node;
  const std::string& base = user->second.base_dir;
  auto cert = dataOrFile(u, "client-certificate", base);
  if (!cert.ok()) {
    return cert.status();
  }
  auto key = dataOrFile(u, "client-key", base);
  if (!key.ok()) {
    return key.status();
  }
  if (cert->empty() != key->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("user \"", user_name, "\" needs both a client certificate and a key"));
  }
  config.client_cert_pem = *std::move(cert);
  config.client_key_pem = *std::move(key);
  config.bearer_token = scalar(u, "token");
  config.bearer_token_file = resolvePath(scalar(u, "tokenFile"), base);
  if (YAML::Node exec = u["exec"]; exec && exec.IsMap()) {
    auto parsed = parseExec(exec);
    if (!parsed.ok()) {
      return parsed.status();
    }
    config.exec = *std::move(parsed);
  }
  if (u["auth-provider"]) {
    return absl::UnimplementedError(absl::StrCat(
        "user \"", user_name, "\" uses auth-provider, which is not supported; use exec"));
  }
  if (!scalar(u, "username").empty() || !scalar(u, "password").empty()) {
    return absl::UnimplementedError("basic authentication is not supported by the API server");
  }
  return config;
}

absl::StatusOr<YAML::Node> loadYaml(const std::string& text, const std::string& origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": invalid YAML at line ",
                                                   e.mark.line + 1, " column ", e.mark.column + 1,
                                                   ": ", e.msg));
  }
}

} // namespace

absl::StatusOr<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path));
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

EnvLookup processEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) {
      return std::nullopt;
    }
    return std::string(value);
  };
}

absl::StatusOr<RestConfig> parseKubeconfig(const std::string& yaml, const std::string& context,
                                           const std::string& base_dir) {
  auto root = loadYaml(yaml, "kubeconfig");
  if (!root.ok()) {
    return root.status();
  }
  Merged merged;
  try {
    CAPTF_RETURN_IF_ERROR(mergeInto(merged, *root, base_dir));
    return resolve(merged, context);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid kubeconfig: ", e.msg));
  }
}

absl::StatusOr<RestConfig> loadKubeconfigFiles(const std::vector<std::string>& paths,
                                               const std::string& context) {
  Merged merged;
  bool any = false;
  try {
    for (const auto& path : paths) {
      auto text = readFile(path);
      if (!text.ok()) {
        continue; // as client-go: missing files in KUBECONFIG are skipped
      }
      any = true;
      auto root = loadYaml(*text, path);
      if (!root.ok()) {
        return root.status();
      }
      if (auto status = mergeInto(merged, *root, fs::path(path).parent_path().string());
          !status.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.message()));
      }
    }
    if (!any) {
      return absl::NotFoundError("no kubeconfig file could be read");
    }
    return resolve(merged, context);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid kubeconfig: ", e.msg));
  }
}

absl::StatusOr<RestConfig> inClusterConfig(const EnvLookup& env, const InClusterPaths& paths) {
  auto host = env("KUBERNETES_SERVICE_HOST");
  auto port = env("KUBERNETES_SERVICE_PORT");
  if (!host || !port || host->empty() || port->empty()) {
    return absl::NotFoundError(
        "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  if (!fs::exists(paths.token_file)) {
    return absl::NotFoundError(absl::StrCat("not in a cluster: no token at ", paths.token_file));
  }
  RestConfig config;
  // An IPv6 literal needs brackets in a URL.
  std::string host_part =
      host->find(':') != std::string::npos ? absl::StrCat("[", *host, "]") : *host;
  config.server = absl::StrCat("https://", host_part, ":", *port);
  config.bearer_token_file = paths.token_file;
  auto ca = readFile(paths.ca_file);
  if (!ca.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster CA ", paths.ca_file, " unreadable: ", ca.status().message()));
  }
  config.ca_pem = *std::move(ca);
  if (auto ns = readFile(paths.namespace_file); ns.ok()) {
    config.ns = std::string(absl::StripAsciiWhitespace(*ns));
  }
  if (config.ns.empty()) {
    config.ns = "default";
  }
  return config;
}

absl::StatusOr<RestConfig> loadConfig(const LoadOptions& options) {
  if (!options.kubeconfig.empty()) {
    auto text = readFile(options.kubeconfig);
    if (!text.ok()) {
      return text.status();
    }
    return parseKubeconfig(*text, options.context,
                           fs::path(options.kubeconfig).parent_path().string());
  }
  if (auto env = options.env("KUBECONFIG"); env && !env->empty()) {
    std::vector<std::string> paths;
    for (absl::string_view part : absl::StrSplit(*env, ':', absl::SkipEmpty())) {
      paths.emplace_back(part);
    }
    return loadKubeconfigFiles(paths, options.context);
  }
  auto in_cluster = inClusterConfig(options.env, options.in_cluster);
  if (in_cluster.ok() || !absl::IsNotFound(in_cluster.status())) {
    return in_cluster;
  }
  if (auto home = options.env("HOME"); home && !home->empty()) {
    std::string path = (fs::path(*home) / ".kube" / "config").string();
    if (fs::exists(path)) {
      return loadKubeconfigFiles({path}, options.context);
    }
  }
  return absl::NotFoundError(
      "no configuration: pass --kubeconfig, set KUBECONFIG, run in a cluster or create "
      "~/.kube/config");
}

} // namespace captf::kube
