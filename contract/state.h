#pragma once

// Reading state as the `kubernetes` backend stores it (docs/behaviour/state.md): the gzip
// stream of the state JSON, in the `tfstate` key of the base Secret
// `tfstate-default-<suffix>` and, for Terraform only, continued in
// `<base>-part-1`, `<base>-part-2`, ... (each at most 1 MiB; OpenTofu never
// splits). The chunks are concatenated in index order, then decompressed.
//
// One copy for both sides: the runner uses it for restore (a backup's chunks,
// copied verbatim from the state Secrets), the manager to read an object's
// state (manager/workspace/state.h). Moved here from runner/ so that they
// share it (contract/ depends on zlib for this).
//
// Errors classify what is wrong, by status code:
//   FailedPrecondition  inconsistent: a chunk set that is incomplete,
//                       duplicated or names a Secret that is not a chunk;
//   Unimplemented       encrypted: OpenTofu client-side encryption (an
//                       envelope with no `version`), which is not supported;
//   DataLoss            corrupt: not gzip, not JSON, not a state, an
//                       unsupported state version, or over the caps.
// Messages name chunks, sizes and fields, never state content.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace captf::contract {

inline constexpr std::size_t kMaxStateChunks = 32;
inline constexpr std::size_t kMaxStateBytes = std::size_t{64} * 1024 * 1024;
// The state format both runtimes write.
inline constexpr std::int64_t kSupportedStateVersion = 4;

enum class StateProblem { kNone, kInconsistent, kEncrypted, kCorrupt };

// The classification of an error from this header (kNone for OK or other
// errors).
StateProblem stateProblem(const absl::Status& status);

// One stored chunk: the Secret's name and the decoded bytes of its `tfstate`
// key.
struct NamedChunk {
  std::string name;
  std::string data;
};

// Orders the chunks of the state whose base Secret is `base_name`: the base
// is chunk 0, `<base>-part-<n>` chunk n (n >= 1, no leading zeros). Every
// index from 0 to the highest must be present once, and no other name.
absl::StatusOr<std::vector<std::string>> orderChunks(std::string_view base_name,
                                                     std::vector<NamedChunk> chunks);

// Concatenates the chunks (in order) and gunzips them: at most
// kMaxStateChunks chunks and kMaxStateBytes of JSON. The result is the state
// JSON text.
absl::StatusOr<std::string> assembleState(std::span<const std::string> ordered_chunks);

// What the controller and the runner need from a state, never resource
// attributes.
struct StateSummary {
  std::int64_t version = 0;
  std::string terraform_version;
  std::int64_t serial = 0;
  std::string lineage;
  // Resources in mode "managed", each counted once however many instances
  // it has (count/for_each); data sources are not counted.
  std::size_t managed_resources = 0;
  // The root module's outputs as stored: {name: {value, type, sensitive}}.
  nlohmann::json outputs = nlohmann::json::object();
};

absl::StatusOr<StateSummary> inspectState(std::string_view state_json);

} // namespace captf::contract
