#include "lint/oci/resolve.h"

#include <set>

#include "contract/status_macros.h"
#include "contract/strings.h"

namespace captf::lint::oci {

using contract::strCat;

namespace {

constexpr int kMaxDepth = 8;
constexpr std::size_t kMaxManifests = 1024;

class Resolver {
public:
  Resolver(ImageSource& source, const SelectOptions& options)
      : source_(source), options_(options) {}

  absl::StatusOr<Resolution> run() {
    CAPTF_ASSIGN_OR_RETURN(FetchedManifest top, source_.root());
    CAPTF_ASSIGN_OR_RETURN(Manifest parsed, parse(top));
    Resolution out;
    out.digest = top.digest;
    if (auto* image = std::get_if<ImageManifest>(&parsed)) {
      CAPTF_ASSIGN_OR_RETURN(SelectedImage selected,
                             load(top.digest, std::move(*image), std::nullopt));
      if (options_.platform_explicit && !satisfies(selected.platform, options_.platform)) {
        out.platform_error =
            strCat("the image is for ", selected.platform.str(), ", not ", options_.platform.str());
        return out;
      }
      out.images.push_back(std::move(selected));
      return out;
    }
    out.is_index = true;
    visited_.insert(top.digest);
    CAPTF_RETURN_IF_ERROR(walk(std::get<Index>(parsed), 1, out));
    if (out.images.empty()) {
      out.platform_error =
          strCat("the index has no manifest for ",
                 options_.all_platforms ? std::string("any platform") : options_.platform.str());
    }
    return out;
  }

private:
  absl::StatusOr<Manifest> parse(const FetchedManifest& m) const {
    absl::StatusOr<Manifest> parsed = parseManifest(m.bytes, m.media_type);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          strCat(source_.name(), ": manifest ", m.digest, ": ", parsed.status().message()));
    }
    return parsed;
  }

  absl::StatusOr<SelectedImage> load(std::string digest, ImageManifest manifest,
                                     const std::optional<Platform>& platform) {
    CAPTF_ASSIGN_OR_RETURN(std::string config_bytes,
                           source_.blob(manifest.config, kMaxConfigBytes));
    absl::StatusOr<ImageConfig> config = parseConfig(config_bytes);
    if (!config.ok()) {
      return absl::InvalidArgumentError(strCat(source_.name(), ": config ", manifest.config.digest,
                                               ": ", config.status().message()));
    }
    SelectedImage out;
    out.platform = platform.value_or(config->platform);
    out.digest = std::move(digest);
    out.manifest = std::move(manifest);
    out.config = std::move(*config);
    return out;
  }

  static bool isAttestation(const Descriptor& d) {
    return d.platform && d.platform->os == "unknown" && d.platform->architecture == "unknown";
  }

  // Returns true when the walk may stop (a single platform was found).
  absl::Status walk(const Index& index, int depth, Resolution& out) {
    if (depth > kMaxDepth) {
      return absl::InvalidArgumentError(
          strCat(source_.name(), ": indexes are nested more than ", kMaxDepth, " levels deep"));
    }
    for (const Descriptor& d : index.manifests) {
      if (done_) {
        return absl::OkStatus();
      }
      if (++seen_ > kMaxManifests) {
        return absl::InvalidArgumentError(
            strCat(source_.name(), ": the index lists more than ", kMaxManifests, " manifests"));
      }
      if (isAttestation(d)) {
        continue;
      }
      if (isIndexType(d.media_type)) {
        if (!visited_.insert(d.digest).second) {
          continue;
        }
        CAPTF_ASSIGN_OR_RETURN(FetchedManifest m, source_.manifest(d));
        CAPTF_ASSIGN_OR_RETURN(Manifest nested, parse(m));
        if (const auto* nested_index = std::get_if<Index>(&nested)) {
          CAPTF_RETURN_IF_ERROR(walk(*nested_index, depth + 1, out));
          continue;
        }
        return absl::InvalidArgumentError(
            strCat(source_.name(), ": ", d.digest, " is described as an index but is not one"));
      }
      // A known platform that does not match needs no fetch.
      if (d.platform && !options_.all_platforms && !satisfies(*d.platform, options_.platform)) {
        continue;
      }
      if (!visited_.insert(d.digest).second) {
        continue;
      }
      CAPTF_ASSIGN_OR_RETURN(FetchedManifest m, source_.manifest(d));
      CAPTF_ASSIGN_OR_RETURN(Manifest nested, parse(m));
      if (auto* nested_index = std::get_if<Index>(&nested)) {
        CAPTF_RETURN_IF_ERROR(walk(*nested_index, depth + 1, out));
        continue;
      }
      CAPTF_ASSIGN_OR_RETURN(
          SelectedImage selected,
          load(d.digest, std::move(std::get<ImageManifest>(nested)), d.platform));
      if (selected.platform.os == "unknown" && selected.platform.architecture == "unknown") {
        continue;
      }
      if (!options_.all_platforms && !satisfies(selected.platform, options_.platform)) {
        continue;
      }
      out.images.push_back(std::move(selected));
      if (!options_.all_platforms) {
        done_ = true;
      }
    }
    return absl::OkStatus();
  }

  ImageSource& source_;
  const SelectOptions& options_;
  std::set<std::string> visited_;
  std::size_t seen_ = 0;
  bool done_ = false;
};

} // namespace

absl::StatusOr<Resolution> resolveImages(ImageSource& source, const SelectOptions& options) {
  return Resolver(source, options).run();
}

} // namespace captf::lint::oci
