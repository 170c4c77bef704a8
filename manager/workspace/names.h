#pragma once

// Names and labels derived from a workload object's identity (docs/behaviour/state.md#naming,
// docs/behaviour/state.md, inputs.md, keys.md): the state suffix and everything named after it, the
// durable and per-run inputs Secrets, the owner labels and the labels the
// `kubernetes` backend is configured with. Pure functions, no I/O.
//
// Nothing here uses the object's UID, so names survive `clusterctl move`
// (docs/decisions/workspace-names.md).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/roles.h"

namespace captf::workspace {

// The identity of one workload object (TerraformCluster, TerraformMachine or
// TerraformMachinePool) as everything in this folder needs it.
struct ObjectRef {
  contract::Role role = contract::Role::kCluster;
  std::string ns{};
  std::string name{};
  // Only for owner references; never hashed or named after.
  std::string uid{};
  // The owning CAPI Cluster's name (the object's `cluster.x-k8s.io/cluster-name`
  // label); may be empty while unknown.
  std::string cluster_name{};
};

// "TerraformCluster" | "TerraformMachine" | "TerraformMachinePool".
std::string_view kindOf(const ObjectRef& ref);

// docs/behaviour/state.md#naming: hex(sha256("<namespace>/<Kind>/<name>"))[0:16] + "-" + kind code
// ("c", "m", "mp"), e.g. "3f2a9c0d1e4b5a6f-m". Never ends in "-<digits>".
std::string stateSuffix(const ObjectRef& ref);

// The backend's workspace; the only one CAPTF uses.
inline constexpr std::string_view kStateWorkspace = "default";
// Data key of every state (and backup) chunk.
inline constexpr std::string_view kStateDataKey = "tfstate";
// Backend-owned labels (docs/behaviour/keys.md#backend-owned-keys).
inline constexpr std::string_view kBackendLabelState = "tfstate";
inline constexpr std::string_view kBackendLabelSuffix = "tfstateSecretSuffix";
inline constexpr std::string_view kBackendLabelWorkspace = "tfstateWorkspace";

// "tfstate-default-<suffix>" (chunk 0).
std::string stateSecretName(std::string_view suffix);
// "tfstate-default-<suffix>-part-<index>"; index 0 is the base name.
std::string stateChunkName(std::string_view suffix, std::size_t index);
// "lock-tfstate-default-<suffix>" (the backend's lock Lease).
std::string lockLeaseName(std::string_view suffix);
// "captf-run-<suffix>" (the per-object run Lease, docs/behaviour/lifecycle.md).
std::string runLeaseName(std::string_view suffix);
// "captf-state-backup-<suffix>-<set>", and "-part-<index>" for index > 0,
// where <set> is the backup's set id "<serial>-<first 12 hex of its digest>"
// (backupSetId in backups.h): two backups of one serial with different
// content never share a name (docs/decisions/backup-identity.md).
std::string backupSecretName(std::string_view suffix, std::string_view set_id,
                             std::size_t index = 0);
// The name earlier versions gave backups, "captf-state-backup-<suffix>-<serial>"
// (and "-part-<index>"): still listed, verified and restorable, never written.
std::string legacyBackupSecretName(std::string_view suffix, std::int64_t serial,
                                   std::size_t index = 0);

// "<state Secret name>-unreadable-<set>": where a restore keeps a chunk of
// an unreadable state before it pushes the backup
// (docs/behaviour/state.md#restore-over-an-unreadable-state). <set> is the
// set-aside id (setAsideId in set_aside.h). When the whole would pass 253
// characters (only a Secret of an unexpected name is that long), the name
// is cut, ends in an alphanumeric, and "-<first 8 hex of its sha256>" keeps
// two such names apart.
std::string unreadableStateSecretName(std::string_view secret_name, std::string_view set);

// "captf-inputs-<c|m|mp>-<name>"; when longer than 253 characters, the
// prefix plus the first 16 hex of sha256(name) ("captf-inputs-m-<hash>").
std::string durableInputsSecretName(const ObjectRef& ref);
// "captf-runs-<c|m|mp>-<name>", the run history ConfigMap (run_history.h),
// hashed like durableInputsSecretName when too long.
std::string runHistoryName(const ObjectRef& ref);
// "captf-run-<job>" (a Job name is at most 63 characters, so this fits).
std::string runSecretName(std::string_view job_name);

// A label value for a name: verbatim when at most 63 characters, else the
// first 16 hex characters of its sha256 (docs/behaviour/keys.md owner-name, state.md cluster-name).
std::string labelValue(std::string_view name);

// docs/behaviour/state.md: the five labels the manager passes to the backend, exactly:
//   owner-kind, owner-name, cluster.x-k8s.io/cluster-name (omitted when
//   ref.cluster_name is empty), captf.io/managed=true,
//   clusterctl.cluster.x-k8s.io/move="".
// The backend selects state by the full label map, so every Job of one
// object must pass the same map (the cluster name of an object never
// changes once set).
std::map<std::string, std::string> backendLabels(const ObjectRef& ref);

// backendLabels as the HCL object of `-backend-config=labels=<value>`:
//   {"captf.io/managed" = "true", "captf.infrastructure...owner-kind" = "TerraformMachine", ...}
// Keys sorted; values are label-safe so need no escaping beyond quotes.
std::string backendLabelsHcl(const ObjectRef& ref);

// The full set of the Job's `--backend-config=` values (without the flag):
// "secret_suffix=<suffix>", "namespace=<ns>", "in_cluster_config=true",
// "labels=<backendLabelsHcl>".
std::vector<std::string> backendConfig(const ObjectRef& ref);

// Label selector (as the `labelSelector` query value) matching every state
// chunk Secret of the object: "tfstateSecretSuffix=<suffix>".
std::string stateSelector(std::string_view suffix);
// Label selector of every backup chunk of the object:
// "captf.io/state-backup=true,captf.io/state-backup-suffix=<suffix>".
std::string backupSelector(std::string_view suffix);

// Label selector of every set-aside chunk of the object's unreadable states:
// "captf.io/state-unreadable=true,captf.io/state-unreadable-suffix=<suffix>".
std::string unreadableStateSelector(std::string_view suffix);

// The owner labels CAPTF puts on what it creates for the object (Leases,
// Jobs, Secrets): captf.io/managed=true, owner-kind, owner-name, and
// cluster-name when known.
std::map<std::string, std::string> ownerLabels(const ObjectRef& ref);

// Whether `object` carries captf.io/managed=true: CAPTF made it. An object
// of a name CAPTF uses that lacks the label is someone else's and is never
// overwritten (docs/behaviour/security.md, "Objects CAPTF does not own").
bool isManaged(const nlohmann::json& object);

enum class OwnerControl { kNotController, kController };

// An ownerReference to the object, non-blocking (blockOwnerDeletion false):
// {apiVersion, kind, name, uid, controller, blockOwnerDeletion}.
// Precondition: ref.uid is not empty.
nlohmann::json ownerReference(const ObjectRef& ref,
                              OwnerControl control = OwnerControl::kNotController);

} // namespace captf::workspace
