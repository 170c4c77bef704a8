#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace captf::lint::hcl {

// A position in a source file. Lines and columns are 1-based; columns count
// Unicode code points (not bytes, not display cells) so that a message points
// at the same character an editor shows. `byte` is the 0-based byte offset.
struct Pos {
  uint32_t line = 1;
  uint32_t column = 1;
  uint32_t byte = 0;

  friend bool operator==(const Pos&, const Pos&) = default;
};

// A half-open byte range [start, end) with the positions of both ends.
struct SourceRange {
  Pos start;
  Pos end;

  friend bool operator==(const SourceRange&, const SourceRange&) = default;
};

// The source text a range covers. The range must come from `source`;
// out-of-bounds ranges are clamped rather than trusted.
std::string_view sliceSource(std::string_view source, const SourceRange& range);

// An InvalidArgument status whose message reads "<file>:<line>:<column>: <message>",
// the form every HCL and JSON syntax error takes.
absl::Status syntaxError(std::string_view filename, const Pos& pos, std::string_view message);

// Decodes one UTF-8 sequence at the start of `text` (which must be non-empty).
// Returns the number of bytes consumed and stores the code point, or returns 0
// for an invalid sequence (overlong forms, surrogates, values above U+10FFFF,
// truncated or stray continuation bytes).
std::size_t decodeUtf8(std::string_view text, char32_t& cp);

// Appends the UTF-8 encoding of a valid code point.
void appendUtf8(std::string& out, char32_t cp);

// Checks that all of `source` is well-formed UTF-8. On failure the status is a
// syntaxError() at the first bad byte, computed from `start` (the position of
// source[0]).
absl::Status validateUtf8(std::string_view source, std::string_view filename, const Pos& start);

// The position reached after `text`, starting from `from`: a '\n' starts a
// new line, every other code point advances the column by one. `text` must be
// valid UTF-8.
Pos advancePos(Pos from, std::string_view text);

// Describes a code point for a message: "'x'" for printable ASCII, "U+XXXX"
// otherwise.
std::string describeCodePoint(char32_t cp);

} // namespace captf::lint::hcl
