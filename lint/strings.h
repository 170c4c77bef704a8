#pragma once

#include <concepts>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

// String building for messages. Debian's Abseil is built with its own
// absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW=0), so absl::StrCat
// does not accept std::string_view; lint code uses std::string_view
// throughout and builds strings with these helpers instead.
namespace captf::lint {

namespace strings_internal {

inline void appendOne(std::string& out, std::string_view s) {
  out.append(s);
}
inline void appendOne(std::string& out, const char* s) {
  out.append(s);
}
inline void appendOne(std::string& out, const std::string& s) {
  out.append(s);
}
inline void appendOne(std::string& out, char c) {
  out.push_back(c);
}
// Debian's absl::string_view (absl::Status::message()) is its own type.
template <class T>
  requires(std::same_as<T, absl::string_view> && !std::same_as<T, std::string_view>)
void appendOne(std::string& out, const T& s) {
  out.append(s.data(), s.size());
}
template <std::integral T>
  requires(!std::same_as<T, char> && !std::same_as<T, bool>)
void appendOne(std::string& out, T v) {
  out.append(std::to_string(v));
}

} // namespace strings_internal

// Appends each argument (strings, characters, integers) to `out`.
template <class... Args> void append(std::string& out, const Args&... args) {
  (strings_internal::appendOne(out, args), ...);
}

// The concatenation of the arguments (strings, characters, integers).
template <class... Args> std::string concat(const Args&... args) {
  std::string out;
  append(out, args...);
  return out;
}

} // namespace captf::lint
