#pragma once

// Invariant checks of the libFuzzer targets. They hold in every build (the
// fuzz preset is RelWithDebInfo, where assert() is compiled out): a broken
// invariant prints what broke and aborts, which libFuzzer reports as a crash
// and the replay unit test as a failure.
//
// kFuzzCanary is the string a target's seeds (and its dictionary, if it has
// one) place in untrusted input: errors must name what is wrong and where,
// never quote the input, so it must not appear in any error text.

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "contract/text.h"

namespace captf::fuzz {

inline constexpr std::string_view kFuzzCanary = "CANARY7q3zX";

// Aborts with `what` unless `condition` holds.
inline void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
    std::abort();
  }
}

// Aborts when `text` (an error message) quotes the canary.
inline void checkNoCanary(std::string_view text, const char* what) {
  if (text.find(kFuzzCanary) != std::string_view::npos) {
    std::fprintf(stderr, "fuzz invariant broken: %s quotes the input: %.*s\n", what,
                 static_cast<int>(text.size() > 400 ? 400 : text.size()), text.data());
    std::abort();
  }
}

inline bool validUtf8(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = contract::utf8SequenceLength(text, at);
    if (length == 0) {
      return false;
    }
    at += length;
  }
  return true;
}

// Aborts unless `text` is valid UTF-8 of at most `max_bytes` bytes.
inline void checkText(std::string_view text, std::size_t max_bytes, const char* what) {
  check(text.size() <= max_bytes, what);
  check(validUtf8(text), what);
}

} // namespace captf::fuzz
