#pragma once

// Git module sources, the pure half (docs/decisions/git-sources.md): the
// grammar of a repository URL, a ref and a path inside the repository, and
// the `git::URL//path?ref=…` address tfcapi-lint accepts. No I/O; the
// webhook, the manager, the runner and the linter all validate with these
// functions, and contract/git.h does the fetching.

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace captf::contract {

enum class GitScheme { kHttps, kSsh };

// A repository URL. Accepted forms: `https://host[:port]/path`,
// `ssh://[user@]host[:port]/path` and the scp-like `user@host:path`
// (normalised to ssh://). Host is a DNS name, an IPv4 address or a
// bracketed IPv6 address; no query, fragment or password in the URL
// (credentials come from a Secret).
struct GitUrl {
  GitScheme scheme = GitScheme::kHttps;
  std::string user; // ssh only; "git" when the URL has none
  std::string host;
  std::string port; // "" for the scheme's default
  std::string path; // starts with '/'
  // The form libgit2 is given (scp-like rewritten to ssh://user@host/path).
  std::string canonical;
};

// InvalidArgument naming what is wrong ("ssh URL has no host", ...).
absl::StatusOr<GitUrl> parseGitUrl(std::string_view url);

enum class GitRefKind { kBranch, kTag, kCommit };

struct GitRef {
  GitRefKind kind = GitRefKind::kBranch;
  // A branch or tag name as `git check-ref-format --branch` accepts it, or
  // a full 40-hex commit id (lower case).
  std::string name;

  friend bool operator==(const GitRef&, const GitRef&) = default;
};

// InvalidArgument for a name git would refuse: empty, a component starting
// with '.' or ending in ".lock", "..", "@{", control characters, space,
// ~ ^ : ? * [ \, a leading or trailing '/' or "//", a trailing '.', "@"
// alone; a commit that is not 40 lower-case hex digits.
absl::Status validateGitRef(const GitRef& ref);

// refs/heads/<name>, refs/tags/<name>; the id itself for a commit.
std::string fullRefName(const GitRef& ref);

// "branch main", "tag v1.2.0", "commit 0123abc…" (12 digits), for messages.
std::string describeGitRef(const GitRef& ref);

// A path inside the repository: relative, '/'-separated, no "..", no ".",
// no empty components, no backslash or NUL, at most 1024 bytes. "" (the
// repository root) is valid.
absl::Status validateRepositoryPath(std::string_view path);

// True for 40 lower-case hex digits.
bool isCommitId(std::string_view text);

// What the inputs hash names in place of the image for a Git source
// (contract/inputs_hash.h): "git+<canonical url>//<path>@<commit>
// runtime=<runtime image>". A new commit, path or runtime image is a new
// hash; the ref's name is not part of it (a tag and a branch at the same
// commit render the same module).
std::string gitSourceIdentity(const GitUrl& url, std::string_view path, std::string_view commit,
                              std::string_view runtime_image);

// `git::<url>[//<path>][?ref=<ref>]`, the module-source address OpenTofu
// users know. The ref's kind is not written in the address: a 40-hex ref is
// a commit, anything else is resolved by contract/git.h against the remote
// (tag first, then branch), so `ref` carries only the name here.
struct GitModuleAddress {
  GitUrl url;
  std::string path;
  std::optional<std::string> ref;
};

// InvalidArgument naming the part that is wrong. Unknown query parameters
// are refused (a typo must not be ignored).
absl::StatusOr<GitModuleAddress> parseGitModuleAddress(std::string_view address);

} // namespace captf::contract
