#include <cstddef>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "runner/copy.h"
#include "test/runner/testing.h"

namespace captf::runner {
namespace {

using ::captf::runner::testing::readText;
using ::captf::runner::testing::TempDir;
using ::captf::runner::testing::writeText;

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    out.push_back(entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CopyTest, CopiesAtomicallyWithMode0755WhateverTheUmask) {
  TempDir dir;
  const std::string source = dir / "source";
  std::string payload(std::size_t{3} * 1024 * 1024, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<char>(i * 131 % 251);
  }
  writeText(source, payload, 0600);
  writeText(dir / "bin/runner", "old contents", 0600);
  const mode_t old_umask = ::umask(077);
  const absl::Status status = copyExecutable(source, dir / "bin/runner");
  ::umask(old_umask);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(readText(dir / "bin/runner"), payload);
  struct stat info {};
  ASSERT_EQ(::stat((dir / "bin/runner").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0755U);
  EXPECT_EQ(entries(dir / "bin"), std::vector<std::string>{"runner"});
}

TEST(CopyTest, CopiesTheRunningExecutable) {
  TempDir dir;
  ASSERT_TRUE(copyExecutable(kSelfExecutable, dir / "self").ok());
  EXPECT_EQ(readText(dir / "self"), readText(std::filesystem::read_symlink("/proc/self/exe")));
}

TEST(CopyTest, FailuresLeaveNothingBehind) {
  TempDir dir;
  EXPECT_FALSE(copyExecutable(dir / "missing", dir / "out").ok());
  EXPECT_FALSE(copyExecutable(kSelfExecutable, dir / "no/such/dir/runner").ok());
  // The destination is a directory: rename fails after the copy.
  std::filesystem::create_directories(dir / "target/dir");
  writeText(dir / "target/dir/keep", "x");
  EXPECT_FALSE(copyExecutable(kSelfExecutable, dir / "target/dir").ok());
  EXPECT_EQ(entries(dir / "target"), std::vector<std::string>{"dir"});
}

} // namespace
} // namespace captf::runner
