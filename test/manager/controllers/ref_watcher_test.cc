#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/controllers/ref_watcher.h"
#include "test/contract/tcp_servers.h"

namespace captf::controllers {
namespace {

using namespace std::chrono_literals;
using contract::git::RemoteRef;
using contract::testing::Tarpit;
using ::testing::HasSubstr;

// A remote's refs as the fake server holds them, and every listing it
// served (what a real server's counter would show).
struct FakeRemotes {
  std::mutex mu;
  std::map<std::string, std::vector<RemoteRef>> refs;
  std::map<std::string, absl::Status> failures;
  std::map<std::string, int> listings;
  std::vector<std::string> passwords;

  RefWatcher::ListRemote lister() {
    return [this](const contract::GitUrl& url, const contract::git::Credentials& credentials,
                  std::chrono::milliseconds) -> absl::StatusOr<std::vector<RemoteRef>> {
      std::scoped_lock lock(mu);
      ++listings[url.canonical];
      passwords.push_back(credentials.password);
      if (auto it = failures.find(url.canonical); it != failures.end()) {
        return it->second;
      }
      return refs[url.canonical];
    };
  }
  int count(const std::string& url) {
    std::scoped_lock lock(mu);
    return listings[url];
  }
  int total() {
    std::scoped_lock lock(mu);
    int sum = 0;
    for (const auto& [url, n] : listings) {
      sum += n;
    }
    return sum;
  }
  void set(const std::string& url, std::vector<RemoteRef> r) {
    std::scoped_lock lock(mu);
    refs[url] = std::move(r);
  }
};

contract::GitUrl url(const std::string& text) {
  return *contract::parseGitUrl(text);
}

const std::string kA(40, 'a');
const std::string kB(40, 'b');

RefWatcher::ReadSecret noSecrets() {
  return [](const std::string& ns,
            const std::string& name) -> absl::StatusOr<std::map<std::string, std::string>> {
    if (name == "good") {
      return std::map<std::string, std::string>{{"username", "u"}, {"password", "pw-" + ns}};
    }
    return absl::NotFoundError("secrets \"" + name + "\" not found");
  };
}

template <class F> bool eventually(F f, std::chrono::milliseconds limit = 5s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) {
      return true;
    }
    std::this_thread::sleep_for(5ms);
  }
  return f();
}

struct Running {
  explicit Running(RefWatcher& w) : thread([&w](std::stop_token stop) { (void)w.run(stop); }) {}
  std::jthread thread;
};

TEST(RefWatcherTest, AHundredFollowersOfThreeRemotesCostThreeListingsPerInterval) {
  FakeRemotes server;
  const std::vector<std::string> urls = {"https://git.example.com/a.git",
                                         "https://git.example.com/b.git",
                                         "ssh://git@git.example.com/c.git"};
  for (const std::string& u : urls) {
    server.set(url(u).canonical, {{"refs/heads/main", kA}});
  }
  RefWatcher watcher({200ms, 0.1, 2, 1s}, noSecrets(), server.lister());
  std::atomic<int> notified = 0;
  watcher.setNotify([&](const RefFollower&) { ++notified; });
  for (int i = 0; i < 100; ++i) {
    const auto result = watcher.follow({"TerraformCluster", "ns", "o" + std::to_string(i)},
                                       url(urls[static_cast<std::size_t>(i % 3)]), "",
                                       {contract::GitRefKind::kBranch, "main"});
    EXPECT_FALSE(result.has_value()); // nothing listed yet
  }
  EXPECT_EQ(watcher.remotes(), 3u);
  Running running(watcher);
  ASSERT_TRUE(eventually([&] { return notified.load() == 100; }));
  EXPECT_EQ(server.total(), 3);
  // Every follower now reads the commit at once, without a listing.
  auto now = watcher.follow({"TerraformCluster", "ns", "o7"}, url(urls[1]), "",
                            {contract::GitRefKind::kBranch, "main"});
  ASSERT_TRUE(now.has_value());
  EXPECT_TRUE(now->status.ok());
  EXPECT_EQ(now->commit, kA);
  // A few intervals on, each remote is listed once per interval for all its
  // followers (33 or 34 each): listing per follower would have made each
  // count jump by a third of 100 at every interval, not by one.
  ASSERT_TRUE(eventually([&] {
    return std::ranges::all_of(
        urls, [&](const std::string& u) { return server.count(url(u).canonical) >= 3; });
  }));
  for (const std::string& u : urls) {
    EXPECT_LT(server.count(url(u).canonical), 33) << u;
  }
  // Unchanged refs wake nobody.
  EXPECT_EQ(notified.load(), 100);
}

