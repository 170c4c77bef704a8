#pragma once

// Shared helpers of the contract tests: locating the source tree and golden
// files.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include "contract/digest.h"

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

// Fails the current test when `message` carries `secret` in a form an error
// message could leak it in: raw or its first half (a quote cut short), as a
// JSON string (ASCII-escaped or not), or base64 at any alignment (the
// encoding's inner characters).
inline void expectNoSecret(std::string_view message, const std::string& secret) {
  std::vector<std::string> forms = {secret, secret.substr(0, secret.size() / 2),
                                    nlohmann::json(secret).dump(),
                                    nlohmann::json(secret).dump(-1, ' ', /*ensure_ascii=*/true)};
  for (std::size_t shift = 0; shift < 3; ++shift) {
    const std::string encoded = base64Encode(std::string(shift, '\0') + secret);
    // Skip the characters that mix in the prefix and the padded tail.
    forms.push_back(encoded.substr(4, encoded.size() - 8));
  }
  for (const std::string& form : forms) {
    EXPECT_EQ(message.find(form), std::string_view::npos)
        << "the message carries the secret as " << form;
  }
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
