#pragma once

#include <ostream>
#include <span>
#include <string>

#include "lint/contract_view.h"

// The tfcapi-lint command line (spec §4.1-§4.4), as a function so that tests
// can run it with captured streams. main.cc only supplies the contract tables
// and the build information.
namespace captf::lint {

struct BuildInfo {
  std::string version = "dev";
  std::string commit = "unknown";
  std::string date = "unknown";
};

// Runs one invocation; `args` includes the program name. Writes reports to
// `out`, usage and load errors to `err`, and returns the exit code (§4.3):
// 0 clean, 1 findings, 2 the module cannot be read or parsed, 3 usage.
int runCli(std::span<const std::string> args, std::ostream& out, std::ostream& err,
           const ContractSource& contracts, const BuildInfo& build);

} // namespace captf::lint
