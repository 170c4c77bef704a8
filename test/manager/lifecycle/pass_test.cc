#include <string_view>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "manager/api/conditions.h"
#include "manager/lifecycle/pass.h"
#include "test/manager/lifecycle/testing.h"

namespace captf::lifecycle {
namespace {

namespace c = api::conditions;
using api::ConditionStatus;
using api::Operation;
using workspace::StateStatus;
using workspace::StateVerdict;

TEST(PassTest, StateReadingOfAVerdict) {
  struct Case {
    StateVerdict verdict;
    StateStatus read;
    StateReading want;
  };
  const Case cases[] = {
      {StateVerdict::kNotFound, StateStatus::kNotFound, StateReading::kNotFound},
      {StateVerdict::kRead, StateStatus::kRead, StateReading::kRead},
      // Lost: what was found; the decision applies the lost rule itself.
      {StateVerdict::kLost, StateStatus::kNotFound, StateReading::kNotFound},
      {StateVerdict::kLost, StateStatus::kRead, StateReading::kRead},
      {StateVerdict::kInconsistent, StateStatus::kInconsistent, StateReading::kUnreadable},
      {StateVerdict::kEncrypted, StateStatus::kEncrypted, StateReading::kUnreadable},
      {StateVerdict::kCorrupt, StateStatus::kCorrupt, StateReading::kUnreadable},
      // Locked by a foreign holder: the read itself succeeded.
      {StateVerdict::kLocked, StateStatus::kRead, StateReading::kUnreadable},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(workspace::stateReason(k.verdict));
    EXPECT_EQ(stateReadingOf(k.verdict, k.read), k.want);
  }
}

TEST(PassTest, HoldCondition) {
  const ObjectIdentity id{.role = contract::Role::kCluster, .ns = "ns1", .name = "tc"};
  std::optional<api::PlanPreview> plan = api::PlanPreview{};
  plan->plan_hash = "sha256:p1";
  const std::optional<api::PlanPreview> no_plan;
  struct Case {
    Hold hold;
    const std::optional<api::PlanPreview>* plan;
    std::optional<ConditionUpdate> want;
  };
  const std::vector<Case> cases = {
      {Hold::kRestoreBackupNotFound, &no_plan,
       ConditionUpdate{c::kRestoreJobSucceeded, ConditionStatus::kFalse,
                       c::kReasonRestoreBackupNotFound,
                       "captf.io/restore-state names no complete backup"}},
      {Hold::kPlanAwaitingApproval, &plan,
       ConditionUpdate{c::kApplyJobSucceeded, ConditionStatus::kUnknown,
                       c::kReasonPlanAwaitingApproval,
                       planAwaitingApprovalMessage("terraformcluster", id, "sha256:p1")}},
      {Hold::kPlanAwaitingApproval, &no_plan, std::nullopt},
      {Hold::kPlanChanged, &plan,
       ConditionUpdate{c::kApplyJobSucceeded, ConditionStatus::kUnknown, c::kReasonPlanChanged,
                       planChangedMessage("terraformcluster", id, "sha256:p1")}},
      {Hold::kPlanChanged, &no_plan, std::nullopt},
      {Hold::kDestroyInputsMissing, &no_plan,
       ConditionUpdate{c::kApplyJobSucceeded, ConditionStatus::kFalse, c::kReasonDestroyFailed,
                       "The durable inputs Secret is missing, so destroy cannot be rendered; see "
                       "<https://github.com/captf-io/cluster-api-provider-terraform/blob/main/docs/"
                       "runbooks/CAPTFDestroyStuck.md>"}},
      // Holds whose condition the pass or the bookkeeping sets elsewhere,
      // or that set none.
      {Hold::kNone, &plan, std::nullopt},
      {Hold::kActiveJob, &no_plan, std::nullopt},
      {Hold::kPaused, &no_plan, std::nullopt},
      {Hold::kRestoreFailed, &no_plan, std::nullopt},
      {Hold::kRestoreDone, &no_plan, std::nullopt},
      {Hold::kStateLost, &no_plan, std::nullopt},
      {Hold::kStateUnreadable, &no_plan, std::nullopt},
      {Hold::kInputsTooLarge, &no_plan, std::nullopt},
      {Hold::kDestructivePlanBlocked, &plan, std::nullopt},
      {Hold::kInputsUnavailable, &no_plan, std::nullopt},
      {Hold::kRetryBackoff, &no_plan, std::nullopt},
      {Hold::kNotDue, &no_plan, std::nullopt},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(holdName(k.hold));
    EXPECT_EQ(holdCondition(k.hold, "terraformcluster", id, *k.plan), k.want);
  }
}

TEST(PassTest, RootForOperation) {
  const workspace::KindTraits mutable_inputs = testing::traitsOf(contract::Role::kCluster);
  const workspace::KindTraits immutable = testing::traitsOf(contract::Role::kMachine);
  struct Case {
    Operation op;
    const workspace::KindTraits* traits;
    bool durable;
    bool current;
    JobRoot want;
  };
  const Case cases[] = {
      // Destroy: the durable root first; a fresh render only for mutable inputs.
      {Operation::kDestroy, &mutable_inputs, true, true, JobRoot::kDurable},
      {Operation::kDestroy, &mutable_inputs, false, true, JobRoot::kCurrent},
      {Operation::kDestroy, &immutable, false, true, JobRoot::kNone},
      {Operation::kDestroy, &immutable, true, false, JobRoot::kDurable},
      {Operation::kDestroy, &mutable_inputs, false, false, JobRoot::kNone},
      // Drift and refresh: the current root of mutable inputs, else the durable one.
      {Operation::kDrift, &mutable_inputs, true, true, JobRoot::kCurrent},
      {Operation::kDrift, &mutable_inputs, true, false, JobRoot::kDurable},
      {Operation::kRefresh, &immutable, true, true, JobRoot::kDurable},
      {Operation::kRefresh, &immutable, false, true, JobRoot::kNone},
      {Operation::kRefresh, &mutable_inputs, false, false, JobRoot::kNone},
      // Apply and plan: the current root only.
      {Operation::kApply, &mutable_inputs, true, true, JobRoot::kCurrent},
      {Operation::kApply, &immutable, true, true, JobRoot::kCurrent},
      {Operation::kApply, &immutable, true, false, JobRoot::kNone},
      {Operation::kPlan, &mutable_inputs, true, false, JobRoot::kNone},
      {Operation::kPlan, &mutable_inputs, false, true, JobRoot::kCurrent},
      // Restore renders none.
      {Operation::kRestore, &mutable_inputs, true, true, JobRoot::kNone},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(::testing::Message()
                 << api::enumName(k.op) << " immutable=" << k.traits->immutable_inputs
                 << " durable=" << k.durable << " current=" << k.current);
    EXPECT_EQ(rootForOperation(k.op, *k.traits, k.durable, k.current), k.want);
  }
}

TEST(PassTest, WaitConditionFor) {
  EXPECT_EQ(waitConditionFor(Operation::kApply), c::kApplyJobSucceeded);
  EXPECT_EQ(waitConditionFor(Operation::kDestroy), c::kApplyJobSucceeded);
  EXPECT_EQ(waitConditionFor(Operation::kPlan), c::kApplyJobSucceeded);
  EXPECT_EQ(waitConditionFor(Operation::kDrift), c::kDriftJobSucceeded);
  EXPECT_EQ(waitConditionFor(Operation::kRefresh), c::kDriftJobSucceeded);
  EXPECT_EQ(waitConditionFor(Operation::kRestore), c::kRestoreJobSucceeded);
}

TEST(PassTest, RunLeaseWait) {
  const LeaseWait wait = runLeaseWait("captf-m-w0-apply-a1-abc");
  EXPECT_EQ(wait.reason, c::kReasonWaitingForRunLease);
  EXPECT_EQ(wait.message, "the run lease is held by Job captf-m-w0-apply-a1-abc");
  EXPECT_EQ(wait.event_reason, "WaitingForRunLease");
  EXPECT_EQ(wait.event_note, "waiting for Job captf-m-w0-apply-a1-abc to release the run lease");
  EXPECT_EQ(wait.metric, "run_lease");
}

TEST(PassTest, GateWait) {
  EXPECT_FALSE(gateWait(GateVerdict::kProceed, 3, "c1"));
  const auto machines = gateWait(GateVerdict::kWaitForMachineOperations, 3, "c1");
  ASSERT_TRUE(machines);
  EXPECT_EQ(machines->reason, c::kReasonWaitingForMachineOperations);
  EXPECT_EQ(machines->message, "3 machine/pool operations of Cluster c1 are running");
  EXPECT_EQ(machines->event_reason, "WaitingForMachineOperations");
  EXPECT_EQ(machines->event_note, "waiting for machine and pool operations of Cluster c1");
  EXPECT_EQ(machines->metric, "machine_operations");
  const auto cluster = gateWait(GateVerdict::kWaitForClusterOperation, 0, "c1");
  ASSERT_TRUE(cluster);
  EXPECT_EQ(cluster->reason, c::kReasonWaitingForClusterOperation);
  EXPECT_EQ(cluster->message, "an operation of Cluster c1 is running");
  EXPECT_EQ(cluster->event_reason, "WaitingForClusterOperation");
  EXPECT_EQ(cluster->event_note, "waiting for the operation of Cluster c1");
  EXPECT_EQ(cluster->metric, "cluster_operation");
}

TEST(PassTest, GitSourceReason) {
  const struct {
    absl::StatusCode code;
    std::string_view want;
  } cases[] = {
      {absl::StatusCode::kUnauthenticated, c::kReasonGitAuthenticationFailed},
      {absl::StatusCode::kPermissionDenied, c::kReasonGitAuthenticationFailed},
      {absl::StatusCode::kNotFound, c::kReasonGitRefNotFound},
      {absl::StatusCode::kUnavailable, c::kReasonGitUnreachable},
      {absl::StatusCode::kDeadlineExceeded, c::kReasonGitUnreachable},
      {absl::StatusCode::kFailedPrecondition, c::kReasonGitServerNotTrusted},
      {absl::StatusCode::kInvalidArgument, c::kReasonGitCredentialsInvalid},
      {absl::StatusCode::kInternal, c::kReasonGitSourceFailed},
      {absl::StatusCode::kUnknown, c::kReasonGitSourceFailed},
  };
  for (const auto& one : cases) {
    SCOPED_TRACE(absl::StatusCodeToString(one.code));
    EXPECT_EQ(gitSourceReason(one.code), one.want);
  }
}

constexpr char kPinnedDigest[] =
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

Decision runs(Operation op) {
  Decision d;
  d.action = Action::kRunJob;
  d.operation = op;
  d.attempt = 2;
  d.inputs_hash = "h2:one";
  d.job.guard_deletes = op == Operation::kApply;
  return d;
}

JobStart startOf(contract::Role role) {
  JobStart start;
  start.object = {.role = role, .ns = "ns1", .name = "w0"};
  start.object_uid = "uid-1";
  start.cluster_name = "c1";
  start.job_name = "captf-m-w0-apply-a2-abcdef";
  start.traits = testing::traitsOf(role);
  start.source.image = "registry.local/team/module:v1";
  start.durable = workspace::DurableAnnotations{.image = "registry.local/team/module:v1",
                                                .image_digest = kPinnedDigest};
  start.runner_image = "registry.local/captf/runner:1";
  start.credentials_secret = "captf-creds-aws";
  start.credential_env_keys = {"AWS_REGION"};
  start.force_unlock_id = "lock-1";
  start.runner_events = false;
  start.report_address = "https://reports:8443";
  start.report_token_hash = "sha256:t";
  return start;
}

TEST(PassTest, JobBuildRequestCopiesThePassAndTheDecision) {
  const Decision d = runs(Operation::kApply);
  const JobStart start = startOf(contract::Role::kCluster);
  const JobBuildRequest build = jobBuildRequest(d, start);
  EXPECT_EQ(build.object.role, contract::Role::kCluster);
  EXPECT_EQ(build.object.ns, "ns1");
  EXPECT_EQ(build.object.name, "w0");
  EXPECT_EQ(build.object_uid, "uid-1");
  EXPECT_EQ(build.cluster_name, "c1");
  EXPECT_EQ(build.job_name, start.job_name);
  EXPECT_EQ(build.operation, Operation::kApply);
  EXPECT_EQ(build.attempt, 2);
  EXPECT_EQ(build.image, "registry.local/team/module:v1");
  EXPECT_EQ(build.image_reference, "registry.local/team/module:v1");
  EXPECT_EQ(build.image_pull_policy, api::PullPolicy::kIfNotPresent);
  EXPECT_EQ(build.runner_image, "registry.local/captf/runner:1");
  EXPECT_EQ(build.credentials_secret, "captf-creds-aws");
  EXPECT_EQ(build.credential_env_keys, std::vector<std::string>{"AWS_REGION"});
  EXPECT_EQ(build.inputs_hash, "h2:one");
  EXPECT_EQ(build.options, d.job);
  EXPECT_EQ(build.force_unlock_id, "lock-1");
  EXPECT_FALSE(build.runner_events);
  EXPECT_EQ(build.report_address, "https://reports:8443");
  EXPECT_EQ(build.report_token_hash, "sha256:t");
  EXPECT_TRUE(build.restore_chunk_secrets.empty());
  EXPECT_FALSE(build.git.has_value());
}

TEST(PassTest, JobBuildRequestPinsAnImmutableKindsDigest) {
  struct Case {
    std::string name;
    contract::Role role;
    Operation op;
    bool digest_known;
    std::string want_image;
  };
  const std::string pinned = std::string("registry.local/team/module@") + kPinnedDigest;
  const std::vector<Case> cases = {
      {"machine refresh runs the digest of its first apply", contract::Role::kMachine,
       Operation::kRefresh, true, pinned},
      {"machine destroy too", contract::Role::kMachine, Operation::kDestroy, true, pinned},
      {"machine apply runs the image as written", contract::Role::kMachine, Operation::kApply, true,
       "registry.local/team/module:v1"},
      {"machine without a pinned digest: as written", contract::Role::kMachine, Operation::kRefresh,
       false, "registry.local/team/module:v1"},
      {"mutable inputs never pin", contract::Role::kMachinePool, Operation::kRefresh, true,
       "registry.local/team/module:v1"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    JobStart start = startOf(k.role);
    if (!k.digest_known) {
      start.durable->image_digest.reset();
    }
    const JobBuildRequest build = jobBuildRequest(runs(k.op), start);
    EXPECT_EQ(build.image, k.want_image);
    EXPECT_EQ(build.image_reference, "registry.local/team/module:v1");
  }
}

TEST(PassTest, JobBuildRequestOfAGitSourceAndARestore) {
  JobStart start = startOf(contract::Role::kCluster);
  start.source.image.clear();
  start.source.git = api::GitSource{};
  start.source.git->url = "https://git.local/team/modules.git";
  start.source.git->path = "cluster";
  start.source.git->runtime_image = "registry.local/captf/runtime:1";
  start.source.image_pull_policy = api::PullPolicy::kAlways;
  start.git = GitFetch{};
  start.git->url = "https://git.local/team/modules.git";
  start.git->commit = "abc123";
  start.restore = workspace::RestoreInputs{.serial = 4,
                                           .chunk_secrets = {"backup-4", "backup-4-part-1"},
                                           .chunks = 2,
                                           .resources = 7,
                                           .inputs_hash = "h2:backup"};
  const JobBuildRequest build = jobBuildRequest(runs(Operation::kRestore), start);
  EXPECT_EQ(build.image, "registry.local/captf/runtime:1");
  EXPECT_EQ(build.image_reference, "registry.local/captf/runtime:1");
  EXPECT_EQ(build.image_pull_policy, api::PullPolicy::kAlways);
  ASSERT_TRUE(build.git.has_value());
  EXPECT_EQ(build.git->commit, "abc123");
  EXPECT_EQ(build.restore_chunk_secrets, (std::vector<std::string>{"backup-4", "backup-4-part-1"}));
  EXPECT_EQ(build.restore_resources, 7);
  // Annotated on the Job: what bookkeeping adopts once the push succeeded.
  EXPECT_EQ(build.inputs_hash, "h2:backup");
}

} // namespace
} // namespace captf::lifecycle
