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
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
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

// Aborts when the message of `status` quotes the canary.
inline void checkNoCanary(const absl::Status& status, const char* what) {
  checkNoCanary(std::string(status.message()), what);
}

// For a target's LLVMFuzzerInitialize: unless the command line names a
// -max_len, the run gets -max_len=`max_len` (the real bound of the input).
// libFuzzer reads the flags after LLVMFuzzerInitialize returns, so they are
// kept here for the life of the process. The replay driver of the other
// presets never calls LLVMFuzzerInitialize.
inline void defaultMaxLen(int* argc, char*** argv, std::size_t max_len) {
  static std::vector<char*> args;
  static std::string flag;
  const std::vector<char*> given(*argv, *argv + *argc);
  for (const char* arg : given) {
    if (std::string_view(arg).starts_with("-max_len=")) {
      return;
    }
  }
  flag = "-max_len=" + std::to_string(max_len);
  args = given;
  args.insert(args.begin() + 1, flag.data());
  args.push_back(nullptr);
  *argc = static_cast<int>(args.size() - 1);
  *argv = args.data();
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
