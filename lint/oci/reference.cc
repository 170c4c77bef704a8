#include "lint/oci/reference.h"

#include <filesystem>

#include "contract/image_reference.h"
#include "contract/strings.h"
#include "lint/oci/manifest.h"

namespace captf::lint::oci {

using contract::strAppend;
using contract::strCat;

namespace {

constexpr std::string_view kDockerHub = "index.docker.io";

} // namespace

std::string RegistryReference::str() const {
  std::string out = strCat(registry, "/", repository);
  if (!digest.empty()) {
    strAppend(out, "@", digest);
  } else {
    strAppend(out, ":", tag);
  }
  return out;
}

// The one image-reference grammar (contract/image_reference.h), with the
// registry client's defaults on top.
absl::StatusOr<RegistryReference> parseRegistryReference(std::string_view text) {
  std::string error;
  const std::optional<contract::ImageReference> parsed =
      contract::parseImageReference(text, &error, contract::VersionRequired::kNo);
  if (!parsed) {
    return absl::InvalidArgumentError(strCat("invalid image reference \"", text, "\": ", error));
  }
  RegistryReference ref;
  ref.registry = parsed->domain;
  ref.repository = parsed->path;
  ref.tag = parsed->tag;
  ref.digest = parsed->digest;
  if (ref.registry.empty() || ref.registry == "docker.io") {
    ref.registry = std::string(kDockerHub);
  }
  if (ref.registry == kDockerHub && ref.repository.find('/') == std::string::npos) {
    ref.repository = strCat("library/", ref.repository);
  }
  if (ref.tag.empty() && ref.digest.empty()) {
    ref.tag = "latest";
  }
  return ref;
}

bool isLayoutReference(std::string_view text) {
  return text.starts_with("oci:");
}

absl::StatusOr<LayoutReference> parseLayoutReference(std::string_view text) {
  if (!isLayoutReference(text)) {
    return absl::InvalidArgumentError(strCat("\"", text, "\" is not an oci: layout reference"));
  }
  const std::string_view rest = text.substr(4);
  if (rest.empty()) {
    return absl::InvalidArgumentError("invalid image reference \"oci:\": the directory is missing");
  }
  std::error_code ec;
  LayoutReference out;
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos ||
      std::filesystem::is_directory(std::filesystem::path(std::string(rest)), ec) ||
      rest.substr(colon + 1).find('/') != std::string_view::npos) {
    out.dir = std::string(rest);
    return out;
  }
  out.dir = std::string(rest.substr(0, colon));
  out.ref = std::string(rest.substr(colon + 1));
  if (out.dir.empty()) {
    return absl::InvalidArgumentError(
        strCat("invalid image reference \"", text, "\": the directory is missing"));
  }
  return out;
}

} // namespace captf::lint::oci
