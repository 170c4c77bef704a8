#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/plan.h"
#include "manager/lifecycle/decision.h"
#include "test/manager/lifecycle/testing.h"

namespace captf::lifecycle {
namespace {

using api::Operation;
using std::chrono::seconds;
using testing::at;
using testing::job;
using testing::JobSpec;
using testing::kNow;

constexpr const char* kH1 = "h2:one";
constexpr const char* kH2 = "h2:two";

// A provisioned object whose last apply of kH1 succeeded an hour ago, with
// a drift check at the same time; nothing is due for 30 minutes.
DecisionInput base(contract::Role role) {
  DecisionInput in{};
  in.traits = testing::traitsOf(role);
  in.provisioned = true;
  in.state = StateReading::kRead;
  in.state_inputs_hash = kH1;
  in.current_inputs_hash = role == contract::Role::kMachine ? "" : kH1;
  in.schedule.drift_interval = seconds(7200);
  if (role == contract::Role::kMachinePool) {
    in.schedule.membership_refresh_interval = seconds(7200);
    in.observed_replicas = 2;
    in.provider_id_count = 2;
  }
  in.jobs = {job({.op = Operation::kApply, .attempt = 1, .finished = -3600}),
             job({.op = Operation::kDrift, .attempt = 1, .finished = -3600}),
             job({.op = Operation::kRefresh, .attempt = 1, .finished = -3600})};
  in.last_refresh = at(-3600);
  in.last_drift_check = at(-3600);
  in.now = kNow;
  return in;
}

struct Expect {
  Action action = Action::kNone;
  std::optional<Operation> op{};
  Trigger trigger = Trigger::kNone;
  Hold hold = Hold::kNone;
  std::optional<seconds> requeue{};
};

struct DecisionCase {
  std::string name{};
  contract::Role role = contract::Role::kCluster;
  std::function<void(DecisionInput&)> setup;
  Expect expect{};
  std::function<void(const Decision&)> check = nullptr;
};

Expect run(Operation op, Trigger trigger) {
  return Expect{.action = Action::kRunJob, .op = op, .trigger = trigger};
}
Expect held(Trigger trigger, Hold hold, std::optional<seconds> requeue) {
  return Expect{.trigger = trigger, .hold = hold, .requeue = requeue};
}

void runCases(const std::vector<DecisionCase>& cases) {
  for (const DecisionCase& c : cases) {
    SCOPED_TRACE(c.name);
    DecisionInput in = base(c.role);
    if (c.setup) {
      c.setup(in);
    }
    const Decision d = decideNextOperation(in);
    EXPECT_EQ(d.action, c.expect.action);
    EXPECT_EQ(d.operation, c.expect.op);
    EXPECT_EQ(triggerName(d.trigger), triggerName(c.expect.trigger));
    EXPECT_EQ(holdName(d.hold), holdName(c.expect.hold));
    EXPECT_EQ(d.requeue_after, c.expect.requeue);
    if (d.action == Action::kRunJob) {
      EXPECT_EQ(d.attempt, nextAttempt(in.jobs, *d.operation));
    }
    if (c.check) {
      c.check(d);
    }
  }
}

TEST(DecisionTest, PreconditionsAndRestore) {
  runCases({
      {.name = "an active Job holds everything",
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(
                 job({.op = Operation::kRefresh, .attempt = 2, .outcome = JobOutcome::kActive}));
             in.current_inputs_hash = kH2;
           },
       .expect = held(Trigger::kNone, Hold::kActiveJob, std::nullopt)},
      {.name = "paused starts nothing, not even a restore or destroy",
       .setup =
           [](DecisionInput& in) {
             in.paused = true;
             in.deleting = true;
             in.restore_request = "5";
           },
       .expect = held(Trigger::kNone, Hold::kPaused, std::nullopt)},
      {.name = "row 1: restore of an existing backup wins over an input change",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "5";
             in.backup_serials = {4, 5};
             in.current_inputs_hash = kH2;
           },
       .expect = run(Operation::kRestore, Trigger::kRestore),
       .check =
           [](const Decision& d) {
             EXPECT_EQ(d.job.restore_serial, 5);
             EXPECT_EQ(d.inputs_hash, "");
             EXPECT_EQ(d.tick, "serial=5");
             EXPECT_EQ(d.attempt, 1);
           }},
      {.name = "row 1: not a serial",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "five";
             in.backup_serials = {5};
           },
       .expect = held(Trigger::kRestore, Hold::kRestoreBackupNotFound, std::nullopt)},
      {.name = "row 1: zero is not a serial",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "0";
             in.backup_serials = {0};
           },
       .expect = held(Trigger::kRestore, Hold::kRestoreBackupNotFound, std::nullopt)},
      {.name = "row 1: no complete backup with that serial",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "7";
             in.backup_serials = {5, 6};
           },
       .expect = held(Trigger::kRestore, Hold::kRestoreBackupNotFound, std::nullopt)},
      {.name = "row 1: a failed restore of the serial is not retried",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "5";
             in.backup_serials = {5};
             in.jobs.push_back(job({.op = Operation::kRestore,
                                    .attempt = 1,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -60,
                                    .restore_serial = 5}));
           },
       .expect = held(Trigger::kRestore, Hold::kRestoreFailed, std::nullopt)},
      {.name = "row 1: a failed restore of another serial does not hold a new one",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "6";
             in.backup_serials = {5, 6};
             in.jobs.push_back(job({.op = Operation::kRestore,
                                    .attempt = 1,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -60,
                                    .restore_serial = 5}));
           },
       .expect = run(Operation::kRestore, Trigger::kRestore),
       .check = [](const Decision& d) { EXPECT_EQ(d.attempt, 2); }},
      {.name = "row 1: an interrupted restore is retried at once",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "5";
             in.backup_serials = {5};
             in.jobs.push_back(job({.op = Operation::kRestore,
                                    .attempt = 1,
                                    .outcome = JobOutcome::kInterrupted,
                                    .finished = -1,
                                    .restore_serial = 5}));
           },
       .expect = run(Operation::kRestore, Trigger::kRestore)},
      {.name = "row 1: the annotation left over from a succeeded restore is removed",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "5";
             in.backup_serials = {5};
             in.jobs.push_back(job({.op = Operation::kRestore,
                                    .attempt = 1,
                                    .outcome = JobOutcome::kSucceeded,
                                    .finished = -10,
                                    .restore_serial = 5}));
           },
       .expect = held(Trigger::kRestore, Hold::kRestoreDone, std::nullopt),
       .check = [](const Decision& d) { EXPECT_TRUE(d.remove_restore_annotation); }},
      {.name = "row 1: the same serial requested again after other runs restores again",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "5";
             in.backup_serials = {5};
             in.jobs.push_back(job({.op = Operation::kRestore,
                                    .attempt = 1,
                                    .outcome = JobOutcome::kSucceeded,
                                    .finished = -7200,
                                    .restore_serial = 5}));
           },
       .expect = run(Operation::kRestore, Trigger::kRestore),
       .check = [](const Decision& d) { EXPECT_FALSE(d.remove_restore_annotation); }},
      {.name = "row 1/2: deletion wins over a pending restore",
       .setup =
           [](DecisionInput& in) {
             in.restore_request = "5";
             in.backup_serials = {5};
             in.deleting = true;
           },
       .expect = run(Operation::kDestroy, Trigger::kDestroy)},
  });
}

