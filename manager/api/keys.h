#pragma once

// Group, version and the well-known keys of docs/behaviour/keys.md. Every
// other folder takes these names from here.

#include <string_view>

namespace captf::api {

inline constexpr std::string_view kGroup = "infrastructure.cluster.x-k8s.io";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kGroupVersion = "infrastructure.cluster.x-k8s.io/v1alpha1";

inline constexpr std::string_view kKindTerraformCluster = "TerraformCluster";
inline constexpr std::string_view kKindTerraformMachine = "TerraformMachine";
inline constexpr std::string_view kKindTerraformMachinePool = "TerraformMachinePool";
inline constexpr std::string_view kKindTerraformClusterTemplate = "TerraformClusterTemplate";
inline constexpr std::string_view kKindTerraformMachineTemplate = "TerraformMachineTemplate";
inline constexpr std::string_view kKindTerraformMachinePoolTemplate =
    "TerraformMachinePoolTemplate";
inline constexpr std::string_view kKindTerraformClusterIdentity = "TerraformClusterIdentity";

// docs/behaviour/keys.md#user-facing-keys user-facing keys.
inline constexpr std::string_view kAnnotationApproveDestructivePlan =
    "captf.io/approve-destructive-plan";
inline constexpr std::string_view kAnnotationApprovePlan = "captf.io/approve-plan";
inline constexpr std::string_view kAnnotationRestoreState = "captf.io/restore-state";
// "true": a person accepts that deleting an object whose state is lost
// leaves its infrastructure behind (docs/behaviour/state.md#state-on-deletion).
inline constexpr std::string_view kAnnotationOrphanOnDelete = "captf.io/orphan-on-delete";
inline constexpr std::string_view kLabelVariables = "captf.io/variables";
inline constexpr std::string_view kLabelRunner = "captf.io/runner";

// docs/behaviour/keys.md#internal-keys internal keys.
inline constexpr std::string_view kLabelManaged = "captf.io/managed";
inline constexpr std::string_view kLabelOwnerKind =
    "captf.infrastructure.cluster.x-k8s.io/owner-kind";
inline constexpr std::string_view kLabelOwnerName =
    "captf.infrastructure.cluster.x-k8s.io/owner-name";
inline constexpr std::string_view kAnnotationInputsHash = "captf.io/inputs-hash";
// On a runner Job: "sha256:<hex>" of the run's report token
// (docs/decisions/run-reports.md); the token is only in the per-run Secret.
inline constexpr std::string_view kAnnotationReportTokenHash = "captf.io/report-token-hash";
inline constexpr std::string_view kLabelStateBackup = "captf.io/state-backup";
inline constexpr std::string_view kLabelStateBackupSuffix = "captf.io/state-backup-suffix";
inline constexpr std::string_view kAnnotationStateBackupSerial = "captf.io/state-backup-serial";
inline constexpr std::string_view kAnnotationStateBackupLineage = "captf.io/state-backup-lineage";
inline constexpr std::string_view kAnnotationStateBackupTakenAt = "captf.io/state-backup-taken-at";
inline constexpr std::string_view kAnnotationStateBackupSourceJob =
    "captf.io/state-backup-source-job";
inline constexpr std::string_view kAnnotationStateBackupDigest = "captf.io/state-backup-digest";
inline constexpr std::string_view kAnnotationStateBackupResources =
    "captf.io/state-backup-resources";
inline constexpr std::string_view kAnnotationStateBackupSet = "captf.io/state-backup-set";
inline constexpr std::string_view kAnnotationStateBackupChunk = "captf.io/state-backup-chunk";
inline constexpr std::string_view kAnnotationStateBackupChunks = "captf.io/state-backup-chunks";
// A state set aside by a restore over an unreadable state
// (docs/behaviour/state.md#restore-over-an-unreadable-state).
inline constexpr std::string_view kLabelStateUnreadable = "captf.io/state-unreadable";
inline constexpr std::string_view kLabelStateUnreadableSuffix = "captf.io/state-unreadable-suffix";
inline constexpr std::string_view kAnnotationStateUnreadableSource =
    "captf.io/state-unreadable-source";
inline constexpr std::string_view kAnnotationStateUnreadableReason =
    "captf.io/state-unreadable-reason";
inline constexpr std::string_view kAnnotationStateUnreadableSet = "captf.io/state-unreadable-set";
inline constexpr std::string_view kAnnotationStateUnreadableSetAsideAt =
    "captf.io/state-unreadable-set-aside-at";
inline constexpr std::string_view kAnnotationStateUnreadableLabels =
    "captf.io/state-unreadable-labels";
inline constexpr std::string_view kAnnotationStateUnreadableRestoreSerial =
    "captf.io/state-unreadable-restore-serial";
inline constexpr std::string_view kLabelLease = "captf.io/lease";
inline constexpr std::string_view kAnnotationLeaseOp = "captf.io/lease-op";
inline constexpr std::string_view kAnnotationLeaseAcquiredAt = "captf.io/lease-acquired-at";
inline constexpr std::string_view kLabelMirrored = "captf.io/mirrored";
inline constexpr std::string_view kAnnotationSourceHash = "captf.io/source-hash";
inline constexpr std::string_view kAnnotationBookkept = "captf.io/bookkept";
inline constexpr std::string_view kAnnotationInterrupted = "captf.io/interrupted";
inline constexpr std::string_view kAnnotationDriftRemediation = "captf.io/drift-remediation";
inline constexpr std::string_view kAnnotationDestructivePlanBlocked =
    "captf.io/destructive-plan-blocked";
inline constexpr std::string_view kAnnotationPlanChanged = "captf.io/plan-changed";
inline constexpr std::string_view kAnnotationPlanUnreadable = "captf.io/plan-unreadable";
inline constexpr std::string_view kAnnotationApprovedPlan = "captf.io/approved-plan";
inline constexpr std::string_view kAnnotationRestoreSerial = "captf.io/restore-serial";
inline constexpr std::string_view kLabelOp = "captf.infrastructure.cluster.x-k8s.io/op";
inline constexpr std::string_view kLabelAttempt = "captf.infrastructure.cluster.x-k8s.io/attempt";
inline constexpr std::string_view kAnnotationEndpointSource = "captf.io/endpoint-source";
inline constexpr std::string_view kAnnotationRemediationRequested =
    "captf.io/remediation-requested";
inline constexpr std::string_view kAnnotationImage = "captf.io/image";
inline constexpr std::string_view kAnnotationImageDigest = "captf.io/image-digest";
// A Git source's commit: on a run Job (what it fetched) and on the durable
// inputs Secret (what the last apply ran; docs/decisions/git-sources.md).
inline constexpr std::string_view kAnnotationGitCommit = "captf.io/git-commit";
inline constexpr std::string_view kAnnotationIdentity = "captf.io/identity";

// docs/behaviour/keys.md#finalizers finalizers.
inline constexpr std::string_view kFinalizerTerraformCluster =
    "terraformcluster.infrastructure.cluster.x-k8s.io";
inline constexpr std::string_view kFinalizerTerraformMachine =
    "terraformmachine.infrastructure.cluster.x-k8s.io";
inline constexpr std::string_view kFinalizerTerraformMachinePool =
    "terraformmachinepool.infrastructure.cluster.x-k8s.io";

// docs/behaviour/keys.md#cluster-api-and-clusterctl-keys Cluster API and clusterctl keys.
inline constexpr std::string_view kClusterApiGroup = "cluster.x-k8s.io";
inline constexpr std::string_view kLabelClusterName = "cluster.x-k8s.io/cluster-name";
inline constexpr std::string_view kAnnotationRemediateMachine =
    "cluster.x-k8s.io/remediate-machine";
inline constexpr std::string_view kAnnotationReplicasManagedBy =
    "cluster.x-k8s.io/replicas-managed-by";
inline constexpr std::string_view kAnnotationAutoscalerMinSize =
    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
inline constexpr std::string_view kAnnotationAutoscalerMaxSize =
    "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
inline constexpr std::string_view kLabelClusterctlMove = "clusterctl.cluster.x-k8s.io/move";
inline constexpr std::string_view kAnnotationDeleteForMove =
    "clusterctl.cluster.x-k8s.io/delete-for-move";
inline constexpr std::string_view kLabelMoveHierarchy =
    "clusterctl.cluster.x-k8s.io/move-hierarchy";
inline constexpr std::string_view kAnnotationBlockMove = "clusterctl.cluster.x-k8s.io/block-move";
inline constexpr std::string_view kAnnotationManagedBy = "cluster.x-k8s.io/managed-by";
inline constexpr std::string_view kAnnotationClonedFromName = "cluster.x-k8s.io/cloned-from-name";
inline constexpr std::string_view kLabelControlPlane = "cluster.x-k8s.io/control-plane";
inline constexpr std::string_view kLabelWatchFilter = "cluster.x-k8s.io/watch-filter";
inline constexpr std::string_view kLabelInterruptible = "cluster.x-k8s.io/interruptible";
inline constexpr std::string_view kAnnotationPaused = "cluster.x-k8s.io/paused";
// Set by Cluster API's topology controller on objects of a server-side
// apply dry-run (docs/decisions/rig-design.md).
inline constexpr std::string_view kAnnotationTopologyDryRun = "topology.cluster.x-k8s.io/dry-run";

// CRD labels (docs/behaviour/components.md and docs/decisions/rig-design.md).
inline constexpr std::string_view kLabelProvider = "cluster.x-k8s.io/provider";
inline constexpr std::string_view kProviderName = "infrastructure-terraform";

} // namespace captf::api
