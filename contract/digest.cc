#include "contract/digest.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>

#include <openssl/evp.h>

#include "absl/strings/escaping.h"
#include "contract/strings.h"

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
  return absl::Base64Escape(av(data));
}

std::optional<std::string> base64Decode(std::string_view text) {
  // Abseil also takes unpadded input; the API server's form is padded, so
  // anything else is refused before it decodes.
  if (text.size() % 4 != 0) {
    return std::nullopt;
  }
  const std::size_t body = text.find_last_not_of('=') + 1;
  if (text.size() - body > 2 ||
      text.substr(0, body).find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                             "0123456789+/") != std::string_view::npos) {
    return std::nullopt;
  }
  std::string out;
  if (!absl::Base64Unescape(av(text), &out)) {
    return std::nullopt;
  }
  return out;
}

} // namespace captf::contract