TEST(DecisionTest, Deletion) {
  runCases({
      {.name = "row 2: destroy from the durable inputs",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.current_inputs_hash = "";
             in.destroy_inputs_hash = kH2;
           },
       .expect = run(Operation::kDestroy, Trigger::kDestroy),
       .check =
           [](const Decision& d) {
             EXPECT_EQ(d.inputs_hash, kH2);
             EXPECT_FALSE(d.job.guard_deletes);
           }},
      {.name = "row 2: destroy names the state's hash when no other is known",
       .role = contract::Role::kMachine,
       .setup = [](DecisionInput& in) { in.deleting = true; },
       .expect = run(Operation::kDestroy, Trigger::kDestroy),
       .check = [](const Decision& d) { EXPECT_EQ(d.inputs_hash, kH1); }},
      {.name = "row 2: never had state: cleanup at once",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kNotFound;
             in.provisioned = false;
             in.jobs.clear();
           },
       .expect = Expect{.action = Action::kCleanup, .trigger = Trigger::kDestroy},
       .check = [](const Decision& d) { EXPECT_FALSE(d.orphaned); }},
      // docs/behaviour/state.md#a-deleting-object-without-state: an object
      // that had state never leaves without a destroy unless told to.
      {.name = "row 2: provisioned but state lost: held, nothing orphaned",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kNotFound;
           },
       .expect = held(Trigger::kDestroy, Hold::kStateLost, std::nullopt)},
      {.name = "row 2: never latched, but a state was observed: held",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kNotFound;
             in.provisioned = false;
             in.jobs.clear();
             in.state_observed = true;
           },
       .expect = held(Trigger::kDestroy, Hold::kStateLost, std::nullopt)},
      {.name = "row 2: never latched, but an apply succeeded: held",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kNotFound;
             in.provisioned = false;
             in.jobs = {job({.op = Operation::kApply, .attempt = 1, .finished = -60})};
           },
       .expect = held(Trigger::kDestroy, Hold::kStateLost, std::nullopt)},
      {.name = "row 2: state lost, the orphan accepted: cleanup, said so",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kNotFound;
             in.orphan_accepted = true;
           },
       .expect = Expect{.action = Action::kCleanup, .trigger = Trigger::kDestroy},
       .check = [](const Decision& d) { EXPECT_TRUE(d.orphaned); }},
      {.name = "row 2: state lost, a backup asked for: restored before the destroy",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kNotFound;
             in.restore_request = "5";
             in.backup_serials = {5};
           },
       .expect = run(Operation::kRestore, Trigger::kRestore)},
      {.name = "row 2: state lost, the backup asked for does not exist: held",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kNotFound;
             in.restore_request = "6";
             in.backup_serials = {5};
           },
       .expect = held(Trigger::kRestore, Hold::kRestoreBackupNotFound, std::nullopt)},
      {.name = "row 2: destroy succeeded: cleanup",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.jobs.push_back(job({.op = Operation::kDestroy, .attempt = 1, .finished = -5}));
           },
       .expect = Expect{.action = Action::kCleanup, .trigger = Trigger::kDestroy}},
      {.name = "row 2: destroy failed 20s ago: backoff 1m",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.jobs.push_back(job({.op = Operation::kDestroy,
                                    .attempt = 1,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -20}));
           },
       .expect = held(Trigger::kDestroy, Hold::kRetryBackoff, seconds(40))},
      {.name = "row 2: destroy failed 2m ago: retried",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.jobs.push_back(job({.op = Operation::kDestroy,
                                    .attempt = 1,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -120}));
           },
       .expect = run(Operation::kDestroy, Trigger::kDestroy),
       .check = [](const Decision& d) { EXPECT_EQ(d.attempt, 2); }},
      {.name = "row 2: a machine without durable inputs cannot destroy",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.destroy_inputs_available = false;
           },
       .expect = held(Trigger::kDestroy, Hold::kDestroyInputsMissing, seconds(60))},
      {.name = "row 2: unreadable state holds the destroy",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kUnreadable;
           },
       .expect = held(Trigger::kDestroy, Hold::kStateUnreadable, seconds(60))},
      {.name = "row 2: unreadable state, a backup asked for: restored before the destroy",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kUnreadable;
             in.restore_request = "5";
             in.backup_serials = {5};
           },
       .expect = run(Operation::kRestore, Trigger::kRestore),
       .check = [](const Decision& d) { EXPECT_EQ(d.job.restore_serial, 5); }},
      {.name = "row 2: unreadable state, the backup asked for does not exist: held",
       .setup =
           [](DecisionInput& in) {
             in.deleting = true;
             in.state = StateReading::kUnreadable;
             in.restore_request = "6";
             in.backup_serials = {5};
           },
       .expect = held(Trigger::kRestore, Hold::kRestoreBackupNotFound, std::nullopt)},
  });
}

