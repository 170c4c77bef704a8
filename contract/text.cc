#include "contract/text.h"

#include <cstdint>

namespace captf::contract {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
constexpr std::string_view kEllipsis = "...";

bool isContinuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0U) == 0x80U;
}

} // namespace

std::size_t utf8SequenceLength(std::string_view text, std::size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  if (lead < 0x80U) {
    return 1;
  }
  std::size_t length = 0;
  std::uint32_t code_point = 0;
  std::uint32_t minimum = 0;
  if ((lead & 0xE0U) == 0xC0U) {
    length = 2;
    code_point = lead & 0x1FU;
    minimum = 0x80U;
  } else if ((lead & 0xF0U) == 0xE0U) {
    length = 3;
    code_point = lead & 0x0FU;
    minimum = 0x800U;
  } else if ((lead & 0xF8U) == 0xF0U) {
    length = 4;
    code_point = lead & 0x07U;
    minimum = 0x10000U;
  } else {
    return 0;
  }
  if (i + length > text.size()) {
    return 0;
  }
  for (std::size_t k = 1; k < length; ++k) {
    if (!isContinuation(text[i + k])) {
      return 0;
    }
    code_point = (code_point << 6U) | (static_cast<unsigned char>(text[i + k]) & 0x3FU);
  }
  if (code_point < minimum || code_point > 0x10FFFFU ||
      (code_point >= 0xD800U && code_point <= 0xDFFFU)) {
    return 0;
  }
  return length;
}

std::string sanitizeUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t length = utf8SequenceLength(text, i);
    if (length == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

std::string_view utf8Prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return text;
  }
  std::size_t end = max_bytes;
  // Back off over continuation bytes so a sequence is never split.
  while (end > 0 && isContinuation(text[end])) {
    --end;
  }
  return text.substr(0, end);
}

std::string clipText(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) {
    return std::string(text);
  }
  if (max_bytes < kEllipsis.size()) {
    return std::string(utf8Prefix(text, max_bytes));
  }
  std::string out(utf8Prefix(text, max_bytes - kEllipsis.size()));
  out += kEllipsis;
  return out;
}

} // namespace captf::contract
