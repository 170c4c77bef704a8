#include "manager/lifecycle/decision.h"

#include <algorithm>
#include <charconv>

#include "contract/plan.h"
#include "contract/strings.h"

namespace captf::lifecycle {

using api::Operation;
using contract::strCat;

namespace {

std::optional<TimePoint> finishedAt(const JobRecord* job) {
  if (job == nullptr) {
    return std::nullopt;
  }
  if (job->finished) {
    return toTimePoint(*job->finished);
  }
  if (job->created) {
    return toTimePoint(*job->created);
  }
  return std::nullopt;
}

std::optional<TimePoint> latest(std::initializer_list<std::optional<TimePoint>> times) {
  std::optional<TimePoint> out;
  for (const auto& t : times) {
    if (t && (!out || *t > *out)) {
      out = t;
    }
  }
  return out;
}

std::optional<TimePoint> fromApi(const std::optional<api::Time>& t) {
  if (!t) {
    return std::nullopt;
  }
  return toTimePoint(*t);
}

std::optional<std::int64_t> parseSerial(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 1) {
    return std::nullopt;
  }
  return value;
}

const std::string& emptyPlanHash() {
  static const std::string kHash = contract::planHash({});
  return kHash;
}

std::string jobName(const JobRecord* job) {
  return job == nullptr ? std::string() : job->name;
}

Seconds until(TimePoint when, TimePoint now) {
  return when > now ? std::chrono::duration_cast<Seconds>(when - now) : Seconds(0);
}

void runJob(Decision& d, const DecisionInput& in, Operation op, std::string inputs_hash,
            std::string tick) {
  d.action = Action::kRunJob;
  d.operation = op;
  d.hold = Hold::kNone;
  d.requeue_after.reset();
  d.attempt = nextAttempt(in.jobs, op);
  d.tick = std::move(tick);
  d.inputs_hash = std::move(inputs_hash);
}

void hold(Decision& d, Hold why, std::optional<Seconds> requeue) {
  d.action = Action::kNone;
  d.operation.reset();
  d.hold = why;
  d.requeue_after = requeue;
}

// Holds `d` for the operation's retry backoff; true when it did.
bool heldByBackoff(Decision& d, const DecisionInput& in, Operation op) {
  const auto not_before = retryNotBefore(in.jobs, op, in.failed_jobs_history_limit);
  if (not_before && *not_before > in.now) {
    hold(d, Hold::kRetryBackoff, until(*not_before, in.now));
    return true;
  }
  return false;
}

// docs/behaviour/lifecycle.md#choosing-the-next-operation row 1.
Decision decideRestore(const DecisionInput& in) {
  Decision d;
  d.trigger = Trigger::kRestore;
  const auto serial =
      in.restore_request ? parseSerial(*in.restore_request) : std::optional<std::int64_t>();
  if (!serial || std::find(in.backup_serials.begin(), in.backup_serials.end(), *serial) ==
                     in.backup_serials.end()) {
    hold(d, Hold::kRestoreBackupNotFound, std::nullopt);
    return d;
  }
  const JobRecord* newest = nullptr;
  for (const JobRecord& job : in.jobs) {
    if (job.operation == Operation::kRestore && job.restore_serial == serial &&
        job.outcome != JobOutcome::kActive &&
        (newest == nullptr || job.attempt > newest->attempt)) {
      newest = &job;
    }
  }
  if (newest != nullptr && newest->outcome == JobOutcome::kSucceeded) {
    // A leftover annotation of that very request when nothing ran after the
    // restore; otherwise a new request for the same serial.
    bool newer_exists = false;
    const auto done = finishedAt(newest);
    for (const JobRecord& job : in.jobs) {
      const auto at = finishedAt(&job);
      if (&job != newest && done && at && *at > *done) {
        newer_exists = true;
      }
    }
    if (!newer_exists) {
      hold(d, Hold::kRestoreDone, std::nullopt);
      d.remove_restore_annotation = true;
      return d;
    }
  }
  if (newest != nullptr && isFailure(newest->outcome) &&
      newest->outcome != JobOutcome::kInterrupted) {
    hold(d, Hold::kRestoreFailed, std::nullopt);
    return d;
  }
  runJob(d, in, Operation::kRestore, "", strCat("serial=", *serial));
  d.job.restore_serial = serial;
  return d;
}

// docs/behaviour/lifecycle.md row 2 and docs/behaviour/lifecycle.md.
Decision decideDelete(const DecisionInput& in) {
  Decision d;
  d.trigger = Trigger::kDestroy;
  if (newestWith(in.jobs, Operation::kDestroy, JobOutcome::kSucceeded) != nullptr) {
    d.action = Action::kCleanup;
    return d;
  }
  if (in.state == StateReading::kNotFound) {
    // No destroy can run without state (docs/behaviour/state.md#a-deleting-object-without-state):
    // only an object that never had any leaves at once; one that had is
    // held until a person restores a backup or accepts the orphan.
    const bool had_state =
        in.provisioned || in.state_observed ||
        newestWith(in.jobs, Operation::kApply, JobOutcome::kSucceeded) != nullptr;
    if (!had_state || in.orphan_accepted) {
      d.action = Action::kCleanup;
      d.orphaned = had_state;
      return d;
    }
    if (in.restore_request) {
      return decideRestore(in);
    }
    hold(d, Hold::kStateLost, std::nullopt);
    return d;
  }
  if (in.state == StateReading::kUnreadable) {
    // No destroy can run from a state the runtime cannot load; a restore
    // sets it aside and pushes a backup, then the destroy runs from that
    // (docs/behaviour/state.md#restore-over-an-unreadable-state).
    if (in.restore_request) {
      return decideRestore(in);
    }
    hold(d, Hold::kStateUnreadable, kBackoffBase);
    return d;
  }
  if (!in.destroy_inputs_available) {
    hold(d, Hold::kDestroyInputsMissing, kBackoffBase);
    return d;
  }
  if (heldByBackoff(d, in, Operation::kDestroy)) {
    return d;
  }
  std::string hash = !in.destroy_inputs_hash.empty()   ? in.destroy_inputs_hash
                     : !in.current_inputs_hash.empty() ? in.current_inputs_hash
                                                       : in.state_inputs_hash;
  runJob(d, in, Operation::kDestroy, std::move(hash), "");
  return d;
}

// Which apply row matches (rows 3–7), or kNone.
Trigger applyTrigger(const DecisionInput& in, bool& cap_reached) {
  if (in.state == StateReading::kNotFound) {
    return Trigger::kFirstApply;
  }
  if (in.state_inputs_hash.empty()) {
    return Trigger::kNoInputsHash;
  }
  if (in.traits.immutable_inputs) {
    return Trigger::kNone;
  }
  if (!in.current_inputs_hash.empty() && in.current_inputs_hash != in.state_inputs_hash) {
    return Trigger::kInputsChanged;
  }
  if (const JobRecord* apply = newestFinished(in.jobs, Operation::kApply);
      apply != nullptr && !apply->drift_remediation &&
      (apply->outcome == JobOutcome::kFailed || apply->outcome == JobOutcome::kInterrupted)) {
    return Trigger::kRetryFailedApply;
  }
  if (in.drift_pending && in.schedule.drift_action == api::DriftAction::kRemediate) {
    const auto checked =
        latest({fromApi(in.last_drift_check),
                finishedAt(newestWith(in.jobs, Operation::kDrift, JobOutcome::kSucceeded))});
    std::int32_t failures = 0;
    for (const JobRecord& job : in.jobs) {
      if (job.operation == Operation::kApply && job.drift_remediation &&
          countsForBackoff(job.outcome) && (!checked || finishedAt(&job) > checked)) {
        ++failures;
      }
    }
    // An apply that succeeded after that check (a remediation or any other
    // apply of the current inputs) already brought reality back to them.
    const auto applied = finishedAt(newestWith(in.jobs, Operation::kApply, JobOutcome::kSucceeded));
    if (checked && applied && *applied > *checked) {
      return Trigger::kNone;
    }
    if (failures < in.failed_jobs_history_limit) {
      return Trigger::kDriftRemediation;
    }
    cap_reached = true;
  }
  return Trigger::kNone;
}

// The apply (or, under Manual, plan) for `trigger` with the docs/behaviour/approval.md overlay.
// Leaves `d` holding when something holds it back.
void decideApply(Decision& d, const DecisionInput& in, Trigger trigger) {
  d.trigger = trigger;
  const std::string& hash = in.current_inputs_hash;
  if (hash.empty()) {
    hold(d, Hold::kInputsUnavailable, std::nullopt);
    return;
  }
  if (in.inputs_too_large) {
    hold(d, Hold::kInputsTooLarge, kApprovalRecheck);
    return;
  }
  const bool remediation = trigger == Trigger::kDriftRemediation;
  const std::string tick =
      remediation ? jobName(newestWith(in.jobs, Operation::kDrift, JobOutcome::kSucceeded)) : "";
  if (in.traits.plan_approval && trigger != Trigger::kFirstApply &&
      in.apply_policy == api::ApplyPolicy::kManual) {
    // docs/behaviour/approval.md: plan, publish, wait for approve-plan, apply that plan.
    if (in.plan && in.plan->inputs_hash == hash) {
      const bool approved = !in.plan->plan_hash.empty() && (in.approve_plan == in.plan->plan_hash ||
                                                            in.plan->plan_hash == emptyPlanHash());
      if (!approved) {
        const bool from_apply =
            std::any_of(in.jobs.begin(), in.jobs.end(), [&](const JobRecord& job) {
              return job.name == in.plan->job && job.operation == Operation::kApply;
            });
        hold(d, from_apply ? Hold::kPlanChanged : Hold::kPlanAwaitingApproval, kApprovalRecheck);
        return;
      }
      if (heldByBackoff(d, in, Operation::kApply)) {
        return;
      }
      runJob(d, in, Operation::kApply, hash, tick);
      d.job.expect_plan = in.plan->plan_hash;
      d.job.drift_remediation = remediation;
      return;
    }
    if (heldByBackoff(d, in, Operation::kPlan)) {
      return;
    }
    runJob(d, in, Operation::kPlan, hash, tick);
    return;
  }
  if (in.traits.plan_approval) {
    // docs/behaviour/approval.md: a blocked apply of this hash waits for its approval.
    const JobRecord* newest_of_hash = nullptr;
    for (const JobRecord& job : in.jobs) {
      if (job.operation == Operation::kApply && job.inputs_hash == hash &&
          job.outcome != JobOutcome::kActive &&
          (newest_of_hash == nullptr || job.attempt > newest_of_hash->attempt)) {
        newest_of_hash = &job;
      }
    }
    if (newest_of_hash != nullptr && newest_of_hash->outcome == JobOutcome::kBlocked &&
        in.approve_destructive_plan != hash) {
      hold(d, Hold::kDestructivePlanBlocked, kApprovalRecheck);
      return;
    }
  }
  if (heldByBackoff(d, in, Operation::kApply)) {
    return;
  }
  runJob(d, in, Operation::kApply, hash, tick);
  d.job.drift_remediation = remediation;
  if (in.traits.plan_approval) {
    d.job.guard_deletes = true;
    d.job.allow_deletes_hash = in.approve_destructive_plan;
  }
}

struct Candidate {
  Trigger trigger;
  Operation op;
  TimePoint due;
};

// The docs/behaviour/lifecycle.md schedule table (rows 1–6) with each row's due time, in order.
std::vector<Candidate> scheduleCandidates(const DecisionInput& in) {
  std::vector<Candidate> out;
  const auto refresh_done =
      finishedAt(newestWith(in.jobs, Operation::kRefresh, JobOutcome::kSucceeded));
  const auto drift_done =
      finishedAt(newestWith(in.jobs, Operation::kDrift, JobOutcome::kSucceeded));
  const auto apply_done =
      finishedAt(newestWith(in.jobs, Operation::kApply, JobOutcome::kSucceeded));
  const auto restore_done =
      finishedAt(newestWith(in.jobs, Operation::kRestore, JobOutcome::kSucceeded));
  const auto last_refresh = latest({fromApi(in.last_refresh), refresh_done, drift_done});
  const auto last_drift = latest({fromApi(in.last_drift_check), drift_done});
  const auto after_refresh = [&](Seconds interval) {
    const TimePoint base = last_refresh.value_or(in.now - interval - in.jitter.of(interval));
    return base + interval + in.jitter.of(interval);
  };
  const Seconds membership =
      in.schedule.membership_refresh_interval.value_or(kDefaultMembershipRefreshInterval);

  // 1. Post-apply refresh (machine, pool).
  if (in.traits.post_apply_refresh && apply_done &&
      (!last_refresh || *last_refresh < *apply_done)) {
    out.push_back({Trigger::kPostApplyRefresh, Operation::kRefresh, *apply_done});
  }
  // 2. Pool membership converging: 30s flat (or the interval if shorter).
  if (in.traits.pool_membership && in.observed_replicas &&
      *in.observed_replicas != in.provider_id_count) {
    out.push_back({Trigger::kMembershipConverging, Operation::kRefresh,
                   after_refresh(std::min(kConvergingRefresh, membership))});
  }
  // 3. Health pending: 30s doubling to 5m (pool: 30s flat, or the interval).
  if (in.pending_refreshes >= 1 && !(in.provisioned && in.schedule.health_samples_disabled)) {
    const Seconds delay = in.traits.pool_membership ? std::min(kConvergingRefresh, membership)
                                                    : pendingRefreshDelay(in.pending_refreshes);
    out.push_back({Trigger::kHealthPending, Operation::kRefresh, after_refresh(delay)});
  }
  // 4. Pool membership refresh interval.
  if (in.traits.pool_membership) {
    out.push_back({Trigger::kMembershipInterval, Operation::kRefresh, after_refresh(membership)});
  }
  // 5. Machine health checks (annotateMachine), once provisioned: resolveSchedule sets the
  // interval for a TerraformMachine with annotateMachine only.
  if (in.provisioned && in.schedule.health_check_interval) {
    out.push_back({Trigger::kHealthCheckInterval, Operation::kRefresh,
                   after_refresh(*in.schedule.health_check_interval)});
  }
  // 6. Drift: one interval after the last check or the last apply.
  if (in.schedule.drift_interval) {
    if (const auto base = latest({last_drift, apply_done, restore_done})) {
      const Seconds interval = *in.schedule.drift_interval;
      out.push_back(
          {Trigger::kDriftInterval, Operation::kDrift, *base + interval + in.jitter.of(interval)});
    }
  }
  return out;
}

// Runs the first due schedule row, or holds until the earliest. A held
// apply of `held` (a drift remediation) keeps its hold and requeue when no
// row is due.
void decideSchedule(Decision& d, const DecisionInput& in, const Decision* held) {
  std::optional<TimePoint> earliest;
  for (const Candidate& c : scheduleCandidates(in)) {
    TimePoint due = c.due;
    if (const auto not_before = retryNotBefore(in.jobs, c.op, in.failed_jobs_history_limit);
        not_before && *not_before > due) {
      due = *not_before;
    }
    if (due <= in.now) {
      // An immutable kind's schedules render its durable inputs, never the current render.
      if (in.inputs_too_large && !in.traits.immutable_inputs) {
        d.trigger = c.trigger;
        hold(d, Hold::kInputsTooLarge, kApprovalRecheck);
        return;
      }
      const std::string& hash =
          !in.current_inputs_hash.empty() ? in.current_inputs_hash : in.state_inputs_hash;
      d.trigger = c.trigger;
      runJob(d, in, c.op, hash, jobName(newestWith(in.jobs, c.op, JobOutcome::kSucceeded)));
      return;
    }
    if (!earliest || due < *earliest) {
      earliest = due;
    }
  }
  std::optional<Seconds> requeue;
  if (earliest) {
    requeue = until(*earliest, in.now);
  }
  if (held != nullptr) {
    d = *held;
    if (requeue && (!d.requeue_after || *requeue < *d.requeue_after)) {
      d.requeue_after = requeue;
    }
    return;
  }
  d.trigger = Trigger::kNone;
  hold(d, Hold::kNotDue, requeue);
}

Decision decide(const DecisionInput& in) {
  Decision d;
  if (activeJob(in.jobs) != nullptr) {
    hold(d, Hold::kActiveJob, std::nullopt);
    return d;
  }
  if (in.paused) {
    hold(d, Hold::kPaused, std::nullopt);
    return d;
  }
  if (in.restore_request && !in.deleting) {
    return decideRestore(in);
  }
  if (in.deleting) {
    return decideDelete(in);
  }
  if (in.state == StateReading::kUnreadable) {
    hold(d, Hold::kStateUnreadable, kBackoffBase);
    return d;
  }
  if (in.provisioned && (in.state == StateReading::kNotFound ||
                         (in.traits.immutable_inputs && in.state_inputs_hash.empty()))) {
    hold(d, Hold::kStateLost, std::nullopt);
    return d;
  }

  bool cap_reached = false;
  const Trigger trigger = applyTrigger(in, cap_reached);
  d.remediation_cap_reached = cap_reached;
  if (trigger != Trigger::kNone) {
    decideApply(d, in, trigger);
    if (d.action == Action::kRunJob || trigger != Trigger::kDriftRemediation) {
      // A held input change pauses the schedules (they would render the
      // unapplied inputs); a held remediation keeps them running.
      return d;
    }
    const Decision held = d;
    decideSchedule(d, in, &held);
    d.remediation_cap_reached = cap_reached;
    return d;
  }
  decideSchedule(d, in, nullptr);
  d.remediation_cap_reached = cap_reached;
  return d;
}

} // namespace

