#pragma once

// `tfcapi-lint module git::URL//path?ref=REF`: the module at `path` of the
// commit REF names (a tag, else a branch, else a 40-hex commit; without
// ?ref= the branch the remote's HEAD names), fetched with contract/git.h
// into a private temporary directory that lives as long as the returned
// checkout. The module is then linted exactly as a directory is.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "contract/git.h"
#include "contract/git_source.h"

namespace captf::lint {

// What git:: addresses take from outside. main.cc leaves the defaults;
// tests supply a client that serves a local repository.
struct GitEnvironment {
  // nullptr: contract::git::LibGit2Client.
  const contract::git::Client* client = nullptr;
  std::filesystem::path temp_dir; // "" for the system's
  absl::Duration timeout = absl::Minutes(2);
  std::uint64_t max_bytes = 256ull << 20;
};

class GitCheckout {
public:
  GitCheckout(std::filesystem::path root, std::filesystem::path module_dir, std::string commit);
  GitCheckout(const GitCheckout&) = delete;
  GitCheckout& operator=(const GitCheckout&) = delete;
  // Removes the temporary directory and everything in it.
  ~GitCheckout();

  // <temporary>/<path>: the directory to lint.
  const std::filesystem::path& moduleDir() const { return module_dir_; }
  // The commit the files came from (40 hex).
  const std::string& commit() const { return commit_; }

private:
  std::filesystem::path root_;
  std::filesystem::path module_dir_;
  std::string commit_;
};

// Errors name the remote and what failed (contract/git.h's codes): the
// remote cannot be listed, the ref is unknown (NotFound), the remote names
// no default branch and there is no ?ref= (NotFound), the fetch fails, or
// the path is not a directory of the commit (NotFound).
absl::StatusOr<std::unique_ptr<GitCheckout>>
fetchGitModule(const contract::GitModuleAddress& address,
               const contract::git::Credentials& credentials, const GitEnvironment& env);

} // namespace captf::lint
