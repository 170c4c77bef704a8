// tfcapi-lint module git::URL//path?ref=...: the address, the ref, the fetch,
// and the lint of the fetched directory through the same path a directory
// takes (the golden reports of the directory fixtures).

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/git.h"
#include "lint/cli.h"
#include "lint/contract_source.h"
#include "lint/finding.h"
#include "test/contract/git_repo.h"
#include "test/lint/test_util.h"

namespace captf::lint {
namespace {

namespace fs = std::filesystem;
using ::captf::contract::testing::GitFile;
using ::captf::contract::testing::GitRepo;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string readAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The files of a fixture directory, under `prefix` in the repository.
std::vector<GitFile> filesOf(std::string_view fixture, const std::string& prefix) {
  std::vector<GitFile> files;
  const fs::path root = testing::testdata() / fixture;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) {
      files.push_back(
          {prefix + fs::relative(entry.path(), root).generic_string(), readAll(entry.path())});
    }
  }
  return files;
}

// Serves every remote from one local repository, and remembers what was
// asked for.
class LocalClient final : public contract::git::Client {
public:
  explicit LocalClient(const GitRepo& repo) : repo_(repo) {}

  absl::StatusOr<contract::git::RemoteListing> listRemote(const contract::GitUrl& url,
                                                          const contract::git::Credentials& c,
                                                          absl::Duration timeout) const override {
    listed.push_back(url.canonical);
    return contract::git::listRemoteWithHead(repo_.gitUrl(), c, timeout);
  }
  absl::StatusOr<contract::git::FetchResult>
  fetchCommit(const contract::GitUrl& /*url*/, const contract::git::Credentials& c,
              std::string_view commit, const std::string& destination,
              const contract::git::FetchOptions& options) const override {
    fetched.emplace_back(commit);
    hints.push_back(options.ref_hint);
    return contract::git::fetchCommit(repo_.gitUrl(), c, commit, destination, options);
  }

  mutable std::vector<std::string> listed;
  mutable std::vector<std::string> fetched;
  mutable std::vector<std::string> hints;

private:
  const GitRepo& repo_;
};

class LintGitTest : public ::testing::Test {
protected:
  LintGitTest() : repo_((tmp_.path() / "remote.git").string()), client_(repo_) {
    fs::create_directory(tmp_.path() / "scratch");
    env_.client = &client_;
    env_.temp_dir = tmp_.path() / "scratch";
  }

  struct Run {
    int code = -1;
    std::string out;
    std::string err;
  };

  Run run(std::vector<std::string> args) {
    args.insert(args.begin(), "tfcapi-lint");
    std::ostringstream out;
    std::ostringstream err;
    const ContractTables contracts;
    const BuildInfo build{"1.2.3", "abc123", "2026-01-01"};
    Run r;
    r.code = runCli(args, out, err, contracts, build, {}, env_);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  // Nothing of the fetch is left behind.
  void expectScratchEmpty() {
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(tmp_.path() / "scratch")) {
      left.push_back(entry.path().string());
    }
    EXPECT_THAT(left, IsEmpty());
  }

  testing::TempModule tmp_;
  GitRepo repo_;
  LocalClient client_;
  GitEnvironment env_;
};

TEST_F(LintGitTest, AGitModuleIsLintedAsItsDirectoryWouldBe) {
  std::vector<GitFile> files = filesOf("machine-bad-inputs", "modules/machine/");
  files.push_back({"README.md", "# not the module\n"});
  const std::string commit = repo_.commit(files);
  repo_.annotatedTag("v1.0.0", commit);
  repo_.commit({{"main.tf", "# main moved on\n"}});

  const Run r = run({"module", "--role", "machine",
                     "git::https://git.example.test/org/modules.git//modules/machine?ref=v1.0.0"});
  EXPECT_EQ(r.code, kExitFindings) << r.err;
  EXPECT_EQ(r.out, readAll(testing::testdata() / "golden" / "machine-bad-inputs.txt"));
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(client_.listed, ::testing::ElementsAre("https://git.example.test/org/modules.git"));
  EXPECT_THAT(client_.fetched, ::testing::ElementsAre(commit));
  EXPECT_THAT(client_.hints, ::testing::ElementsAre("refs/tags/v1.0.0"));
  expectScratchEmpty();
}

