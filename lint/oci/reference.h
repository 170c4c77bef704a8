#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

// Image references (docs/lint.md#image-mode): a registry reference parsed the way
// go-containerregistry's name.ParseReference does, or `oci:<dir>[:<ref>]`
// for a local OCI image layout.
namespace captf::lint::oci {

struct RegistryReference {
  std::string registry;   // "index.docker.io", "ghcr.io", "127.0.0.1:5000"
  std::string repository; // "library/alpine", "org/module"
  std::string tag;        // "latest" when neither tag nor digest is given
  std::string digest;     // "sha256:..." when given; wins over the tag

  // What to ask the registry for: the digest when given, else the tag.
  std::string identifier() const { return digest.empty() ? tag : digest; }
  // "registry/repository:tag", "registry/repository@digest".
  std::string str() const;
};

struct LayoutReference {
  std::string dir;
  std::string ref; // the org.opencontainers.image.ref.name to select; "" for all
};

// Parses a registry reference `[registry/]repository[:tag][@digest]` with
// the one grammar of contract/image_reference.h (tag and digest optional
// here), then the registry client's defaults: no registry (or "docker.io")
// is Docker Hub ("index.docker.io", with "library/" before a one-component
// repository), neither tag nor digest is "latest".
absl::StatusOr<RegistryReference> parseRegistryReference(std::string_view text);

// Whether `text` names a layout ("oci:<dir>[:<ref>]").
bool isLayoutReference(std::string_view text);

// Parses "oci:<dir>[:<ref>]". When "<dir>" followed by ":<ref>" exists as a
// directory as a whole, it is the directory (paths may contain ':').
absl::StatusOr<LayoutReference> parseLayoutReference(std::string_view text);

} // namespace captf::lint::oci
