#include "contract/logging.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>

#include "contract/quantity.h"

namespace captf::contract {

LogStream logStream(LogFormat format, LogSeverity severity, SplitStream split) {
  if (split == SplitStream::kOff) {
    return LogStream::kStderr;
  }
  switch (severity) {
  case LogSeverity::kInfo:
    return LogStream::kStdout;
  case LogSeverity::kWarning:
    return format == LogFormat::kText ? LogStream::kStderr : LogStream::kStdout;
  case LogSeverity::kError:
    return LogStream::kStderr;
  }
  return LogStream::kStderr;
}

std::optional<std::int64_t> parseByteQuantity(std::string_view quantity) {
  const std::optional<QuantityParts> parts = parseQuantity(quantity);
  if (!parts || parts->sign != 0 || parts->point || parts->whole.empty()) {
    return std::nullopt;
  }
  struct Suffix {
    std::string_view text;
    std::int64_t factor;
  };
  static constexpr std::array<Suffix, 13> kSuffixes = {{
      {"", 1},
      {"k", 1000},
      {"M", static_cast<std::int64_t>(1000 * 1000)},
      {"G", 1000LL * 1000 * 1000},
      {"T", 1000LL * 1000 * 1000 * 1000},
      {"P", 1000LL * 1000 * 1000 * 1000 * 1000},
      {"E", 1000LL * 1000 * 1000 * 1000 * 1000 * 1000},
      {"Ki", 1LL << 10},
      {"Mi", 1LL << 20},
      {"Gi", 1LL << 30},
      {"Ti", 1LL << 40},
      {"Pi", 1LL << 50},
      {"Ei", 1LL << 60},
  }};
  const std::string_view suffix = parts->suffix;
  const auto* found = std::find_if(kSuffixes.begin(), kSuffixes.end(),
                                   [suffix](const Suffix& s) { return s.text == suffix; });
  if (found == kSuffixes.end()) {
    return std::nullopt;
  }
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t value = 0;
  for (const char c : parts->whole) {
    const int digit = c - '0';
    if (value > (kMax - digit) / 10) {
      return std::nullopt;
    }
    value = value * 10 + digit;
  }
  if (value > kMax / found->factor) {
    return std::nullopt;
  }
  return value * found->factor;
}

} // namespace captf::contract
