#pragma once

// Condition types and reasons (docs/reference/conditions.md). Polarity: Deleting,
// DriftDetected and DeletionBlocked are negative (True is the problem).

#include <string_view>

namespace captf::api::conditions {

// Types.
inline constexpr std::string_view kReady = "Ready";
inline constexpr std::string_view kDependenciesReady = "DependenciesReady";
inline constexpr std::string_view kIdentityAllowed = "IdentityAllowed";
inline constexpr std::string_view kCredentialsMirrored = "CredentialsMirrored";
inline constexpr std::string_view kRunnerRbacReady = "RunnerRBACReady";
inline constexpr std::string_view kApplyJobSucceeded = "ApplyJobSucceeded";
inline constexpr std::string_view kStateReadable = "StateReadable";
inline constexpr std::string_view kRestoreJobSucceeded = "RestoreJobSucceeded";
inline constexpr std::string_view kOutputsValid = "OutputsValid";
inline constexpr std::string_view kInfrastructureHealthy = "InfrastructureHealthy";
inline constexpr std::string_view kDriftJobSucceeded = "DriftJobSucceeded";
inline constexpr std::string_view kDriftDetected = "DriftDetected";
inline constexpr std::string_view kDeletionBlocked = "DeletionBlocked";
inline constexpr std::string_view kEndpointAvailable = "EndpointAvailable";
inline constexpr std::string_view kAutoscalingActive = "AutoscalingActive";
inline constexpr std::string_view kCapacityResolved = "CapacityResolved";
inline constexpr std::string_view kPaused = "Paused";
inline constexpr std::string_view kDeleting = "Deleting";

// Reasons: Ready.
inline constexpr std::string_view kReasonReady = "Ready";
inline constexpr std::string_view kReasonNotReady = "NotReady";
inline constexpr std::string_view kReasonReadyUnknown = "ReadyUnknown";
inline constexpr std::string_view kReasonSecretFound = "SecretFound";
inline constexpr std::string_view kReasonSecretNotFound = "SecretNotFound";

// Reasons: DependenciesReady.
inline constexpr std::string_view kReasonDependenciesReady = "DependenciesReady";
inline constexpr std::string_view kReasonClusterNotTerraform = "ClusterNotTerraform";
inline constexpr std::string_view kReasonOwnerMismatch = "OwnerMismatch";
inline constexpr std::string_view kReasonOwnerNotFound = "OwnerNotFound";
inline constexpr std::string_view kReasonVariablesInvalid = "VariablesInvalid";
inline constexpr std::string_view kReasonVariablesSourceNotFound = "VariablesSourceNotFound";
// DependenciesReady of a Git source (docs/decisions/git-sources.md).
inline constexpr std::string_view kReasonGitRefResolving = "GitRefResolving";
inline constexpr std::string_view kReasonGitAuthenticationFailed = "GitAuthenticationFailed";
inline constexpr std::string_view kReasonGitRefNotFound = "GitRefNotFound";
inline constexpr std::string_view kReasonGitUnreachable = "GitUnreachable";
inline constexpr std::string_view kReasonGitServerNotTrusted = "GitServerNotTrusted";
inline constexpr std::string_view kReasonGitCredentialsInvalid = "GitCredentialsInvalid";
inline constexpr std::string_view kReasonGitSourceFailed = "GitSourceFailed";
inline constexpr std::string_view kReasonWaitingForOwnerMachine = "WaitingForOwnerMachine";
inline constexpr std::string_view kReasonWaitingForOwnerMachinePool = "WaitingForOwnerMachinePool";
inline constexpr std::string_view kReasonWaitingForBootstrapData = "WaitingForBootstrapData";
inline constexpr std::string_view kReasonWaitingForClusterExports = "WaitingForClusterExports";
inline constexpr std::string_view kReasonWaitingForClusterInfrastructure =
    "WaitingForClusterInfrastructure";
inline constexpr std::string_view kReasonWaitingForOwner = "WaitingForOwner";

// Reasons: IdentityAllowed.
inline constexpr std::string_view kReasonIdentityAllowed = "IdentityAllowed";
inline constexpr std::string_view kReasonIdentityNotFound = "IdentityNotFound";
inline constexpr std::string_view kReasonNamespaceNotAllowed = "NamespaceNotAllowed";
inline constexpr std::string_view kReasonIdentityCheckFailed = "IdentityCheckFailed";

// Reasons: CredentialsMirrored.
inline constexpr std::string_view kReasonMirrored = "Mirrored";
inline constexpr std::string_view kReasonMirrorFailed = "MirrorFailed";
inline constexpr std::string_view kReasonMirrorPending = "MirrorPending";

// Reasons: RunnerRBACReady.
inline constexpr std::string_view kReasonRbacReady = "RBACReady";
inline constexpr std::string_view kReasonRbacFailed = "RBACFailed";
inline constexpr std::string_view kReasonServiceAccountNotOptedIn = "ServiceAccountNotOptedIn";

// Reasons: ApplyJobSucceeded.
inline constexpr std::string_view kReasonApplySucceeded = "ApplySucceeded";
inline constexpr std::string_view kReasonDestroySucceeded = "DestroySucceeded";
inline constexpr std::string_view kReasonApplyFailed = "ApplyFailed";
inline constexpr std::string_view kReasonDestroyFailed = "DestroyFailed";
inline constexpr std::string_view kReasonDestructivePlanBlocked = "DestructivePlanBlocked";
inline constexpr std::string_view kReasonIdentityNotAllowed = "IdentityNotAllowed";
inline constexpr std::string_view kReasonImageInvalid = "ImageInvalid";
inline constexpr std::string_view kReasonImagePullFailed = "ImagePullFailed";
inline constexpr std::string_view kReasonInputsTooLarge = "InputsTooLarge";
inline constexpr std::string_view kReasonInputsSecretConflict = "InputsSecretConflict";
inline constexpr std::string_view kReasonJobDeadlineExceeded = "JobDeadlineExceeded";
inline constexpr std::string_view kReasonJobRunning = "JobRunning";
inline constexpr std::string_view kReasonNoApplyYet = "NoApplyYet";
inline constexpr std::string_view kReasonPlanAwaitingApproval = "PlanAwaitingApproval";
inline constexpr std::string_view kReasonPlanChanged = "PlanChanged";
inline constexpr std::string_view kReasonWaitingForClusterOperation = "WaitingForClusterOperation";
inline constexpr std::string_view kReasonWaitingForMachineOperations =
    "WaitingForMachineOperations";
inline constexpr std::string_view kReasonWaitingForRunLease = "WaitingForRunLease";

// Reasons: StateReadable.
inline constexpr std::string_view kReasonStateRead = "StateRead";
inline constexpr std::string_view kReasonStateCorrupt = "StateCorrupt";
inline constexpr std::string_view kReasonStateEncrypted = "StateEncrypted";
inline constexpr std::string_view kReasonStateInconsistent = "StateInconsistent";
inline constexpr std::string_view kReasonStateLocked = "StateLocked";
inline constexpr std::string_view kReasonStateLost = "StateLost";
inline constexpr std::string_view kReasonStateNotFound = "StateNotFound";

// Reasons: RestoreJobSucceeded.
inline constexpr std::string_view kReasonStateRestored = "StateRestored";
inline constexpr std::string_view kReasonRestoreBackupNotFound = "RestoreBackupNotFound";
inline constexpr std::string_view kReasonRestoreFailed = "RestoreFailed";
// The unreadable state could not be set aside, so no restore Job was made
// (docs/behaviour/state.md#restore-over-an-unreadable-state).
inline constexpr std::string_view kReasonStateSetAsideFailed = "StateSetAsideFailed";

// Reasons: OutputsValid.
inline constexpr std::string_view kReasonOutputsValid = "OutputsValid";
inline constexpr std::string_view kReasonInstancesTruncated = "InstancesTruncated";
inline constexpr std::string_view kReasonFailureDomainMismatch = "FailureDomainMismatch";
inline constexpr std::string_view kReasonOutputsInvalid = "OutputsInvalid";
inline constexpr std::string_view kReasonProviderIdChanged = "ProviderIDChanged";
inline constexpr std::string_view kReasonOutputsPending = "OutputsPending";

// Reasons: InfrastructureHealthy.
inline constexpr std::string_view kReasonHealthy = "Healthy";
inline constexpr std::string_view kReasonInstanceDegraded = "InstanceDegraded";
inline constexpr std::string_view kReasonInstancePending = "InstancePending";
inline constexpr std::string_view kReasonInstanceStopped = "InstanceStopped";
inline constexpr std::string_view kReasonInstanceTerminated = "InstanceTerminated";
inline constexpr std::string_view kReasonInstanceUnhealthy = "InstanceUnhealthy";
inline constexpr std::string_view kReasonProvisioning = "Provisioning";
inline constexpr std::string_view kReasonHealthUnknown = "HealthUnknown";
inline constexpr std::string_view kReasonWaitingForProvisioning = "WaitingForProvisioning";

// Reasons: DriftJobSucceeded and DriftDetected.
inline constexpr std::string_view kReasonDriftChecked = "DriftChecked";
inline constexpr std::string_view kReasonDriftJobDeadlineExceeded = "DriftJobDeadlineExceeded";
inline constexpr std::string_view kReasonDriftJobFailed = "DriftJobFailed";
inline constexpr std::string_view kReasonDriftJobRunning = "DriftJobRunning";
inline constexpr std::string_view kReasonDriftNotChecked = "DriftNotChecked";
inline constexpr std::string_view kReasonDriftPending = "DriftPending";
inline constexpr std::string_view kReasonDriftRemediating = "DriftRemediating";
inline constexpr std::string_view kReasonDriftReported = "DriftReported";
inline constexpr std::string_view kReasonNoDrift = "NoDrift";

// Reasons: DeletionBlocked, EndpointAvailable, AutoscalingActive,
// CapacityResolved, Paused, Deleting.
inline constexpr std::string_view kReasonDependentsExist = "DependentsExist";
inline constexpr std::string_view kReasonNotBlocked = "NotBlocked";
inline constexpr std::string_view kReasonEndpointAvailable = "EndpointAvailable";
inline constexpr std::string_view kReasonWaitingForEndpoint = "WaitingForEndpoint";
inline constexpr std::string_view kReasonReplicasManagedByModule = "ReplicasManagedByModule";
inline constexpr std::string_view kReasonAutoscalingAnnotationsInvalid =
    "AutoscalingAnnotationsInvalid";
inline constexpr std::string_view kReasonAutoscalingDisabled = "AutoscalingDisabled";
inline constexpr std::string_view kReasonCapacityNotDeclared = "CapacityNotDeclared";
inline constexpr std::string_view kReasonCapacityResolved = "CapacityResolved";
inline constexpr std::string_view kReasonCapacityLabelInvalid = "CapacityLabelInvalid";
inline constexpr std::string_view kReasonImageInspectFailed = "ImageInspectFailed";
inline constexpr std::string_view kReasonPaused = "Paused";
inline constexpr std::string_view kReasonNotPaused = "NotPaused";
inline constexpr std::string_view kReasonDeleting = "Deleting";
inline constexpr std::string_view kReasonDeletionCompleted = "DeletionCompleted";
inline constexpr std::string_view kReasonNotDeleting = "NotDeleting";

} // namespace captf::api::conditions