TEST_F(LintGitTest, TheJsonReportNamesTheAddress) {
  repo_.commit(filesOf("machinepool-bad-shape", "pool/"));
  const std::string address = "git::https://git.example.test/org/modules.git//pool";
  // No ?ref=: the branch the remote's HEAD names.
  const Run r = run({"module", "--json", "--role=machinepool", address});
  EXPECT_EQ(r.code, kExitFindings) << r.err;
  std::string golden = readAll(testing::testdata() / "golden" / "machinepool-bad-shape.json");
  for (std::size_t at = golden.find("MODULE"); at != std::string::npos;
       at = golden.find("MODULE", at + address.size())) {
    golden.replace(at, 6, address);
  }
  EXPECT_EQ(r.out, golden);
  EXPECT_THAT(client_.hints, ::testing::ElementsAre("refs/heads/main"));
  expectScratchEmpty();
}

TEST_F(LintGitTest, ACommitRefIsFetchedWithoutAHint) {
  const std::string commit = repo_.commit(filesOf("cluster-aws", ""));
  repo_.commit({{"main.tf", "# broken later\n"}});
  const Run r = run({"module", "--role", "cluster",
                     "git::ssh://git@git.example.test/org/modules.git?ref=" + commit});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(client_.fetched, ::testing::ElementsAre(commit));
  EXPECT_THAT(client_.hints, ::testing::ElementsAre(""));
}

TEST_F(LintGitTest, AnUnknownRefOrPathCannotBeRead) {
  repo_.commit(filesOf("cluster-aws", "mod/"));
  Run r =
      run({"module", "--role", "cluster", "git::https://git.example.test/org/m.git//mod?ref=v9"});
  EXPECT_EQ(r.code, kExitUnparsable);
  EXPECT_EQ(r.err, "tfcapi-lint module: https://git.example.test/org/m.git: the remote has no tag "
                   "or branch named v9\n");
  EXPECT_THAT(client_.fetched, IsEmpty());

  r = run({"module", "--role", "cluster", "git::https://git.example.test/org/m.git//nope"});
  EXPECT_EQ(r.code, kExitUnparsable);
  EXPECT_THAT(r.err, HasSubstr("nope is not a directory in branch main"));
  expectScratchEmpty();
}

TEST_F(LintGitTest, ABadAddressIsAUsageError) {
  for (const std::string address : {"git::https://git.example.test/m.git?depth=1",
                                    "git::file:///srv/m.git", "git::https://h/m.git//../x"}) {
    const Run r = run({"module", "--role", "cluster", address});
    EXPECT_EQ(r.code, kExitUsage) << address;
    EXPECT_THAT(r.err, HasSubstr("tfcapi-lint module: " + address + ": ")) << address;
  }
  EXPECT_THAT(client_.listed, IsEmpty());
}

TEST_F(LintGitTest, GitCredentialsAreForGitAddressesAndAreValidated) {
  Run r = run({"module", "--role", "cluster", "--git-credentials", tmp_.path().string(),
               (testing::testdata() / "cluster-aws").string()});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--git-credentials applies to git:: addresses only"));

  const fs::path creds = tmp_.path() / "creds";
  fs::create_directory(creds);
  std::ofstream(creds / "password") << "secret-value";
  r = run({"module", "--role", "cluster", "--git-credentials", creds.string(),
           "git::https://git.example.test/m.git"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("password without username"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("secret-value")));
}

TEST(LintGitNetwork, AnUnreachableRemoteCannotBeRead) {
  std::vector<std::string> args = {"tfcapi-lint", "module", "--role", "cluster",
                                   "git::https://127.0.0.1:1/x.git?ref=main"};
  std::ostringstream out;
  std::ostringstream err;
  const ContractTables contracts;
  const int code = runCli(args, out, err, contracts, BuildInfo{});
  EXPECT_EQ(code, kExitUnparsable);
  EXPECT_THAT(err.str(), HasSubstr("tfcapi-lint module: ls-remote https://127.0.0.1:1/x.git: "));
  EXPECT_EQ(out.str(), "");
}

} // namespace
} // namespace captf::lint
