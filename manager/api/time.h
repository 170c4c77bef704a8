#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "manager/api/codec.h"

namespace captf::api {

// metav1.Time: an instant with second precision, serialized as RFC 3339 in
// UTC ("2025-01-02T03:04:05Z"), as the API server stores it.
struct Time {
  std::chrono::sys_seconds value{};

  friend bool operator==(const Time&, const Time&) = default;
  friend auto operator<=>(const Time&, const Time&) = default;
};

// Parses RFC 3339 ("2025-01-02T03:04:05Z", "...05.123+02:00"). Fractional
// seconds are truncated, offsets converted to UTC. Errors say what is wrong.
[[nodiscard]] absl::StatusOr<Time> parseTime(std::string_view text);

// Formats as "YYYY-MM-DDTHH:MM:SSZ".
[[nodiscard]] std::string formatTime(const Time& t);

CAPTF_API_DECLARE_CODEC(Time);
} // namespace captf::api
