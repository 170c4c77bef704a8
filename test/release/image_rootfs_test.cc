// scripts/image-rootfs.sh, the manager image's filesystem
// (docs/decisions/release.md): with two static programs it writes exactly
// the two binaries, the CA bundle, user 65532 and /tmp; a dynamic manager
// is refused unless --dynamic-ok, which ships its libraries; a dynamic
// runner is refused always. The static program is test/rig's `hello`
// (linked with -static), the dynamic one this test binary.
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/rig/fixture.h"

namespace captf::release {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class ImageRootfsTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char* source = std::getenv("CAPTF_SOURCE_DIR");
    ASSERT_NE(source, nullptr) << "ctest sets CAPTF_SOURCE_DIR";
    script_ = std::string(source) + "/scripts/image-rootfs.sh";
    std::string pattern = (fs::temp_directory_path() / "captf-rootfs-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    out_ = dir_ + "/rootfs";
    self_ = fs::read_symlink("/proc/self/exe").string();
  }

  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  rig::CommandResult rootfs(const std::string& manager, const std::string& runner,
                            const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {"bash",     script_, "--manager", manager,
                                     "--runner", runner,  "--out",     out_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return rig::run(argv);
  }

  // Every path under the rootfs, relative, directories with a trailing '/'.
  std::set<std::string> entries() const {
    std::set<std::string> out;
    for (const auto& entry : fs::recursive_directory_iterator(out_)) {
      std::string path = fs::relative(entry.path(), out_).string();
      out.insert(entry.is_directory() ? path + "/" : path);
    }
    return out;
  }

  std::string script_;
  std::string dir_;
  std::string out_;
  std::string self_;
};

TEST_F(ImageRootfsTest, TwoStaticBinariesGiveExactlyTheImagesFiles) {
  const rig::CommandResult r = rootfs(CAPTF_STATIC_PROGRAM, CAPTF_STATIC_PROGRAM);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(entries(), UnorderedElementsAre("manager", "runner", "etc/", "etc/ssl/",
                                              "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt",
                                              "etc/passwd", "etc/group", "tmp/"));
  EXPECT_EQ(rig::readFile(out_ + "/etc/passwd"),
            "nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n");
  EXPECT_EQ(rig::readFile(out_ + "/etc/group"), "nonroot:x:65532:\n");
  EXPECT_EQ(fs::status(out_ + "/manager").permissions() & fs::perms::all,
            static_cast<fs::perms>(0755));
  // user 65532 writes to /tmp: world-writable and sticky, as a scratch /tmp.
  EXPECT_EQ(fs::status(out_ + "/tmp").permissions() & (fs::perms::all | fs::perms::sticky_bit),
            static_cast<fs::perms>(01777));
}

TEST_F(ImageRootfsTest, ADynamicManagerIsRefusedWithWhatMakesItDynamic) {
  const rig::CommandResult r = rootfs(self_, CAPTF_STATIC_PROGRAM);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the manager " + self_ + " is not static"));
  EXPECT_THAT(r.output, HasSubstr("program interpreter: /lib64/ld-linux-x86-64.so.2"));
  EXPECT_THAT(r.output, HasSubstr("needs libc.so.6"));
  EXPECT_THAT(r.output, HasSubstr("--dynamic-ok"));
  EXPECT_FALSE(fs::exists(out_)) << "nothing is written for a refused manager";
}

TEST_F(ImageRootfsTest, DynamicOkShipsTheManagersLibraries) {
  const rig::CommandResult r = rootfs(self_, CAPTF_STATIC_PROGRAM, {"--dynamic-ok"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_regular_file(out_ + "/manager"));
  EXPECT_TRUE(fs::is_regular_file(out_ + "/lib64/ld-linux-x86-64.so.2"));
  EXPECT_TRUE(fs::is_regular_file(out_ + "/lib/x86_64-linux-gnu/libc.so.6"));
}

TEST_F(ImageRootfsTest, ADynamicRunnerIsRefusedEvenWithDynamicOk) {
  const rig::CommandResult r = rootfs(CAPTF_STATIC_PROGRAM, self_, {"--dynamic-ok"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the runner " + self_ + " is not static"));
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(ImageRootfsTest, AManagerThatIsNotAnExecutableIsRefused) {
  const rig::CommandResult r = rootfs(script_, CAPTF_STATIC_PROGRAM, {"--dynamic-ok"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("is not an ELF executable"));
  EXPECT_FALSE(fs::exists(out_));
}

} // namespace
} // namespace captf::release