TEST(DecisionTest, StateGates) {
  runCases({
      {.name = "unreadable state: no Job",
       .setup =
           [](DecisionInput& in) {
             in.state = StateReading::kUnreadable;
             in.current_inputs_hash = kH2;
           },
       .expect = held(Trigger::kNone, Hold::kStateUnreadable, seconds(60))},
      {.name = "provisioned and state missing: StateLost, no apply",
       .setup = [](DecisionInput& in) { in.state = StateReading::kNotFound; },
       .expect = held(Trigger::kNone, Hold::kStateLost, std::nullopt)},
      {.name = "provisioned machine without an inputs hash: StateLost",
       .role = contract::Role::kMachine,
       .setup = [](DecisionInput& in) { in.state_inputs_hash = ""; },
       .expect = held(Trigger::kNone, Hold::kStateLost, std::nullopt)},
  });
}

TEST(DecisionTest, ApplyRows) {
  runCases({
      {.name = "row 3: first apply of a cluster is guarded",
       .setup =
           [](DecisionInput& in) {
             in.provisioned = false;
             in.state = StateReading::kNotFound;
             in.jobs.clear();
             in.apply_policy = api::ApplyPolicy::kManual;
           },
       .expect = run(Operation::kApply, Trigger::kFirstApply),
       .check =
           [](const Decision& d) {
             EXPECT_TRUE(d.job.guard_deletes);
             EXPECT_EQ(d.inputs_hash, kH1);
             EXPECT_EQ(d.job.expect_plan, "");
             EXPECT_EQ(d.attempt, 1);
           }},
      {.name = "row 3: first apply of a machine",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.provisioned = false;
             in.state = StateReading::kNotFound;
             in.current_inputs_hash = kH2;
             in.jobs.clear();
           },
       .expect = run(Operation::kApply, Trigger::kFirstApply),
       .check =
           [](const Decision& d) {
             EXPECT_FALSE(d.job.guard_deletes);
             EXPECT_EQ(d.inputs_hash, kH2);
           }},
      {.name = "row 3: a failed first apply waits for its backoff",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.provisioned = false;
             in.state = StateReading::kNotFound;
             in.current_inputs_hash = kH1;
             in.jobs = {job({.op = Operation::kApply,
                             .attempt = 1,
                             .outcome = JobOutcome::kFailed,
                             .finished = -90}),
                        job({.op = Operation::kApply,
                             .attempt = 2,
                             .outcome = JobOutcome::kFailed,
                             .finished = -30})};
           },
       .expect = held(Trigger::kFirstApply, Hold::kRetryBackoff, seconds(90))},
      {.name = "row 4: unprovisioned machine state without a hash re-applies",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.provisioned = false;
             in.state_inputs_hash = "";
             in.current_inputs_hash = kH1;
           },
       .expect = run(Operation::kApply, Trigger::kNoInputsHash)},
      {.name = "row 4: provisioned pool state without a hash re-applies, unguarded",
       .role = contract::Role::kMachinePool,
       .setup = [](DecisionInput& in) { in.state_inputs_hash = ""; },
       .expect = run(Operation::kApply, Trigger::kNoInputsHash),
       .check = [](const Decision& d) { EXPECT_FALSE(d.job.guard_deletes); }},
      {.name = "row 5: cluster inputs changed: guarded apply naming the approval",
       .setup =
           [](DecisionInput& in) {
             in.current_inputs_hash = kH2;
             in.approve_destructive_plan = kH2;
           },
       .expect = run(Operation::kApply, Trigger::kInputsChanged),
       .check =
           [](const Decision& d) {
             EXPECT_TRUE(d.job.guard_deletes);
             EXPECT_EQ(d.job.allow_deletes_hash, kH2);
             EXPECT_EQ(d.inputs_hash, kH2);
             EXPECT_EQ(d.attempt, 2);
             EXPECT_EQ(d.tick, "");
           }},
      {.name = "row 5: pool inputs changed: unguarded apply",
       .role = contract::Role::kMachinePool,
       .setup = [](DecisionInput& in) { in.current_inputs_hash = kH2; },
       .expect = run(Operation::kApply, Trigger::kInputsChanged),
       .check = [](const Decision& d) { EXPECT_FALSE(d.job.guard_deletes); }},
      {.name = "row 5: a machine never compares hashes after provisioning",
       .role = contract::Role::kMachine,
       .setup = [](DecisionInput& in) { in.current_inputs_hash = kH2; },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(3600))},
      {.name = "row 6: newest apply failed: apply again although hashes match",
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -600}));
           },
       .expect = run(Operation::kApply, Trigger::kRetryFailedApply),
       .check = [](const Decision& d) { EXPECT_EQ(d.attempt, 3); }},
      {.name = "row 6: within the backoff of the failure",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -10}));
           },
       .expect = held(Trigger::kRetryFailedApply, Hold::kRetryBackoff, seconds(50))},
      {.name = "row 6: an interrupted apply is retried without backoff",
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -20}));
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 3,
                                    .outcome = JobOutcome::kInterrupted,
                                    .finished = -5}));
           },
       .expect = run(Operation::kApply, Trigger::kRetryFailedApply)},
      {.name = "row 6: a blocked apply is not retried",
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kBlocked,
                                    .finished = -600}));
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(3600))},
      {.name = "row 6: a plan-changed apply is not retried",
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kPlanChanged,
                                    .finished = -600}));
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(3600))},
      {.name = "row 6: a failed drift remediation is not row 6",
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -600,
                                    .remediation = true}));
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(3600))},
      {.name = "row 7: drift found, Remediate: remediation apply",
       .setup =
           [](DecisionInput& in) {
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
           },
       .expect = run(Operation::kApply, Trigger::kDriftRemediation),
       .check =
           [](const Decision& d) {
             EXPECT_TRUE(d.job.drift_remediation);
             EXPECT_TRUE(d.job.guard_deletes);
             EXPECT_EQ(d.tick, "job-drift-1");
           }},
      {.name = "row 7: Report never remediates",
       .role = contract::Role::kMachinePool,
       .setup = [](DecisionInput& in) { in.drift_pending = true; },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(3600))},
      {.name = "row 7: remediation failures below the cap are retried",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
             for (int i = 0; i < 2; ++i) {
               in.jobs.push_back(job({.op = Operation::kApply,
                                      .attempt = 2 + i,
                                      .outcome = JobOutcome::kFailed,
                                      .finished = -1800 + i,
                                      .remediation = true}));
             }
           },
       .expect = run(Operation::kApply, Trigger::kDriftRemediation),
       .check = [](const Decision& d) { EXPECT_FALSE(d.remediation_cap_reached); }},
      {.name = "row 7: the cap (failed history limit) stops remediation until the next check",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
             for (int i = 0; i < 3; ++i) {
               in.jobs.push_back(job({.op = Operation::kApply,
                                      .attempt = 2 + i,
                                      .outcome = JobOutcome::kFailed,
                                      .finished = -1800 + i,
                                      .remediation = true}));
             }
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(3600)),
       .check = [](const Decision& d) { EXPECT_TRUE(d.remediation_cap_reached); }},
      {.name = "row 7: blocked and plan-changed remediations do not count to the cap",
       .role = contract::Role::kCluster,
       .setup =
           [](DecisionInput& in) {
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
             in.failed_jobs_history_limit = 1;
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kPlanChanged,
                                    .finished = -1800,
                                    .inputs_hash = kH2,
                                    .remediation = true}));
           },
       .expect = run(Operation::kApply, Trigger::kDriftRemediation)},
      {.name = "row 7: an apply that succeeded after the check resolved the drift",
       .role = contract::Role::kCluster,
       .setup =
           [](DecisionInput& in) {
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
             in.jobs.push_back(job(
                 {.op = Operation::kApply, .attempt = 2, .finished = -1800, .remediation = true}));
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(5400))},
      {.name = "row 7: failures before the last drift check do not count",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
             for (int i = 0; i < 3; ++i) {
               in.jobs.push_back(job({.op = Operation::kApply,
                                      .attempt = 2 + i,
                                      .outcome = JobOutcome::kFailed,
                                      .finished = -5000 + i,
                                      .remediation = true}));
             }
           },
       .expect = run(Operation::kApply, Trigger::kDriftRemediation)},
      {.name = "inputs too large: no apply",
       .setup =
           [](DecisionInput& in) {
             in.current_inputs_hash = kH2;
             in.inputs_too_large = true;
           },
       .expect = held(Trigger::kInputsChanged, Hold::kInputsTooLarge, seconds(600))},
      {.name = "an apply without current inputs runs nothing",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.provisioned = false;
             in.state = StateReading::kNotFound;
             in.current_inputs_hash = "";
           },
       .expect = held(Trigger::kFirstApply, Hold::kInputsUnavailable, std::nullopt)},
  });
}

