// The binaries the release tests build the artifacts from
// (test/release/CMakeLists.txt): the manager is the dev build's, which is
// dynamic, unless CAPTF_RELEASE_MANAGER_BINARY names a static one (the
// release-static preset's); the runner is the nested release-static build's
// (test/runner/CMakeLists.txt); tfcapi-lint the dev build's.
#pragma once

#include <string>
#include <vector>

#include "test/runner/e2e_support.h"

namespace captf::release {

// True when the manager is fully static, so the image holds no library.
inline constexpr bool kManagerIsStatic = CAPTF_RELEASE_MANAGER_STATIC != 0;

// The arguments scripts/release.sh, install.sh and quickstart.sh take for
// them. A dynamic manager goes into the image only with --dynamic-ok
// (scripts/image-rootfs.sh), its shared libraries with it.
inline std::vector<std::string> releaseBinaryArgs() {
  std::vector<std::string> args = {"--manager", CAPTF_RELEASE_MANAGER,
                                   "--runner",  CAPTF_RUNNER_STATIC,
                                   "--lint",    CAPTF_RELEASE_LINT};
  if (!kManagerIsStatic) {
    args.emplace_back("--dynamic-ok");
  }
  return args;
}

} // namespace captf::release