RecurringReadings recurringReadings(const DecisionInput& in) {
  RecurringReadings out;
  if (in.deleting || in.paused) {
    return out;
  }
  // The rows of scheduleCandidates that recur: 6 (drift), 3 (health pending),
  // 4 (pool membership) and 5 (machine health checks).
  out.drift = in.schedule.drift_interval.has_value();
  out.refresh =
      in.traits.pool_membership ||
      (in.provisioned && in.schedule.health_check_interval.has_value()) ||
      (in.pending_refreshes >= 1 && !(in.provisioned && in.schedule.health_samples_disabled));
  return out;
}

Decision decideNextOperation(const DecisionInput& in) {
  Decision d = decide(in);
  d.clear_plan = in.traits.plan_approval && in.apply_policy == api::ApplyPolicy::kAutomatic &&
                 in.plan.has_value();
  return d;
}

std::string_view triggerName(Trigger trigger) {
  switch (trigger) {
  case Trigger::kNone:
    return "none";
  case Trigger::kRestore:
    return "restore";
  case Trigger::kDestroy:
    return "destroy";
  case Trigger::kFirstApply:
    return "first_apply";
  case Trigger::kNoInputsHash:
    return "no_inputs_hash";
  case Trigger::kInputsChanged:
    return "inputs_changed";
  case Trigger::kRetryFailedApply:
    return "retry_failed_apply";
  case Trigger::kDriftRemediation:
    return "drift_remediation";
  case Trigger::kPostApplyRefresh:
    return "post_apply_refresh";
  case Trigger::kMembershipConverging:
    return "membership_converging";
  case Trigger::kHealthPending:
    return "health_pending";
  case Trigger::kMembershipInterval:
    return "membership_interval";
  case Trigger::kHealthCheckInterval:
    return "health_check_interval";
  case Trigger::kDriftInterval:
    return "drift_interval";
  }
  return "none";
}

