#include "manager/api/time.h"

#include <fmt/format.h>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "contract/strings.h"

namespace captf::api {

absl::StatusOr<Time> parseTime(std::string_view text) {
  // Abseil's RFC 3339 grammar ("T" or "t", fractional seconds, "Z" or an
  // offset; dates and times out of range refused), except that it also takes
  // a "+0100" offset, which RFC 3339 and the API server do not.
  const bool zulu = !text.empty() && (text.back() == 'Z' || text.back() == 'z');
  const bool colon_offset = text.size() > 6 && text[text.size() - 3] == ':' &&
                            (text[text.size() - 6] == '+' || text[text.size() - 6] == '-');
  absl::Time parsed;
  std::string error;
  if ((!zulu && !colon_offset) ||
      !absl::ParseTime(absl::RFC3339_full, contract::av(text), &parsed, &error)) {
    return absl::InvalidArgumentError(
        fmt::format("invalid RFC 3339 time \"{}\": want YYYY-MM-DDTHH:MM:SS followed by Z or an "
                    "offset",
                    text));
  }
  return Time{std::chrono::time_point_cast<std::chrono::seconds>(absl::ToChronoTime(parsed))};
}

std::string formatTime(const Time& t) {
  // The API server's metav1.Time: whole seconds, UTC, "Z".
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromChrono(t.value), absl::UTCTimeZone());
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
