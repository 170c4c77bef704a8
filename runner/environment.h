#pragma once

// Environment shaping (docs/behaviour/jobs.md): what the runtime sees, computed from the
// container's environment without any I/O.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace captf::runner {

// Name → value. Ordered, so the runtime's environment is deterministic.
using Environment = std::map<std::string, std::string, std::less<>>;

// Parses an `environ`-style array (terminated by nullptr). Entries without
// '=' are skipped; for a name given twice the first wins, as with getenv.
Environment parseEnviron(const char* const* envp);

// "NAME=value" strings, sorted by name.
std::vector<std::string> toEnvStrings(const Environment& env);

// The variables the Job sets that the runtime keeps although they match the
// dropped prefixes.
inline constexpr std::string_view kKeptTfVariables[] = {"TF_IN_AUTOMATION", "TF_INPUT",
                                                        "KUBE_NAMESPACE"};

struct EnvironmentPlan {
  // --workdir (e.g. /captf/work).
  std::string workdir;
  // Whether the image ships a provider mirror (the caller stats --providers).
  bool provider_mirror = false;
};

struct ShapedEnvironment {
  Environment env;
  // Names (never values) of the container's variables that do not reach the
  // runtime, sorted: every TF_* and KUBE_* except kKeptTfVariables, including
  // those the runner replaces with its own value (TF_DATA_DIR,
  // TF_CLI_CONFIG_FILE).
  std::vector<std::string> dropped;
  // TMPDIR was unset (or empty) and now points at <workdir>/tmp, which the
  // caller must create.
  bool tmpdir_defaulted = false;
};

// Starting from the container's environment: TF_DATA_DIR = <workdir>/.terraform,
// HOME = <workdir>, TMPDIR kept if set else <workdir>/tmp,
// TF_CLI_CONFIG_FILE = cliConfigPath(workdir) only with a provider mirror,
// every other TF_* and KUBE_* dropped. TF_PLUGIN_CACHE_DIR is never set.
ShapedEnvironment shapeEnvironment(const Environment& container, const EnvironmentPlan& plan);

// <workdir>/cli.tfrc
std::string cliConfigPath(std::string_view workdir);

// The CLI configuration written when the image ships a provider mirror:
// install every provider from the mirror, none directly.
std::string providerMirrorCliConfig(std::string_view providers_dir);

} // namespace captf::runner
