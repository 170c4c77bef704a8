#pragma once

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "lint/contract_view.h"
#include "lint/finding.h"
#include "lint/oci/auth.h"
#include "lint/oci/extract.h"
#include "lint/oci/http.h"
#include "lint/oci/resolve.h"

// Image mode (docs/lint.md#image-mode): pull, select platforms, flatten, check.
namespace captf::lint {

struct ImageLintOptions {
  std::string ref; // as given: a registry reference or oci:<dir>[:<ref>]
  oci::SelectOptions select;
  bool insecure = false;
  oci::HttpOptions http;
  oci::KeychainEnv keychain;
  oci::ExtractLimits limits;
  // Where the per-platform staging directory is made (removed afterwards);
  // the system temporary directory when empty.
  std::filesystem::path temp_dir;
};

// Validates a reference for the usage check of docs/lint.md#exit-codes (exit 3 when invalid).
absl::Status validateImageReference(std::string_view ref);

// Runs image mode and returns the report, findings unsorted and without
// --allow-warning applied. Errors (exit 2) name the reference and what
// failed: the registry, a manifest, a blob, a layer, the extraction caps,
// or the module inside the image that cannot be parsed.
absl::StatusOr<Report> lintImage(const ImageLintOptions& options, const RoleContract& contract);

} // namespace captf::lint
