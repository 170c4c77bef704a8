#include "lint/image_lint.h"

#include <cstdlib>

#include <unistd.h>

#include "contract/status_macros.h"
#include "contract/strings.h"
#include "lint/checks/image_checks.h"
#include "lint/checks/module_checks.h"
#include "lint/module/loader.h"
#include "lint/oci/reference.h"
#include "lint/oci/source.h"

namespace captf::lint {

using contract::strCat;

namespace {

// A private temporary directory, removed with everything in it.
class TempDir {
public:
  static absl::StatusOr<TempDir> make(const std::filesystem::path& parent) {
    std::error_code ec;
    const std::filesystem::path base =
        parent.empty() ? std::filesystem::temp_directory_path(ec) : parent;
    std::string tmpl = (base / "tfcapi-lint-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      return absl::InternalError(strCat("cannot create a temporary directory in ", base.string()));
    }
    return TempDir(tmpl);
  }
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    if (!path_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  const std::filesystem::path& path() const { return path_; }

private:
  explicit TempDir(std::filesystem::path p) : path_(std::move(p)) {}
  std::filesystem::path path_;
};

absl::StatusOr<std::unique_ptr<oci::ImageSource>> openSource(const ImageLintOptions& options) {
  if (oci::isLayoutReference(options.ref)) {
    CAPTF_ASSIGN_OR_RETURN(oci::LayoutReference layout, oci::parseLayoutReference(options.ref));
    return oci::openLayout(options.ref, std::move(layout));
  }
  CAPTF_ASSIGN_OR_RETURN(oci::RegistryReference ref, oci::parseRegistryReference(options.ref));
  oci::RegistryOptions registry;
  registry.insecure = options.insecure;
  registry.http = options.http;
  registry.keychain = options.keychain;
  return oci::openRegistry(options.ref, std::move(ref), std::move(registry));
}

struct PlatformResult {
  std::vector<Finding> findings;
  std::string file_set; // "" without a module
};

absl::StatusOr<PlatformResult> checkOne(oci::ImageSource& source, const oci::SelectedImage& image,
                                        const ImageLintOptions& options,
                                        const RoleContract& contract) {
  CAPTF_ASSIGN_OR_RETURN(TempDir staging, TempDir::make(options.temp_dir));
  std::vector<std::filesystem::path> layers;
  std::vector<std::string> names;
  for (const oci::Descriptor& layer : image.manifest.layers) {
    if (absl::StatusOr<oci::Compression> c = oci::layerCompression(layer.media_type); !c.ok()) {
      return absl::InvalidArgumentError(
          strCat(source.name(), ": layer ", layer.digest, ": ", c.status().message()));
    }
    CAPTF_ASSIGN_OR_RETURN(std::filesystem::path file, source.blobFile(layer, staging.path()));
    layers.push_back(std::move(file));
    names.push_back(layer.digest);
  }
  absl::StatusOr<oci::ImageFs> fs =
      oci::flattenLayers(layers, names, staging.path(), oci::keepForChecks, options.limits);
  if (!fs.ok()) {
    return absl::Status(fs.status().code(), strCat(source.name(), ": ", fs.status().message()));
  }
  for (const std::filesystem::path& layer : layers) {
    if (layer.parent_path() == staging.path()) {
      std::error_code ec;
      std::filesystem::remove(layer, ec); // downloaded blobs are no longer needed
    }
  }
  const std::filesystem::path module_dir = staging.path() / "module";
  CAPTF_ASSIGN_OR_RETURN(std::vector<oci::LinkProblem> problems,
                         oci::materializeTree(*fs, kModuleDir, module_dir));

  ImageCheckInput in;
  in.fs = &*fs;
  in.config = &image.config;
  in.platform = image.platform;
  in.link_problems = std::move(problems);
  in.role = contract.role;
  in.contract = contract.version;
  std::optional<ModuleTree> tree;
  if (hasModuleFile(*fs)) {
    absl::StatusOr<ModuleTree> loaded = loadModuleTree(module_dir);
    if (!loaded.ok()) {
      return absl::InvalidArgumentError(
          strCat(source.name(), ": ", kModuleDir, ": ", loaded.status().message()));
    }
    tree = std::move(*loaded);
    in.module = &*tree;
  }
  PlatformResult out;
  out.findings = runImageChecks(in);
  if (tree) {
    out.file_set = tree->root().files.empty() ? "" : std::string(tree->root().fileSet());
    for (Finding& f : runModuleChecks(*tree, contract)) {
      if (!f.file.empty()) {
        f.file = strCat(kModuleDir, "/", f.file);
      }
      out.findings.push_back(std::move(f));
    }
  }
  return out;
}

} // namespace

absl::Status validateImageReference(std::string_view ref) {
  if (oci::isLayoutReference(ref)) {
    return oci::parseLayoutReference(ref).status();
  }
  return oci::parseRegistryReference(ref).status();
}

absl::StatusOr<Report> lintImage(const ImageLintOptions& options, const RoleContract& contract) {
  CAPTF_ASSIGN_OR_RETURN(std::unique_ptr<oci::ImageSource> source, openSource(options));
  CAPTF_ASSIGN_OR_RETURN(oci::Resolution resolution, oci::resolveImages(*source, options.select));
  Report report;
  report.contract = contract.version;
  report.role = contract.role;
  report.file_set = "no module";
  report.image = ImageInfo{options.ref, resolution.digest, {}};
  if (resolution.platform_error) {
    report.findings.push_back(
        Finding{"image/platform", Severity::kError, "", 0, *resolution.platform_error});
    return report;
  }
  const bool prefix = options.select.all_platforms;
  std::vector<std::pair<oci::Platform, const oci::ImageConfig*>> configs;
  for (const oci::SelectedImage& image : resolution.images) {
    CAPTF_ASSIGN_OR_RETURN(PlatformResult result, checkOne(*source, image, options, contract));
    report.image->platforms.push_back(image.platform.str());
    configs.emplace_back(image.platform, &image.config);
    if (report.file_set == "no module" && !result.file_set.empty()) {
      report.file_set = result.file_set;
    }
    for (Finding& f : result.findings) {
      if (prefix) {
        f.message = strCat("[", image.platform.str(), "] ", f.message);
      }
      report.findings.push_back(std::move(f));
    }
  }
  if (contract.role == "machine") {
    if (std::optional<Finding> f = checkCapacityAcrossPlatforms(configs)) {
      report.findings.push_back(std::move(*f));
    }
  }
  return report;
}

} // namespace captf::lint
