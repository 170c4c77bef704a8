#include "manager/workspace/backups.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "contract/digest.h"
#include "contract/strings.h"
#include "manager/api/keys.h"
#include "manager/api/time.h"
#include "manager/workspace/json_util.h"

namespace captf::workspace {
namespace {

using contract::strCat;
using nlohmann::json;

constexpr std::size_t kMaxStatusBackups = 16;

std::optional<std::int64_t> parseInt(std::string_view text) {
  std::int64_t value = 0;
  if (text.empty() || (text.size() > 1 && text.front() == '0')) {
    return std::nullopt;
  }
  const auto parsed = std::from_chars(text.data(), text.data() + text.size(), value);
  if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::int64_t> intAnnotation(const json& object, std::string_view key) {
  const auto text = internal::annotation(object, key);
  return text ? parseInt(*text) : std::nullopt;
}

bool hasOwner(const json& object, std::string_view uid) {
  const json* owners = internal::at(object, "metadata.ownerReferences");
  if (owners == nullptr || !owners->is_array()) {
    return false;
  }
  return std::any_of(owners->begin(), owners->end(), [uid](const json& owner) {
    return owner.is_object() && owner.value("uid", "") == uid;
  });
}

struct BackupChunk {
  std::string name;
  std::optional<std::int64_t> serial, chunk, chunks, resources;
  std::string lineage, taken_at, source_job, digest, inputs_hash;
  std::optional<std::string> data;
};

} // namespace

std::vector<SecretPatch> adoptionPatches(const ObjectRef& ref,
                                         const std::vector<json>& state_secrets,
                                         std::string_view suffix, std::string_view inputs_hash) {
  std::vector<SecretPatch> patches;
  const std::string base = stateSecretName(suffix);
  for (const json& secret : state_secrets) {
    if (internal::label(secret, kBackendLabelSuffix) != std::string(suffix)) {
      continue;
    }
    const std::string name = internal::nameOf(secret);
    json patch = json::object();
    if (!hasOwner(secret, ref.uid)) {
      json owners = json::array();
      if (const json* existing = internal::at(secret, "metadata.ownerReferences");
          existing != nullptr && existing->is_array()) {
        owners = *existing;
      }
      owners.push_back(ownerReference(ref));
      patch["metadata"]["ownerReferences"] = std::move(owners);
    }
    if (name == base &&
        internal::annotation(secret, api::kAnnotationInputsHash) != std::string(inputs_hash)) {
      patch["metadata"]["annotations"][std::string(api::kAnnotationInputsHash)] = inputs_hash;
    }
    if (patch.empty()) {
      continue;
    }
    patch["metadata"]["resourceVersion"] =
        internal::stringAt(secret, "metadata.resourceVersion").value_or("");
    patches.push_back({name, std::move(patch)});
  }
  std::sort(patches.begin(), patches.end(),
            [](const SecretPatch& a, const SecretPatch& b) { return a.name < b.name; });
  return patches;
}

std::vector<BackupSet> listBackups(std::string_view suffix,
                                   const std::vector<json>& backup_secrets) {
  std::map<std::string, std::vector<BackupChunk>> by_set;
  for (const json& secret : backup_secrets) {
    if (internal::label(secret, api::kLabelStateBackup) != "true" ||
        internal::label(secret, api::kLabelStateBackupSuffix) != std::string(suffix)) {
      continue;
    }
    BackupChunk chunk;
    chunk.name = internal::nameOf(secret);
    chunk.serial = intAnnotation(secret, api::kAnnotationStateBackupSerial);
    chunk.chunk = intAnnotation(secret, api::kAnnotationStateBackupChunk);
    chunk.chunks = intAnnotation(secret, api::kAnnotationStateBackupChunks);
    chunk.resources = intAnnotation(secret, api::kAnnotationStateBackupResources);
    const auto text = [&secret](std::string_view key) {
      return internal::annotation(secret, key).value_or("");
    };
    chunk.lineage = text(api::kAnnotationStateBackupLineage);
    chunk.taken_at = text(api::kAnnotationStateBackupTakenAt);
    chunk.source_job = text(api::kAnnotationStateBackupSourceJob);
    chunk.digest = text(api::kAnnotationStateBackupDigest);
    chunk.inputs_hash = text(api::kAnnotationInputsHash);
    chunk.data = internal::secretData(secret, kStateDataKey);
    std::string set = text(api::kAnnotationStateBackupSet);
    if (set.empty() || !chunk.serial || !chunk.chunk || !chunk.chunks) {
      // Unreadable: a set of its own, incomplete, so that pruning can remove it.
      set = strCat("\x01", chunk.name);
    }
    by_set[set].push_back(std::move(chunk));
  }

  std::vector<BackupSet> sets;
  for (auto& [set_id, chunks] : by_set) {
    BackupSet set;
    set.set = set_id.starts_with('\x01') ? std::string() : set_id;
    const BackupChunk& first = chunks.front();
    set.serial = first.serial.value_or(0);
    for (const BackupChunk& chunk : chunks) {
      set.secret_names.push_back(chunk.name);
      set.bytes += chunk.data ? static_cast<std::int64_t>(chunk.data->size()) : 0;
    }
    std::sort(chunks.begin(), chunks.end(), [](const BackupChunk& a, const BackupChunk& b) {
      return a.chunk.value_or(-1) < b.chunk.value_or(-1);
    });
    bool complete = !set.set.empty() && first.chunks &&
                    static_cast<std::size_t>(*first.chunks) == chunks.size();
    for (std::size_t i = 0; complete && i < chunks.size(); ++i) {
      const BackupChunk& chunk = chunks[i];
      complete = chunk.chunk == static_cast<std::int64_t>(i) && chunk.serial == first.serial &&
                 chunk.chunks == first.chunks && chunk.data.has_value() &&
                 chunk.name == backupSecretName(suffix, set.serial, i);
    }
    if (complete) {
      const BackupChunk& zero = chunks.front();
      set.secret_names.clear();
      for (const BackupChunk& chunk : chunks) {
        set.secret_names.push_back(chunk.name);
      }
      set.lineage = zero.lineage;
      set.taken_at = zero.taken_at;
      set.source_job = zero.source_job;
      set.digest = zero.digest;
      set.inputs_hash = zero.inputs_hash;
      set.resources = zero.resources.value_or(0);
    } else {
      std::sort(set.secret_names.begin(), set.secret_names.end());
      set.taken_at = first.taken_at;
    }
    set.complete = complete;
    sets.push_back(std::move(set));
  }
  std::sort(sets.begin(), sets.end(), [](const BackupSet& a, const BackupSet& b) {
    if (a.serial != b.serial) {
      return a.serial > b.serial;
    }
    if (a.taken_at != b.taken_at) {
      return a.taken_at > b.taken_at;
    }
    return a.set > b.set;
  });
  return sets;
}

BackupDecision decideBackup(const ReadState& state, const std::vector<BackupSet>& existing,
                            int keep, bool deleting) {
  if (deleting) {
    return BackupDecision::kDeleting;
  }
  if (keep <= 0) {
    return BackupDecision::kDisabled;
  }
  if (state.status == StateStatus::kNotFound) {
    return BackupDecision::kNoState;
  }
  if (state.status != StateStatus::kRead) {
    return BackupDecision::kStateUnusable;
  }
  const bool taken = std::any_of(existing.begin(), existing.end(), [&state](const BackupSet& s) {
    return s.serial == state.summary.serial && s.complete;
  });
  return taken ? BackupDecision::kAlreadyTaken : BackupDecision::kTake;
}

std::vector<json> backupSecrets(const BackupRequest& request) {
  const ReadState& state = *request.state;
  const std::string suffix = stateSuffix(request.ref);
  std::string all;
  for (const std::string& chunk : state.chunks) {
    all += chunk;
  }
  const std::string digest = strCat("sha256:", contract::sha256Hex(all));
  const std::string set = strCat(state.summary.serial, "-", digest.substr(7, 12));
  const std::int64_t serial = state.summary.serial;
  std::vector<json> out;
  for (std::size_t i = 0; i < state.chunks.size(); ++i) {
    json labels = {{std::string(api::kLabelStateBackup), "true"},
                   {std::string(api::kLabelStateBackupSuffix), suffix},
                   {std::string(api::kLabelManaged), "true"},
                   {std::string(api::kLabelClusterctlMove), ""},
                   {std::string(api::kLabelOwnerKind), kindOf(request.ref)},
                   {std::string(api::kLabelOwnerName), labelValue(request.ref.name)}};
    if (!request.ref.cluster_name.empty()) {
      labels[std::string(api::kLabelClusterName)] = labelValue(request.ref.cluster_name);
    }
    json annotations = {
        {std::string(api::kAnnotationStateBackupSerial), std::to_string(serial)},
        {std::string(api::kAnnotationStateBackupLineage), state.summary.lineage},
        {std::string(api::kAnnotationStateBackupTakenAt), request.taken_at},
        {std::string(api::kAnnotationStateBackupSourceJob), request.source_job},
        {std::string(api::kAnnotationStateBackupDigest), digest},
        {std::string(api::kAnnotationStateBackupResources),
         std::to_string(state.summary.managed_resources)},
        {std::string(api::kAnnotationStateBackupSet), set},
        {std::string(api::kAnnotationStateBackupChunk), std::to_string(i)},
        {std::string(api::kAnnotationStateBackupChunks), std::to_string(state.chunks.size())},
    };
    if (i == 0 && !state.inputs_hash.empty()) {
      annotations[std::string(api::kAnnotationInputsHash)] = state.inputs_hash;
    }
    out.push_back(
        {{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata",
          {{"name", backupSecretName(suffix, serial, i)},
           {"namespace", request.ref.ns},
           {"labels", std::move(labels)},
           {"annotations", std::move(annotations)},
           {"ownerReferences", json::array({ownerReference(request.ref)})}}},
         {"type", "Opaque"},
         {"data", {{std::string(kStateDataKey), contract::base64Encode(state.chunks[i])}}}});
  }
  return out;
}

std::vector<std::string> backupsToPrune(const std::vector<BackupSet>& sets, int keep) {
  std::vector<std::string> out;
  if (keep <= 0) {
    return out;
  }
  int kept = 0;
  std::optional<std::int64_t> newest_complete;
  for (const BackupSet& set : sets) {
    if (set.complete) {
      if (!newest_complete) {
        newest_complete = set.serial;
      }
      if (kept < keep) {
        ++kept;
        continue;
      }
      out.insert(out.end(), set.secret_names.begin(), set.secret_names.end());
    } else if (newest_complete && set.serial < *newest_complete) {
      out.insert(out.end(), set.secret_names.begin(), set.secret_names.end());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<api::StateBackup> statusBackups(const std::vector<BackupSet>& sets) {
  std::vector<api::StateBackup> out;
  for (const BackupSet& set : sets) {
    if (!set.complete || set.serial < 1 || out.size() == kMaxStatusBackups) {
      continue;
    }
    api::StateBackup backup;
    backup.serial = set.serial;
    if (auto time = api::parseTime(set.taken_at); time.ok()) {
      backup.taken_at = *time;
    }
    backup.bytes = std::max<std::int64_t>(set.bytes, 1);
    out.push_back(backup);
  }
  return out;
}

absl::StatusOr<RestoreInputs> findRestoreBackup(std::string_view annotation_value,
                                                const std::vector<BackupSet>& sets) {
  const auto serial = parseInt(annotation_value);
  const auto available = [&sets] {
    std::set<std::int64_t> serials;
    for (const BackupSet& set : sets) {
      if (set.complete) {
        serials.insert(set.serial);
      }
    }
    return serials.empty() ? std::string("none")
                           : contract::strJoin(
                                 std::vector<std::int64_t>(serials.rbegin(), serials.rend()), ", ");
  };
  if (!serial || *serial < 1) {
    return absl::NotFoundError(strCat(api::kAnnotationRestoreState, "=\"", annotation_value,
                                      "\" is not a backup serial (a positive integer); complete "
                                      "backups: ",
                                      available()));
  }
  for (const BackupSet& set : sets) {
    if (set.complete && set.serial == *serial) {
      RestoreInputs inputs;
      inputs.serial = set.serial;
      inputs.chunk_secrets = set.secret_names;
      inputs.chunks = set.secret_names.size();
      inputs.resources = set.resources;
      inputs.inputs_hash = set.inputs_hash;
      return inputs;
    }
  }
  return absl::NotFoundError(strCat("no complete state backup with serial ", *serial,
                                    "; complete backups: ", available()));
}

StateCleanup stateCleanup(const ObjectRef& ref,
                          const std::vector<std::string>& state_secret_names) {
  const std::string suffix = stateSuffix(ref);
  StateCleanup cleanup;
  std::set<std::string> secrets(state_secret_names.begin(), state_secret_names.end());
  secrets.insert(stateSecretName(suffix));
  secrets.insert(durableInputsSecretName(ref));
  cleanup.secrets.assign(secrets.begin(), secrets.end());
  cleanup.leases = {lockLeaseName(suffix), runLeaseName(suffix)};
  return cleanup;
}

} // namespace captf::workspace
