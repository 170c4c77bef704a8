#include "manager/api/time.h"

#include <cstdio>

#include <fmt/format.h>

#include "absl/status/status.h"

namespace captf::api {
namespace {

// Reads exactly `n` decimal digits at text[pos...]; false if any is not a digit.
bool readDigits(std::string_view text, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > text.size()) {
    return false;
  }
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') {
      return false;
    }
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

absl::Status bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(fmt::format("invalid RFC 3339 time \"{}\": {}", text, why));
}

} // namespace

absl::StatusOr<Time> parseTime(std::string_view text) {
  int year = 0;
  int month = 0;
  int day = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  if (!readDigits(text, 0, 4, year) || text.size() < 19 || text[4] != '-' ||
      !readDigits(text, 5, 2, month) || text[7] != '-' || !readDigits(text, 8, 2, day) ||
      (text[10] != 'T' && text[10] != 't') || !readDigits(text, 11, 2, hour) || text[13] != ':' ||
      !readDigits(text, 14, 2, minute) || text[16] != ':' || !readDigits(text, 17, 2, second)) {
    return bad(text, "want YYYY-MM-DDTHH:MM:SS followed by Z or an offset");
  }
  const std::chrono::year_month_day ymd{std::chrono::year{year},
                                        std::chrono::month{static_cast<unsigned>(month)},
                                        std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) {
    return bad(text, "no such date");
  }
  if (hour > 23 || minute > 59 || second > 60) {
    return bad(text, "time of day out of range");
  }
  std::size_t pos = 19;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const std::size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      ++pos;
    }
    if (pos == start) {
      return bad(text, "empty fractional seconds");
    }
  }
  int offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    int oh = 0;
    int om = 0;
    if (!readDigits(text, pos + 1, 2, oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !readDigits(text, pos + 4, 2, om) || oh > 23 || om > 59) {
      return bad(text, "malformed UTC offset");
    }
    offset_minutes = sign * (oh * 60 + om);
    pos += 6;
  } else {
    return bad(text, "missing Z or UTC offset");
  }
  if (pos != text.size()) {
    return bad(text, "trailing characters");
  }
  // A leap second (":60") is folded into the next second, as Go does.
  const auto secs = std::chrono::sys_days{ymd} + std::chrono::hours{hour} +
                    std::chrono::minutes{minute} + std::chrono::seconds{second} -
                    std::chrono::minutes{offset_minutes};
  return Time{std::chrono::time_point_cast<std::chrono::seconds>(secs)};
}

std::string formatTime(const Time& t) {
  const auto days = std::chrono::floor<std::chrono::days>(t.value);
  const std::chrono::year_month_day ymd{days};
  const std::chrono::hh_mm_ss hms{t.value - days};
  // Sized for the widest values the format can take, so GCC can prove the
  // output is never truncated.
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02ld:%02ld:%02ldZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<long>(hms.hours().count()), static_cast<long>(hms.minutes().count()),
                static_cast<long>(hms.seconds().count()));
  return buf;
}

void encodeJson(const Time& v, nlohmann::json& out) {
  out = formatTime(v);
}

absl::Status decodeJson(const nlohmann::json& in, Time& v, const FieldPath& path) {
  if (!in.is_string()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: Invalid type: expected an RFC 3339 time string", path.str()));
  }
  absl::StatusOr<Time> t = parseTime(in.get_ref<const std::string&>());
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path.str(), std::string(t.status().message())));
  }
  v = *t;
  return absl::OkStatus();
}

Schema schemaFor(const Time*) {
  Schema s;
  s.type = Schema::Type::kString;
  s.format = "date-time";
  return s;
}

} // namespace captf::api
