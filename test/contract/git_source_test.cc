#include <string>

#include <gtest/gtest.h>

#include "contract/git_source.h"

namespace captf::contract {
namespace {

TEST(GitUrlTest, HttpsSshAndScpLikeFormsParseToOneCanonicalForm) {
  auto https = parseGitUrl("https://Git.Example.com:8443/org/repo.git");
  ASSERT_TRUE(https.ok()) << https.status();
  EXPECT_EQ(https->scheme, GitScheme::kHttps);
  EXPECT_EQ(https->host, "git.example.com");
  EXPECT_EQ(https->port, "8443");
  EXPECT_EQ(https->path, "/org/repo.git");
  EXPECT_EQ(https->canonical, "https://git.example.com:8443/org/repo.git");

  auto ssh = parseGitUrl("ssh://deploy@10.0.0.5:2222/srv/repo.git");
  ASSERT_TRUE(ssh.ok()) << ssh.status();
  EXPECT_EQ(ssh->user, "deploy");
  EXPECT_EQ(ssh->canonical, "ssh://deploy@10.0.0.5:2222/srv/repo.git");

  auto scp = parseGitUrl("git@github.com:org/repo.git");
  ASSERT_TRUE(scp.ok()) << scp.status();
  EXPECT_EQ(scp->scheme, GitScheme::kSsh);
  EXPECT_EQ(scp->canonical, "ssh://git@github.com/org/repo.git");

  auto no_user = parseGitUrl("ssh://[::1]:22/r.git");
  ASSERT_TRUE(no_user.ok()) << no_user.status();
  EXPECT_EQ(no_user->user, "git");
  EXPECT_EQ(no_user->host, "[::1]");
}

TEST(GitUrlTest, RefusesWhatCannotBeARemoteWithAReason) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty"},
      {"http://git.example.com/r.git", "scheme \"http\""},
      {"file:///srv/r.git", "scheme \"file\""},
      {"https://user:pw@git.example.com/r.git", "user information"},
      {"ssh://git:pw@host/r.git", "password"},
      {"https://git.example.com", "no repository path"},
      {"https:///r.git", "no host"},
      {"https://git.example.com:0/r.git", "port"},
      {"https://git.example.com:99999/r.git", "port"},
      {"https://git.exa mple.com/r.git", "space"},
      {"https://git.example.com/r.git?x=1", "query"},
      {"https://git.example.com/a/../r.git", "'..'"},
      {"/srv/repo.git", "neither"},
      {"https://[::1/r.git", "IPv6"},
  };
  for (const auto& [url, reason] : cases) {
    auto parsed = parseGitUrl(url);
    ASSERT_FALSE(parsed.ok()) << url;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_NE(parsed.status().message().find(reason), std::string::npos)
        << url << ": " << parsed.status().message();
  }
}

TEST(GitRefTest, BranchAndTagNamesFollowGitsRules) {
  for (const char* good : {"main", "release/1.2", "feature/x.y", "v1.2.0", "a-b_c"}) {
    EXPECT_TRUE(validateGitRef({GitRefKind::kBranch, good}).ok()) << good;
    EXPECT_TRUE(validateGitRef({GitRefKind::kTag, good}).ok()) << good;
  }
  for (const char* bad : {"",    "@",   "-x",   "a..b", "a@{1}", "a b",    "a~1",
                          "a^",  "a:b", "a?",   "a*",   "a[",    "a\\b",   "x.",
                          "/a",  "a/",  "a//b", ".a",   "a/.b",  "a.lock", "refs/heads/main",
                          "a\tb"}) {
    auto s = validateGitRef({GitRefKind::kBranch, bad});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("branch"), std::string::npos) << bad;
  }
}

TEST(GitRefTest, ACommitIsFortyLowerCaseHexDigits) {
  const std::string id(40, 'a');
  EXPECT_TRUE(validateGitRef({GitRefKind::kCommit, id}).ok());
  EXPECT_TRUE(isCommitId("0123456789abcdef0123456789abcdef01234567"));
  EXPECT_FALSE(validateGitRef({GitRefKind::kCommit, std::string(39, 'a')}).ok());
  EXPECT_FALSE(validateGitRef({GitRefKind::kCommit, std::string(40, 'A')}).ok());
  EXPECT_FALSE(validateGitRef({GitRefKind::kCommit, std::string(40, 'g')}).ok());
  EXPECT_EQ(fullRefName({GitRefKind::kBranch, "main"}), "refs/heads/main");
  EXPECT_EQ(fullRefName({GitRefKind::kTag, "v1"}), "refs/tags/v1");
  EXPECT_EQ(fullRefName({GitRefKind::kCommit, id}), id);
  EXPECT_EQ(describeGitRef({GitRefKind::kCommit, id}), "commit aaaaaaaaaaaa");
}

TEST(GitPathTest, APathStaysInsideTheRepository) {
  for (const char* good : {"", "modules/cluster", "a", "a.b/c-d"}) {
    EXPECT_TRUE(validateRepositoryPath(good).ok()) << good;
  }
  for (const char* bad :
       {"/abs", "..", "a/../b", "a/./b", ".", "a//b", "a/", "a\\b", ".git", "a/.git/b"}) {
    EXPECT_EQ(validateRepositoryPath(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(validateRepositoryPath(std::string(1025, 'a')).ok());
  EXPECT_FALSE(validateRepositoryPath(std::string("a\0b", 3)).ok());
}

TEST(GitModuleAddressTest, ParsesTheAddressOpenTofuUsersWrite) {
  auto a =
      parseGitModuleAddress("git::https://git.example.com/org/mods.git//cluster/aws?ref=v1.2.0");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->url.canonical, "https://git.example.com/org/mods.git");
  EXPECT_EQ(a->path, "cluster/aws");
  EXPECT_EQ(a->ref, "v1.2.0");

  auto scp = parseGitModuleAddress("git::git@github.com:org/mods.git");
  ASSERT_TRUE(scp.ok()) << scp.status();
  EXPECT_EQ(scp->path, "");
  EXPECT_FALSE(scp->ref.has_value());

  auto commit = parseGitModuleAddress(
      "git::ssh://git@h/r.git//m?ref=0123456789abcdef0123456789abcdef01234567");
  ASSERT_TRUE(commit.ok()) << commit.status();
  EXPECT_EQ(commit->ref, "0123456789abcdef0123456789abcdef01234567");
}

TEST(GitSourceIdentityTest, NamesUrlPathCommitAndRuntime) {
  auto url = parseGitUrl("git@h:org/r.git");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(gitSourceIdentity(*url, "m", std::string(40, 'a'), "r/tofu:1"),
            "git+ssh://git@h/org/r.git//m@" + std::string(40, 'a') + " runtime=r/tofu:1");
}

TEST(GitModuleAddressTest, RefusesTyposAndEscapes) {
  const std::pair<std::string, std::string> cases[] = {
      {"https://h/r.git", "starts with git::"},
      {"git::https://h/r.git?rev=main", "\"rev\" is not supported"},
      {"git::https://h/r.git?ref=", "no value"},
      {"git::https://h/r.git?ref=a&ref=b", "twice"},
      {"git::https://h/r.git?ref=a..b", "ref:"},
      {"git::https://h/r.git//../etc", "\"..\""},
      {"git::http://h/r.git", "scheme"},
  };
  for (const auto& [address, reason] : cases) {
    auto parsed = parseGitModuleAddress(address);
    ASSERT_FALSE(parsed.ok()) << address;
    EXPECT_NE(parsed.status().message().find(reason), std::string::npos)
        << address << ": " << parsed.status().message();
  }
}

} // namespace
} // namespace captf::contract
