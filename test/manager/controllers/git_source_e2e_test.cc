// Git module sources end to end on the rig's capi tier
// (docs/decisions/git-sources.md): the rig's real Git server (git
// http-backend behind HTTPS with basic auth, counted at the server), the
// `manager` executable with the shipped RBAC and a short
// --git-poll-interval, real Jobs whose static runner fetches the commit with
// libgit2 and runs real OpenTofu from a separate runtime image.
//
//   a TerraformCluster on a branch applies from the branch's commit; a push
//   re-applies within a poll interval with the new commit in status; a
//   force-push back to the older commit is reported and, deleting what the
//   newer one added, blocked by the destructive-plan guard;
//   a TerraformMachine reports a new commit without re-applying;
//   a tag and an exact commit both work; SSH with a known host key works
//   and a changed host key is refused;
//   bad credentials, an unknown branch and an unreachable server each give a
//   named DependenciesReady reason and no Job, and fixing them recovers;
//   100 objects on 3 remotes cost 3 ls-remote calls per interval.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "contract/roles.h"
#include "test/manager/controllers/manager_e2e.h"
#include "test/rig/git_repo.h"
#include "test/runner/e2e_support.h"

namespace captf::controllers {
namespace {

using e2e::apply;
using e2e::conditionOf;
using e2e::env;
using e2e::eventually;
using e2e::getJson;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kNamespace[] = "git-e2e";
constexpr char kIdentity[] = "git-e2e";
constexpr char kCredentials[] = "git-credentials";
constexpr int kPollSeconds = 3;

// The server's URL by name: libgit2's TLS (mbedTLS 2.28 in Debian) matches
// a certificate's DNS names only, not its IP addresses
// (docs/decisions/git-sources.md).
std::string byName(std::string url) {
  const std::string ip = "://127.0.0.1:";
  if (auto at = url.find(ip); at != std::string::npos) {
    url.replace(at, ip.size(), "://localhost:");
  }
  return url;
}

class GitSourceE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    auto& images = runner::e2e::Images::get();
    manager_.runner_image = images.runner();
    // The runtime image: tofu at /captf/runtime. Its own module is never used.
    runtime_image_ = images.module(
        "git-e2e-runtime", "# the module of a Git source comes from the repository\n", env().tofu);
    e2e::createTenant(kNamespace, kIdentity, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    credentialsSecret(kCredentials, env().git_password);
    repo_ = std::make_unique<rig::GitRepo>(env(), "modules");
    main_v1_ = repo_->commitFiles("main", moduleFiles("1"), "cluster revision 1");
    ASSERT_FALSE(main_v1_.empty());
    manager_.start({"--git-poll-interval=" + std::to_string(kPollSeconds) + "s"});
    ASSERT_FALSE(HasFatalFailure());
  }

  static void TearDownTestSuite() { manager_.stopCleanly(); }

  // cluster/ and machine/ noop modules; a revision other than "1" adds a
  // resource to the cluster's (a change that deletes nothing).
  static std::map<std::string, std::string> moduleFiles(const std::string& revision) {
    std::string cluster = runner::e2e::noopModule(contract::Role::kCluster);
    if (revision != "1") {
      cluster += "resource \"terraform_data\" \"revision\" {\n  input = \"" + revision + "\"\n}\n";
    }
    return {{"cluster/main.tf", cluster},
            {"machine/main.tf", runner::e2e::noopModule(contract::Role::kMachine)},
            {"README.md", "modules for the git e2e test, revision " + revision + "\n"}};
  }

  static void credentialsSecret(const std::string& name, const std::string& password) {
    apply({{"apiVersion", "v1"},
           {"kind", "Secret"},
           {"metadata", {{"name", name}, {"namespace", kNamespace}}},
           {"stringData",
            {{"username", env().git_user},
             {"password", password},
             {"ca.crt", rig::readFile(env().ca_file)}}}});
  }

  static json gitSource(const json& ref, const std::string& path, const std::string& url = "") {
    return {{"git",
             {{"url", byName(url.empty() ? repo_->httpsUrl() : url)},
              {"ref", ref},
              {"path", path},
              {"secretRef", {{"name", kCredentials}}},
              {"runtimeImage", runtime_image_}}}};
  }

