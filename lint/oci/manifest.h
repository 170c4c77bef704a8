#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// OCI image and Docker v2 manifest documents (docs/lint.md#image-mode): indexes and
// manifest lists, image manifests, image configs, descriptors, platforms.
// Every document comes from a registry or a layout directory the user names,
// so parsing never asserts: malformed input is an InvalidArgument naming
// the field.
namespace captf::lint::oci {

inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kDockerList =
    "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerManifest =
    "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kDockerConfig = "application/vnd.docker.container.image.v1+json";

// The Accept header of a manifest request: every type this reader handles.
std::string manifestAcceptHeader();

// os/arch[/variant], plus the optional os.version and os.features.
struct Platform {
  std::string os;
  std::string architecture;
  std::string variant;
  std::string os_version;
  std::vector<std::string> os_features;

  // "os/arch" or "os/arch/variant".
  std::string str() const;
  friend bool operator==(const Platform&, const Platform&) = default;
};

// Parses "os/arch" or "os/arch/variant" (the --platform flag). Each part is
// non-empty, lower-case letters, digits, '.', '_' or '-'.
absl::StatusOr<Platform> parsePlatform(std::string_view text);

// Whether an image for `have` satisfies a request for `want`: OS and
// architecture equal; the variant, os.version and os.features only when the
// request names them (features: a subset), as go-containerregistry's
// Platform.Satisfies: a request for linux/arm64 accepts linux/arm64/v8, one
// for linux/arm64/v8 does not accept linux/arm64.
bool satisfies(const Platform& have, const Platform& want);

struct Descriptor {
  std::string media_type;
  std::string digest; // validated "sha256:<64 hex>" or "sha512:<128 hex>"
  int64_t size = 0;   // >= 0
  std::optional<Platform> platform;
  std::map<std::string, std::string> annotations;
};

// An OCI image index or a Docker manifest list.
struct Index {
  std::string media_type;
  std::vector<Descriptor> manifests;
};

// An OCI image manifest or a Docker v2 schema 2 manifest.
struct ImageManifest {
  std::string media_type;
  Descriptor config;
  std::vector<Descriptor> layers;
};

using Manifest = std::variant<Index, ImageManifest>;

// Whether a media type names an index (OCI index or Docker manifest list).
bool isIndexType(std::string_view media_type);
// Whether a media type names an image manifest (OCI or Docker v2).
bool isImageManifestType(std::string_view media_type);

// Parses a manifest document. Its kind comes from `content_type` when that
// is a manifest type (registries answer with it), else from the document's
// `mediaType`, else from its shape (`manifests` makes an index, `config` and
// `layers` an image manifest). A document whose `mediaType` contradicts a
// manifest Content-Type is an error, as is Docker schema 1.
absl::StatusOr<Manifest> parseManifest(std::string_view bytes, std::string_view content_type);

// The parts of an image config (OCI or Docker) that the image checks read.
struct ImageConfig {
  Platform platform; // os, architecture, variant, os.version
  std::string user;  // config.User
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::map<std::string, std::string> labels;
};

absl::StatusOr<ImageConfig> parseConfig(std::string_view bytes);

// "sha256:<64 lower-case hex>" or "sha512:<128 lower-case hex>". A digest
// that passes is safe to use as a path component and in a URL.
absl::Status validateDigest(std::string_view digest);

// The digest of `bytes` with the algorithm of `like` ("sha256:..." by
// default), as "<alg>:<hex>".
std::string digestOf(std::string_view bytes, std::string_view algorithm = "sha256");

enum class Compression { kNone, kGzip, kZstd };

// The compression of a layer media type (OCI tar, tar+gzip, tar+zstd, their
// non-distributable variants, Docker's rootfs.diff.tar.gzip and foreign
// layers); Unimplemented for anything else (for example encrypted layers).
absl::StatusOr<Compression> layerCompression(std::string_view media_type);

} // namespace captf::lint::oci
