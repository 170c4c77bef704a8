// libFuzzer target for what image mode reads from a registry or a layout
// before trusting it: manifest and index documents (every media type the
// reader dispatches on), image configs, WWW-Authenticate challenges, token
// answers and image references. Build and run like hcl_parser_fuzz.cc:
//
//   cmake --preset fuzz && cmake --build build/fuzz --target captf_lint_oci_manifest_fuzz
//   build/fuzz/test/lint/captf_lint_oci_manifest_fuzz -max_total_time=600
//       /tmp/oci-corpus test/lint/fuzz/oci_corpus
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "lint/oci/auth.h"
#include "lint/oci/manifest.h"
#include "lint/oci/reference.h"

namespace {

using namespace captf::lint::oci;

constexpr std::array<std::string_view, 6> kContentTypes = {
    "", kOciIndex, kDockerList, kOciManifest, kDockerManifest, "application/json"};

void exercise(const Descriptor& d) {
  (void)layerCompression(d.media_type);
  if (d.platform) {
    (void)d.platform->str();
    (void)satisfies(*d.platform, Platform{"linux", "amd64", "", "", {}});
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  // The first byte picks the Content-Type the document is "served" with.
  const std::string_view type = kContentTypes[size == 0 ? 0 : data[0] % kContentTypes.size()];
  const std::string_view doc = size == 0 ? std::string_view() : std::string_view(input).substr(1);
  if (auto m = parseManifest(doc, type); m.ok()) {
    if (const auto* index = std::get_if<Index>(&*m)) {
      for (const Descriptor& d : index->manifests) {
        exercise(d);
      }
    } else {
      const auto& image = std::get<ImageManifest>(*m);
      exercise(image.config);
      for (const Descriptor& d : image.layers) {
        exercise(d);
      }
    }
  }
  if (auto c = parseConfig(input); c.ok()) {
    (void)c->platform.str();
  }
  (void)parseChallenges(input);
  (void)parseTokenResponse(input);
  (void)parseRegistryReference(input);
  (void)parsePlatform(input);
  (void)validateDigest(input);
  return 0;
}
