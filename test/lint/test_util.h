#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace captf::lint::testing {

// test/lint/testdata in the source tree (ctest sets CAPTF_SOURCE_DIR).
inline std::filesystem::path testdata() {
  const char* root = std::getenv("CAPTF_SOURCE_DIR");
  return std::filesystem::path(root != nullptr ? root : CAPTF_LINT_SOURCE_DIR) / "test" / "lint" /
         "testdata";
}

// A module directory under the test's temporary directory, removed at the
// end of the test.
class TempModule {
public:
  TempModule() {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / "lint-XXXXXX").string();
    const char* made = ::mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    root_ = pattern;
  }
  ~TempModule() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  TempModule(const TempModule&) = delete;
  TempModule& operator=(const TempModule&) = delete;

  const std::filesystem::path& path() const { return root_; }

  // Writes `content` to `relative` (creating directories), returns its path.
  std::filesystem::path write(std::string_view relative, std::string_view content) const {
    std::filesystem::path p = root_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

private:
  std::filesystem::path root_;
};

} // namespace captf::lint::testing
