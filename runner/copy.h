#pragma once

// `runner copy DEST`: the init container puts the runner into the Job's
// /captf/bin emptyDir, from which the module image's container runs it.

#include <string>

#include "absl/status/status.h"

namespace captf::runner {

// Copies the file `source` to `destination` atomically: the bytes go to a
// temporary file in the destination's directory, which is flushed, given
// mode 0755 (whatever the umask) and renamed over `destination`. A reader
// therefore sees either no file or the whole executable. On error nothing
// is left behind.
absl::Status copyExecutable(const std::string& source, const std::string& destination);

// The path of the running executable ("/proc/self/exe").
inline constexpr char kSelfExecutable[] = "/proc/self/exe";

} // namespace captf::runner
