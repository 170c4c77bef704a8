#include "test/rig/git_repo.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace captf::rig {
namespace {

namespace fs = std::filesystem;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) {
    s.pop_back();
  }
  return s;
}

// `git ARGS` that must succeed; its output, trimmed ("" and a test failure
// otherwise). With `ok`, runs only while *ok and clears it on failure, so a
// sequence stops at its first failure.
std::string mustGit(const std::vector<std::string>& args, bool* ok = nullptr) {
  if (ok != nullptr && !*ok) {
    return "";
  }
  CommandResult r = git(args);
  if (r.exit_code != 0) {
    if (ok != nullptr) {
      *ok = false;
    }
    std::string cmd = "git";
    for (const auto& a : args) {
      cmd += " " + a;
    }
    ADD_FAILURE() << cmd << " (exit " << r.exit_code << "): " << r.output;
    return "";
  }
  return trim(r.output);
}

} // namespace

CommandResult git(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& extra_env) {
  std::map<std::string, std::string> env = {{"GIT_CONFIG_NOSYSTEM", "1"},
                                            {"GIT_CONFIG_GLOBAL", "/dev/null"},
                                            {"GIT_TERMINAL_PROMPT", "0"},
                                            {"GIT_AUTHOR_NAME", "rig"},
                                            {"GIT_AUTHOR_EMAIL", "rig@captf.test"},
                                            {"GIT_COMMITTER_NAME", "rig"},
                                            {"GIT_COMMITTER_EMAIL", "rig@captf.test"}};
  for (const auto& [key, value] : extra_env) {
    env[key] = value;
  }
  std::vector<std::string> argv{"git"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, "", env);
}

std::map<std::string, std::string> gitClientEnv(const Env& env, const std::string& known_hosts) {
  return {{"GIT_SSL_CAINFO", env.ca_file},
          {"GIT_SSH_COMMAND", "ssh -i " + env.git_ssh_key + " -o UserKnownHostsFile=" +
                                  (known_hosts.empty() ? env.git_known_hosts : known_hosts) +
                                  " -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"
                                  " -o BatchMode=yes"}};
}

GitRepo::GitRepo(const Env& env, std::string name)
    : env_(&env), name_(std::move(name)), path_(env.git_repos + "/" + name_ + ".git") {
  if (env.git_repos.empty()) {
    ADD_FAILURE() << "the rig has no Git server (tier kE2e and up)";
    return;
  }
  mustGit({"init", "-q", "--bare", "--initial-branch=main", path_});
}

std::string GitRepo::httpsUrl() const {
  return env_->git_https + "/" + name_ + ".git";
}

std::string GitRepo::sshUrl() const {
  return env_->git_ssh + path_;
}

std::string GitRepo::commitDir(const std::string& branch, const std::string& dir,
                               const std::string& message) {
  std::string work = env_->dir + "/git-work-XXXXXX";
  if (mkdtemp(work.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << work;
    return "";
  }
  // The branch's head is the parent; the index starts empty, so the
  // commit's tree is exactly `dir`.
  bool ok = true;
  mustGit({"init", "-q", "--initial-branch=" + branch, work}, &ok);
  if (!commitOf("refs/heads/" + branch).empty()) {
    mustGit({"-C", work, "fetch", "-q", path_, "refs/heads/" + branch}, &ok);
    mustGit({"-C", work, "reset", "-q", "--soft", "FETCH_HEAD"}, &ok);
  }
  std::error_code ec;
  fs::copy(dir, work, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  if (ec) {
    ADD_FAILURE() << "copy " << dir << " to " << work << ": " << ec.message();
    ok = false;
  }
  mustGit({"-C", work, "add", "-A"}, &ok);
  mustGit({"-C", work, "commit", "-q", "--allow-empty", "-m", message}, &ok);
  mustGit({"-C", work, "push", "-q", path_, "HEAD:refs/heads/" + branch}, &ok);
  std::string id = mustGit({"-C", work, "rev-parse", "HEAD"}, &ok);
  fs::remove_all(work);
  return id;
}

std::string GitRepo::commitFiles(const std::string& branch,
                                 const std::map<std::string, std::string>& files,
                                 const std::string& message) {
  std::string dir = env_->dir + "/git-files-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << dir;
    return "";
  }
  for (const auto& [rel, content] : files) {
    const fs::path file = fs::path(dir) / rel;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
  }
  std::string id = commitDir(branch, dir, message);
  fs::remove_all(dir);
  return id;
}

void GitRepo::tag(const std::string& name, const std::string& commit) {
  mustGit({"--git-dir=" + path_, "tag", "-f", name, commit});
}

std::string GitRepo::annotatedTag(const std::string& name, const std::string& commit,
                                  const std::string& message) {
  mustGit({"--git-dir=" + path_, "tag", "-f", "-a", "-m", message, name, commit});
  return mustGit({"--git-dir=" + path_, "rev-parse", "refs/tags/" + name});
}

void GitRepo::forcePush(const std::string& branch, const std::string& commit) {
  mustGit({"--git-dir=" + path_, "update-ref", "refs/heads/" + branch, commit});
}

std::string GitRepo::commitOf(const std::string& ref) const {
  CommandResult r = git({"--git-dir=" + path_, "rev-parse", "-q", "--verify", ref + "^{commit}"});
  return r.exit_code == 0 ? trim(r.output) : "";
}

GitCounts GitRepo::counts() const {
  const auto all = gitCounts(*env_);
  auto it = all.find(name_);
  return it != all.end() ? it->second : GitCounts{};
}

std::map<std::string, GitCounts> gitCounts(const Env& env) {
  std::map<std::string, GitCounts> counts;
  CommandResult r = run({"curl", "-sS", "-f", "--cacert", env.ca_file, "-u",
                         env.git_user + ":" + env.git_password, env.git_https + "/_counts"});
  if (r.exit_code != 0) {
    ADD_FAILURE() << "GET " << env.git_https << "/_counts: " << r.output;
    return counts;
  }
  const auto json = nlohmann::json::parse(r.output, nullptr, false);
  if (!json.is_object()) {
    ADD_FAILURE() << "GET /_counts is not a JSON object: " << r.output;
    return counts;
  }
  for (const auto& [repo, c] : json.items()) {
    counts[repo] = {c.value("ref_advertisements", 0), c.value("upload_packs", 0)};
  }
  return counts;
}

} // namespace captf::rig
