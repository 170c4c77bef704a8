#include "lint/checks/image_checks.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "contract/image_labels.h"
#include "contract/strings.h"

namespace captf::lint {

using contract::isAsciiDigits;
using contract::strAppend;
using contract::strCat;

namespace {

using oci::Node;
using oci::NodeType;

constexpr std::string_view kLabelRole = "io.captf.role";
constexpr std::string_view kLabelContract = "io.captf.contract";
constexpr std::string_view kLabelRuntime = "io.captf.runtime";
using contract::kLabelCapacity;
using contract::kLabelNodeInfo;
constexpr std::size_t kMaxListedPaths = 5;

Finding imageFinding(std::string_view id, Severity severity, std::string file,
                     std::string message) {
  return Finding{std::string(id), severity, std::move(file), 0, std::move(message)};
}

std::string octal(uint32_t mode) {
  std::string out;
  for (int shift = 9; shift >= 0; shift -= 3) {
    out += static_cast<char>('0' + ((mode >> shift) & 7));
  }
  return out;
}

std::string describeUser(const ImageUser& user, std::string_view text) {
  if (user.kind == ImageUser::Kind::kRoot) {
    return "root";
  }
  return strCat("\"", text, "\"");
}

std::optional<std::string> label(const oci::ImageConfig& config, std::string_view key) {
  const auto it = config.labels.find(std::string(key));
  return it == config.labels.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::string relativeTo(std::string_view path, std::string_view dir) {
  return std::string(path.substr(dir.size() + 1));
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) {
      return out;
    }
    start = at + 1;
  }
}

// "linux_amd64": the provider target of a platform.
std::string target(const oci::Platform& p) {
  return strCat(p.os, "_", p.architecture);
}

bool isTargetName(std::string_view name) {
  const std::size_t us = name.find('_');
  const auto ok = [](std::string_view part) {
    return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    });
  };
  return us != std::string_view::npos && ok(name.substr(0, us)) && ok(name.substr(us + 1));
}

// terraform-provider-TYPE_VERSION_OS_ARCH.zip: at least three '_' after
// the prefix, and a target at the end.
bool isPackedName(std::string_view name) {
  constexpr std::string_view kPrefix = "terraform-provider-";
  if (!name.starts_with(kPrefix) || !name.ends_with(".zip")) {
    return false;
  }
  const std::string_view stem = name.substr(kPrefix.size(), name.size() - kPrefix.size() - 4);
  const std::vector<std::string_view> parts = split(stem, '_');
  return parts.size() >= 4 && isTargetName(strCat(parts[parts.size() - 2], "_", parts.back()));
}

bool validNodeInfo(std::string_view text, std::string& why) {
  auto parsed = contract::parseNodeInfoLabel(text);
  if (!parsed.ok()) {
    why = std::string(parsed.status().message());
    return false;
  }
  return true;
}

bool validCapacity(std::string_view text, std::string& why) {
  auto parsed = contract::parseCapacityLabel(text);
  if (!parsed.ok()) {
    why = std::string(parsed.status().message());
    return false;
  }
  return true;
}

} // namespace

ImageUser parseImageUser(std::string_view text) {
  ImageUser user;
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const std::string_view group =
      colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (isAsciiDigits(group) && group.size() < 10) {
    user.gid = std::stoll(std::string(group));
  }
  if (name.empty() || name == "root" ||
      (isAsciiDigits(name) && name.find_first_not_of('0') == std::string_view::npos)) {
    user.kind = ImageUser::Kind::kRoot;
    return user;
  }
  if (isAsciiDigits(name) && name.size() < 10) {
    user.kind = ImageUser::Kind::kNumeric;
    user.uid = std::stoll(std::string(name));
    return user;
  }
  user.kind = ImageUser::Kind::kName;
  return user;
}

bool permits(const Node& node, const ImageUser& user, uint32_t bit) {
  if (user.kind != ImageUser::Kind::kNumeric) {
    return (node.mode & ((bit << 6) | (bit << 3) | bit)) != 0;
  }
  if (user.uid == node.uid) {
    return (node.mode & (bit << 6)) != 0;
  }
  if (user.gid && *user.gid == node.gid) {
    return (node.mode & (bit << 3)) != 0;
  }
  return (node.mode & bit) != 0;
}