  static void createCluster(const std::string& name, const json& source) {
    e2e::createClusterPair(kNamespace, name, "c-" + name,
                           {{"source", source}, {"identityRef", {{"name", kIdentity}}}});
  }

  static json object(const std::string& resource, const std::string& name) {
    return getJson({"-n", kNamespace, "get", resource, name});
  }
  static std::string statusCommit(const json& o) {
    return o.value("status", json::object()).value("source", json::object()).value("commit", "");
  }
  static std::string latestCommit(const json& o) {
    return o.value("status", json::object())
        .value("source", json::object())
        .value("latestCommit", "");
  }
  static bool provisioned(const json& o) {
    return o.value("status", json::object())
        .value("initialization", json::object())
        .value("provisioned", false);
  }
  static std::vector<std::string> applies(const std::string& owner) {
    return e2e::runJobs(kNamespace, owner, "apply");
  }
  static std::vector<std::string> eventNotes(const std::string& name, const std::string& reason) {
    std::vector<std::string> notes;
    for (const json& e : e2e::eventsFor(kNamespace, name, reason)) {
      notes.push_back(e.value("note", ""));
    }
    return notes;
  }

  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static e2e::ManagerRig manager_;
  static std::string runtime_image_;
  static std::unique_ptr<rig::GitRepo> repo_;
  static std::string main_v1_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

// NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
e2e::ManagerRig GitSourceE2eTest::manager_;
std::string GitSourceE2eTest::runtime_image_;
std::unique_ptr<rig::GitRepo> GitSourceE2eTest::repo_;
std::string GitSourceE2eTest::main_v1_;
// NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)

TEST_F(GitSourceE2eTest, ABranchAppliesAndAPushReappliesWithinAPollInterval) {
  // Its own branch, so other tests' pushes do not move it.
  const std::string v1 = repo_->commitFiles("track", moduleFiles("1"), "track 1");
  createCluster("branch", gitSource({{"branch", "track"}}, "cluster"));
  ASSERT_TRUE(eventually([&] {
    const json tc = object("terraformcluster", "branch");
    return provisioned(tc) && statusCommit(tc) == v1;
  })) << object("terraformcluster", "branch").dump(2)
      << manager_.logText();
  EXPECT_EQ(latestCommit(object("terraformcluster", "branch")), v1);
  ASSERT_EQ(applies("branch").size(), 1U);

  // A push: a new apply from the new commit, within about one interval.
  const std::string v2 = repo_->commitFiles("track", moduleFiles("2"), "track 2");
  const auto pushed = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] {
    const json tc = object("terraformcluster", "branch");
    return statusCommit(tc) == v2 && e2e::readyTrue(tc);
  })) << object("terraformcluster", "branch").dump(2);
  const auto took = std::chrono::steady_clock::now() - pushed;
  EXPECT_EQ(applies("branch").size(), 2U);
  EXPECT_THAT(
      eventNotes("branch", "SourceCommitChanged"),
      ::testing::Contains(HasSubstr("moved from " + v1.substr(0, 12) + " to " + v2.substr(0, 12))));
  std::cout << "push to re-applied: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";

  // A force-push back to the older commit: reported, and applied only as
  // the apply rules allow. Going back deletes v2's resource, so the
  // destructive-plan guard blocks it and nothing changes.
  repo_->forcePush("track", v1);
  ASSERT_TRUE(eventually([&] {
    return conditionOf(object("terraformcluster", "branch"), "ApplyJobSucceeded", "reason") ==
           "DestructivePlanBlocked";
  })) << object("terraformcluster", "branch").dump(2);
  const json tc = object("terraformcluster", "branch");
  EXPECT_EQ(latestCommit(tc), v1);
  EXPECT_EQ(statusCommit(tc), v2) << "the blocked apply changed nothing";
  EXPECT_THAT(
      eventNotes("branch", "SourceCommitChanged"),
      ::testing::Contains(HasSubstr("moved from " + v2.substr(0, 12) + " to " + v1.substr(0, 12))));
  EXPECT_EQ(applies("branch").size(), 3U);
}

