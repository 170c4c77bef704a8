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
// Messages name chunks, sizes, byte offsets and fields, never state content.
//
// State is untrusted input (whoever can write Secrets in the namespace can
// write it), so reading it is bounded (docs/behaviour/state.md, "Reading
// state"; docs/decisions/workspace-state.md, "Bounded reading"): the JSON is
// read as a stream of tokens, never as a tree; only the outputs are kept as
// values, and a state over any limit below is corrupt. Resource attributes
// are scanned past, never stored.

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
// The decompressed state JSON.
inline constexpr std::size_t kMaxStateBytes = std::size_t{64} * 1024 * 1024;
// Containers open at once anywhere in the state, the root object included.
inline constexpr std::size_t kMaxStateDepth = 256;
// JSON values kept from the root module's outputs: every object, array,
// string, number, boolean and null under `outputs` (the outputs object
// included) counts once; object keys do not.
inline constexpr std::size_t kMaxStateOutputValues = 262144;
// The JSON reader holds a whole token while it reads it, and the bytes that
// follow it until the next one; on a syntax error it copies them into its
// message a few times over. One string (quotes and escapes included),
// number or literal:
inline constexpr std::size_t kMaxStateTokenBytes = std::size_t{8} * 1024 * 1024;
// Whitespace and punctuation ({}[],:) between two tokens:
inline constexpr std::size_t kMaxStateGapBytes = std::size_t{1} * 1024 * 1024;

// The limits above, together; tests pass smaller ones.
struct StateLimits {
  std::size_t bytes = kMaxStateBytes;
  std::size_t depth = kMaxStateDepth;
  std::size_t output_values = kMaxStateOutputValues;
  std::size_t token_bytes = kMaxStateTokenBytes;
  std::size_t gap_bytes = kMaxStateGapBytes;
};

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
// kMaxStateChunks chunks and `limits.bytes` of JSON. The result is the state
// JSON text (the runner's restore writes it to a file).
absl::StatusOr<std::string> assembleState(std::span<const std::string> ordered_chunks,
                                          const StateLimits& limits = {});

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

// Summarizes state JSON text: the summary, or why it is corrupt or
// encrypted. Duplicate keys keep the last value.
absl::StatusOr<StateSummary> inspectState(std::string_view state_json,
                                          const StateLimits& limits = {});

// assembleState and inspectState in one pass, without the JSON text: the
// chunks are gunzipped piece by piece into the summary's reader, so memory
// does not grow with the size of the state, only with the outputs kept and
// the longest token. The same errors as the two steps; when the stream and
// the JSON both have a problem, the one met first is reported.
absl::StatusOr<StateSummary> summarizeState(std::span<const std::string> ordered_chunks,
                                            const StateLimits& limits = {});

} // namespace captf::contract