bool hasModuleFile(const oci::ImageFs& fs) {
  const Node* dir = fs.lstat(kModuleDir);
  if (dir == nullptr || dir->type != NodeType::kDir) {
    return false;
  }
  for (const std::string& path : fs.under(kModuleDir)) {
    const std::string rel = relativeTo(path, kModuleDir);
    if (rel.find('/') != std::string::npos) {
      continue;
    }
    const Node& node = *fs.lstat(path);
    const bool config = rel.ends_with(".tf") || rel.ends_with(".tf.json") ||
                        rel.ends_with(".tofu") || rel.ends_with(".tofu.json");
    if (config && node.type == NodeType::kFile) {
      return true;
    }
  }
  return false;
}

void checkModulePresent(const ImageCheckInput& in, std::vector<Finding>& out) {
  if (!hasModuleFile(*in.fs)) {
    out.push_back(imageFinding("image/module-present", Severity::kError, std::string(kModuleDir),
                               "/captf/module has no .tf, .tf.json, .tofu or .tofu.json file"));
  }
}

void checkRuntime(const ImageCheckInput& in, std::vector<Finding>& out) {
  const oci::ImageFs& fs = *in.fs;
  const std::string file(kRuntimePath);
  const Node* node = fs.lstat(kRuntimePath);
  if (node == nullptr) {
    out.push_back(
        imageFinding("image/runtime-present", Severity::kError, file,
                     "/captf/runtime is missing: the image must ship the tofu or terraform "
                     "binary (or a symlink to it) there"));
    return;
  }
  std::string resolved = file;
  const Node* target = node;
  if (node->type == NodeType::kSymlink || node->type == NodeType::kHardlink) {
    target = fs.stat(kRuntimePath, &resolved);
    if (target == nullptr) {
      out.push_back(imageFinding("image/runtime-present", Severity::kError, file,
                                 strCat("/captf/runtime is a ",
                                        node->type == NodeType::kSymlink ? "symlink" : "hard link",
                                        " to ", node->link, ", which is not in the image")));
      return;
    }
  }
  if (target->type != NodeType::kFile) {
    out.push_back(imageFinding(
        "image/runtime-present", Severity::kError, file,
        resolved == file
            ? std::string("/captf/runtime is not a regular file")
            : strCat("/captf/runtime resolves to ", resolved, ", which is not a regular file")));
    return;
  }
  const ImageUser user = parseImageUser(in.config->user);
  if (!permits(*target, user, 1)) {
    out.push_back(imageFinding(
        "image/runtime-present", Severity::kError, file,
        strCat("/captf/runtime", resolved == file ? std::string() : strCat(" (", resolved, ")"),
               " is not executable by user ", describeUser(user, in.config->user), " (mode ",
               octal(target->mode), ", owner ", target->uid, ":", target->gid, ")")));
  }
  // image/runtime-version: best effort, from names only.
  const std::optional<std::string> runtime = label(*in.config, kLabelRuntime);
  if (!runtime) {
    return;
  }
  std::string name = resolved.substr(resolved.rfind('/') + 1);
  if (node->type == NodeType::kSymlink && name.find("tofu") == std::string::npos &&
      name.find("terraform") == std::string::npos) {
    name = node->link;
  }
  const bool is_tofu = name.find("tofu") != std::string::npos;
  const bool is_terraform = name.find("terraform") != std::string::npos;
  if (is_tofu == is_terraform) {
    return; // neither (or both): nothing to compare
  }
  const std::string_view actual = is_tofu ? "tofu" : "terraform";
  if (*runtime != actual) {
    out.push_back(
        imageFinding("image/runtime-version", Severity::kWarning, file,
                     strCat("label io.captf.runtime is \"", *runtime, "\", but /captf/runtime is ",
                            resolved == file ? "" : "a link to ",
                            resolved == file ? name : resolved, ", which looks like ", actual)));
  }
}

