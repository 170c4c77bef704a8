// The rig never leaves processes behind: not when its owner dies, not when
// the supervisor itself is killed. Each test runs a private rig.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/rig/fixture.h"

namespace captf::rig {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string rigCommand() {
  return std::string(std::getenv("CAPTF_SOURCE_DIR")) + "/test/rig/rig";
}

int parentOf(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  // Field 4 follows the command, which is in parentheses and may hold spaces.
  auto close = line.rfind(')');
  if (close == std::string::npos) {
    return -1;
  }
  std::istringstream rest(line.substr(close + 2));
  std::string state;
  int ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

// Every live process below ROOT (not ROOT itself).
std::set<int> descendants(int root) {
  std::set<int> found{root};
  bool grew = true;
  while (grew) {
    grew = false;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string n = e.path().filename().string();
      if (n.find_first_not_of("0123456789") != std::string::npos) {
        continue;
      }
      int pid = std::stoi(n);
      if (found.count(pid) == 0 && found.count(parentOf(pid)) != 0) {
        found.insert(pid);
        grew = true;
      }
    }
  }
  found.erase(root);
  return found;
}

bool alive(int pid) {
  return kill(pid, 0) == 0;
}

bool allGone(const std::set<int>& pids, std::chrono::seconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    bool any = false;
    for (int p : pids) {
      any = any || alive(p);
    }
    if (!any) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

class RigTeardownTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "captf-rig-teardown-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    run({rigCommand(), "down", "--dir", dir_});
    if (!HasFailure()) {
      fs::remove_all(dir_);
    }
  }
  int supervisorPid() {
    std::ifstream in(dir_ + "/rig.pid");
    int pid = -1;
    in >> pid;
    return pid;
  }
  std::string dir_;
};

TEST_F(RigTeardownTest, StopsEverythingWhenItsOwnerExits) {
  pid_t owner = fork();
  if (owner == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(owner, 0);
  CommandResult up = run({rigCommand(), "up", "--dir", dir_, "--tier", "integration", "--owner-pid",
                          std::to_string(owner)});
  ASSERT_EQ(up.exit_code, 0) << up.output;
  const int supervisor = supervisorPid();
  std::set<int> pids = descendants(supervisor);
  pids.insert(supervisor);
  EXPECT_GE(pids.size(), 3u) << "expected the supervisor, etcd and kube-apiserver";

  // A second rig in the same directory is refused with one line.
  CommandResult again = run({rigCommand(), "up", "--dir", dir_, "--tier", "integration"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_THAT(again.output, HasSubstr("a rig is already running in " + dir_));

  kill(owner, SIGKILL);
  waitpid(owner, nullptr, 0);
  EXPECT_TRUE(allGone(pids, std::chrono::seconds(30)));
  EXPECT_FALSE(fs::exists(dir_ + "/etcd")) << "etcd's data should be removed";
  EXPECT_TRUE(fs::exists(dir_ + "/logs/kube-apiserver.log")) << "logs are kept";
}

TEST_F(RigTeardownTest, KillingTheSupervisorTakesItsComponentsWithIt) {
  CommandResult up = run({rigCommand(), "up", "--dir", dir_, "--tier", "integration"});
  ASSERT_EQ(up.exit_code, 0) << up.output;
  const int supervisor = supervisorPid();
  std::set<int> pids = descendants(supervisor);
  ASSERT_GE(pids.size(), 2u) << "expected etcd and kube-apiserver";
  kill(supervisor, SIGKILL);
  EXPECT_TRUE(allGone(pids, std::chrono::seconds(10)));
}

} // namespace
} // namespace captf::rig
