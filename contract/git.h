#pragma once

// Git module sources, the libgit2 half (docs/decisions/git-sources.md): one
// library the manager's ref watcher, the runner's fetch and tfcapi-lint all
// use, so a URL, a credential or a refusal means the same thing everywhere.
// No `git` binary is run. Library target: captf_git (links libgit2; only
// its users pay for it).
//
// Every error is an absl::Status whose code names the class of failure and
// whose message names the remote and what went wrong, never a credential:
//   Unauthenticated     the server refused the credentials (or asked for
//                       some and there were none)
//   NotFound            unknown branch, tag or commit
//   Unavailable         the server could not be reached, or timed out
//   FailedPrecondition  the SSH host key is unknown or does not match
//                       known_hosts; the TLS certificate does not verify
//   ResourceExhausted   the fetch or the checked-out tree exceeds the cap
//   InvalidArgument     the tree has a submodule or a symlink leaving the
//                       repository; a malformed URL or credential
//   Cancelled           FetchOptions::cancelled said stop
//   Internal            anything else libgit2 reports
//
// Threading: every function may be called from any thread. libgit2's TLS
// trust store is process-global, so a call with `ca_certificates` holds it
// exclusively for its duration (calls without wait for it, and run
// concurrently with each other).
//
// Timeouts: a call's `timeout` bounds all of it, the network included. The
// deadline is checked in every callback libgit2 makes (credentials,
// certificate, progress), and every socket the call opens (HTTPS and SSH
// alike) is shut down when it passes, so a server that accepts the
// connection and then says nothing ends the call at the deadline with
// Unavailable "<verb> <url>: timed out after <timeout>"
// (docs/decisions/git-sources.md, "Deadlines"). Name resolution is the
// system resolver's and is bounded by its own timeouts only. Each call with
// a network transport runs one short-lived watchdog thread.
//
// Processes using this ignore SIGPIPE (a server hanging up while libgit2
// writes must be an error, not the end of the process).
//
// Hermetic: libgit2 reads no git configuration file (system, XDG, global),
// so a `url.insteadOf`, `http.sslVerify` or credential helper of the host
// never applies. Proxies come from the environment (https_proxy, ...).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "contract/git_source.h"

namespace captf::contract::git {

// The keys of a Git credentials Secret (docs/decisions/git-sources.md).
inline constexpr std::string_view kKeyUsername = "username";
inline constexpr std::string_view kKeyPassword = "password";
inline constexpr std::string_view kKeyToken = "token";
inline constexpr std::string_view kKeySshPrivateKey = "ssh-privatekey";
inline constexpr std::string_view kKeyKnownHosts = "known_hosts";
inline constexpr std::string_view kKeyCaCert = "ca.crt";
// The user name sent with a bare `token` over HTTPS.
inline constexpr std::string_view kTokenUsername = "x-access-token";

struct Credentials {
  // HTTPS basic auth (a `token` becomes password with kTokenUsername).
  std::string username;
  std::string password;
  // SSH: a PEM/OpenSSH private key and the known_hosts lines the host key
  // is checked against (always: an ssh remote without known_hosts fails).
  // Use ed25519 or ECDSA: libssh2 1.10 signs with RSA keys as ssh-rsa
  // (SHA-1), which OpenSSH 8.8 and later refuse by default.
  std::string ssh_private_key;
  std::string known_hosts;
  // HTTPS: PEM CA certificates the server's chain must verify against, in
  // addition to the system's.
  std::string ca_certificates;

  bool empty() const;
};

// From a Secret's decoded data (the manager) or a mounted Secret directory
// (the runner; missing keys are absent, other files ignored). InvalidArgument
// when `token` and `password` are both set, `password` without `username`,
// `ssh-privatekey` without `known_hosts`, a private key that is not PEM or
// OpenSSH or is encrypted (no passphrase is supported), known_hosts without
// a host key line, or ca.crt without a PEM certificate. Trailing CR/LF of
// username, password and token are dropped (`echo` into a Secret adds one).
// A missing directory is InvalidArgument too.
absl::StatusOr<Credentials> credentialsFromData(const std::map<std::string, std::string>& data);
absl::StatusOr<Credentials> credentialsFromDirectory(const std::string& dir);

struct RemoteRef {
  std::string name;   // refs/heads/main, refs/tags/v1 (peeled: the commit)
  std::string commit; // 40 hex