TEST(DecisionTest, DestructiveGuardOverlay) {
  const auto blocked_h2 = [](DecisionInput& in) {
    in.current_inputs_hash = kH2;
    in.jobs.push_back(job({.op = Operation::kApply,
                           .attempt = 2,
                           .outcome = JobOutcome::kBlocked,
                           .finished = -60,
                           .inputs_hash = kH2}));
  };
  runCases({
      {.name = "blocked input change waits for its approval; schedules pause",
       .setup =
           [&](DecisionInput& in) {
             blocked_h2(in);
             in.last_drift_check = at(-10000); // drift would be due
           },
       .expect = held(Trigger::kInputsChanged, Hold::kDestructivePlanBlocked, seconds(600))},
      {.name = "an approval of another hash does not release it",
       .setup =
           [&](DecisionInput& in) {
             blocked_h2(in);
             in.approve_destructive_plan = kH1;
           },
       .expect = held(Trigger::kInputsChanged, Hold::kDestructivePlanBlocked, seconds(600))},
      {.name = "the approval naming the hash applies at once",
       .setup =
           [&](DecisionInput& in) {
             blocked_h2(in);
             in.approve_destructive_plan = kH2;
           },
       .expect = run(Operation::kApply, Trigger::kInputsChanged),
       .check =
           [](const Decision& d) {
             EXPECT_EQ(d.job.allow_deletes_hash, kH2);
             EXPECT_EQ(d.attempt, 3);
           }},
      {.name = "new inputs start a new guarded apply at once",
       .setup =
           [&](DecisionInput& in) {
             blocked_h2(in);
             in.current_inputs_hash = "h2:three";
           },
       .expect = run(Operation::kApply, Trigger::kInputsChanged)},
      {.name = "a failure after the approved apply backs off",
       .setup =
           [&](DecisionInput& in) {
             blocked_h2(in);
             in.approve_destructive_plan = kH2;
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 3,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -10,
                                    .inputs_hash = kH2}));
           },
       .expect = held(Trigger::kInputsChanged, Hold::kRetryBackoff, seconds(50))},
      {.name = "a blocked remediation keeps drift checks running",
       .setup =
           [](DecisionInput& in) {
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kBlocked,
                                    .finished = -60,
                                    .remediation = true}));
             in.last_drift_check = at(-8000);
             in.jobs[0].finished = at(-8000);
             in.jobs[1].finished = at(-8000);
           },
       .expect = run(Operation::kDrift, Trigger::kDriftInterval)},
      {.name = "a blocked remediation with nothing due requeues at the earlier time",
       .setup =
           [](DecisionInput& in) {
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kBlocked,
                                    .finished = -60,
                                    .remediation = true}));
             in.last_drift_check = at(-7000);
             in.jobs[1].finished = at(-7000);
             in.jobs[0].finished = at(-7000);
           },
       .expect = held(Trigger::kDriftRemediation, Hold::kDestructivePlanBlocked, seconds(200))},
  });
}

