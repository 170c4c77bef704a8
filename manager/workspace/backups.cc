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
  std::string set, lineage, taken_at, source_job, digest, inputs_hash;
  std::optional<std::string> data;
};

constexpr std::string_view kBackupDigestPrefix = "sha256:";
constexpr std::size_t kBackupDigestHex = 64;
constexpr std::size_t kBackupSetIdHex = 12;

// The name without a trailing "-part-<n>" (n a positive decimal): the base
// name every chunk of one backup set shares, under either naming.
std::string backupNameBase(std::string_view name) {
  constexpr std::string_view kPart = "-part-";
  const std::size_t at = name.rfind(kPart);
  if (at == std::string_view::npos) {
    return std::string(name);
  }
  const auto index = parseInt(name.substr(at + kPart.size()));
  return std::string(index && *index > 0 ? name.substr(0, at) : name);
}

// The digest of a backup: "sha256:" + hex SHA-256 of the payloads
// concatenated in chunk order. The writer (stateDigest) and the verifier
// both come here.
std::string backupDigestOf(const std::vector<std::string_view>& parts) {
  std::string all;
  for (std::string_view part : parts) {
    all += part;
  }
  return strCat(kBackupDigestPrefix, contract::sha256Hex(all));
}

// Why the chunks of one base name (sorted by chunk index) are not a complete
// set; "" when they are. Names Secrets and indexes only.
std::string incompleteBackupReason(std::string_view suffix, std::string_view base,
                                   const std::vector<BackupChunk>& chunks) {
  for (const BackupChunk& chunk : chunks) {
    if (!chunk.serial || !chunk.chunk || !chunk.chunks || chunk.set.empty() ||
        chunk.digest.empty()) {
      return strCat("Secret ", chunk.name, ": backup annotations missing or unreadable");
    }
  }
  const BackupChunk& first = chunks.front();
  const std::int64_t serial = first.serial.value_or(0);
  const std::int64_t count = first.chunks.value_or(0);
  for (const BackupChunk& chunk : chunks) {
    if (chunk.serial != first.serial || chunk.chunks != first.chunks || chunk.set != first.set ||
        chunk.digest != first.digest) {
      return strCat("Secrets ", first.name, " and ", chunk.name,
                    " disagree on the backup's serial, chunk count, set or digest");
    }
  }
  if (static_cast<std::size_t>(count) != chunks.size()) {
    return strCat(chunks.size(), " of ", count, " chunks present");
  }
  // Sets of this version are named for their set id, those of earlier
  // versions for their serial (docs/decisions/backup-identity.md).
  const bool legacy = base == legacyBackupSecretName(suffix, serial);
  if (!legacy && base != backupSecretName(suffix, first.set)) {
    return strCat("Secret ", first.name, " is not named for backup set ", first.set);
  }
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const BackupChunk& chunk = chunks[i];
    if (chunk.chunk != static_cast<std::int64_t>(i)) {
      return strCat("chunk ", i, " of ", chunks.size(), " missing or duplicated");
    }
    const std::string expected =
        legacy ? legacyBackupSecretName(suffix, serial, i) : backupSecretName(suffix, first.set, i);
    if (chunk.name != expected) {
      return strCat("Secret ", chunk.name, " is annotated as chunk ", i, " of ", expected);
    }
    if (!chunk.data) {
      return strCat("Secret ", chunk.name, " has no readable ", kStateDataKey);
    }
  }
  return {};
}

// Why a complete set is not the state it claims to be; "" when it is: the
// set id must be the one of its serial and digest, and the data must hash to
// the digest with the function the writer used (stateDigest).
std::string unverifiedBackupReason(const std::vector<BackupChunk>& chunks) {
  const BackupChunk& first = chunks.front();
  const std::int64_t serial = first.serial.value_or(0);
  if (backupSetId(serial, first.digest) != first.set) {
    return strCat("set id ", first.set, " is not the one of serial ", serial, " and digest ",
                  first.digest);
  }
  std::vector<std::string_view> data;
  data.reserve(chunks.size());
  for (const BackupChunk& chunk : chunks) {
    data.emplace_back(chunk.data ? std::string_view(*chunk.data) : std::string_view());
  }
  if (const std::string actual = backupDigestOf(data); actual != first.digest) {
    return strCat("digest mismatch: the chunks hash to ", actual, ", the set is annotated ",
                  first.digest);
  }
  return {};
}

} // namespace