TEST(RefWatcherTest, ANewCommitWakesOnlyTheFollowersOfThatRef) {
  FakeRemotes server;
  const std::string u = url("https://h/r.git").canonical;
  server.set(u, {{"refs/heads/main", kA}, {"refs/heads/dev", kA}, {"refs/tags/v1", kA}});
  RefWatcher watcher({50ms, 0.1, 1, 1s}, noSecrets(), server.lister());
  std::mutex mu;
  std::multiset<std::string> woken;
  watcher.setNotify([&](const RefFollower& who) {
    std::scoped_lock lock(mu);
    woken.insert(who.name);
  });
  watcher.follow({"TerraformCluster", "ns", "main"}, url(u), "",
                 {contract::GitRefKind::kBranch, "main"});
  watcher.follow({"TerraformMachine", "ns", "dev"}, url(u), "",
                 {contract::GitRefKind::kBranch, "dev"});
  watcher.follow({"TerraformMachine", "ns", "tag"}, url(u), "", {contract::GitRefKind::kTag, "v1"});
  Running running(watcher);
  ASSERT_TRUE(eventually([&] {
    std::scoped_lock lock(mu);
    return woken.size() == 3;
  }));
  server.set(u, {{"refs/heads/main", kB}, {"refs/heads/dev", kA}, {"refs/tags/v1", kA}});
  ASSERT_TRUE(eventually([&] {
    std::scoped_lock lock(mu);
    return woken.count("main") == 2;
  }));
  std::this_thread::sleep_for(200ms);
  {
    std::scoped_lock lock(mu);
    EXPECT_EQ(woken.count("dev"), 1u);
    EXPECT_EQ(woken.count("tag"), 1u);
  }
  auto main = watcher.follow({"TerraformCluster", "ns", "main"}, url(u), "",
                             {contract::GitRefKind::kBranch, "main"});
  ASSERT_TRUE(main && main->status.ok());
  EXPECT_EQ(main->commit, kB);
  // A branch that disappears is NotFound, named.
  server.set(u, {{"refs/heads/main", kB}});
  ASSERT_TRUE(eventually([&] {
    auto dev = watcher.follow({"TerraformMachine", "ns", "dev"}, url(u), "",
                              {contract::GitRefKind::kBranch, "dev"});
    return dev && dev->status.code() == absl::StatusCode::kNotFound;
  }));
}

TEST(RefWatcherTest, FailuresAreReportedAndRecoverWithoutHelp) {
  FakeRemotes server;
  const std::string u = url("https://h/private.git").canonical;
  server.set(u, {{"refs/heads/main", kA}});
  server.failures[u] = absl::UnauthenticatedError("ls-remote https://h/private.git: refused");
  RefWatcher watcher({50ms, 0.1, 1, 1s}, noSecrets(), server.lister());
  Running running(watcher);
  const RefFollower who{"TerraformCluster", "team-a", "c"};
  const contract::GitRef main{contract::GitRefKind::kBranch, "main"};
  ASSERT_TRUE(eventually([&] {
    auto r = watcher.follow(who, url(u), "good", main);
    return r && r->status.code() == absl::StatusCode::kUnauthenticated;
  }));
  {
    std::scoped_lock lock(server.mu);
    server.failures.clear();
  }
  ASSERT_TRUE(eventually([&] {
    auto r = watcher.follow(who, url(u), "good", main);
    return r && r->status.ok() && r->commit == kA;
  }));
  {
    // The Secret of the follower's namespace was used.
    std::scoped_lock lock(server.mu);
    ASSERT_FALSE(server.passwords.empty());
    EXPECT_EQ(server.passwords.back(), "pw-team-a");
  }
  // A missing credentials Secret: InvalidArgument naming it, and no listing.
  const int before = server.count(u);
  const RefFollower other{"TerraformCluster", "team-b", "c"};
  ASSERT_TRUE(eventually([&] {
    auto r = watcher.follow(other, url(u), "missing", main);
    return r && r->status.code() == absl::StatusCode::kInvalidArgument &&
           r->status.message().find("team-b/missing not found") != absl::string_view::npos;
  }));
  EXPECT_EQ(watcher.remotes(), 2u);
  EXPECT_GE(server.count(u), before);
}

// Remotes that accept the connection and never answer (as many as there are
// workers) cost each listing its timeout, not a worker for good: the other
// remotes keep being listed (docs/decisions/git-sources.md, "Deadlines").
// The tarpits go through the real contract::git::listRemote.
TEST(RefWatcherTest, RemotesThatNeverAnswerDoNotStopTheOthers) {
  std::signal(SIGPIPE, SIG_IGN); // as the manager does (contract/git.h)
  FakeRemotes server;
  const std::string good = url("https://git.example.com/good.git").canonical;
  server.set(good, {{"refs/heads/main", kA}});
  const RefWatcher::ListRemote real = gitListRemote();
  const RefWatcher::ListRemote fake = server.lister();
  RefWatcher watcher({200ms, 0.1, 2, 300ms}, noSecrets(),
                     [&](const contract::GitUrl& u, const contract::git::Credentials& credentials,
                         std::chrono::milliseconds timeout) {
                       return u.host == "127.0.0.1" ? real(u, credentials, timeout)
                                                    : fake(u, credentials, timeout);
                     });
  Running running(watcher);
  // Declared after `running`, so closed before it joins the workers: with
  // a worker still stuck in one, the test fails instead of hanging.
  Tarpit first;
  Tarpit second;
  const contract::GitRef main{contract::GitRefKind::kBranch, "main"};
  const std::vector<std::string> tarpits = {
      "https://127.0.0.1:" + std::to_string(first.port()) + "/a.git",
      "https://127.0.0.1:" + std::to_string(second.port()) + "/b.git"};
  for (std::size_t i = 0; i < tarpits.size(); ++i) {
    watcher.follow({"TerraformCluster", "ns", "stuck" + std::to_string(i)}, url(tarpits[i]), "",
                   main);
  }
  ASSERT_TRUE(eventually([&] { return first.accepted() > 0 && second.accepted() > 0; }));
  watcher.follow({"TerraformCluster", "ns", "good"}, url(good), "", main);
  EXPECT_TRUE(eventually([&] { return server.count(good) >= 5; }, 20s))
      << "listings of the other remote: " << server.count(good);
  auto stuck = watcher.follow({"TerraformCluster", "ns", "stuck0"}, url(tarpits[0]), "", main);
  ASSERT_TRUE(stuck.has_value());
  EXPECT_EQ(stuck->status.code(), absl::StatusCode::kUnavailable) << stuck->status;
  EXPECT_THAT(std::string(stuck->status.message()), HasSubstr("timed out after 300ms"));
}

