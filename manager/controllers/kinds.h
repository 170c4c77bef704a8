#pragma once

// The kinds the controllers read and write, as GroupVersionKinds.

#include <array>

#include "manager/kube/object.h"

namespace captf::controllers::kinds {

inline const kube::GroupVersionKind kSecret{"", "v1", "Secret"};
inline const kube::GroupVersionKind kNamespace{"", "v1", "Namespace"};
inline const kube::GroupVersionKind kPod{"", "v1", "Pod"};
inline const kube::GroupVersionKind kServiceAccount{"", "v1", "ServiceAccount"};
inline const kube::GroupVersionKind kConfigMap{"", "v1", "ConfigMap"};
inline const kube::GroupVersionKind kJob{"batch", "v1", "Job"};
inline const kube::GroupVersionKind kLease{"coordination.k8s.io", "v1", "Lease"};
inline const kube::GroupVersionKind kRoleBinding{"rbac.authorization.k8s.io", "v1", "RoleBinding"};
inline const kube::GroupVersionKind kTerraformCluster{"infrastructure.cluster.x-k8s.io", "v1alpha1",
                                                      "TerraformCluster"};
inline const kube::GroupVersionKind kTerraformMachine{"infrastructure.cluster.x-k8s.io", "v1alpha1",
                                                      "TerraformMachine"};
inline const kube::GroupVersionKind kTerraformMachinePool{"infrastructure.cluster.x-k8s.io",
                                                          "v1alpha1", "TerraformMachinePool"};
inline const kube::GroupVersionKind kTerraformMachineTemplate{
    "infrastructure.cluster.x-k8s.io", "v1alpha1", "TerraformMachineTemplate"};
inline const kube::GroupVersionKind kTerraformClusterIdentity{
    "infrastructure.cluster.x-k8s.io", "v1alpha1", "TerraformClusterIdentity"};
inline const kube::GroupVersionKind kCluster{"cluster.x-k8s.io", "v1beta2", "Cluster"};
inline const kube::GroupVersionKind kMachine{"cluster.x-k8s.io", "v1beta2", "Machine"};
inline const kube::GroupVersionKind kMachinePool{"cluster.x-k8s.io", "v1beta2", "MachinePool"};

// The workload kinds, one per contract role, the TerraformCluster first: the kinds the one
// reconcile pass serves (docs/behaviour/lifecycle.md). Every "for each workload kind" of the
// controllers (informers, the runner-accounts index, the orphan sweep, the ref watcher's
// queues, a cluster's dependents) reads this list, and a test checks it against
// contract::allRoles(), so a kind added to the contract cannot be left out of one silently.
inline constexpr std::array<const kube::GroupVersionKind*, 3> kWorkloadKinds{
    &kTerraformCluster, &kTerraformMachine, &kTerraformMachinePool};

} // namespace captf::controllers::kinds
