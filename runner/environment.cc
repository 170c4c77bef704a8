#include "runner/environment.h"

#include <algorithm>

#include "contract/strings.h"

namespace captf::runner {
namespace {

bool dropsByPrefix(std::string_view name) {
  if (!name.starts_with("TF_") && !name.starts_with("KUBE_")) {
    return false;
  }
  return std::find(std::begin(kKeptTfVariables), std::end(kKeptTfVariables), name) ==
         std::end(kKeptTfVariables);
}

std::string quoteHcl(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  out += '"';
  return out;
}

} // namespace

Environment parseEnviron(const char* const* envp) {
  Environment env;
  for (; envp != nullptr && *envp != nullptr; ++envp) {
    const std::string_view entry(*envp);
    const auto equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      continue;
    }
    env.emplace(std::string(entry.substr(0, equals)), std::string(entry.substr(equals + 1)));
  }
  return env;
}

std::vector<std::string> toEnvStrings(const Environment& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) {
    out.push_back(contract::strCat(name, "=", value));
  }
  return out;
}

ShapedEnvironment shapeEnvironment(const Environment& container, const EnvironmentPlan& plan) {
  ShapedEnvironment shaped;
  for (const auto& [name, value] : container) {
    if (dropsByPrefix(name)) {
      shaped.dropped.push_back(name);
    } else {
      shaped.env.emplace(name, value);
    }
  }
  shaped.env["TF_DATA_DIR"] = contract::strCat(plan.workdir, "/.terraform");
  shaped.env["HOME"] = plan.workdir;
  const auto tmpdir = shaped.env.find("TMPDIR");
  if (tmpdir == shaped.env.end() || tmpdir->second.empty()) {
    shaped.env["TMPDIR"] = contract::strCat(plan.workdir, "/tmp");
    shaped.tmpdir_defaulted = true;
  }
  if (plan.provider_mirror) {
    shaped.env["TF_CLI_CONFIG_FILE"] = cliConfigPath(plan.workdir);
  }
  return shaped;
}

std::string cliConfigPath(std::string_view workdir) {
  return contract::strCat(workdir, "/cli.tfrc");
}

std::string providerMirrorCliConfig(std::string_view providers_dir) {
  return contract::strCat("provider_installation {\n"
                          "  filesystem_mirror {\n"
                          "    path    = ",
                          quoteHcl(providers_dir),
                          "\n"
                          "    include = [\"*/*/*\"]\n"
                          "  }\n"
                          "  direct {\n"
                          "    exclude = [\"*/*/*\"]\n"
                          "  }\n"
                          "}\n");
}

} // namespace captf::runner
