#include <gtest/gtest.h>

#include "contract/logging.h"

namespace captf::contract {
namespace {

TEST(LogStreamTest, EverythingGoesToStderrUnlessSplit) {
  for (LogFormat format : {LogFormat::kText, LogFormat::kJson}) {
    for (LogSeverity severity : {LogSeverity::kInfo, LogSeverity::kWarning, LogSeverity::kError}) {
      EXPECT_EQ(logStream(format, severity, SplitStream::kOff), LogStream::kStderr);
    }
  }
}

TEST(LogStreamTest, SplitSendsErrorsToStderrAndTextWarningsWithThem) {
  EXPECT_EQ(logStream(LogFormat::kText, LogSeverity::kInfo, SplitStream::kOn), LogStream::kStdout);
  EXPECT_EQ(logStream(LogFormat::kText, LogSeverity::kWarning, SplitStream::kOn),
            LogStream::kStderr);
  EXPECT_EQ(logStream(LogFormat::kText, LogSeverity::kError, SplitStream::kOn), LogStream::kStderr);
  EXPECT_EQ(logStream(LogFormat::kJson, LogSeverity::kInfo, SplitStream::kOn), LogStream::kStdout);
  EXPECT_EQ(logStream(LogFormat::kJson, LogSeverity::kWarning, SplitStream::kOn),
            LogStream::kStdout);
  EXPECT_EQ(logStream(LogFormat::kJson, LogSeverity::kError, SplitStream::kOn), LogStream::kStderr);
}

TEST(ByteQuantityTest, ParsesIntegerQuantitiesWithEverySuffix) {
  EXPECT_EQ(parseByteQuantity("0"), 0);
  EXPECT_EQ(parseByteQuantity("4096"), 4096);
  EXPECT_EQ(parseByteQuantity("100k"), 100000);
  EXPECT_EQ(parseByteQuantity("1M"), 1000000);
  EXPECT_EQ(parseByteQuantity("64Ki"), 65536);
  EXPECT_EQ(parseByteQuantity("256Mi"), 256LL << 20);
  EXPECT_EQ(parseByteQuantity("2Gi"), kMaxInfoBufferBytes);
  EXPECT_EQ(parseByteQuantity("7Ei"), 7LL << 60);
  EXPECT_EQ(parseByteQuantity("9223372036854775807"), INT64_MAX);
}

TEST(ByteQuantityTest, RefusesEverythingElse) {
  for (const char* bad : {"", "Ki", "-1", "+1", "1.5Mi", "1e3", "12Q", "1ki", "1 Mi", "8Ei",
                          "9223372036854775808", "99999999999999999999999"}) {
    EXPECT_FALSE(parseByteQuantity(bad).has_value()) << bad;
  }
}

} // namespace
} // namespace captf::contract