std::string stateDigest(const std::vector<std::string>& chunks) {
  return backupDigestOf(std::vector<std::string_view>(chunks.begin(), chunks.end()));
}

std::string backupSetId(std::int64_t serial, std::string_view digest) {
  if (!digest.starts_with(kBackupDigestPrefix) ||
      digest.size() != kBackupDigestPrefix.size() + kBackupDigestHex) {
    return {};
  }
  return strCat(serial, "-", digest.substr(kBackupDigestPrefix.size(), kBackupSetIdHex));
}

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
  // By base name: the Secrets a set's writer named together. Grouping by the
  // set annotation instead would let a Secret of another name join a set.
  std::map<std::string, std::vector<BackupChunk>> by_base;
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
    chunk.set = text(api::kAnnotationStateBackupSet);
    chunk.lineage = text(api::kAnnotationStateBackupLineage);
    chunk.taken_at = text(api::kAnnotationStateBackupTakenAt);
    chunk.source_job = text(api::kAnnotationStateBackupSourceJob);
    chunk.digest = text(api::kAnnotationStateBackupDigest);
    chunk.inputs_hash = text(api::kAnnotationInputsHash);
    chunk.data = internal::secretData(secret, kStateDataKey);
    by_base[backupNameBase(chunk.name)].push_back(std::move(chunk));
  }

  std::vector<BackupSet> sets;
  for (auto& [base, chunks] : by_base) {
    std::sort(chunks.begin(), chunks.end(), [](const BackupChunk& a, const BackupChunk& b) {
      if (a.chunk.value_or(-1) != b.chunk.value_or(-1)) {
        return a.chunk.value_or(-1) < b.chunk.value_or(-1);
      }
      return a.name < b.name;
    });
    const BackupChunk& first = chunks.front();
    BackupSet set;
    set.serial = first.serial.value_or(0);
    set.set = first.set;
    set.digest = first.digest;
    set.taken_at = first.taken_at;
    for (const BackupChunk& chunk : chunks) {
      set.secret_names.push_back(chunk.name);
      set.bytes += chunk.data ? static_cast<std::int64_t>(chunk.data->size()) : 0;
    }
    set.problem = incompleteBackupReason(suffix, base, chunks);
    set.complete = set.problem.empty();
    if (set.complete) {
      set.problem = unverifiedBackupReason(chunks);
      set.verified = set.problem.empty();
      set.lineage = first.lineage;
      set.source_job = first.source_job;
      set.inputs_hash = first.inputs_hash;
      set.resources = first.resources.value_or(0);
    } else {
      std::sort(set.secret_names.begin(), set.secret_names.end());
    }
    sets.push_back(std::move(set));
  }
  std::sort(sets.begin(), sets.end(), [](const BackupSet& a, const BackupSet& b) {
    if (a.serial != b.serial) {
      return a.serial > b.serial;
    }
    if (a.taken_at != b.taken_at) {
      return a.taken_at > b.taken_at;
    }
    if (a.set != b.set) {
      return a.set > b.set;
    }
    return a.secret_names > b.secret_names;
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
  const std::string digest = stateDigest(state.chunks);
  const bool taken =
      std::any_of(existing.begin(), existing.end(), [&state, &digest](const BackupSet& s) {
        return s.verified && s.serial == state.summary.serial && s.digest == digest;
      });
  return taken ? BackupDecision::kAlreadyTaken : BackupDecision::kTake;
}

std::vector<json> backupSecrets(const BackupRequest& request) {
  const ReadState& state = *request.state;
  const std::string suffix = stateSuffix(request.ref);
  const std::string digest = stateDigest(state.chunks);
  const std::int64_t serial = state.summary.serial;
  const std::string set = backupSetId(serial, digest);
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
          {{"name", backupSecretName(suffix, set, i)},
           {"namespace", request.ref.ns},
           {"labels", std::move(labels)},
           {"annotations", std::move(annotations)},
           {"ownerReferences", json::array({ownerReference(request.ref)})}}},
         {"type", "Opaque"},
         {"data", {{std::string(kStateDataKey), contract::base64Encode(state.chunks[i])}}}});
  }
  return out;
}

