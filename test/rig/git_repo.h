#pragma once

// Repositories on the rig's Git server (kE2e and up; test/rig/README.md).
// A test creates a bare repository in Env::git_repos and changes it with the
// git CLI through the filesystem; the product fetches it over HTTPS or SSH,
// and the server counts what it was asked. Test code only: the product uses
// libgit2, never the git CLI.
//
//   GitRepo repo(env, "modules");
//   const std::string v1 = repo.commitFiles("main", {{"main.tf", "..."}});
//   repo.tag("v1", v1);
//   ... fetch repo.httpsUrl() with env.git_user / env.git_password ...
//   EXPECT_EQ(repo.counts().ref_advertisements, 1);

#include <map>
#include <string>
#include <vector>

#include "test/rig/fixture.h"

namespace captf::rig {

// What the HTTPS server counted for one repository (GET /_counts). Only
// authenticated requests count: a client's first, credential-less try
// (answered 401) does not.
struct GitCounts {
  int ref_advertisements = 0; // GET info/refs?service=git-upload-pack: one per ls-remote or fetch
  int upload_packs = 0;       // POST git-upload-pack: a fetch's negotiation and pack (and, from
                              // protocol v2 clients such as the git CLI, their ls-refs)
};

class GitRepo {
public:
  // Creates the bare repository NAME.git in env.git_repos, HEAD on `main`.
  // Here and below, a git failure is a test failure (ADD_FAILURE).
  GitRepo(const Env& env, std::string name);

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; } // absolute path of NAME.git
  std::string httpsUrl() const; // https://127.0.0.1:PORT/NAME.git (no credentials)
  std::string sshUrl() const;   // ssh://USER@127.0.0.1:PORT/ABS/PATH/NAME.git

  // Commits the content of directory `dir` as the whole tree of `branch` (its
  // parent is the branch's head; a new branch has none), pushing from a
  // temporary work tree by path. Returns the commit id ("" on failure).
  std::string commitDir(const std::string& branch, const std::string& dir,
                        const std::string& message = "commit");
  // The same for files given as relative path → content.
  std::string commitFiles(const std::string& branch,
                          const std::map<std::string, std::string>& files,
                          const std::string& message = "commit");
  // Points tag `name` at `commit` (moving it if it exists): lightweight, or
  // annotated (returns the tag object's id).
  void tag(const std::string& name, const std::string& commit);
  std::string annotatedTag(const std::string& name, const std::string& commit,
                           const std::string& message = "tag");
  // Moves `branch` to `commit`, e.g. back to an older one, as a force push.
  void forcePush(const std::string& branch, const std::string& commit);
  // The commit a branch, tag or id names; "" when there is none.
  std::string commitOf(const std::string& ref) const;
  // This repository's counts (zeros before its first request).
  GitCounts counts() const;

private:
  const Env* env_;
  std::string name_;
  std::string path_;
};

// Every repository's counts, from the server's GET /_counts.
std::map<std::string, GitCounts> gitCounts(const Env& env);

// The environment for running the git CLI against the rig's server: no
// system or user configuration, no prompts, GIT_SSL_CAINFO the rig's CA,
// and GIT_SSH_COMMAND with the client key and `known_hosts` ("":
// env.git_known_hosts), host keys checked strictly.
std::map<std::string, std::string> gitClientEnv(const Env& env,
                                                const std::string& known_hosts = "");

// Runs `git ARGS` with `extra_env` added to a configuration-free environment
// (gitClientEnv's, without the server's settings) and a fixed identity.
CommandResult git(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& extra_env = {});

} // namespace captf::rig
