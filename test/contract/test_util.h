#pragma once

// Shared helpers of the contract tests: locating the source tree and golden
// files.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace captf::contract::testing {

// The repository root, from CAPTF_SOURCE_DIR (set by captf_test()).
inline std::string sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir == nullptr ? std::string() : std::string(dir);
}

inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Compares `actual` with test/contract/testdata/<name>. With
// CAPTF_UPDATE_GOLDENS=1 in the environment it rewrites the file instead
// (review the diff before committing it).
inline void expectGolden(const std::string& name, const std::string& actual) {
  const std::filesystem::path path =
      std::filesystem::path(sourceDir()) / "test" / "contract" / "testdata" / name;
  const char* update = std::getenv("CAPTF_UPDATE_GOLDENS");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path))
      << path << " is missing; run with CAPTF_UPDATE_GOLDENS=1 to create it";
  EXPECT_EQ(readFile(path), actual) << "golden " << path << " differs";
}

} // namespace captf::contract::testing