void checkProviders(const ImageCheckInput& in, std::vector<Finding>& out) {
  const oci::ImageFs& fs = *in.fs;
  const Node* root = fs.stat(kProvidersDir);
  if (root == nullptr || root->type != NodeType::kDir) {
    out.push_back(
        imageFinding("image/providers-absent", Severity::kInfo, std::string(kProvidersDir),
                     "/captf/providers does not exist: without a provider mirror, tofu init "
                     "installs providers from the registry, so every Job needs registry "
                     "egress"));
    return;
  }
  // image/providers-layout, and the link half of image/providers-complete.
  std::vector<Finding> complete;
  std::set<std::string> bad_dirs;
  for (const std::string& path : fs.under(kProvidersDir)) {
    if (std::any_of(bad_dirs.begin(), bad_dirs.end(), [&](const std::string& d) {
          return path.starts_with(d) && path.size() > d.size() && path[d.size()] == '/';
        })) {
      continue;
    }
    const std::string rel = relativeTo(path, kProvidersDir);
    const std::vector<std::string_view> parts = split(rel, '/');
    const Node& node = *fs.lstat(path);
    const std::string_view name = parts.back();
    std::string resolved;
    const Node* effective = &node;
    if (node.type == NodeType::kSymlink || node.type == NodeType::kHardlink) {
      effective = fs.stat(path, &resolved);
    }
    const bool is_dir = effective != nullptr && effective->type == NodeType::kDir;
    const bool is_file = effective != nullptr && effective->type == NodeType::kFile;
    bool layout_ok = true;
    std::string_view expect; // for links: what the position needs
    switch (parts.size()) {
    case 1:
    case 2:
    case 3: // HOST, NAMESPACE, TYPE
      layout_ok = node.type == NodeType::kDir || node.type == NodeType::kSymlink;
      expect = "a directory";
      break;
    case 4: // VERSION directory, a packed zip, or a .json index
      if (name.ends_with(".zip")) {
        layout_ok = isPackedName(name);
        expect = "a regular file";
      } else if (name.ends_with(".json")) {
        expect = "a regular file";
      } else {
        layout_ok = node.type == NodeType::kDir || node.type == NodeType::kSymlink;
        expect = "a directory";
      }
      break;
    case 5: // the OS_ARCH target directory of an unpacked provider
      layout_ok =
          isTargetName(name) && (node.type == NodeType::kDir || node.type == NodeType::kSymlink);
      expect = "a directory";
      break;
    default:
      break; // the provider's own files
    }
    if (!layout_ok) {
      out.push_back(imageFinding(
          "image/providers-layout", Severity::kError, path,
          strCat(path,
                 " is neither a packed provider "
                 "(HOST/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip or *.json) "
                 "nor part of an unpacked one (HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/)")));
      if (node.type == NodeType::kDir) {
        bad_dirs.insert(path);
      }
      continue;
    }
    if (node.type == NodeType::kSymlink && parts.size() <= 5) {
      if (effective == nullptr) {
        complete.push_back(imageFinding(
            "image/providers-complete", Severity::kError, path,
            strCat(path, " is a symlink to ", node.link, ", which does not exist in the image")));
      } else if ((expect == "a directory" && !is_dir) || (expect == "a regular file" && !is_file)) {
        complete.push_back(
            imageFinding("image/providers-complete", Severity::kError, path,
                         strCat(path, " is a symlink to ", node.link, ", which is not ", expect)));
      }
    }
  }
  // The required providers: root plus nested modules, implied ones included.
  if (in.module != nullptr) {
    const std::optional<std::string> runtime = label(*in.config, kLabelRuntime);
    std::vector<std::string> hosts;
    if (!runtime || *runtime == "terraform") {
      hosts.emplace_back("registry.terraform.io");
    }
    if (!runtime || *runtime == "tofu") {
      hosts.emplace_back("registry.opentofu.org");
    }
    if (hosts.empty()) { // an unknown runtime label: either registry
      hosts = {"registry.terraform.io", "registry.opentofu.org"};
    }
    std::map<std::string, std::vector<std::string>> wanted; // display -> candidate paths
    for (const auto& module : in.module->modules) {
      for (const RequiredProvider& rp : module->declarations().required_providers) {
        std::string source = absl::AsciiStrToLower(rp.source.empty() ? rp.name : rp.source);
        if ((rp.source.empty() && rp.name == "terraform") ||
            source.find("/builtin/") != std::string::npos || source.empty()) {
          continue;
        }
        std::vector<std::string_view> parts = split(source, '/');
        if (parts.size() == 1) {
          source = strCat("hashicorp/", source);
          parts = split(source, '/');
        }
        std::vector<std::string> candidates;
        if (parts.size() == 2) {
          for (const std::string& host : hosts) {
            candidates.push_back(strCat(host, "/", source));
          }
        } else if (parts.size() == 3) {
          candidates.push_back(source);
        } else {
          continue; // not a provider source address; the runtime reports it
        }
        wanted.emplace(parts.size() == 2 && hosts.size() == 1 ? candidates.front() : source,
                       std::move(candidates));
      }
    }
    const std::string want_target = target(in.platform);
    for (const auto& [display, candidates] : wanted) {
      bool found = false;
      for (const std::string& candidate : candidates) {
        const std::string dir = strCat(kProvidersDir, "/", candidate);
        const std::string type = candidate.substr(candidate.rfind('/') + 1);
        for (const std::string& path : fs.under(dir)) {
          const std::string rel = relativeTo(path, dir);
          const std::vector<std::string_view> parts = split(rel, '/');
          const Node* node = fs.stat(path);
          if (node == nullptr) {
            continue;
          }
          // A packed provider (<name>_<version>_<target>.zip) or an unpacked
          // one (<version>/<target>/).
          found = (parts.size() == 1 && node->type == NodeType::kFile && isPackedName(parts[0]) &&
                   parts[0].starts_with(strCat("terraform-provider-", type, "_")) &&
                   parts[0].ends_with(strCat("_", want_target, ".zip"))) ||
                  (parts.size() == 2 && parts[1] == want_target && node->type == NodeType::kDir);
          if (found) {
            break;
          }
        }
        if (found) {
          break;
        }
      }
      if (!found) {
        complete.push_back(imageFinding(
            "image/providers-complete", Severity::kError, std::string(kProvidersDir),
            strCat("provider ", display, " is required by the module but /captf/providers has no ",
                   want_target,
                   " package for it: init fails, because the mirror is the only "
                   "installation source")));
      }
    }
  }
  out.insert(out.end(), complete.begin(), complete.end());
}