TEST_F(GitSourceE2eTest, AMachineReportsANewCommitWithoutReapplying) {
  const std::string m1 = repo_->commitFiles("machines", moduleFiles("1"), "machines 1");
  createCluster("mc", gitSource({{"commit", main_v1_}}, "cluster"));
  ASSERT_TRUE(eventually([&] { return provisioned(object("terraformcluster", "mc")); }))
      << object("terraformcluster", "mc").dump(2);
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata", {{"name", "mc-bootstrap"}, {"namespace", kNamespace}}},
         {"data", {{"value", absl::Base64Escape("#cloud-config\n")}}}});
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformMachine"},
         {"metadata",
          {{"name", "m"},
           {"namespace", kNamespace},
           {"labels", {{"cluster.x-k8s.io/cluster-name", "c-mc"}}}}},
         {"spec", {{"source", gitSource({{"branch", "machines"}}, "machine")}}}});
  apply({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
         {"kind", "Machine"},
         {"metadata", {{"name", "m"}, {"namespace", kNamespace}}},
         {"spec",
          {{"clusterName", "c-mc"},
           {"version", "v1.34.0"},
           {"bootstrap", {{"dataSecretName", "mc-bootstrap"}}},
           {"infrastructureRef",
            {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
             {"kind", "TerraformMachine"},
             {"name", "m"}}}}}});
  ASSERT_TRUE(eventually([&] {
    const json tm = object("terraformmachine", "m");
    return provisioned(tm) && statusCommit(tm) == m1;
  })) << object("terraformmachine", "m").dump(2)
      << manager_.logText();
  ASSERT_EQ(applies("m").size(), 1U);

  const std::string m2 = repo_->commitFiles("machines", moduleFiles("2"), "machines 2");
  ASSERT_TRUE(eventually([&] { return latestCommit(object("terraformmachine", "m")) == m2; }))
      << object("terraformmachine", "m").dump(2);
  EXPECT_THAT(eventNotes("m", "NewCommitAvailable"),
              ::testing::Contains(HasSubstr("keeps " + m1.substr(0, 12))));
  // Three listings of the remote later: still the first commit, still one
  // apply (counted listings, not a fixed sleep).
  const int listed = repo_->counts().ref_advertisements;
  ASSERT_TRUE(eventually([&] { return repo_->counts().ref_advertisements >= listed + 3; }));
  const json tm = object("terraformmachine", "m");
  EXPECT_EQ(statusCommit(tm), m1);
  EXPECT_EQ(applies("m").size(), 1U);
  EXPECT_TRUE(e2e::readyTrue(tm)) << tm.dump(2);
}

TEST_F(GitSourceE2eTest, ATagAndAnExactCommitBothWork) {
  const std::string tagged = repo_->commitFiles("release", moduleFiles("7"), "release 7");
  repo_->annotatedTag("v7", tagged);
  createCluster("tag", gitSource({{"tag", "v7"}}, "cluster"));
  createCluster("commit", gitSource({{"commit", main_v1_}}, "cluster"));
  ASSERT_TRUE(eventually([&] {
    return statusCommit(object("terraformcluster", "tag")) == tagged &&
           statusCommit(object("terraformcluster", "commit")) == main_v1_;
  })) << object("terraformcluster", "tag").dump(2)
      << object("terraformcluster", "commit").dump(2);
  EXPECT_TRUE(provisioned(object("terraformcluster", "tag")));
  EXPECT_TRUE(provisioned(object("terraformcluster", "commit")));
}

