#include "contract/quantity.h"

#include <algorithm>
#include <array>

namespace captf::contract {
namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view digitsAt(std::string_view text, std::size_t& i) {
  const std::size_t start = i;
  while (i < text.size() && isDigit(text[i])) {
    ++i;
  }
  return text.substr(start, i - start);
}

bool validSuffix(std::string_view suffix) {
  static constexpr std::array<std::string_view, 16> kNamed = {
      "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"};
  if (std::ranges::find(kNamed, suffix) != kNamed.end()) {
    return true;
  }
  if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) {
    return false;
  }
  std::string_view exponent = suffix.substr(1);
  if (exponent.front() == '+' || exponent.front() == '-') {
    exponent.remove_prefix(1);
  }
  return !exponent.empty() && std::ranges::all_of(exponent, isDigit);
}

} // namespace

std::optional<QuantityParts> parseQuantity(std::string_view text) {
  QuantityParts parts;
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    parts.sign = text[i++];
  }
  parts.whole = digitsAt(text, i);
  if (i < text.size() && text[i] == '.') {
    parts.point = true;
    ++i;
    parts.fraction = digitsAt(text, i);
  }
  if (parts.whole.empty() && parts.fraction.empty()) {
    return std::nullopt;
  }
  parts.suffix = text.substr(i);
  if (!validSuffix(parts.suffix)) {
    return std::nullopt;
  }
  return parts;
}

} // namespace captf::contract