TEST(DecisionTest, ManualPolicyOverlay) {
  const std::string empty_plan = contract::planHash({});
  const auto manual = [](DecisionInput& in) {
    in.apply_policy = api::ApplyPolicy::kManual;
    in.current_inputs_hash = kH2;
  };
  const auto preview = [](std::string inputs, std::string plan_hash) {
    api::PlanPreview p{};
    p.inputs_hash = std::move(inputs);
    p.plan_hash = std::move(plan_hash);
    p.job = "captf-c-x-plan-a1-abcdef";
    return p;
  };
  runCases({
      {.name = "Manual: an input change runs a plan Job",
       .setup = manual,
       .expect = run(Operation::kPlan, Trigger::kInputsChanged),
       .check =
           [](const Decision& d) {
             EXPECT_FALSE(d.job.guard_deletes);
             EXPECT_EQ(d.inputs_hash, kH2);
             EXPECT_EQ(d.attempt, 1);
           }},
      {.name = "Manual: the plan awaits approval; schedules pause",
       .setup =
           [&](DecisionInput& in) {
             manual(in);
             in.plan = preview(kH2, "p1:abc");
             in.last_drift_check = at(-10000);
           },
       .expect = held(Trigger::kInputsChanged, Hold::kPlanAwaitingApproval, seconds(600))},
      {.name = "Manual: a stale approval for another plan does not apply",
       .setup =
           [&](DecisionInput& in) {
             manual(in);
             in.plan = preview(kH2, "p1:abc");
             in.approve_plan = "p1:old";
           },
       .expect = held(Trigger::kInputsChanged, Hold::kPlanAwaitingApproval, seconds(600))},
      {.name = "Manual: the new plan of an approved apply whose plan changed awaits approval",
       .setup =
           [&](DecisionInput& in) {
             manual(in);
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kPlanChanged,
                                    .finished = -60,
                                    .inputs_hash = kH2}));
             in.plan = preview(kH2, "p1:new");
             in.plan->job = "job-apply-2";
             in.approve_plan = "p1:abc";
           },
       .expect = held(Trigger::kInputsChanged, Hold::kPlanChanged, seconds(600)),
       .check = [](const Decision& d) { EXPECT_EQ(reasonName(d), "plan_changed"); }},
      {.name = "Manual: approved: apply expecting that plan, no destructive guard",
       .setup =
           [&](DecisionInput& in) {
             manual(in);
             in.plan = preview(kH2, "p1:abc");
             in.approve_plan = "p1:abc";
           },
       .expect = run(Operation::kApply, Trigger::kInputsChanged),
       .check =
           [](const Decision& d) {
             EXPECT_EQ(d.job.expect_plan, "p1:abc");
             EXPECT_FALSE(d.job.guard_deletes);
           }},
      {.name = "Manual: an empty plan needs no approval",
       .setup =
           [&](DecisionInput& in) {
             manual(in);
             in.plan = preview(kH2, empty_plan);
           },
       .expect = run(Operation::kApply, Trigger::kInputsChanged),
       .check = [&](const Decision& d) { EXPECT_EQ(d.job.expect_plan, empty_plan); }},
      {.name = "Manual: a plan of older inputs is replaced by a new plan",
       .setup =
           [&](DecisionInput& in) {
             manual(in);
             in.plan = preview(kH1, "p1:abc");
             in.approve_plan = "p1:abc";
           },
       .expect = run(Operation::kPlan, Trigger::kInputsChanged)},
      {.name = "Manual: a failed plan Job backs off",
       .setup =
           [&](DecisionInput& in) {
             manual(in);
             in.jobs.push_back(job({.op = Operation::kPlan,
                                    .attempt = 1,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -15,
                                    .inputs_hash = kH2}));
           },
       .expect = held(Trigger::kInputsChanged, Hold::kRetryBackoff, seconds(45))},
      {.name = "Manual: a failed approved apply is retried with the same plan",
       .setup =
           [&](DecisionInput& in) {
             in.apply_policy = api::ApplyPolicy::kManual;
             in.plan = preview(kH1, "p1:abc");
             in.approve_plan = "p1:abc";
             in.jobs.push_back(job({.op = Operation::kApply,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -600}));
           },
       .expect = run(Operation::kApply, Trigger::kRetryFailedApply),
       .check = [](const Decision& d) { EXPECT_EQ(d.job.expect_plan, "p1:abc"); }},
      {.name = "Manual: drift remediation plans first",
       .setup =
           [](DecisionInput& in) {
             in.apply_policy = api::ApplyPolicy::kManual;
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
           },
       .expect = run(Operation::kPlan, Trigger::kDriftRemediation),
       .check = [](const Decision& d) { EXPECT_FALSE(d.job.drift_remediation); }},
      {.name = "Manual: an approved remediation apply is annotated",
       .setup =
           [&](DecisionInput& in) {
             in.apply_policy = api::ApplyPolicy::kManual;
             in.drift_pending = true;
             in.schedule.drift_action = api::DriftAction::kRemediate;
             in.plan = preview(kH1, "p1:fix");
             in.approve_plan = "p1:fix";
           },
       .expect = run(Operation::kApply, Trigger::kDriftRemediation),
       .check =
           [](const Decision& d) {
             EXPECT_TRUE(d.job.drift_remediation);
             EXPECT_EQ(d.job.expect_plan, "p1:fix");
           }},
      {.name = "switching back to Automatic applies what waited, guarded",
       .setup =
           [&](DecisionInput& in) {
             in.current_inputs_hash = kH2;
             in.plan = preview(kH2, "p1:abc");
             in.approve_plan = "p1:abc";
           },
       .expect = run(Operation::kApply, Trigger::kInputsChanged),
       .check =
           [](const Decision& d) {
             EXPECT_TRUE(d.job.guard_deletes);
             EXPECT_EQ(d.job.expect_plan, "");
             EXPECT_TRUE(d.clear_plan);
           }},
      {.name = "Automatic with nothing to apply still clears a plan left from Manual",
       .setup = [&](DecisionInput& in) { in.plan = preview(kH1, "p1:abc"); },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(3600)),
       .check = [](const Decision& d) { EXPECT_TRUE(d.clear_plan); }},
      {.name = "Manual keeps its plan",
       .setup =
           [&](DecisionInput& in) {
             manual(in);
             in.plan = preview(kH2, "p1:abc");
           },
       .expect = held(Trigger::kInputsChanged, Hold::kPlanAwaitingApproval, seconds(600)),
       .check = [](const Decision& d) { EXPECT_FALSE(d.clear_plan); }},
      {.name = "Manual does not gate pools",
       .role = contract::Role::kMachinePool,
       .setup = manual,
       .expect = run(Operation::kApply, Trigger::kInputsChanged)},
  });
}

