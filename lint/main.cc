// tfcapi-lint: checks a CAPTF module or image against the module and image contracts
// (docs/lint.md).
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "lint/cli.h"
#include "lint/contract_source.h"

#ifndef CAPTF_LINT_VERSION
#define CAPTF_LINT_VERSION "dev"
#endif
#ifndef CAPTF_LINT_COMMIT
#define CAPTF_LINT_COMMIT "unknown"
#endif
#ifndef CAPTF_LINT_DATE
#define CAPTF_LINT_DATE "unknown"
#endif

int main(int argc, char** argv) {
  // git:: addresses: a Git server that hangs up while libgit2 writes must
  // give a write error, not end the process with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv, argv + argc);
  const captf::lint::ContractTables contracts;
  const captf::lint::BuildInfo build{CAPTF_LINT_VERSION, CAPTF_LINT_COMMIT, CAPTF_LINT_DATE};
  captf::lint::ImageEnvironment image_env;
  image_env.keychain = captf::lint::oci::KeychainEnv::fromEnvironment();
  return captf::lint::runCli(args, std::cout, std::cerr, contracts, build, image_env);
}
