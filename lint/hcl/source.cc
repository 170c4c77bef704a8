#include "lint/hcl/source.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "contract/strings.h"

namespace captf::lint::hcl {

using contract::strCat;

std::string_view sliceSource(std::string_view source, const SourceRange& range) {
  const std::size_t begin = std::min<std::size_t>(range.start.byte, source.size());
  const std::size_t end = std::clamp<std::size_t>(range.end.byte, begin, source.size());
  return source.substr(begin, end - begin);
}

absl::Status syntaxError(std::string_view filename, const Pos& pos, std::string_view message) {
  return absl::InvalidArgumentError(
      strCat(filename, ":", pos.line, ":", pos.column, ": ", message));
}

std::size_t decodeUtf8(std::string_view text, char32_t& cp) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) {
    cp = lead;
    return 1;
  }
  std::size_t len = 0;
  char32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    len = 2;
    cp = lead & 0x1Fu;
    min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3;
    cp = lead & 0x0Fu;
    min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4;
    cp = lead & 0x07u;
    min = 0x10000;
  } else {
    return 0;
  }
  if (text.size() < len) {
    return 0;
  }
  for (std::size_t i = 1; i < len; ++i) {
    if ((byte(i) & 0xC0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (byte(i) & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

void appendUtf8(std::string& out, char32_t cp) {
  const auto put = [&](char32_t v) {
    out.push_back(static_cast<char>(static_cast<unsigned char>(v)));
  };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6));
    put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3F));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  }
}

absl::Status validateUtf8(std::string_view source, std::string_view filename, const Pos& start) {
  std::size_t i = 0;
  Pos pos = start;
  while (i < source.size()) {
    const auto c = static_cast<unsigned char>(source[i]);
    if (c < 0x80) {
      ++i;
      if (c == '\n') {
        ++pos.line;
        pos.column = 1;
      } else {
        ++pos.column;
      }
      continue;
    }
    char32_t cp = 0;
    const std::size_t len = decodeUtf8(source.substr(i), cp);
    if (len == 0) {
      pos.byte = start.byte + static_cast<uint32_t>(i);
      return syntaxError(filename, pos,
                         absl::StrFormat("invalid UTF-8 encoding (byte 0x%02X); HCL and JSON "
                                         "files must be UTF-8 text",
                                         static_cast<unsigned>(c)));
    }
    i += len;
    ++pos.column;
  }
  return absl::OkStatus();
}

Pos advancePos(Pos from, std::string_view text) {
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      ++from.line;
      from.column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++from.column;
    }
  }
  from.byte += static_cast<uint32_t>(text.size());
  return from;
}

std::string describeCodePoint(char32_t cp) {
  if (cp >= 0x21 && cp < 0x7F) {
    return absl::StrFormat("'%c'", static_cast<char>(cp));
  }
  return absl::StrFormat("U+%04X", static_cast<uint32_t>(cp));
}

} // namespace captf::lint::hcl
