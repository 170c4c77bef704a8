#include "manager/api/codec.h"

#include <fmt/format.h>

#include "contract/json_error.h"

namespace captf::api {

absl::StatusOr<nlohmann::json> parseJson(std::string_view text) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based position of the offending byte; report the
    // 0-based offset so callers can index into their buffer.
    const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    // The kind only: nlohmann's message quotes what it read.
    return absl::InvalidArgumentError(
        fmt::format("malformed JSON at byte offset {}: {}", offset, contract::jsonErrorKind(e)));
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        fmt::format("malformed JSON: {}", contract::jsonErrorKind(e)));
  }
}

} // namespace captf::api
