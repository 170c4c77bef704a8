#include "test/contract/git_repo.h"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

#include <git2.h>

namespace captf::contract::testing {
namespace {

void check(int rc, const char* what) {
  if (rc < 0) {
    const git_error* error = git_error_last();
    throw std::runtime_error(std::string(what) + ": " +
                             (error != nullptr ? error->message : "error"));
  }
}

std::string hexOf(const git_oid& oid) {
  std::array<char, GIT_OID_HEXSZ + 1> hex{};
  git_oid_tostr(hex.data(), hex.size(), &oid);
  return hex.data();
}

git_oid blob(git_repository* repo, const std::string& content) {
  git_oid oid;
  check(git_blob_create_from_buffer(&oid, repo, content.data(), content.size()), "blob");
  return oid;
}

// Writes the tree of `files` (paths relative to this directory).
git_oid tree(git_repository* repo, const std::vector<GitFile>& files) {
  std::map<std::string, std::vector<GitFile>> children;
  git_treebuilder* builder = nullptr;
  check(git_treebuilder_new(&builder, repo, nullptr), "treebuilder");
  std::unique_ptr<git_treebuilder, decltype(&git_treebuilder_free)> owned(builder,
                                                                          git_treebuilder_free);
  for (const GitFile& file : files) {
    const auto slash = file.path.find('/');
    if (slash != std::string::npos) {
      GitFile rest = file;
      rest.path = file.path.substr(slash + 1);
      children[file.path.substr(0, slash)].push_back(std::move(rest));
      continue;
    }
    git_oid oid;
    git_filemode_t mode = GIT_FILEMODE_BLOB;
    switch (file.mode) {
    case GitMode::kFile:
      oid = blob(repo, file.content);
      break;
    case GitMode::kExecutable:
      oid = blob(repo, file.content);
      mode = GIT_FILEMODE_BLOB_EXECUTABLE;
      break;
    case GitMode::kSymlink:
      oid = blob(repo, file.content);
      mode = GIT_FILEMODE_LINK;
      break;
    case GitMode::kGitlink:
      check(git_oid_fromstr(&oid, file.content.c_str()), "gitlink id");
      mode = GIT_FILEMODE_COMMIT;
      break;
    }
    check(git_treebuilder_insert(nullptr, builder, file.path.c_str(), &oid, mode), "insert");
  }
  for (const auto& [name, entries] : children) {
    const git_oid sub = tree(repo, entries);
    check(git_treebuilder_insert(nullptr, builder, name.c_str(), &sub, GIT_FILEMODE_TREE),
          "insert tree");
  }
  git_oid out;
  check(git_treebuilder_write(&out, builder), "tree");
  return out;
}

git_signature* signature() {
  git_signature* sig = nullptr;
  check(git_signature_new(&sig, "CAPTF Test", "test@captf.invalid", 1'700'000'000, 0), "sig");
  return sig;
}

} // namespace

GitRepo::GitRepo(std::string path) : path_(std::move(path)) {
  git_libgit2_init();
  // Gitlinks to commits that do not exist, as a hostile tree would have.
  git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, 0);
  check(git_repository_init(&repo_, path_.c_str(), 1), "init");
  check(git_repository_set_head(repo_, "refs/heads/main"), "HEAD");
}

GitRepo::~GitRepo() {
  git_repository_free(repo_);
  git_libgit2_shutdown();
}

std::string GitRepo::commitTree(const void* tree_oid, const std::string& branch) {
  git_tree* root = nullptr;
  check(git_tree_lookup(&root, repo_, static_cast<const git_oid*>(tree_oid)), "tree lookup");
  std::unique_ptr<git_tree, decltype(&git_tree_free)> owned_tree(root, git_tree_free);
  git_signature* sig = signature();
  std::unique_ptr<git_signature, decltype(&git_signature_free)> owned_sig(sig, git_signature_free);
  const std::string ref = "refs/heads/" + branch;
  git_oid parent_id;
  git_commit* parent = nullptr;
  if (git_reference_name_to_id(&parent_id, repo_, ref.c_str()) == 0) {
    check(git_commit_lookup(&parent, repo_, &parent_id), "parent");
  }
  git_error_clear();
  std::unique_ptr<git_commit, decltype(&git_commit_free)> owned_parent(parent, git_commit_free);
  std::array<const git_commit*, 1> parents = {parent};
  git_oid out;
  check(git_commit_create(&out, repo_, ref.c_str(), sig, sig, nullptr, "test commit", root,
                          parent != nullptr ? 1 : 0, parents.data()),
        "commit");
  return hexOf(out);
}

std::string GitRepo::commit(const std::vector<GitFile>& files, const std::string& branch) {
  const git_oid root = tree(repo_, files);
  return commitTree(&root, branch);
}

std::string GitRepo::commitRaw(const std::vector<RawTreeEntry>& entries,
                               const std::string& branch) {
  std::vector<RawTreeEntry> sorted = entries;
  std::sort(sorted.begin(), sorted.end(),
            [](const RawTreeEntry& a, const RawTreeEntry& b) { return a.name < b.name; });
  std::string data;
  for (const RawTreeEntry& entry : sorted) {
    git_oid oid;
    if (entry.mode == "40000") {
      oid = tree(repo_, {GitFile{"empty", ""}});
    } else {
      oid = blob(repo_, entry.content);
    }
    data += entry.mode + " " + entry.name;
    data += '\0';
    data.append(reinterpret_cast<const char*>(oid.id), GIT_OID_RAWSZ);
  }
  git_odb* odb = nullptr;
  check(git_repository_odb(&odb, repo_), "odb");
  std::unique_ptr<git_odb, decltype(&git_odb_free)> owned(odb, git_odb_free);
  git_oid root;
  check(git_odb_write(&root, odb, data.data(), data.size(), GIT_OBJECT_TREE), "raw tree");
  return commitTree(&root, branch);
}

void GitRepo::annotatedTag(const std::string& name, const std::string& commit) {
  git_oid id;
  check(git_oid_fromstr(&id, commit.c_str()), "tag target");
  git_object* target = nullptr;
  check(git_object_lookup(&target, repo_, &id, GIT_OBJECT_COMMIT), "tag target");
  std::unique_ptr<git_object, decltype(&git_object_free)> owned(target, git_object_free);
  git_signature* sig = signature();
  std::unique_ptr<git_signature, decltype(&git_signature_free)> owned_sig(sig, git_signature_free);
  git_oid out;
  check(git_tag_create(&out, repo_, name.c_str(), target, sig, "release", 0), "tag");
}

void GitRepo::lightweightTag(const std::string& name, const std::string& commit) {
  git_oid id;
  check(git_oid_fromstr(&id, commit.c_str()), "tag target");
  git_reference* ref = nullptr;
  check(git_reference_create(&ref, repo_, ("refs/tags/" + name).c_str(), &id, 0, "tag"), "tag");
  git_reference_free(ref);
}

std::string GitRepo::url() const {
  return "file://" + path_;
}

GitUrl GitRepo::gitUrl() const {
  GitUrl out;
  out.canonical = url();
  out.path = path_;
  return out;
}

} // namespace captf::contract::testing
