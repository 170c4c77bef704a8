// The release-static preset builds what the release ships and nothing else
// (docs/decisions/release.md, "A static manager"): configured from this
// checkout into a temporary directory, its build graph holds exactly the
// five executables (manager, runner, tfcapi-lint, webhook-server and the
// crdgen generator), no test target, and every executable links with
// `-static` against archives only (no shared object on any link line).
// Nothing is compiled: the graph is read with `ninja -t`; the dev build's
// nested release-static runner (test/runner/CMakeLists.txt) and
// scripts/release.sh compile it.
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/rig/fixture.h"

namespace captf::release {
namespace {

namespace fs = std::filesystem;
using ::testing::UnorderedElementsAre;

class StaticPresetTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    const char* source = std::getenv("CAPTF_SOURCE_DIR");
    ASSERT_NE(source, nullptr) << "ctest sets CAPTF_SOURCE_DIR";
    std::string pattern = (fs::temp_directory_path() / "captf-release-static-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = new std::string(pattern);
    configured_ = new rig::CommandResult(rig::run(
        {"bash", "-c", R"(cd "$0" && cmake --preset release-static -B "$1")", source, *dir_}));
  }

  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(*dir_, ignored);
    delete dir_;
    delete configured_;
  }

  void SetUp() override { ASSERT_EQ(configured_->exit_code, 0) << configured_->output; }

  static rig::CommandResult ninja(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"ninja", "-C", *dir_};
    argv.insert(argv.end(), args.begin(), args.end());
    return rig::run(argv);
  }

  // Executable outputs of the graph: "path: CXX_EXECUTABLE_LINKER__name_Release".
  static std::set<std::string> executables() {
    const rig::CommandResult targets = ninja({"-t", "targets", "all"});
    EXPECT_EQ(targets.exit_code, 0) << targets.output;
    std::set<std::string> out;
    std::istringstream lines(targets.output);
    for (std::string line; std::getline(lines, line);) {
      const auto colon = line.find(": CXX_EXECUTABLE_LINKER__");
      if (colon != std::string::npos) {
        out.insert(line.substr(0, colon));
      }
    }
    return out;
  }

  static std::string* dir_;
  static rig::CommandResult* configured_;
};

std::string* StaticPresetTest::dir_ = nullptr;
rig::CommandResult* StaticPresetTest::configured_ = nullptr;

TEST_F(StaticPresetTest, BuildsTheFiveShippedExecutablesAndNoTest) {
  EXPECT_THAT(executables(), UnorderedElementsAre("manager/controllers/manager", "runner/runner",
                                                  "lint/tfcapi-lint", "webhooks/webhook-server",
                                                  "manager/crdgen"));
}

TEST_F(StaticPresetTest, EveryExecutableLinksStaticWithArchivesOnly) {
  for (const std::string& exe : executables()) {
    const rig::CommandResult commands = ninja({"-t", "commands", exe});
    ASSERT_EQ(commands.exit_code, 0) << commands.output;
    // The last command is the link.
    std::string link = commands.output;
    while (!link.empty() && link.back() == '\n') {
      link.pop_back();
    }
    link = link.substr(link.rfind('\n') + 1);
    std::istringstream words(link);
    bool is_static = false;
    std::vector<std::string> shared;
    for (std::string word; words >> word;) {
      is_static = is_static || word == "-static";
      if (word.ends_with(".so") || word.find(".so.") != std::string::npos) {
        shared.push_back(word);
      }
    }
    EXPECT_TRUE(is_static) << exe << " links without -static:\n" << link;
    EXPECT_THAT(shared, ::testing::IsEmpty()) << exe << " links shared objects";
  }
}

} // namespace
} // namespace captf::release
