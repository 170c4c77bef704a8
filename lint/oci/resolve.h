#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lint/oci/manifest.h"
#include "lint/oci/source.h"

// Choosing the image(s) to check from what a reference names (docs/lint.md#image-mode
// "Platform selection").
namespace captf::lint::oci {

struct SelectOptions {
  Platform platform{"linux", "amd64", "", "", {}};
  bool platform_explicit = false; // --platform was given
  bool all_platforms = false;
};

struct SelectedImage {
  Platform platform;  // the descriptor's, or the config's when the descriptor has none
  std::string digest; // the image manifest's
  ImageManifest manifest;
  ImageConfig config;
};

struct Resolution {
  std::string digest; // of the manifest the reference names (index or image)
  bool is_index = false;
  std::vector<SelectedImage> images; // in index order; empty with a platform error
  // The image/platform message when the requested platform is missing:
  // "the index has no manifest for <p>" / "the image is for <have>, not <want>".
  std::optional<std::string> platform_error;
};

// Index: without all_platforms, the first manifest (depth first through
// nested indexes) whose platform satisfies the request; with it, every
// image manifest. Entries for unknown/unknown (attestations) are skipped;
// an entry without a platform takes its config's. Nested indexes deeper
// than 8 levels, or more than 1024 manifests in all, are errors. A single
// image is taken as is unless the platform was given explicitly and its
// config's platform does not satisfy it.
absl::StatusOr<Resolution> resolveImages(ImageSource& source, const SelectOptions& options);

} // namespace captf::lint::oci
