#include "contract/report.h"

#include <array>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "contract/digest.h"

namespace captf::contract {

std::string newReportToken() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return ""; // never reached with a working OpenSSL; an empty token is refused
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

std::string reportTokenHash(std::string_view token) {
  return "sha256:" + sha256Hex(token);
}

bool reportTokenMatches(std::string_view token, std::string_view hash) {
  if (token.empty()) {
    return false;
  }
  const std::string expected = reportTokenHash(token);
  return expected.size() == hash.size() &&
         CRYPTO_memcmp(expected.data(), hash.data(), expected.size()) == 0;
}

} // namespace captf::contract