std::string_view holdName(Hold hold) {
  switch (hold) {
  case Hold::kNone:
    return "none";
  case Hold::kActiveJob:
    return "active_job";
  case Hold::kPaused:
    return "paused";
  case Hold::kRestoreBackupNotFound:
    return "restore_backup_not_found";
  case Hold::kRestoreFailed:
    return "restore_failed";
  case Hold::kRestoreDone:
    return "restore_done";
  case Hold::kStateLost:
    return "state_lost";
  case Hold::kStateUnreadable:
    return "state_unreadable";
  case Hold::kInputsTooLarge:
    return "inputs_too_large";
  case Hold::kDestroyInputsMissing:
    return "destroy_inputs_missing";
  case Hold::kDestructivePlanBlocked:
    return "destructive_plan_blocked";
  case Hold::kPlanAwaitingApproval:
    return "plan_awaiting_approval";
  case Hold::kPlanChanged:
    return "plan_changed";
  case Hold::kInputsUnavailable:
    return "inputs_unavailable";
  case Hold::kRetryBackoff:
    return "retry_backoff";
  case Hold::kNotDue:
    return "not_due";
  }
  return "none";
}

std::string_view reasonName(const Decision& decision) {
  if (decision.action == Action::kCleanup) {
    return "cleanup";
  }
  if (decision.hold != Hold::kNone) {
    return holdName(decision.hold);
  }
  return triggerName(decision.trigger);
}

std::string_view opLabel(const Decision& decision) {
  if (decision.operation) {
    return api::enumName(*decision.operation);
  }
  return "none";
}

} // namespace captf::lifecycle