  friend bool operator==(const RemoteRef&, const RemoteRef&) = default;
};

// Whether `known_hosts` (OpenSSH's format: "[marker] hosts keytype base64"
// lines; hosts comma-separated, "[host]:port" off port 22, '*' and '?'
// wildcards, '!' negation, hashed "|1|salt|hmac" names) lists `key` — the
// SSH wire-format public key the server presented — for the host and port
// of `url`, and no @revoked line lists it. @cert-authority lines are not
// supported and never match. The SSH host-key check of every call below.
bool knownHostsAccept(std::string_view known_hosts, const GitUrl& url, std::string_view key);

// One `ls-remote`: every branch and tag of the remote, tags peeled to the
// commit they point at. `timeout` bounds the whole call.
absl::StatusOr<std::vector<RemoteRef>> listRemote(const GitUrl& url, const Credentials& credentials,
                                                  absl::Duration timeout);

// listRemote plus the branch the remote's HEAD names (refs/heads/main), ""
// when the server does not say; same connection, same errors.
struct RemoteListing {
  std::vector<RemoteRef> refs;
  std::string head;
};
absl::StatusOr<RemoteListing> listRemoteWithHead(const GitUrl& url, const Credentials& credentials,
                                                 absl::Duration timeout);

// The commit `ref` names in `refs`: NotFound when no branch or tag has that
// name; a commit ref is returned as is (its existence is checked by
// fetchCommit). For an address ref of unknown kind (parseGitModuleAddress)
// use resolveName: commit id, else tag, else branch.
absl::StatusOr<std::string> resolve(const std::vector<RemoteRef>& refs, const GitRef& ref);
absl::StatusOr<GitRef> resolveName(const std::vector<RemoteRef>& refs, std::string_view name);

struct FetchOptions {
  // Bytes received over the wire, and bytes of files written, each at most.
  std::uint64_t max_bytes = 256ull << 20;
  absl::Duration timeout = absl::Minutes(5);
  // The ref the commit was resolved from (refs/heads/main, refs/tags/v1),
  // fetched when the server does not serve a commit by id; "" to fetch
  // branches and tags.
  std::string ref_hint;
  // Polled in libgit2's callbacks and between files; true stops the fetch
  // with Cancelled (the runner: SIGTERM). Unset: never.
  std::function<bool()> cancelled;
};

// A tree with more entries (files, directories, symlinks) than this is
// refused with ResourceExhausted before anything is written.
inline constexpr std::uint64_t kMaxTreeEntries = 100'000;

struct FetchResult {
  std::string commit;      // verified: the commit the files came from
  std::uint64_t bytes = 0; // bytes of files written
  std::uint64_t files = 0;
};

// Fetches `commit` (40 hex) from `url` and writes its whole tree (no .git)
// into `destination`, which must not exist or be empty; on any error
// nothing is left in it (the tree is written to a sibling temporary
// directory and renamed; when `destination` exists, it may be a mount
// point, so the temporary directory is made inside it and its entries are
// moved up). The objects are fetched into a temporary bare repository in
// the same temporary directory, removed before returning. Refuses a tree
// with a submodule (a gitlink entry or a top-level .gitmodules), an entry
// named ".", ".." or ".git", or a symlink that is absolute or whose target,
// resolved from the link's directory through the tree's other symlinks,
// leaves the repository. Files are written 0644 or 0755 (executable).
//
// What is fetched, on one connection where possible: the advertised ref
// whose tip is `commit`; else `commit` by id (servers with
// uploadpack.allowReachableSHA1InWant); else `ref_hint`; else every branch
// and tag. NotFound when none of them brings the commit.
absl::StatusOr<FetchResult> fetchCommit(const GitUrl& url, const Credentials& credentials,
                                        std::string_view commit, const std::string& destination,
                                        const FetchOptions& options);

// The seam for callers whose tests stand in for the remote (tfcapi-lint's
// git:: addresses): the two network operations above.
class Client {
public:
  virtual ~Client() = default;
  virtual absl::StatusOr<RemoteListing>
  listRemote(const GitUrl& url, const Credentials& credentials, absl::Duration timeout) const = 0;
  virtual absl::StatusOr<FetchResult> fetchCommit(const GitUrl& url, const Credentials& credentials,
                                                  std::string_view commit,
                                                  const std::string& destination,
                                                  const FetchOptions& options) const = 0;
};

// Client through libgit2: listRemoteWithHead and fetchCommit.
class LibGit2Client final : public Client {
public:
  absl::StatusOr<RemoteListing> listRemote(const GitUrl& url, const Credentials& credentials,
                                           absl::Duration timeout) const override;
  absl::StatusOr<FetchResult> fetchCommit(const GitUrl& url, const Credentials& credentials,
                                          std::string_view commit, const std::string& destination,
                                          const FetchOptions& options) const override;
};

} // namespace captf::contract::git