bool sameBackupChunk(const json& existing, const json& wanted) {
  const auto same_label = [&](std::string_view key) {
    return internal::label(existing, key) == internal::label(wanted, key);
  };
  const auto same_annotation = [&](std::string_view key) {
    const auto value = internal::annotation(existing, key);
    return value && value == internal::annotation(wanted, key);
  };
  const auto data = internal::secretData(existing, kStateDataKey);
  return same_label(api::kLabelStateBackup) && same_label(api::kLabelStateBackupSuffix) &&
         same_annotation(api::kAnnotationStateBackupSerial) &&
         same_annotation(api::kAnnotationStateBackupSet) &&
         same_annotation(api::kAnnotationStateBackupChunk) &&
         same_annotation(api::kAnnotationStateBackupChunks) &&
         same_annotation(api::kAnnotationStateBackupDigest) && data &&
         data == internal::secretData(wanted, kStateDataKey);
}

std::vector<std::string> backupsToPrune(const std::vector<BackupSet>& sets, int keep) {
  std::vector<std::string> out;
  if (keep <= 0) {
    return out;
  }
  int kept = 0;
  std::optional<std::int64_t> newest_verified;
  for (const BackupSet& set : sets) {
    if (set.verified) {
      if (!newest_verified) {
        newest_verified = set.serial;
      }
      if (kept < keep) {
        ++kept;
        continue;
      }
      out.insert(out.end(), set.secret_names.begin(), set.secret_names.end());
    } else if (newest_verified && set.serial < *newest_verified) {
      out.insert(out.end(), set.secret_names.begin(), set.secret_names.end());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<api::StateBackup> statusBackups(const std::vector<BackupSet>& sets) {
  std::vector<api::StateBackup> out;
  for (const BackupSet& set : sets) {
    if (!set.verified || set.serial < 1 || out.size() == kMaxStatusBackups) {
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
      if (set.verified) {
        serials.insert(set.serial);
      }
    }
    return serials.empty() ? std::string("none")
                           : contract::strJoin(
                                 std::vector<std::int64_t>(serials.rbegin(), serials.rend()), ", ");
  };
  if (!serial || *serial < 1) {
    return absl::NotFoundError(strCat(api::kAnnotationRestoreState, "=\"", annotation_value,
                                      "\" is not a backup serial (a positive integer); verified "
                                      "backups: ",
                                      available()));
  }
  // Newest first, so of two verified sets of one serial (the state of a
  // serial written again after a restore) the newest taken wins.
  std::vector<std::string> unusable;
  for (const BackupSet& set : sets) {
    if (set.serial != *serial) {
      continue;
    }
    if (set.verified) {
      RestoreInputs inputs;
      inputs.serial = set.serial;
      inputs.chunk_secrets = set.secret_names;
      inputs.chunks = set.secret_names.size();
      inputs.resources = set.resources;
      inputs.inputs_hash = set.inputs_hash;
      return inputs;
    }
    unusable.push_back(strCat(set.secret_names.front(), ": ", set.problem));
  }
  if (!unusable.empty()) {
    return absl::NotFoundError(strCat("no verified state backup with serial ", *serial,
                                      ", not restored (", contract::strJoin(unusable, "; "),
                                      "); verified backups: ", available()));
  }
  return absl::NotFoundError(strCat("no verified state backup with serial ", *serial,
                                    "; verified backups: ", available()));
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