TEST(DecisionTest, Schedules) {
  runCases({
      {.name = "schedule 1: machine apply not yet followed by a refresh",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.provisioned = false;
             in.jobs.push_back(job({.op = Operation::kApply, .attempt = 2, .finished = -5}));
           },
       .expect = run(Operation::kRefresh, Trigger::kPostApplyRefresh),
       .check =
           [](const Decision& d) {
             EXPECT_EQ(d.inputs_hash, kH1);
             EXPECT_EQ(d.tick, "job-refresh-1");
             EXPECT_EQ(d.attempt, 2);
           }},
      {.name = "schedule 1: a definite apply reading stands in for the refresh",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply, .attempt = 2, .finished = -5}));
             in.last_refresh = at(-5);
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(7195))},
      {.name = "schedule 1: clusters want no post-apply refresh",
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply, .attempt = 2, .finished = -5}));
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(7195))},
      {.name = "schedule 1: pool post-apply refresh",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply, .attempt = 2, .finished = -5}));
           },
       .expect = run(Operation::kRefresh, Trigger::kPostApplyRefresh)},
      {.name = "schedule 2: pool membership converging, 30s elapsed",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.observed_replicas = 3;
             in.last_refresh = at(-30);
             in.jobs[2].finished = at(-30);
           },
       .expect = run(Operation::kRefresh, Trigger::kMembershipConverging)},
      {.name = "schedule 2: converging, 10s elapsed: requeue with jitter",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.observed_replicas = 3;
             in.last_refresh = at(-10);
             in.jobs[2].finished = at(-10);
             in.jitter = Jitter{0.5}; // 30s × 5% = 1s
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(21))},
      {.name = "schedule 2: the membership interval when shorter than 30s",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.observed_replicas = 3;
             in.schedule.membership_refresh_interval = seconds(15);
             in.last_refresh = at(-16);
             in.jobs[2].finished = at(-16);
           },
       .expect = run(Operation::kRefresh, Trigger::kMembershipConverging)},
      {.name = "schedule 3: pending health, third reading: 2m",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.pending_refreshes = 3;
             in.last_refresh = at(-100);
             in.jobs[2].finished = at(-100);
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(20))},
      {.name = "schedule 3: pending health, 2m elapsed",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.pending_refreshes = 3;
             in.last_refresh = at(-120);
             in.jobs[2].finished = at(-120);
           },
       .expect = run(Operation::kRefresh, Trigger::kHealthPending)},
      {.name = "schedule 3: pending pool: 30s flat",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.pending_refreshes = 5;
             in.last_refresh = at(-30);
             in.jobs[2].finished = at(-30);
           },
       .expect = run(Operation::kRefresh, Trigger::kHealthPending)},
      {.name = "schedule 3: drift disabled stops a provisioned cluster's health samples",
       .setup =
           [](DecisionInput& in) {
             in.pending_refreshes = 1;
             in.schedule.drift_interval.reset();
             in.schedule.health_samples_disabled = true;
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, std::nullopt)},
      {.name = "schedule 3: but not before provisioning",
       .setup =
           [](DecisionInput& in) {
             in.provisioned = false;
             in.pending_refreshes = 1;
             in.schedule.drift_interval.reset();
             in.schedule.health_samples_disabled = true;
           },
       .expect = run(Operation::kRefresh, Trigger::kHealthPending)},
      {.name = "schedule 4: pool membership interval elapsed",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.schedule.membership_refresh_interval = seconds(60);
             in.last_refresh = at(-61);
             in.jobs[2].finished = at(-61);
           },
       .expect = run(Operation::kRefresh, Trigger::kMembershipInterval)},
      {.name = "schedule 5: machine health checks with annotateMachine",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.schedule.annotate_machine = true;
             in.schedule.health_check_interval = seconds(300);
             in.last_refresh = at(-300);
             in.jobs[2].finished = at(-300);
           },
       .expect = run(Operation::kRefresh, Trigger::kHealthCheckInterval)},
      {.name = "schedule 6: drift interval elapsed",
       .setup = [](DecisionInput& in) { in.schedule.drift_interval = seconds(3600); },
       .expect = run(Operation::kDrift, Trigger::kDriftInterval),
       .check =
           [](const Decision& d) {
             EXPECT_EQ(d.tick, "job-drift-1");
             EXPECT_EQ(d.attempt, 2);
             EXPECT_EQ(d.inputs_hash, kH1);
           }},
      {.name = "schedule 6: jitter delays the drift check (10% × 0.5 of 1h = 180s)",
       .setup =
           [](DecisionInput& in) {
             in.schedule.drift_interval = seconds(3600);
             in.jitter = Jitter{0.5};
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(180))},
      {.name = "schedule 6: first drift check one interval after the last apply",
       .setup =
           [](DecisionInput& in) {
             in.jobs = {job({.op = Operation::kApply, .attempt = 1, .finished = -600})};
             in.last_drift_check.reset();
             in.last_refresh.reset();
             in.schedule.drift_interval = seconds(1800);
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(1200))},
      {.name = "schedule 6: an apply after the last check restarts the interval",
       .setup =
           [](DecisionInput& in) {
             in.jobs.push_back(job({.op = Operation::kApply, .attempt = 2, .finished = -100}));
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(7100))},
      {.name = "schedule 6: a failing drift backs off",
       .setup =
           [](DecisionInput& in) {
             in.schedule.drift_interval = seconds(3600);
             in.jobs.push_back(job({.op = Operation::kDrift,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -30}));
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, seconds(30))},
      {.name = "schedule 7: drift disabled and nothing else: no timed requeue",
       .setup =
           [](DecisionInput& in) {
             in.schedule.drift_interval.reset();
             in.schedule.health_samples_disabled = true;
           },
       .expect = held(Trigger::kNone, Hold::kNotDue, std::nullopt)},
      {.name = "first due wins: converging before the membership interval",
       .role = contract::Role::kMachinePool,
       .setup =
           [](DecisionInput& in) {
             in.observed_replicas = 3;
             in.schedule.membership_refresh_interval = seconds(60);
             in.last_refresh = at(-100);
             in.jobs[2].finished = at(-100);
           },
       .expect = run(Operation::kRefresh, Trigger::kMembershipConverging)},
      {.name = "a refresh backoff lets a due drift run",
       .role = contract::Role::kMachine,
       .setup =
           [](DecisionInput& in) {
             in.pending_refreshes = 1;
             in.jobs.push_back(job({.op = Operation::kRefresh,
                                    .attempt = 2,
                                    .outcome = JobOutcome::kFailed,
                                    .finished = -10}));
             in.schedule.drift_interval = seconds(60);
           },
       .expect = run(Operation::kDrift, Trigger::kDriftInterval)},
      {.name = "schedules of a mutable kind with too large inputs hold",
       .setup =
           [](DecisionInput& in) {
             in.schedule.drift_interval = seconds(60);
             in.inputs_too_large = true;
           },
       .expect = held(Trigger::kDriftInterval, Hold::kInputsTooLarge, seconds(600))},
  });
}

