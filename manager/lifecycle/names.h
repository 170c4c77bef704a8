#pragma once

// Names the lifecycle derives from a workload object's identity (never its
// UID, so they survive `clusterctl move`): the cluster write Lease (docs/behaviour/lifecycle.md)
// and run Job names (docs/behaviour/lifecycle.md). The state suffix, backend labels, owner
// labels and the names after the suffix have one home, manager/workspace's
// names.h; the overloads below taking an ObjectIdentity forward to it.
// Pure functions; no I/O.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "contract/roles.h"
#include "manager/api/workspace.h"
#include "manager/workspace/names.h"

namespace captf::lifecycle {

// A workload object by identity: role (kCluster = TerraformCluster, kMachine
// = TerraformMachine, kMachinePool = TerraformMachinePool), ns, name (and
// uid/cluster_name, which the lifecycle takes from its own request fields).
using ObjectIdentity = workspace::ObjectRef;

// A Job's pod is named `<job>-<5 chars>`, which must stay within 63.
inline constexpr std::size_t kMaxJobName = 57;

// docs/behaviour/state.md#naming state suffix (workspace::stateSuffix).
using workspace::stateSuffix;

// Forwards to manager/workspace/names.h.
inline std::string labelSafeName(std::string_view value) {
  return workspace::labelValue(value);
}
inline std::string runLeaseName(const ObjectIdentity& object) {
  return workspace::runLeaseName(workspace::stateSuffix(object));
}
inline std::string lockLeaseName(const ObjectIdentity& object) {
  return workspace::lockLeaseName(workspace::stateSuffix(object));
}
inline std::string stateSecretName(const ObjectIdentity& object) {
  return workspace::stateSecretName(workspace::stateSuffix(object));
}
inline std::string perRunSecretName(std::string_view job_name) {
  return workspace::runSecretName(job_name);
}

// lifecycle.md: "captf-cluster-<hash>" where hash = hex(sha256("<namespace>/<cluster>"))[0:16]
// (docs/decisions/lifecycle-names.md; docs/decisions/api-spec-conflicts.md). One per CAPI Cluster.
std::string clusterLeaseName(std::string_view ns, std::string_view cluster_name);

// What a run Job's name is derived from (docs/behaviour/lifecycle.md).
struct JobNameParts {
  // The inputs hash the Job renders ("" for a restore, whose root has no
  // inputs).
  std::string inputs_hash{};
  api::Operation operation = api::Operation::kApply;
  // 1 + the highest attempt retained for the operation (nextAttempt in
  // history.h). ≥ 1.
  std::int32_t attempt = 1;
  // Decision::tick: changes whenever the Job would otherwise repeat a
  // name. "" for operations without one.
  std::string tick{};
};

// "captf-<kindshort>-<name>-<operation>-a<attempt>-<hash6>" where hash6 is
// the first 6 hex characters of sha256 over inputs hash, operation, attempt
// and tick (each followed by "\n"). When that exceeds kMaxJobName
// characters, <name> is replaced by the first 16 hex characters of
// sha256(name). Deterministic: the same parts always give the same name,
// so a retried reconcile finds the Job it created instead of creating a
// second one. Precondition: attempt ≥ 1.
std::string jobName(const ObjectIdentity& object, const JobNameParts& parts);

} // namespace captf::lifecycle