TEST_F(GitSourceE2eTest, BadCredentialsAnUnknownBranchAndAnUnreachableServerAreNamed) {
  credentialsSecret("wrong-credentials", "not-the-password");
  json bad_auth = gitSource({{"branch", "main"}}, "cluster");
  bad_auth["git"]["secretRef"]["name"] = "wrong-credentials";
  createCluster("auth", bad_auth);
  createCluster("nobranch", gitSource({{"branch", "later"}}, "cluster"));
  const int closed = e2e::freePort();
  createCluster("down", gitSource({{"branch", "main"}}, "cluster",
                                  "https://localhost:" + std::to_string(closed) + "/modules.git"));
  const auto reason = [](const std::string& name) {
    return conditionOf(object("terraformcluster", name), "DependenciesReady", "reason");
  };
  ASSERT_TRUE(eventually([&] {
    return reason("auth") == "GitAuthenticationFailed" && reason("nobranch") == "GitRefNotFound" &&
           reason("down") == "GitUnreachable";
  })) << object("terraformcluster", "auth").dump(2)
      << object("terraformcluster", "nobranch").dump(2)
      << object("terraformcluster", "down").dump(2);
  for (const char* name : {"auth", "nobranch", "down"}) {
    EXPECT_EQ(conditionOf(object("terraformcluster", name), "DependenciesReady", "status"), "False")
        << name;
    EXPECT_TRUE(applies(name).empty()) << name;
    EXPECT_FALSE(e2e::eventsFor(kNamespace, name, reason(name)).empty()) << name;
  }
  // The password never reaches a condition, an Event or the log.
  EXPECT_THAT(object("terraformcluster", "auth").dump(),
              ::testing::Not(HasSubstr(env().git_password)));
  EXPECT_THAT(manager_.logText(), ::testing::Not(HasSubstr(env().git_password)));
  EXPECT_THAT(manager_.logText(), ::testing::Not(HasSubstr("not-the-password")));

  // Fixing each recovers without anyone touching the objects' status.
  credentialsSecret("wrong-credentials", env().git_password);
  repo_->commitFiles("later", moduleFiles("1"), "later");
  e2e::mergePatch(kNamespace, "terraformcluster", "down",
                  {{"spec", {{"source", gitSource({{"branch", "main"}}, "cluster")}}}});
  ASSERT_TRUE(eventually([&] {
    return provisioned(object("terraformcluster", "auth")) &&
           provisioned(object("terraformcluster", "nobranch")) &&
           provisioned(object("terraformcluster", "down"));
  })) << object("terraformcluster", "auth").dump(2)
      << object("terraformcluster", "nobranch").dump(2)
      << object("terraformcluster", "down").dump(2);
}

TEST_F(GitSourceE2eTest, AnSshRemoteWithAKnownHostKeyWorksAndAChangedOneIsRefused) {
  // The rig's sshd serves the same repositories; host keys are always
  // checked against the Secret's known_hosts.
  const std::string url = repo_->sshUrl();
  const auto ssh_secret = [](const std::string& name, const std::string& known_hosts) {
    apply({{"apiVersion", "v1"},
           {"kind", "Secret"},
           {"metadata", {{"name", name}, {"namespace", kNamespace}}},
           {"stringData",
            {{"ssh-privatekey", rig::readFile(env().git_ssh_key)}, {"known_hosts", known_hosts}}}});
  };
  ssh_secret("ssh-good", rig::readFile(env().git_known_hosts));
  // Another host key under the server's name: what a man in the middle shows.
  const std::string other = "/tmp/captf-git-e2e-other-hostkey";
  std::remove(other.c_str());
  std::remove((other + ".pub").c_str());
  ASSERT_EQ(rig::run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other}).exit_code, 0);
  std::string known = rig::readFile(env().git_known_hosts);
  const std::string pub = rig::readFile(other + ".pub");
  const std::string host = known.substr(0, known.find(' '));
  ssh_secret("ssh-changed", host + " " + pub.substr(0, pub.rfind(' ')) + "\n");

  json good = gitSource({{"commit", main_v1_}}, "cluster", url);
  good["git"]["secretRef"]["name"] = "ssh-good";
  good["git"]["url"] = url;
  json changed = good;
  changed["git"]["secretRef"]["name"] = "ssh-changed";
  changed["git"]["ref"] = {{"branch", "main"}};
  createCluster("ssh", good);
  createCluster("sshmitm", changed);
  ASSERT_TRUE(eventually([&] {
    const json tc = object("terraformcluster", "ssh");
    return provisioned(tc) && statusCommit(tc) == main_v1_;
  })) << object("terraformcluster", "ssh").dump(2)
      << manager_.logText();
  ASSERT_TRUE(eventually([&] {
    return conditionOf(object("terraformcluster", "sshmitm"), "DependenciesReady", "reason") ==
           "GitServerNotTrusted";
  })) << object("terraformcluster", "sshmitm").dump(2);
  EXPECT_THAT(conditionOf(object("terraformcluster", "sshmitm"), "DependenciesReady", "message"),
              HasSubstr("host key"));
  EXPECT_TRUE(applies("sshmitm").empty());
  EXPECT_THAT(manager_.logText(), ::testing::Not(HasSubstr("PRIVATE KEY")));
}

