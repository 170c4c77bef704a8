#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lint/finding.h"
#include "lint/module/loader.h"
#include "lint/oci/extract.h"
#include "lint/oci/manifest.h"

// The image checks of docs/lint.md#image-checks: pure functions of one flattened image (its
// filesystem metadata, config and the module loaded from it).
namespace captf::lint {

inline constexpr std::string_view kModuleDir = "/captf/module";
inline constexpr std::string_view kRuntimePath = "/captf/runtime";
inline constexpr std::string_view kProvidersDir = "/captf/providers";

// config.User as the checks read it.
struct ImageUser {
  enum class Kind {
    kRoot,    // "", "root", "0", with any group
    kNumeric, // "1000", "1000:1000"
    kName,    // "captf", "captf:captf": not resolvable without /etc/passwd
  };
  Kind kind = Kind::kRoot;
  int64_t uid = 0;
  std::optional<int64_t> gid;
};

ImageUser parseImageUser(std::string_view user);

// Permission bits: 4 read, 1 execute. Root and names: any of the three
// classes grants it; a numeric uid: the owner bits when it owns the node,
// else the group bits when the group is known and matches, else the other
// bits.
bool permits(const oci::Node& node, const ImageUser& user, uint32_t bit);

struct ImageCheckInput {
  const oci::ImageFs* fs = nullptr;
  const oci::ImageConfig* config = nullptr;
  oci::Platform platform;                      // the checked one
  const ModuleTree* module = nullptr;          // null when image/module-present fired
  std::vector<oci::LinkProblem> link_problems; // from materializing /captf/module
  std::string role;
  std::string contract;
};

// Whether /captf/module has a top-level .tf, .tf.json, .tofu or .tofu.json
// regular file (image/module-present).
bool hasModuleFile(const oci::ImageFs& fs);

// Every image check except image/platform and the cross-platform capacity
// check, in the spec's order: module-present, runtime-present,
// runtime-version, providers-absent, providers-layout, providers-complete,
// reserved-paths, label-role, label-contract, label-capacity, user-root,
// user-unresolved, module-readable, module-link, entrypoint.
std::vector<Finding> runImageChecks(const ImageCheckInput& in);

// image/label-capacity across platforms: a warning when the io.captf.capacity
// label differs between the checked platforms.
std::optional<Finding> checkCapacityAcrossPlatforms(
    const std::vector<std::pair<oci::Platform, const oci::ImageConfig*>>& images);

// The individual checks (exposed for tests).
void checkModulePresent(const ImageCheckInput& in, std::vector<Finding>& out);
void checkRuntime(const ImageCheckInput& in, std::vector<Finding>& out);
void checkProviders(const ImageCheckInput& in, std::vector<Finding>& out);
void checkReservedPaths(const ImageCheckInput& in, std::vector<Finding>& out);
void checkLabels(const ImageCheckInput& in, std::vector<Finding>& out);
void checkUser(const ImageCheckInput& in, std::vector<Finding>& out);
void checkModuleLinks(const ImageCheckInput& in, std::vector<Finding>& out);
void checkEntrypoint(const ImageCheckInput& in, std::vector<Finding>& out);

} // namespace captf::lint