// Listings that take longer than the interval (slow remotes) do not starve
// a remote that sorts after them: the most overdue remote goes first.
TEST(RefWatcherTest, TheMostOverdueRemoteIsListedFirst) {
  FakeRemotes server;
  const std::string good = url("https://z.example.com/good.git").canonical;
  const RefWatcher::ListRemote fake = server.lister();
  RefWatcher watcher({100ms, 0.1, 1, 1s}, noSecrets(),
                     [&](const contract::GitUrl& u, const contract::git::Credentials& credentials,
                         std::chrono::milliseconds timeout) {
                       if (u.canonical != good) {
                         std::this_thread::sleep_for(150ms); // longer than the interval
                       }
                       return fake(u, credentials, timeout);
                     });
  const contract::GitRef main{contract::GitRefKind::kBranch, "main"};
  // Two slow remotes that sort before the other one.
  watcher.follow({"TerraformCluster", "ns", "a"}, url("https://a.example.com/a.git"), "", main);
  watcher.follow({"TerraformCluster", "ns", "b"}, url("https://b.example.com/b.git"), "", main);
  watcher.follow({"TerraformCluster", "ns", "z"}, url(good), "", main);
  Running running(watcher);
  EXPECT_TRUE(eventually([&] { return server.count(good) >= 3; }))
      << "listings of the remote that sorts last: " << server.count(good);
}

TEST(RefWatcherTest, ACommitRefNeedsNoListingAndForgettingDropsTheRemote) {
  FakeRemotes server;
  RefWatcher watcher({50ms, 0.1, 1, 1s}, noSecrets(), server.lister());
  auto r = watcher.follow({"TerraformMachine", "ns", "m"}, url("https://h/r.git"), "",
                          {contract::GitRefKind::kCommit, kB});
  ASSERT_TRUE(r && r->status.ok());
  EXPECT_EQ(r->commit, kB);
  EXPECT_EQ(watcher.remotes(), 0u);
  watcher.follow({"TerraformMachine", "ns", "m"}, url("https://h/r.git"), "",
                 {contract::GitRefKind::kBranch, "main"});
  EXPECT_EQ(watcher.remotes(), 1u);
  watcher.forget({"TerraformMachine", "ns", "m"});
  EXPECT_EQ(watcher.remotes(), 0u);
  Running running(watcher);
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(server.total(), 0);
}

// A worker waiting for a remote's next listing while that remote is
// dropped (its last follower forgot it) must not read the dropped remote's
// due time when it wakes: it once waited on a reference into the map node,
// and the next follow's wake-up read freed memory (the manager aborted
// under ASan).
TEST(RefWatcherTest, ARemoteDroppedWhileAWorkerWaitsForItIsNotReadAgain) {
  FakeRemotes server;
  server.set(url("https://h/a.git").canonical, {{"refs/heads/main", kA}});
  server.set(url("https://h/b.git").canonical, {{"refs/heads/main", kB}});
  RefWatcher watcher({10s, 0.1, 1, 1s}, noSecrets(), server.lister());
  watcher.follow({"TerraformCluster", "ns", "a"}, url("https://h/a.git"), "",
                 {contract::GitRefKind::kBranch, "main"});
  Running running(watcher);
  // Listed once; the worker now waits until a's next listing, 10 s away.
  ASSERT_TRUE(eventually([&] { return server.count(url("https://h/a.git").canonical) == 1; }));
  std::this_thread::sleep_for(50ms);
  watcher.forget({"TerraformCluster", "ns", "a"});
  EXPECT_EQ(watcher.remotes(), 0u);
  watcher.follow({"TerraformCluster", "ns", "b"}, url("https://h/b.git"), "",
                 {contract::GitRefKind::kBranch, "main"});
  EXPECT_TRUE(eventually([&] { return server.count(url("https://h/b.git").canonical) == 1; }));
}

} // namespace
} // namespace captf::controllers
