#include "lint/oci/reference.h"

#include <algorithm>
#include <filesystem>

#include "lint/oci/manifest.h"
#include "lint/strings.h"

namespace captf::lint::oci {
namespace {

constexpr std::string_view kDockerHub = "index.docker.io";

bool isRepositoryChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
         c == '/';
}

bool isTagChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

bool isRegistryChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == ':' || c == '[' || c == ']';
}

absl::Status invalid(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(concat("invalid image reference \"", text, "\": ", why));
}

} // namespace

std::string RegistryReference::str() const {
  std::string out = concat(registry, "/", repository);
  if (!digest.empty()) {
    append(out, "@", digest);
  } else {
    append(out, ":", tag);
  }
  return out;
}

absl::StatusOr<RegistryReference> parseRegistryReference(std::string_view text) {
  RegistryReference ref;
  std::string_view rest = text;
  if (rest.empty()) {
    return invalid(text, "it is empty");
  }
  if (const std::size_t at = rest.find('@'); at != std::string_view::npos) {
    ref.digest = std::string(rest.substr(at + 1));
    if (const absl::Status s = validateDigest(ref.digest); !s.ok()) {
      return invalid(text, std::string(s.message()));
    }
    rest = rest.substr(0, at);
  }
  const std::size_t last_slash = rest.rfind('/');
  const std::size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos &&
      (last_slash == std::string_view::npos || colon > last_slash)) {
    ref.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (ref.tag.empty() || ref.tag.size() > 128 || ref.tag.front() == '.' ||
        ref.tag.front() == '-' || !std::all_of(ref.tag.begin(), ref.tag.end(), isTagChar)) {
      return invalid(text, concat("tag \"", ref.tag, "\" is not a valid tag"));
    }
  }
  const std::size_t first_slash = rest.find('/');
  std::string_view repo = rest;
  if (first_slash != std::string_view::npos) {
    const std::string_view head = rest.substr(0, first_slash);
    if (head.find('.') != std::string_view::npos || head.find(':') != std::string_view::npos ||
        head == "localhost") {
      ref.registry = std::string(head);
      repo = rest.substr(first_slash + 1);
    }
  }
  if (!std::all_of(ref.registry.begin(), ref.registry.end(), isRegistryChar)) {
    return invalid(text, concat("registry \"", ref.registry, "\" is not a host[:port]"));
  }
  if (ref.registry.empty() || ref.registry == "docker.io") {
    ref.registry = std::string(kDockerHub);
  }
  if (repo.empty() || repo.front() == '/' || repo.back() == '/' ||
      repo.find("//") != std::string_view::npos ||
      !std::all_of(repo.begin(), repo.end(), isRepositoryChar)) {
    return invalid(text, concat("repository \"", repo,
                                "\" must be lower-case letters, digits and _ - . / separators"));
  }
  ref.repository = std::string(repo);
  if (ref.registry == kDockerHub && ref.repository.find('/') == std::string::npos) {
    ref.repository = concat("library/", ref.repository);
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
    return absl::InvalidArgumentError(concat("\"", text, "\" is not an oci: layout reference"));
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
        concat("invalid image reference \"", text, "\": the directory is missing"));
  }
  return out;
}

} // namespace captf::lint::oci
