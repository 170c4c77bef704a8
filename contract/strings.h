#pragma once

// String concatenation for contract/. Debian's Abseil is built with its own
// absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW is 0), so absl::StrCat
// does not accept std::string_view, which the contract tables use; these
// accept both, plus std::string, C strings and integers.

#include <concepts>
#include <string>
#include <string_view>

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
inline void append(std::string& out, absl::string_view text) {
  out.append(text.data(), text.size());
}
template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>)
void append(std::string& out, T value) {
  out.append(std::to_string(value));
}

} // namespace strings_internal

template <typename... Parts> std::string strCat(const Parts&... parts) {
  std::string out;
  (strings_internal::append(out, parts), ...);
  return out;
}

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

} // namespace captf::contract
