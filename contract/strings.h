#pragma once

// The one string bridge of the tree: every folder may include this header
// (it is header-only; docs/architecture.md lists the arrow, and
// docs/decisions/build-libraries.md says why it exists). Debian's Abseil is
// built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW is
// 0), so absl::StrCat does not accept std::string_view, which the tables of
// the tree use, and fmt cannot format absl::string_view. strCat, strAppend
// and strJoin accept std::string_view, std::string, C strings, absl's
// string_view, characters and integers; av, sv and msg convert explicitly
// where an Abseil API or a format string needs the other view.

#include <concepts>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace captf::contract {
namespace strings_internal {

inline void append(std::string& out, std::string_view text) {
  out.append(text);
}
inline void append(std::string& out, const std::string& text) {
  out.append(text);
}
inline void append(std::string& out, const char* text) {
  out.append(text);
}
inline void append(std::string& out, char c) {
  out.push_back(c);
}
// Only a distinct type where Abseil does not alias std::string_view.
template <typename T>
  requires(std::same_as<T, absl::string_view> && !std::same_as<T, std::string_view>)
void append(std::string& out, const T& text) {
  out.append(text.data(), text.size());
}
// Integers as decimal digits; bool and char are not integers here.
template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>)
void append(std::string& out, T value) {
  out.append(std::to_string(value));
}

} // namespace strings_internal

// Appends each part to `out`.
template <typename... Parts> void strAppend(std::string& out, const Parts&... parts) {
  (strings_internal::append(out, parts), ...);
}

// The concatenation of the parts.
template <typename... Parts> std::string strCat(const Parts&... parts) {
  std::string out;
  strAppend(out, parts...);
  return out;
}

// The parts with `separator` between each two.
template <typename Range> std::string strJoin(const Range& parts, std::string_view separator) {
  std::string out;
  bool first = true;
  for (const auto& part : parts) {
    if (!first) {
      out.append(separator);
    }
    first = false;
    strings_internal::append(out, part);
  }
  return out;
}

// A view for Abseil's APIs (absl::StrCat, absl::StrSplit, ...).
inline absl::string_view av(std::string_view s) {
  return {s.data(), s.size()};
}
// A std::string_view of Abseil's view, for fmt and the tree's own APIs.
inline std::string_view sv(absl::string_view s) {
  return {s.data(), s.size()};
}
// A std::string of a string_view constant (the API's keys and reasons are
// string_views; JSON keys and messages are strings).
inline std::string str(std::string_view s) {
  return std::string(s);
}
// An ASCII letter or digit, whatever the locale (Abseil's, which takes an
// unsigned char).
inline bool isAsciiAlnum(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c));
}
// A non-empty run of ASCII digits.
inline bool isAsciiDigits(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  for (const char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}
// The message of a status as a std::string_view, for logging.
inline std::string_view msg(const absl::Status& status) {
  return sv(status.message());
}

} // namespace captf::contract