void checkReservedPaths(const ImageCheckInput& in, std::vector<Finding>& out) {
  struct Reserved {
    std::string_view dir;
    std::string_view mount;
  };
  static constexpr std::array<Reserved, 4> kReserved = {{
      {"/captf/work", "an emptyDir"},
      {"/var/run/captf/credentials", "the identity credential files"},
      {"/captf/bin", "the runner binary"},
      {"/captf/config", "the per-run Secret"},
  }};
  for (const Reserved& r : kReserved) {
    std::size_t count = 0;
    for (const std::string& path : in.fs->under(r.dir)) {
      if (in.fs->lstat(path)->type != NodeType::kDir) {
        ++count;
      }
    }
    if (count > 0) {
      out.push_back(imageFinding(
          "image/reserved-paths", Severity::kError, std::string(r.dir),
          strCat(r.dir, " holds ", count, count == 1 ? " file or link" : " files or links",
                 ": the Job mounts ", r.mount, " there, so they are shadowed at run time")));
    }
  }
}

void checkLabels(const ImageCheckInput& in, std::vector<Finding>& out) {
  const oci::ImageConfig& config = *in.config;
  if (const auto role = label(config, kLabelRole); !role) {
    out.push_back(
        imageFinding("image/label-role", Severity::kInfo, "",
                     strCat("label io.captf.role is not set; set it to \"", in.role, "\"")));
  } else if (*role != in.role) {
    out.push_back(imageFinding("image/label-role", Severity::kError, "",
                               strCat("label io.captf.role is \"", *role,
                                      "\", but the image is checked as role ", in.role)));
  }
  if (const auto contract = label(config, kLabelContract); !contract) {
    out.push_back(imageFinding(
        "image/label-contract", Severity::kInfo, "",
        strCat("label io.captf.contract is not set; set it to \"", in.contract, "\"")));
  } else if (*contract != in.contract) {
    out.push_back(
        imageFinding("image/label-contract", Severity::kWarning, "",
                     strCat("label io.captf.contract is \"", *contract,
                            "\", but the image is checked against contract ", in.contract)));
  }
  const auto capacity = label(config, kLabelCapacity);
  const auto node_info = label(config, kLabelNodeInfo);
  if (in.role != "machine") {
    if (capacity || node_info) {
      out.push_back(
          imageFinding("image/label-capacity", Severity::kInfo, "",
                       strCat("labels io.captf.capacity and io.captf.node-info are read for "
                              "the machine role only; role ",
                              in.role, " ignores them")));
    }
    return;
  }
  if (!capacity && !node_info) {
    out.push_back(imageFinding("image/label-capacity", Severity::kInfo, "",
                               "labels io.captf.capacity and io.captf.node-info are not set: the "
                               "machine template reports no capacity, so the cluster autoscaler "
                               "cannot scale its node groups from zero"));
    return;
  }
  std::string why;
  if (capacity && !validCapacity(*capacity, why)) {
    out.push_back(
        imageFinding("image/label-capacity", Severity::kError, "",
                     strCat("label io.captf.capacity is invalid: ", why,
                            R"(; want a JSON object such as {"cpu":"4","memory":"16Gi"})")));
  }
  if (node_info && !validNodeInfo(*node_info, why)) {
    out.push_back(imageFinding(
        "image/label-capacity", Severity::kError, "",
        strCat("label io.captf.node-info is invalid: ", why,
               "; want a JSON object such as {\"architecture\":\"amd64\",\"operatingSystem\":"
               "\"linux\"}")));
  }
}