// The series of captf_last_success_timestamp_seconds that exist
// (docs/runbooks/CAPTFNoRecentSuccess.md): only for readings that recur.
TEST(DecisionTest, RecurringReadingsAreTheScheduledOnesOnly) {
  const auto readings = [](contract::Role role, const std::function<void(DecisionInput&)>& setup) {
    DecisionInput in = base(role);
    in.schedule.health_check_interval.reset();
    setup(in);
    return recurringReadings(in);
  };
  const auto none = [](DecisionInput&) {};
  using R = RecurringReadings;
  // A cluster or a machine: drift on its interval; a refresh only with a
  // reason to recur (the post-apply refresh is once).
  EXPECT_EQ(readings(contract::Role::kCluster, none), (R{.drift = true, .refresh = false}));
  EXPECT_EQ(readings(contract::Role::kMachine, none), (R{.drift = true, .refresh = false}));
  // Drift off.
  EXPECT_EQ(readings(contract::Role::kMachine,
                     [](DecisionInput& in) {
                       in.schedule.drift_interval.reset();
                       in.schedule.health_samples_disabled = true;
                     }),
            (R{}));
  // annotateMachine: health checks refresh, with drift off too.
  EXPECT_EQ(readings(contract::Role::kMachine,
                     [](DecisionInput& in) {
                       in.schedule.drift_interval.reset();
                       in.schedule.health_check_interval = seconds(300);
                     }),
            (R{.drift = false, .refresh = true}));
  // Pending health backs off with refreshes, unless drift is off.
  EXPECT_EQ(readings(contract::Role::kCluster, [](DecisionInput& in) { in.pending_refreshes = 2; }),
            (R{.drift = true, .refresh = true}));
  EXPECT_EQ(readings(contract::Role::kCluster,
                     [](DecisionInput& in) {
                       in.pending_refreshes = 2;
                       in.schedule.drift_interval.reset();
                       in.schedule.health_samples_disabled = true;
                     }),
            (R{}));
  // A pool refreshes its membership always.
  EXPECT_EQ(readings(contract::Role::kMachinePool, none), (R{.drift = true, .refresh = true}));
  // A machine whose health still reads `pending` after its apply (not
  // provisioned) is refreshed on the backoff, with drift off too, and not
  // once it has settled without a recurring refresh.
  const auto pending = [](DecisionInput& in) {
    in.provisioned = false;
    in.pending_refreshes = 1;
    in.schedule.drift_interval.reset();
    in.schedule.health_samples_disabled = true;
  };
  EXPECT_EQ(readings(contract::Role::kMachine, pending), (R{.drift = false, .refresh = true}));
  EXPECT_EQ(readings(contract::Role::kMachine,
                     [&](DecisionInput& in) {
                       pending(in);
                       in.provisioned = true;
                       in.pending_refreshes = 0;
                     }),
            (R{}));
  // Nothing while paused or deleting.
  for (auto stop : std::vector<std::function<void(DecisionInput&)>>{
           [](DecisionInput& in) { in.paused = true; },
           [](DecisionInput& in) { in.deleting = true; }}) {
    for (contract::Role role :
         {contract::Role::kCluster, contract::Role::kMachine, contract::Role::kMachinePool}) {
      EXPECT_EQ(readings(role,
                         [&](DecisionInput& in) {
                           in.pending_refreshes = 1;
                           in.schedule.health_check_interval = seconds(300);
                           stop(in);
                         }),
                (R{}))
          << static_cast<int>(role);
    }
  }
}

TEST(DecisionTest, MetricLabels) {
  Decision d{};
  EXPECT_EQ(opLabel(d), "none");
  EXPECT_EQ(reasonName(d), "none");
  d.action = Action::kRunJob;
  d.operation = Operation::kDrift;
  d.trigger = Trigger::kDriftInterval;
  EXPECT_EQ(opLabel(d), "drift");
  EXPECT_EQ(reasonName(d), "drift_interval");
  d = Decision{};
  d.trigger = Trigger::kInputsChanged;
  d.hold = Hold::kDestructivePlanBlocked;
  EXPECT_EQ(reasonName(d), "destructive_plan_blocked");
  d = Decision{};
  d.action = Action::kCleanup;
  d.trigger = Trigger::kDestroy;
  EXPECT_EQ(reasonName(d), "cleanup");
}

} // namespace
} // namespace captf::lifecycle
