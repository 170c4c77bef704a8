#pragma once

// Git repositories for the tests of contract/git.h and its users, built
// with libgit2 itself (no `git` process): a bare repository in a directory
// the test owns, served to libgit2's local transport by a file:// URL.

#include <string>
#include <vector>

#include "contract/git_source.h"

struct git_repository;

namespace captf::contract::testing {

enum class GitMode { kFile, kExecutable, kSymlink, kGitlink };

struct GitFile {
  std::string path;    // '/'-separated, directories implied
  std::string content; // a symlink's target; a gitlink's 40-hex commit
  GitMode mode = GitMode::kFile;
};

// One raw tree entry, written without libgit2's name checks (a tree a
// hostile server could send).
struct RawTreeEntry {
  std::string mode; // "100644", "40000", ...
  std::string name;
  std::string content; // the blob's content (mode 100644/100755/120000)
};

class GitRepo {
public:
  // Creates a bare repository at `path`; HEAD names refs/heads/main.
  explicit GitRepo(std::string path);
  GitRepo(const GitRepo&) = delete;
  GitRepo& operator=(const GitRepo&) = delete;
  ~GitRepo();

  // Commits exactly `files` on refs/heads/<branch> (the branch's tip, if
  // any, is the parent); returns the commit id.
  std::string commit(const std::vector<GitFile>& files, const std::string& branch = "main");
  // Commits a root tree of raw entries on refs/heads/<branch>.
  std::string commitRaw(const std::vector<RawTreeEntry>& entries, const std::string& branch);
  void annotatedTag(const std::string& name, const std::string& commit);
  void lightweightTag(const std::string& name, const std::string& commit);

  const std::string& path() const { return path_; }
  // file://<path>
  std::string url() const;
  // A GitUrl libgit2 is given as is (parseGitUrl accepts https and ssh only).
  GitUrl gitUrl() const;

private:
  std::string commitTree(const void* tree_oid, const std::string& branch);

  std::string path_;
  git_repository* repo_ = nullptr;
};

} // namespace captf::contract::testing
