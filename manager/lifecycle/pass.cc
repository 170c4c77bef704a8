#include "manager/lifecycle/pass.h"

#include "contract/image_reference.h"
#include "manager/api/conditions.h"

namespace captf::lifecycle {

namespace cond = api::conditions;
using api::ConditionStatus;
using api::Operation;

StateReading stateReadingOf(workspace::StateVerdict verdict, workspace::StateStatus read) {
  switch (verdict) {
  case workspace::StateVerdict::kNotFound:
    return StateReading::kNotFound;
  case workspace::StateVerdict::kRead:
    return StateReading::kRead;
  case workspace::StateVerdict::kLost:
    return read == workspace::StateStatus::kNotFound ? StateReading::kNotFound
                                                     : StateReading::kRead;
  case workspace::StateVerdict::kInconsistent:
  case workspace::StateVerdict::kEncrypted:
  case workspace::StateVerdict::kCorrupt:
  case workspace::StateVerdict::kLocked:
    return StateReading::kUnreadable;
  }
  return StateReading::kUnreadable;
}

std::optional<ConditionUpdate> holdCondition(Hold hold, std::string_view resource,
                                             const ObjectIdentity& object,
                                             const std::optional<api::PlanPreview>& plan) {
  switch (hold) {
  case Hold::kRestoreBackupNotFound:
    return ConditionUpdate{cond::kRestoreJobSucceeded, ConditionStatus::kFalse,
                           cond::kReasonRestoreBackupNotFound,
                           "captf.io/restore-state names no complete backup"};
  case Hold::kPlanAwaitingApproval:
    if (!plan) {
      return std::nullopt;
    }
    return ConditionUpdate{cond::kApplyJobSucceeded, ConditionStatus::kUnknown,
                           cond::kReasonPlanAwaitingApproval,
                           planAwaitingApprovalMessage(resource, object, plan->plan_hash)};
  case Hold::kPlanChanged:
    // docs/behaviour/approval.md step 5: the new plan of an approved apply keeps PlanChanged.
    if (!plan) {
      return std::nullopt;
    }
    return ConditionUpdate{cond::kApplyJobSucceeded, ConditionStatus::kUnknown,
                           cond::kReasonPlanChanged,
                           planChangedMessage(resource, object, plan->plan_hash)};
  case Hold::kDestroyInputsMissing:
    return ConditionUpdate{
        cond::kApplyJobSucceeded, ConditionStatus::kFalse, cond::kReasonDestroyFailed,
        "The durable inputs Secret is missing, so destroy cannot be rendered; see "
        "<https://github.com/captf-io/cluster-api-provider-terraform/blob/main/docs/runbooks/"
        "CAPTFDestroyStuck.md>"};
  default:
    return std::nullopt;
  }
}

JobRoot rootForOperation(Operation operation, const workspace::KindTraits& traits, bool durable,
                         bool current) {
  const bool current_usable = current && !traits.immutable_inputs;
  switch (operation) {
  case Operation::kDestroy:
    return durable ? JobRoot::kDurable : current_usable ? JobRoot::kCurrent : JobRoot::kNone;
  case Operation::kDrift:
  case Operation::kRefresh:
    return current_usable ? JobRoot::kCurrent : durable ? JobRoot::kDurable : JobRoot::kNone;
  case Operation::kRestore:
    return JobRoot::kNone;
  case Operation::kApply:
  case Operation::kPlan:
    return current ? JobRoot::kCurrent : JobRoot::kNone;
  }
  return JobRoot::kNone;
}

std::string_view waitConditionFor(Operation operation) {
  switch (operation) {
  case Operation::kDrift:
  case Operation::kRefresh:
    return cond::kDriftJobSucceeded;
  case Operation::kRestore:
    return cond::kRestoreJobSucceeded;
  case Operation::kApply:
  case Operation::kDestroy:
  case Operation::kPlan:
    return cond::kApplyJobSucceeded;
  }
  return cond::kApplyJobSucceeded;
}

LeaseWait runLeaseWait(const std::string& holder) {
  return LeaseWait{.reason = std::string(cond::kReasonWaitingForRunLease),
                   .message = "the run lease is held by Job " + holder,
                   .event_reason = "WaitingForRunLease",
                   .event_note = "waiting for Job " + holder + " to release the run lease",
                   .metric = "run_lease"};
}

std::optional<LeaseWait> gateWait(GateVerdict verdict, std::int32_t dependent_operations,
                                  const std::string& cluster) {
  switch (verdict) {
  case GateVerdict::kProceed:
    return std::nullopt;
  case GateVerdict::kWaitForMachineOperations:
    return LeaseWait{.reason = std::string(cond::kReasonWaitingForMachineOperations),
                     .message = std::to_string(dependent_operations) +
                                " machine/pool operations of Cluster " + cluster + " are running",
                     .event_reason = "WaitingForMachineOperations",
                     .event_note = "waiting for machine and pool operations of Cluster " + cluster,
                     .metric = "machine_operations"};
  case GateVerdict::kWaitForClusterOperation:
    return LeaseWait{.reason = std::string(cond::kReasonWaitingForClusterOperation),
                     .message = "an operation of Cluster " + cluster + " is running",
                     .event_reason = "WaitingForClusterOperation",
                     .event_note = "waiting for the operation of Cluster " + cluster,
                     .metric = "cluster_operation"};
  }
  return std::nullopt;
}

std::string_view gitSourceReason(absl::StatusCode code) {
  switch (code) {
  case absl::StatusCode::kUnauthenticated:
  case absl::StatusCode::kPermissionDenied:
    return cond::kReasonGitAuthenticationFailed;
  case absl::StatusCode::kNotFound:
    return cond::kReasonGitRefNotFound;
  case absl::StatusCode::kUnavailable:
  case absl::StatusCode::kDeadlineExceeded:
    return cond::kReasonGitUnreachable;
  case absl::StatusCode::kFailedPrecondition:
    return cond::kReasonGitServerNotTrusted;
  case absl::StatusCode::kInvalidArgument:
    return cond::kReasonGitCredentialsInvalid;
  default:
    return cond::kReasonGitSourceFailed;
  }
}

const std::string& sourceImage(const api::Source& source) {
  return source.git ? source.git->runtime_image : source.image;
}

JobBuildRequest jobBuildRequest(const Decision& decision, const JobStart& start) {
  JobBuildRequest build;
  build.object = start.object;
  build.object_uid = start.object_uid;
  build.cluster_name = start.cluster_name;
  build.job_name = start.job_name;
  build.operation = decision.operation.value_or(Operation::kApply);
  build.attempt = decision.attempt;
  build.image = sourceImage(start.source);
  build.image_reference = build.image;
  build.git = start.git;
  if (start.traits.immutable_inputs && build.operation != Operation::kApply && start.durable &&
      start.durable->image_digest) {
    if (auto by_digest =
            contract::pinnedReference(start.durable->image, *start.durable->image_digest)) {
      build.image = *by_digest;
    }
  }
  build.image_pull_policy = effectivePullPolicy(start.source);
  build.runner_image = start.runner_image;
  build.policy = start.policy;
  build.credentials_secret = start.credentials_secret;
  build.credential_env_keys = start.credential_env_keys;
  build.inputs_hash = decision.inputs_hash;
  build.options = decision.job;
  build.force_unlock_id = start.force_unlock_id;
  build.runner_events = start.runner_events;
  build.report_address = start.report_address;
  build.report_token_hash = start.report_token_hash;
  if (start.restore) {
    build.restore_chunk_secrets = start.restore->chunk_secrets;
    build.restore_resources = start.restore->resources;
    build.inputs_hash = start.restore->inputs_hash;
  }
  return build;
}

} // namespace captf::lifecycle
