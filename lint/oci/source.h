#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "lint/oci/auth.h"
#include "lint/oci/http.h"
#include "lint/oci/manifest.h"
#include "lint/oci/reference.h"

// Where an image's manifests and blobs come from: a registry (distribution
// API v2) or an OCI image layout directory. Every blob is checked against
// its descriptor's digest and size before it is used.
namespace captf::lint::oci {

inline constexpr uint64_t kMaxManifestBytes = 4u << 20; // as containerd
inline constexpr uint64_t kMaxConfigBytes = 16u << 20;

struct FetchedManifest {
  std::string bytes;
  std::string media_type; // the Content-Type, or the layout descriptor's type
  std::string digest;     // of the bytes
};

class ImageSource {
public:
  virtual ~ImageSource() = default;
  // The manifest the reference names (an index or an image manifest).
  virtual absl::StatusOr<FetchedManifest> root() = 0;
  // A manifest by descriptor (nested index or image manifest).
  virtual absl::StatusOr<FetchedManifest> manifest(const Descriptor& d) = 0;
  // A small blob (the config) in memory; at most `max_bytes`.
  virtual absl::StatusOr<std::string> blob(const Descriptor& d, uint64_t max_bytes) = 0;
  // A blob (a layer) as a verified file: downloaded into `scratch_dir`
  // (registry) or the layout's own blob file.
  virtual absl::StatusOr<std::filesystem::path>
  blobFile(const Descriptor& d, const std::filesystem::path& scratch_dir) = 0;
  // The reference as given, for messages.
  virtual const std::string& name() const = 0;
};

struct RegistryOptions {
  // Plain HTTP is allowed (tried after HTTPS fails to connect).
  bool insecure = false;
  HttpOptions http;
  KeychainEnv keychain;
  // Docker config documents to take credentials from instead of the
  // keychain (the manager's image pull Secrets), first match wins.
  std::vector<std::pair<std::string, std::string>> docker_configs; // {where, document}
};

// A registry source. Authentication is set up on the first request: a
// GET /v2/ that answers 200 is anonymous; 401 with a Basic challenge uses
// the keychain's credentials; with a Bearer challenge the token endpoint
// (realm, service, scope repository:<repo>:pull) is asked for a token,
// with the keychain's credentials when there are any.
std::unique_ptr<ImageSource> openRegistry(std::string given, RegistryReference ref,
                                          RegistryOptions options);

// An `oci:` layout source: index.json selects the root. With a ref name, the
// index.json entry whose org.opencontainers.image.ref.name equals it; without
// one, the only entry, or index.json itself (as an index) when it lists
// several.
absl::StatusOr<std::unique_ptr<ImageSource>> openLayout(std::string given, LayoutReference ref);

// Checks `bytes` against a descriptor: size and digest.
absl::Status verifyBlob(std::string_view bytes, const Descriptor& d);

// An incremental digest ("sha256" or "sha512").
class Hasher {
public:
  explicit Hasher(std::string_view algorithm = "sha256");
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void update(std::string_view data);
  // "<alg>:<hex>"; call once.
  std::string finish();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace captf::lint::oci
