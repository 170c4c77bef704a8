#pragma once

// Debian's Abseil is built with its own absl::string_view (not an alias of
// std::string_view), so absl::StrCat & co. do not take std::string_view and
// fmt/spdlog cannot format absl::string_view. These convert explicitly.

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace captf::kube {

inline absl::string_view av(std::string_view s) {
  return {s.data(), s.size()};
}
inline std::string_view sv(absl::string_view s) {
  return {s.data(), s.size()};
}
// A std::string of a string_view constant (the API's keys and reasons are
// string_views; JSON keys and messages are strings).
inline std::string str(std::string_view s) {
  return std::string(s);
}
// The message of a status, for logging.
inline std::string_view msg(const absl::Status& status) {
  return sv(status.message());
}

} // namespace captf::kube
