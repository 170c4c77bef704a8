#pragma once

// Byte-bounded text helpers for fields with size limits (result document,
// condition summaries, plan resource lists).

#include <cstddef>
#include <string>
#include <string_view>

namespace captf::contract {

// Length in bytes of the valid UTF-8 sequence that starts at `text[at]`, or
// 0 when it is invalid (truncated, overlong, surrogate, beyond U+10FFFF).
// Precondition: at < text.size().
std::size_t utf8SequenceLength(std::string_view text, std::size_t at);

// Replaces every invalid UTF-8 sequence (truncated, overlong, surrogate,
// beyond U+10FFFF) with U+FFFD, so the text can be carried in proto3 string
// fields and JSON.
std::string sanitizeUtf8(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that does not end
// inside a multi-byte UTF-8 sequence.
std::string_view utf8Prefix(std::string_view text, std::size_t max_bytes);

// `text` if it fits in `max_bytes`; otherwise a UTF-8-safe prefix followed by
// "..." so that the whole is at most `max_bytes` bytes.
std::string clipText(std::string_view text, std::size_t max_bytes);

} // namespace captf::contract
