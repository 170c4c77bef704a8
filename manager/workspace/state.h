#pragma once

// Reading an object's state from its Secrets (docs/behaviour/state.md) and classifying
// what was found into the StateReadable condition (docs/reference/conditions.md), the
// `captf_state_read_errors_total` reason and the events of docs/reference/events.md.
//
// The chunk assembly, caps (32 chunks, 64 MiB decompressed, nesting and
// outputs budgets), gunzip and the state v4 subset are contract/state.h,
// shared with the runner; this header
// adds what the manager needs around them: picking the object's chunks out
// of the Secrets a label query returned, the base Secret's inputs hash,
// compressed size, and the "lost" rule.
//
// Never reads resource attributes; never logs or returns outputs anywhere
// but in ReadState::summary (which callers must not log either).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/state.h"
#include "manager/workspace/kind_traits.h"

namespace captf::workspace {

enum class StateStatus {
  kNotFound,     // no state Secret at all
  kRead,         // read and summarized
  kInconsistent, // chunk set incomplete/duplicated/unexpected, or base lacks `tfstate`
  kEncrypted,    // OpenTofu client-side encryption envelope
  kCorrupt,      // not gzip, not JSON, not state v4, over the caps
};

struct ReadState {
  StateStatus status = StateStatus::kNotFound;
  // For the error statuses: what is wrong, naming the Secret(s) and the
  // reason (sizes, chunk indexes, field names), never state content.
  std::string message{};
  // kRead only.
  contract::StateSummary summary{};
  // The base Secret's `captf.io/inputs-hash` annotation ("" when absent).
  // Set whenever the base Secret exists, even when the state is unreadable.
  std::string inputs_hash{};
  // Sum of the decoded `tfstate` sizes over every chunk (captf_state_bytes,
  // backup `bytes`). Set whenever chunks were found.
  std::int64_t compressed_bytes = 0;
  // Names of the chunk Secrets found, in chunk order when they could be
  // ordered, else as given. Adoption, backup and cleanup work on these.
  std::vector<std::string> secret_names{};
  // The ordered chunk payloads (decoded `tfstate` bytes), kRead only; what a
  // backup copies verbatim.
  std::vector<std::string> chunks{};
};

// Reads the state of `suffix` from `secrets`: the Secrets of the object's
// namespace carrying `tfstateSecretSuffix=<suffix>` (from the cache or a
// list; other Secrets in the list are ignored, backup Secrets included).
// Each Secret is a JSON object as the API server returns it (`data` values
// base64). Never fails: every problem is a status with a message.
//
// Inconsistent: a Secret of the suffix whose name is neither the base nor
// `<base>-part-<n>`, a missing or duplicate chunk, a base Secret without a
// `tfstate` key, undecodable base64. Corrupt: more than 32 chunks, gzip or
// JSON errors, over 64 MiB, nested deeper than 256 levels, outputs over
// their budget, no/unsupported `version`. Encrypted: an envelope without
// `version`. The state JSON is streamed, never held whole
// (contract::summarizeState).
ReadState readState(std::string_view suffix, const std::vector<nlohmann::json>& secrets);

// What StateReadable says about a read, with the "lost" rule applied.
enum class StateVerdict {
  kNotFound, // Unknown/StateNotFound: normal for a new object; first apply may run
  kRead,     // True/StateRead
  kInconsistent,
  kEncrypted,
  kCorrupt,
  kLost,   // provisioned and no state, or provisioned immutable kind without an inputs hash
  kLocked, // set by the caller from the lock check (locks.h), not by classifyState
};

enum class Provisioned { kNo, kYes };

// docs/behaviour/state.md "lost": `provisioned` is status.initialization.provisioned (latched).
// A provisioned object without state is lost; a provisioned object of a kind with
// immutable inputs (TerraformMachine) whose state has no inputs hash is lost. Otherwise the
// status of `read` maps one to one.
StateVerdict classifyState(const ReadState& read, const KindTraits& traits,
                           Provisioned provisioned);

// StateReadable reason: "StateNotFound", "StateRead", "StateInconsistent",
// "StateEncrypted", "StateCorrupt", "StateLost", "StateLocked".
std::string_view stateReason(StateVerdict verdict);

// captf_state_read_errors_total{reason}: "inconsistent", "encrypted",
// "corrupt", "lost", "locked"; "" for kNotFound and kRead (not an error).
std::string_view stateMetricReason(StateVerdict verdict);

// Event reason for an error verdict: "StateUnreadable" (inconsistent,
// encrypted, corrupt), "StateLost", "StateLocked"; "" otherwise.
std::string_view stateEventReason(StateVerdict verdict);

// Whether a plan/apply/drift/refresh Job may run (docs/behaviour/lifecycle.md: not while
// StateReadable is False). True for kNotFound and kRead.
bool stateAllowsJobs(StateVerdict verdict);

// The condition message for a verdict: for errors, the read's message with
// the Secret named ("state Secret tfstate-default-<suffix>: ..."); for kLost
// what is missing and that no Job runs until restored (docs/behaviour/state.md#restore annotation).
std::string stateMessage(StateVerdict verdict, const ReadState& read, std::string_view suffix);

} // namespace captf::workspace
