#include <cstddef>
#include <fstream>
#include <sstream>
#include <utility>

#include "contract/status_macros.h"
#include "contract/strings.h"
#include "lint/oci/source.h"

namespace captf::lint::oci {

using contract::strCat;

namespace {

constexpr std::string_view kRefName = "org.opencontainers.image.ref.name";

absl::StatusOr<std::string> readFile(const std::filesystem::path& path, uint64_t max_bytes) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(strCat("cannot read ", path.string(), ": ", ec.message()));
  }
  if (size > max_bytes) {
    return absl::ResourceExhaustedError(strCat(path.string(), " has ", static_cast<uint64_t>(size),
                                               " bytes, more than ", max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  if (!in) {
    return absl::NotFoundError(strCat("cannot read ", path.string()));
  }
  return content.str();
}

class LayoutSource final : public ImageSource {
public:
  LayoutSource(std::string given, LayoutReference ref)
      : given_(std::move(given)), ref_(std::move(ref)) {}

  const std::string& name() const override { return given_; }

  absl::StatusOr<FetchedManifest> root() override {
    const std::filesystem::path index_path = std::filesystem::path(ref_.dir) / "index.json";
    absl::StatusOr<std::string> bytes = readFile(index_path, kMaxManifestBytes);
    if (!bytes.ok()) {
      return absl::Status(bytes.status().code(),
                          strCat(given_, ": not an OCI image layout: ", bytes.status().message()));
    }
    absl::StatusOr<Manifest> parsed = parseManifest(*bytes, kOciIndex);
    if (!parsed.ok() || !std::holds_alternative<Index>(*parsed)) {
      return absl::InvalidArgumentError(
          strCat(given_, ": ", index_path.string(), ": ",
                 parsed.ok() ? "not an index" : parsed.status().message()));
    }
    const Index& index = std::get<Index>(*parsed);
    const Descriptor* chosen = nullptr;
    if (!ref_.ref.empty()) {
      for (const Descriptor& d : index.manifests) {
        const auto name = d.annotations.find(std::string(kRefName));
        if (name != d.annotations.end() && name->second == ref_.ref) {
          chosen = &d;
          break;
        }
      }
      if (chosen == nullptr) {
        return absl::NotFoundError(
            strCat(given_, ": ", index_path.string(), " has no manifest named \"", ref_.ref, "\""));
      }
    } else if (index.manifests.size() == 1) {
      chosen = &index.manifests.front();
    }
    if (chosen != nullptr) {
      return manifest(*chosen);
    }
    FetchedManifest m;
    m.media_type = std::string(kOciIndex);
    m.digest = digestOf(*bytes);
    m.bytes = std::move(*bytes);
    return m;
  }

  absl::StatusOr<FetchedManifest> manifest(const Descriptor& d) override {
    CAPTF_ASSIGN_OR_RETURN(std::string bytes, blob(d, kMaxManifestBytes));
    FetchedManifest m;
    m.media_type = d.media_type;
    m.digest = d.digest;
    m.bytes = std::move(bytes);
    return m;
  }

  absl::StatusOr<std::string> blob(const Descriptor& d, uint64_t max_bytes) override {
    CAPTF_RETURN_IF_ERROR(validateDigest(d.digest));
    absl::StatusOr<std::string> bytes = readFile(path(d), max_bytes);
    if (!bytes.ok()) {
      return absl::Status(bytes.status().code(), strCat(given_, ": ", bytes.status().message()));
    }
    if (absl::Status s = verifyBlob(*bytes, d); !s.ok()) {
      return absl::DataLossError(strCat(given_, ": ", s.message()));
    }
    return bytes;
  }

  absl::StatusOr<std::filesystem::path> blobFile(const Descriptor& d,
                                                 const std::filesystem::path&) override {
    CAPTF_RETURN_IF_ERROR(validateDigest(d.digest));
    std::filesystem::path p = path(d);
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      return absl::NotFoundError(strCat(given_, ": cannot read ", p.string()));
    }
    Hasher hasher(d.digest.substr(0, d.digest.find(':')));
    std::array<char, static_cast<std::size_t>(64 * 1024)> buf{};
    uint64_t total = 0;
    while (in) {
      in.read(buf.data(), buf.size());
      const auto n = static_cast<std::size_t>(in.gcount());
      hasher.update(std::string_view(buf.data(), n));
      total += n;
    }
    if (std::cmp_not_equal(total, d.size)) {
      return absl::DataLossError(strCat(given_, ": layer ", d.digest, " has ", total,
                                        " bytes, the manifest says ", d.size));
    }
    if (const std::string got = hasher.finish(); got != d.digest) {
      return absl::DataLossError(strCat(given_, ": layer ", d.digest, " has digest ", got));
    }
    return p;
  }

private:
  std::filesystem::path path(const Descriptor& d) const {
    const std::size_t colon = d.digest.find(':');
    return std::filesystem::path(ref_.dir) / "blobs" / d.digest.substr(0, colon) /
           d.digest.substr(colon + 1);
  }

  std::string given_;
  LayoutReference ref_;
};

} // namespace

absl::StatusOr<std::unique_ptr<ImageSource>> openLayout(std::string given, LayoutReference ref) {
  std::error_code ec;
  if (!std::filesystem::is_directory(ref.dir, ec)) {
    return absl::NotFoundError(strCat(given, ": ", ref.dir, " is not a directory"));
  }
  return std::unique_ptr<ImageSource>(
      std::make_unique<LayoutSource>(std::move(given), std::move(ref)));
}

} // namespace captf::lint::oci
