#pragma once

// Shared helpers of the contract tests: locating the source tree and golden
// files.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <zlib.h>

namespace captf::contract::testing {

// The repository root, from CAPTF_SOURCE_DIR (set by captf_test()).
inline std::string sourceDir() {
  const char* dir = std::getenv("CAPTF_SOURCE_DIR");
  return dir == nullptr ? std::string() : std::string(dir);
}

// gzip of `data`, as the `kubernetes` backend stores state.
inline std::string gzip(std::string_view data) {
  z_stream stream{};
  deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, static_cast<uLong>(data.size())) + 64, '\0');
  // zlib's next_in is not const-qualified.
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
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
