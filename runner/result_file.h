#pragma once

// The result document the runner leaves in its termination message: the
// contract's RunResult encoding (contract/result.h), plus the outputs report
// (runner/outputs.h) as an extra top-level "outputs" member when it fits.
//
// The "outputs" member is interim: RunResult has no field for it yet, and
// contract::decodeResult ignores unknown members, so a manager reading the
// document today loses nothing. It goes in only into the space the encoded
// RunResult leaves under the 4096-byte cap, so it can never displace a
// field the contract keeps; its values go first, then its lists, then all of
// it. See docs/decisions/runner-outputs-in-result.md.

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "captf/runner/v1alpha1/result.pb.h"
#include "runner/outputs.h"

namespace captf::runner {

// Never fails; never longer than contract::kMaxResultBytes.
std::string encodeResultDocument(const captf::runner::v1alpha1::RunResult& result,
                                 const std::optional<OutputsReport>& outputs);

// Writes `document` to `path` (the termination-message file: truncated and
// rewritten in place, since it may be a bind mount that cannot be replaced).
absl::Status writeResultDocument(const std::string& path, std::string_view document);

} // namespace captf::runner
