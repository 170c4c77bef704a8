#include <cstddef>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lint/oci/extract.h"
#include "test/lint/oci/oci_test_util.h"

namespace captf::lint::oci {
namespace {

using testing::dir;
using testing::file;
using testing::hardlink;
using ::testing::HasSubstr;
using testing::symlink;
using testing::TarEntry;

std::string readAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Flatten : public ::testing::Test {
protected:
  // Writes layers (bottom first) and flattens them.
  absl::StatusOr<ImageFs> flatten(const std::vector<std::vector<TarEntry>>& layers,
                                  Compression c = Compression::kGzip,
                                  const ExtractLimits& limits = {}) {
    std::vector<std::filesystem::path> files;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto path = tmp_.path() / ("layer" + std::to_string(i));
      std::ofstream(path, std::ios::binary) << testing::makeLayer(layers[i], c);
      files.push_back(path);
      names.push_back("L" + std::to_string(i));
    }
    return flattenLayers(files, names, tmp_.path() / "staging", keepForChecks, limits);
  }
  testing::TempDir tmp_;
};

TEST(EntryNames, AreNormalizedAndDotDotIsSkipped) {
  EXPECT_EQ(*normalizeEntryName("./captf/module/main.tf"), "/captf/module/main.tf");
  EXPECT_EQ(*normalizeEntryName("/captf//module/./x/"), "/captf/module/x");
  EXPECT_EQ(*normalizeEntryName("./"), "/");
  EXPECT_FALSE(normalizeEntryName("../etc/passwd").has_value());
  EXPECT_FALSE(normalizeEntryName("captf/../../etc").has_value());
  EXPECT_FALSE(normalizeEntryName("").has_value());
}

TEST(KeepForChecks, KeepsModuleFilesAndProviderJson) {
  EXPECT_TRUE(keepForChecks("/captf/module/main.tf"));
  EXPECT_TRUE(keepForChecks("/captf/module/modules/x/bin.dat"));
  EXPECT_TRUE(keepForChecks("/captf/providers/h/n/t/index.json"));
  EXPECT_FALSE(keepForChecks("/captf/providers/h/n/t/terraform-provider-t_1_linux_amd64.zip"));
  EXPECT_FALSE(keepForChecks("/captf/modulex/main.tf"));
  EXPECT_FALSE(keepForChecks("/usr/bin/tofu"));
}

TEST_F(Flatten, KeepsModuleContentAndOnlyMetadataElsewhere) {
  for (Compression c : {Compression::kGzip, Compression::kZstd, Compression::kNone}) {
    absl::StatusOr<ImageFs> fs = flatten({{dir("captf/module/"), file("captf/module/main.tf", "x"),
                                           file("usr/bin/tofu", "binary", 0750)}},
                                         c);
    ASSERT_TRUE(fs.ok()) << fs.status();
    const Node* main = fs->lstat("/captf/module/main.tf");
    ASSERT_NE(main, nullptr);
    EXPECT_EQ(readAll(main->content), "x");
    const Node* tofu = fs->lstat("/usr/bin/tofu");
    ASSERT_NE(tofu, nullptr);
    EXPECT_EQ(tofu->content, "");
    EXPECT_EQ(tofu->mode, 0750u);
    EXPECT_EQ(tofu->size, 6u);
    EXPECT_TRUE(fs->lstat("/usr")->implicit);
  }
}

TEST_F(Flatten, EntriesWithDotDotAreSkipped) {
  absl::StatusOr<ImageFs> fs = flatten({{file("../escape.tf", "x"), file("captf/../../e", "y"),
                                         file("captf/module/main.tf", "ok")}});
  ASSERT_TRUE(fs.ok()) << fs.status();
  for (const auto& [path, node] : fs->nodes()) {
    EXPECT_EQ(path.find(".."), std::string::npos) << path;
  }
  EXPECT_FALSE(std::filesystem::exists(tmp_.path() / "escape.tf"));
  EXPECT_FALSE(std::filesystem::exists(tmp_.path().parent_path() / "e"));
}

TEST_F(Flatten, UpperLayersWinAndWhiteoutsDelete) {
  absl::StatusOr<ImageFs> fs = flatten({
      {file("captf/module/a.tf", "old"), file("captf/module/gone.tf", "x"),
       file("captf/work/leftover", "x"), file("etc/keep", "k")},
      {file("captf/module/a.tf", "new"), file("captf/module/.wh.gone.tf", ""),
       file("captf/.wh.work", "")},
  });
  ASSERT_TRUE(fs.ok()) << fs.status();
  EXPECT_EQ(readAll(fs->lstat("/captf/module/a.tf")->content), "new");
  EXPECT_EQ(fs->lstat("/captf/module/gone.tf"), nullptr);
  EXPECT_EQ(fs->lstat("/captf/work"), nullptr);
  EXPECT_EQ(fs->lstat("/captf/work/leftover"), nullptr);
  EXPECT_NE(fs->lstat("/etc/keep"), nullptr);
  EXPECT_EQ(fs->lstat("/captf/module/.wh.gone.tf"), nullptr);
}

TEST_F(Flatten, OpaqueDirectoriesHideLowerContentOnly) {
  absl::StatusOr<ImageFs> fs = flatten({
      {file("captf/module/old.tf", "x"), file("captf/module/sub/old.tf", "x")},
      {dir("captf/module/"), file("captf/module/.wh..wh..opq", ""),
       file("captf/module/new.tf", "y")},
  });
  ASSERT_TRUE(fs.ok()) << fs.status();
  EXPECT_EQ(fs->lstat("/captf/module/old.tf"), nullptr);
  EXPECT_EQ(fs->lstat("/captf/module/sub/old.tf"), nullptr);
  EXPECT_NE(fs->lstat("/captf/module/new.tf"), nullptr);
}

TEST_F(Flatten, AFileInAnUpperLayerHidesALowerDirectory) {
  absl::StatusOr<ImageFs> fs =
      flatten({{file("captf/module/main.tf", "x")}, {file("captf/module", "not a dir")}});
  ASSERT_TRUE(fs.ok()) << fs.status();
  EXPECT_EQ(fs->lstat("/captf/module")->type, NodeType::kFile);
  EXPECT_EQ(fs->lstat("/captf/module/main.tf"), nullptr);
}

TEST_F(Flatten, CapsAreEnforced) {
  ExtractLimits limits;
  limits.max_kept_bytes = 4096;
  limits.max_scanned_bytes = 1u << 30;
  absl::StatusOr<ImageFs> fs =
      flatten({{file("captf/module/big.tf", std::string(8192, 'x'))}}, Compression::kGzip, limits);
  EXPECT_EQ(fs.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(fs.status().message()), HasSubstr("layer L0"));
  // Unkept files count only towards the scan cap...
  limits.max_scanned_bytes = 4096;
  limits.max_kept_bytes = 1u << 20;
  fs = flatten({{file("usr/lib/big", std::string(8192, 'x'))}}, Compression::kGzip, limits);
  EXPECT_EQ(fs.status().code(), absl::StatusCode::kResourceExhausted);
  // ...and every entry costs 512 bytes of the kept budget.
  limits.max_scanned_bytes = 1u << 30;
  limits.max_kept_bytes = static_cast<uint64_t>(512 * 9);
  std::vector<TarEntry> many;
  many.reserve(10);
  for (int i = 0; i < 10; ++i) {
    many.push_back(dir("d" + std::to_string(i) + "/"));
  }
  fs = flatten({many}, Compression::kGzip, limits);
  EXPECT_EQ(fs.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(Flatten, GarbageIsAnErrorNamingTheLayer) {
  const auto path = tmp_.path() / "garbage";
  std::ofstream(path) << "this is not a tar archive at all, not even close........";
  const std::vector<std::filesystem::path> files{path};
  const std::vector<std::string> names{"sha256:feed"};
  absl::StatusOr<ImageFs> fs =
      flattenLayers(files, names, tmp_.path() / "staging", keepForChecks, {});
  ASSERT_FALSE(fs.ok());
  EXPECT_THAT(std::string(fs.status().message()), HasSubstr("layer sha256:feed"));
}

TEST_F(Flatten, RealpathFollowsLinksWithinTheImage) {
  absl::StatusOr<ImageFs> fs = flatten({{
      dir("usr/bin/"),
      file("usr/bin/tofu", "b", 0755),
      symlink("bin", "usr/bin"),
      symlink("captf/runtime", "/bin/tofu"),
      symlink("captf/up", "../../../../usr/bin/tofu"),
      symlink("loop/a", "b"),
      symlink("loop/b", "a"),
      symlink("captf/dangling", "/nowhere"),
  }});
  ASSERT_TRUE(fs.ok()) << fs.status();
  EXPECT_EQ(*fs->realpath("/captf/runtime"), "/usr/bin/tofu");
  EXPECT_EQ(*fs->realpath("/captf/up"), "/usr/bin/tofu"); // ".." is clamped at the root
  EXPECT_EQ(fs->realpath("/loop/a").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fs->realpath("/captf/dangling").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs->stat("/captf/runtime")->mode, 0755u);
}

TEST_F(Flatten, MaterializesLinksInsideTheModuleOnly) {
  absl::StatusOr<ImageFs> fs = flatten({{
      file("captf/module/main.tf", "main"),
      dir("captf/module/modules/net/"),
      file("captf/module/modules/net/main.tf", "net"),
      symlink("captf/module/alias.tf", "main.tf"),
      symlink("captf/module/modules/link", "net"),
      hardlink("captf/module/hard.tf", "captf/module/main.tf"),
      file("etc/passwd", "root:x:0:0"),
      symlink("captf/module/passwd.tf", "/etc/passwd"),
      hardlink("captf/module/hardout.tf", "etc/passwd"),
      symlink("captf/module/dangling.tf", "missing.tf"),
  }});
  ASSERT_TRUE(fs.ok()) << fs.status();
  const auto dest = tmp_.path() / "module";
  absl::StatusOr<std::vector<LinkProblem>> problems = materializeTree(*fs, "/captf/module", dest);
  ASSERT_TRUE(problems.ok()) << problems.status();
  EXPECT_EQ(readAll(dest / "alias.tf"), "main");
  EXPECT_FALSE(std::filesystem::is_symlink(dest / "alias.tf"));
  EXPECT_EQ(readAll(dest / "hard.tf"), "main");
  EXPECT_TRUE(std::filesystem::is_symlink(dest / "modules" / "link"));
  EXPECT_EQ(readAll(dest / "modules" / "link" / "main.tf"), "net");
  EXPECT_FALSE(std::filesystem::exists(dest / "passwd.tf"));
  EXPECT_FALSE(std::filesystem::exists(dest / "hardout.tf"));
  std::vector<std::string> paths;
  for (const LinkProblem& p : *problems) {
    paths.push_back(p.path);
  }
  EXPECT_THAT(paths,
              ::testing::UnorderedElementsAre("/captf/module/passwd.tf", "/captf/module/hardout.tf",
                                              "/captf/module/dangling.tf"));
}

} // namespace
} // namespace captf::lint::oci
