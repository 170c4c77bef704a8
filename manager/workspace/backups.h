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

// One backup: the Secrets of one `captf.io/state-backup-set`.
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
  // Every chunk 0..chunks-1 present exactly once, annotations agreeing.
  bool complete = false;
  // Secret names in chunk order (for a complete set; else as found).
  std::vector<std::string> secret_names{};
};

// Groups backup Secrets (those matching backupSelector(suffix); others are
// ignored) into sets, newest first (serial descending, then taken-at
// descending, then set id). A Secret with unparsable annotations forms an
// incomplete set of its own (so pruning can still remove it).
std::vector<BackupSet> listBackups(std::string_view suffix,
                                   const std::vector<nlohmann::json>& backup_secrets);

enum class BackupDecision {
  kTake,          // copy the state now (metric taken)
  kAlreadyTaken,  // a complete backup of this serial exists
  kDisabled,      // --state-backups=0
  kDeleting,      // never while the object is deleting
  kStateUnusable, // not kRead (encrypted, corrupt, inconsistent, over cap): skipped
  kNoState,
};

// docs/behaviour/state.md trigger: back up a serial never backed up before. "Observed" means
// a complete backup set of that serial exists (backups move with the
// object, status does not — docs/decisions/workspace-state.md). An
// incomplete set (a failed copy) does not count, so the copy is retried;
// write the Secrets with create-or-replace (or server-side apply) so the
// leftovers of the failed copy are overwritten.
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

// The backup Secrets `captf-state-backup-<suffix>-<serial>[-part-N]`, one per
// state chunk, data copied verbatim; labels state-backup=true,
// state-backup-suffix, managed=true, move=""; the nine annotations of docs/behaviour/keys.md on
// every chunk and the inputs hash on chunk 0; a non-blocking ownerReference
// to the object (never to the state). Preconditions: request.state is kRead,
// ref.uid set.
std::vector<nlohmann::json> backupSecrets(const BackupRequest& request);

// Names of backup Secrets to delete so that only the `keep` newest complete
// sets remain, plus incomplete sets older than the newest complete one.
// keep <= 0 prunes nothing (existing backups stay restorable).
std::vector<std::string> backupsToPrune(const std::vector<BackupSet>& sets, int keep);

// status.stateBackups: up to 16 complete sets, newest first. A set whose
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

// The newest complete backup named by the `captf.io/restore-state` value.
// Errors (NotFound, for RestoreJobSucceeded=False/RestoreBackupNotFound):
// the value is not a positive decimal serial, or no complete backup has it;
// the message names the value and the serials that exist.
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
