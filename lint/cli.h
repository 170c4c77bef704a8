#pragma once

#include <ostream>
#include <span>
#include <string>

#include "lint/contract_view.h"
#include "lint/git_module.h"
#include "lint/image_lint.h"

// The tfcapi-lint command line (docs/lint.md), as a function so that tests
// can run it with captured streams. main.cc only supplies the contract tables
// and the build information.
namespace captf::lint {

struct BuildInfo {
  std::string version = "dev";
  std::string commit = "unknown";
  std::string date = "unknown";
};

// What image mode takes from the process environment: the keychain files,
// the temporary directory, network timeouts. main.cc fills it in; tests
// point it at their own files.
struct ImageEnvironment {
  oci::KeychainEnv keychain;
  std::filesystem::path temp_dir; // "" for the system's
  oci::HttpOptions http;
  oci::ExtractLimits limits;
};

// Runs one invocation; `args` includes the program name. Writes reports to
// `out`, usage and load errors to `err`, and returns the exit code (docs/lint.md#exit-codes):
// 0 clean, 1 findings, 2 the module or image cannot be read or parsed (for
// a git:: address: cannot be listed, resolved or fetched), 3 usage.
int runCli(std::span<const std::string> args, std::ostream& out, std::ostream& err,
           const ContractSource& contracts, const BuildInfo& build,
           const ImageEnvironment& image_env = {}, const GitEnvironment& git_env = {});

} // namespace captf::lint
