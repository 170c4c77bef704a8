#pragma once

// The string bridge of contract/strings.h under the names the client runtime
// and the controllers use (kube::av, kube::sv, kube::str, kube::msg). One
// implementation: docs/architecture.md lets every folder include that
// header-only file.

#include "contract/strings.h"

namespace captf::kube {

using contract::av;
using contract::msg;
using contract::str;
using contract::sv;

} // namespace captf::kube