TEST_F(GitSourceE2eTest, AHundredObjectsOnThreeRemotesCostThreeListingsPerInterval) {
  // Three repositories, none with the branch the objects name: each object
  // waits (GitRefNotFound) and starts no Job, so only listings happen.
  std::vector<std::unique_ptr<rig::GitRepo>> remotes;
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  for (int r = 0; r < 3; ++r) {
    remotes.push_back(std::make_unique<rig::GitRepo>(env(), "shared-" + std::to_string(r)));
    remotes.back()->commitFiles("main", moduleFiles("1"), "shared");
  }
  for (int i = 0; i < 100; ++i) {
    const std::string name = "many-" + std::to_string(i);
    json spec = {{"source", gitSource({{"branch", "absent"}}, "cluster",
                                      remotes[static_cast<std::size_t>(i % 3)]->httpsUrl())},
                 {"identityRef", {{"name", kIdentity}}}};
    list["items"].push_back({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                             {"kind", "TerraformCluster"},
                             {"metadata", {{"name", name}, {"namespace", kNamespace}}},
                             {"spec", spec}});
    list["items"].push_back({{"apiVersion", "cluster.x-k8s.io/v1beta2"},
                             {"kind", "Cluster"},
                             {"metadata", {{"name", "c-" + name}, {"namespace", kNamespace}}},
                             {"spec",
                              {{"infrastructureRef",
                                {{"apiGroup", "infrastructure.cluster.x-k8s.io"},
                                 {"kind", "TerraformCluster"},
                                 {"name", name}}}}}});
  }
  auto created = e2e::kubectl({"apply", "--server-side", "-f", "-"}, list.dump());
  ASSERT_EQ(created.exit_code, 0) << created.output;
  ASSERT_TRUE(eventually([&] {
    for (int i = 0; i < 100; i += 11) {
      if (conditionOf(object("terraformcluster", "many-" + std::to_string(i)), "DependenciesReady",
                      "reason") != "GitRefNotFound") {
        return false;
      }
    }
    return true;
  })) << object("terraformcluster", "many-0").dump(2);
  // Listings are per remote and interval, never per object: wait until the
  // slowest remote has been listed three more times (no fixed window: the
  // machine's load sets the pace), then no remote may have been listed
  // anywhere near once per object (33-34 objects each).
  std::map<std::string, int> before;
  for (const auto& remote : remotes) {
    before[remote->name()] = remote->counts().ref_advertisements;
  }
  const auto listed = [&](const rig::GitRepo& remote) {
    return remote.counts().ref_advertisements - before[remote.name()];
  };
  ASSERT_TRUE(eventually(
      [&] {
        return std::ranges::all_of(remotes,
                                   [&](const auto& remote) { return listed(*remote) >= 3; });
      },
      std::chrono::seconds(40 * kPollSeconds)));
  for (const auto& remote : remotes) {
    const int listings = listed(*remote);
    EXPECT_LE(listings, 10) << remote->name() << ": listed about once per object, not per interval";
    std::cout << remote->name() << ": " << listings
              << " ls-remote calls while the slowest remote had 3, for 33-34 objects\n";
  }
  EXPECT_TRUE(applies("many-0").empty());
}

} // namespace
} // namespace captf::controllers
