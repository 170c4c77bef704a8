#pragma once

// State adoption, backups, restore inputs (docs/behaviour/state.md) and what
// is deleted on deletion (docs/behaviour/state.md). Pure: manifests, patches and selections;
// the caller writes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "manager/api/workspace.h"
#include "manager/workspace/names.h"
#include "manager/workspace/state.h"

namespace captf::workspace {

// ---- adoption (docs/behaviour/state.md) --------------------------------------------------------

struct SecretPatch {
  std::string name{};
  // A JSON merge patch (application/merge-patch+json). It carries the
  // Secret's resourceVersion, so a concurrent write fails with Conflict
  // instead of being overwritten.
  nlohmann::json patch{};
};

// The patches that adopt the state: a non-blocking ownerReference to the
// object on every chunk Secret (appended to the Secret's own list), and
// `captf.io/inputs-hash` = `inputs_hash` on the base Secret. `chunks` are
// the state Secrets as read (any order; only those named by `read`'s
// secret_names are patched). Secrets already adopted with this hash get no
// patch, so an empty result means "nothing to do". Preconditions: ref.uid
// set, inputs_hash non-empty.
std::vector<SecretPatch> adoptionPatches(const ObjectRef& ref,
                                         const std::vector<nlohmann::json>& state_secrets,
                                         std::string_view suffix, std::string_view inputs_hash);

// ---- backups (docs/behaviour/state.md) ---------------------------------------------------------

// "sha256:" + hex SHA-256 of the concatenated chunk payloads (the decoded
// `tfstate` bytes, compressed, in chunk order): the
// `captf.io/state-backup-digest` a backup is written with, and what its
// chunks must hash to when it is listed (docs/decisions/backup-identity.md).
std::string stateDigest(const std::vector<std::string>& chunks);

// "<serial>-<first 12 hex of the digest>", the `captf.io/state-backup-set`
// id and the name of the set's Secrets (backupSecretName). "" when `digest`
// is not "sha256:" + 64 hex characters.
std::string backupSetId(std::int64_t serial, std::string_view digest);

// One backup: the Secrets of one base name (`captf-state-backup-<suffix>-<set>`,
// or the legacy `captf-state-backup-<suffix>-<serial>`) and its `-part-<n>`s.
struct BackupSet {
  std::int64_t serial = 0;
  std::string set{};
  std::string lineage{};
  std::string taken_at{}; // RFC 3339, as annotated
  std::string source_job{};
  std::string digest{};
  std::string inputs_hash{}; // from chunk 0
  std::int64_t resources = 0;
  // Sum of the decoded `tfstate` sizes.
  std::int64_t bytes = 0;
  // Every chunk 0..chunks-1 present exactly once, each named for its set and
  // index, with data, all chunks agreeing on serial, chunk count, set and
  // digest.
  bool complete = false;
  // Complete, the set id is the one of its serial and digest, and the
  // chunks' data hash (stateDigest) to that digest: the backup is the state
  // it claims to be. Only a verified set counts as taken, is listed in
  // status, is kept by retention and can be restored.
  bool verified = false;
  // Why the set is not verified ("" when it is): chunk indexes, Secret
  // names, digests; never content.
  std::string problem{};
  // Secret names in chunk order (for a complete set; else sorted).
  std::vector<std::string> secret_names{};
};

// Groups backup Secrets (those matching backupSelector(suffix); others are
// ignored) into sets by base name and verifies each one, newest first
// (serial descending, then taken-at descending, then set id). Sets written by
// earlier versions under the serial-only names are read the same way. A
// Secret whose annotations do not parse makes its set unverified (so pruning
// can still remove it). Hashes the data of every set.
std::vector<BackupSet> listBackups(std::string_view suffix,
                                   const std::vector<nlohmann::json>& backup_secrets);

enum class BackupDecision {
  kTake,          // copy the state now (metric taken)
  kAlreadyTaken,  // a verified backup of this serial and digest exists
  kDisabled,      // --state-backups=0
  kDeleting,      // never while the object is deleting
  kStateUnusable, // not kRead (encrypted, corrupt, inconsistent, over cap): skipped
  kNoState,
};

// docs/behaviour/state.md trigger: back up a state never backed up before. "Observed" means
// a verified backup set of that serial *and digest* exists (backups move
// with the object, status does not — docs/decisions/workspace-state.md). A
// set of the same serial with other content does not count: after a
// restore to serial S the applies write S+1… again with new content, and
// those states must be backed up too (docs/decisions/backup-identity.md). An
// incomplete or unverified set (a failed copy) does not count either, so
// the copy is retried.
BackupDecision decideBackup(const ReadState& state, const std::vector<BackupSet>& existing,
                            int keep, bool deleting);

struct BackupRequest {
  ObjectRef ref{};
  // Must be StateStatus::kRead.
  const ReadState* state = nullptr;
  // RFC 3339 (captf.io/state-backup-taken-at).
  std::string taken_at{};
  // The Job whose run produced the state ("" when unknown).
  std::string source_job{};
};

// The backup Secrets `captf-state-backup-<suffix>-<set>[-part-N]`, one per
// state chunk, data copied verbatim; labels state-backup=true,
// state-backup-suffix, managed=true, move=""; the nine annotations of docs/behaviour/keys.md on
// every chunk and the inputs hash on chunk 0; a non-blocking ownerReference
// to the object (never to the state). Preconditions: request.state is kRead,
// ref.uid set.
std::vector<nlohmann::json> backupSecrets(const BackupRequest& request);

// Whether `existing` (the Secret found when creating `wanted`, one of
// backupSecrets(), returned AlreadyExists) is the same backup chunk: a backup
// Secret of the same suffix with the same set id, chunk index and digest and
// the same `tfstate` data. Then it is the leftover of an earlier copy of
// this backup (taken-at and source Job may differ) and the copy goes on;
// anything else is another content under this name and must never count as
// taken.
bool sameBackupChunk(const nlohmann::json& existing, const nlohmann::json& wanted);

// Names of backup Secrets to delete so that only the `keep` newest verified
// sets remain, plus unverified sets older than the newest verified one.
// keep <= 0 prunes nothing (existing backups stay restorable).
std::vector<std::string> backupsToPrune(const std::vector<BackupSet>& sets, int keep);

// status.stateBackups: up to 16 verified sets, newest first. A set whose
// taken-at does not parse is listed with the epoch.
std::vector<api::StateBackup> statusBackups(const std::vector<BackupSet>& sets);

// ---- restore (docs/behaviour/state.md) ---------------------------------------------------------

struct RestoreInputs {
  std::int64_t serial = 0;
  // Backup Secret names in chunk order: project each into the config
  // volume with items [{key: tfstate, path: restore/<i>}].
  std::vector<std::string> chunk_secrets{};
  // --restore-chunks.
  std::size_t chunks = 0;
  // --restore-resources.
  std::int64_t resources = 0;
  // Adopted after the restore succeeds (docs/behaviour/state.md#adoption).
  std::string inputs_hash{};
};

// The newest verified backup (taken-at) with the serial the
// `captf.io/restore-state` value names. Errors (NotFound, for
// RestoreJobSucceeded=False/RestoreBackupNotFound): the value is not a
// positive decimal serial, or no verified backup has it; the message names
// the value, why each set of that serial cannot be restored (incomplete,
// digest mismatch), and the serials of the verified backups.
absl::StatusOr<RestoreInputs> findRestoreBackup(std::string_view annotation_value,
                                                const std::vector<BackupSet>& sets);

// ---- deletion (docs/behaviour/state.md) --------------------------------------------------------

struct StateCleanup {
  // State chunk Secrets and the durable inputs Secret.
  std::vector<std::string> secrets{};
  // The backend's lock Lease and the run Lease.
  std::vector<std::string> leases{};
};

// What the final cleanup deletes (after destroy success, or at once for a
// never-applied object). Backups are not included: they are GC'd through
// their ownerReference after the finalizer goes. `state_secret_names`: the
// chunk names found (ReadState::secret_names); the base name is always
// included even if not found (deleting a missing Secret is a no-op).
StateCleanup stateCleanup(const ObjectRef& ref, const std::vector<std::string>& state_secret_names);

} // namespace captf::workspace
