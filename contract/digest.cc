#include "contract/digest.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>

#include <openssl/evp.h>

namespace captf::contract {

std::string sha256Hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  // EVP_Digest with a built-in algorithm fails only on allocation failure.
  const int ok =
      EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr);
  assert(ok == 1 && length == 32);
  static_cast<void>(ok);
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  out.reserve(std::size_t{length} * 2);
  for (unsigned int i = 0; i < length; ++i) {
    const unsigned char byte = digest[i];
    out.push_back(kHex[byte >> 4U]);
    out.push_back(kHex[byte & 0x0FU]);
  }
  return out;
}

std::string base64Encode(std::string_view data) {
  // EVP_EncodeBlock writes 4 bytes per started 3-byte group plus a NUL and
  // takes an int length; encode in chunks so any size works.
  static constexpr std::size_t kChunk = 3 * 1024 * 1024;
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  std::string buffer(kChunk / 3 * 4 + 1, '\0');
  for (std::size_t offset = 0; offset < data.size(); offset += kChunk) {
    const std::size_t size = std::min(kChunk, data.size() - offset);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): OpenSSL takes bytes.
    const auto* input = reinterpret_cast<const unsigned char*>(data.data() + offset);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast)
    auto* output = reinterpret_cast<unsigned char*>(buffer.data());
    const int written = EVP_EncodeBlock(output, input, static_cast<int>(size));
    out.append(buffer.data(), static_cast<std::size_t>(written));
  }
  return out;
}

std::optional<std::string> base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return std::nullopt;
  }
  const auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') {
      return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
      return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
      return c - '0' + 52;
    }
    if (c == '+') {
      return 62;
    }
    if (c == '/') {
      return 63;
    }
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t at = 0; at < text.size(); at += 4) {
    const bool last = at + 4 == text.size();
    std::array<int, 4> quad{};
    int padding = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      const char c = text[at + i];
      if (c == '=' && last && i >= 2) {
        ++padding;
        quad[i] = 0;
        continue;
      }
      if (padding > 0) {
        return std::nullopt;
      }
      quad[i] = value(c);
      if (quad[i] < 0) {
        return std::nullopt;
      }
    }
    const std::uint32_t bits = (static_cast<std::uint32_t>(quad[0]) << 18U) |
                               (static_cast<std::uint32_t>(quad[1]) << 12U) |
                               (static_cast<std::uint32_t>(quad[2]) << 6U) |
                               static_cast<std::uint32_t>(quad[3]);
    out.push_back(static_cast<char>((bits >> 16U) & 0xFFU));
    if (padding < 2) {
      out.push_back(static_cast<char>((bits >> 8U) & 0xFFU));
    }
    if (padding < 1) {
      out.push_back(static_cast<char>(bits & 0xFFU));
    }
  }
  return out;
}

} // namespace captf::contract