void checkUser(const ImageCheckInput& in, std::vector<Finding>& out) {
  const std::string& text = in.config->user;
  const ImageUser user = parseImageUser(text);
  if (user.kind == ImageUser::Kind::kRoot) {
    out.push_back(
        imageFinding("image/user-root", Severity::kWarning, "",
                     strCat("the image runs as root (config.User is \"", text,
                            "\"): the Pod Security Standards restricted profile requires a "
                            "non-root user; set USER 65532")));
    return;
  }
  if (user.kind == ImageUser::Kind::kName) {
    out.push_back(
        imageFinding("image/user-unresolved", Severity::kWarning, "",
                     strCat("config.User \"", text,
                            "\" is a name, which lint does not resolve to a uid: permission "
                            "checks are approximated and image/module-readable is skipped; "
                            "use a numeric USER such as 65532")));
    return;
  }
  // image/module-readable: files readable, directories traversable.
  const oci::ImageFs& fs = *in.fs;
  std::vector<std::string> denied;
  const auto visit = [&](const std::string& path) {
    const Node* node = fs.lstat(path);
    if (node == nullptr || node->implicit) {
      return;
    }
    // A directory needs search (x), a file read (r).
    if ((node->type == NodeType::kDir && !permits(*node, user, 1)) ||
        (node->type == NodeType::kFile && !permits(*node, user, 4))) {
      denied.push_back(path);
    }
  };
  for (std::string_view dir : {std::string_view("/captf"), kModuleDir, kProvidersDir}) {
    visit(std::string(dir));
  }
  for (std::string_view dir : {kModuleDir, kProvidersDir}) {
    for (const std::string& path : fs.under(dir)) {
      visit(path);
    }
  }
  if (denied.empty()) {
    return;
  }
  std::sort(denied.begin(), denied.end());
  std::string list;
  for (std::size_t i = 0; i < denied.size() && i < kMaxListedPaths; ++i) {
    strAppend(list, i == 0 ? "" : ", ", denied[i]);
  }
  if (denied.size() > kMaxListedPaths) {
    strAppend(list, " and ", denied.size() - kMaxListedPaths, " more");
  }
  out.push_back(imageFinding("image/module-readable", Severity::kWarning, denied.front(),
                             strCat(denied.size(), denied.size() == 1 ? " path is" : " paths are",
                                    " not readable (files) or traversable (directories) by user ",
                                    user.uid, ": ", list)));
}

void checkModuleLinks(const ImageCheckInput& in, std::vector<Finding>& out) {
  for (const oci::LinkProblem& p : in.link_problems) {
    out.push_back(imageFinding("image/module-link", Severity::kError, p.path,
                               strCat(p.path, " ", p.detail,
                                      ": only links to regular files or "
                                      "directories inside the module ship")));
  }
}

void checkEntrypoint(const ImageCheckInput& in, std::vector<Finding>& out) {
  const oci::ImageConfig& c = *in.config;
  if (c.entrypoint.empty() && c.cmd.empty()) {
    return;
  }
  std::string set;
  if (!c.entrypoint.empty()) {
    set = "Entrypoint";
  }
  if (!c.cmd.empty()) {
    strAppend(set, set.empty() ? "" : " and ", "Cmd");
  }
  out.push_back(
      imageFinding("image/entrypoint", Severity::kInfo, "",
                   strCat("the image sets ", set,
                          "; the Job replaces them with /captf/bin/runner run, so they are "
                          "never used")));
}

std::vector<Finding> runImageChecks(const ImageCheckInput& in) {
  std::vector<Finding> out;
  checkModulePresent(in, out);
  checkRuntime(in, out);
  checkProviders(in, out);
  checkReservedPaths(in, out);
  checkLabels(in, out);
  checkUser(in, out);
  checkModuleLinks(in, out);
  checkEntrypoint(in, out);
  return out;
}

std::optional<Finding> checkCapacityAcrossPlatforms(
    const std::vector<std::pair<oci::Platform, const oci::ImageConfig*>>& images) {
  if (images.size() < 2) {
    return std::nullopt;
  }
  const std::optional<std::string> first = label(*images.front().second, kLabelCapacity);
  for (std::size_t i = 1; i < images.size(); ++i) {
    const std::optional<std::string> other = label(*images[i].second, kLabelCapacity);
    if (other != first) {
      return imageFinding(
          "image/label-capacity", Severity::kWarning, "",
          strCat("label io.captf.capacity differs between platforms: ", images.front().first.str(),
                 " has ", first.value_or("none"), ", ", images[i].first.str(), " has ",
                 other.value_or("none"), "; a template reports one capacity for every platform"));
    }
  }
  return std::nullopt;
}

} // namespace captf::lint
