#pragma once

// Shared helpers of the lifecycle unit tests: a fixed clock value,
// compact JobRecord construction and each kind's traits.

#include <chrono>
#include <string>

#include "contract/roles.h"
#include "manager/lifecycle/history.h"
#include "manager/lifecycle/schedule.h"
#include "manager/workspace/kind_traits.h"

namespace captf::lifecycle::testing {

// 2026-01-01T00:00:00Z.
inline const TimePoint kNow = TimePoint(std::chrono::seconds(1'767'225'600));

inline api::Time at(std::int64_t seconds_from_now) {
  return api::Time{kNow + std::chrono::seconds(seconds_from_now)};
}

struct JobSpec {
  api::Operation op = api::Operation::kApply;
  std::int32_t attempt = 1;
  JobOutcome outcome = JobOutcome::kSucceeded;
  // Finish time relative to kNow (ignored for active Jobs).
  std::int64_t finished = -3600;
  std::string inputs_hash = "h2:one";
  bool remediation = false;
  std::optional<std::int64_t> restore_serial = std::nullopt;
  bool deadline = false; // the Job failed at its deadline
};

inline JobRecord job(const JobSpec& spec) {
  JobRecord record{};
  record.operation = spec.op;
  record.attempt = spec.attempt;
  record.outcome = spec.outcome;
  record.name = "job-" + std::string(api::enumName(spec.op)) + "-" + std::to_string(spec.attempt);
  record.created = at(spec.finished - 60);
  if (spec.outcome != JobOutcome::kActive) {
    record.finished = at(spec.finished);
  }
  record.inputs_hash = spec.inputs_hash;
  record.drift_remediation = spec.remediation;
  record.restore_serial = spec.restore_serial;
  record.deadline_exceeded = spec.deadline;
  return record;
}

// The traits the kind of `role` declares (manager/controllers/terraform_*_kind.cc), so the
// tables below can name a kind; test/manager/controllers/kinds_test.cc checks that the kinds
// declare these.
inline workspace::KindTraits traitsOf(contract::Role role) {
  switch (role) {
  case contract::Role::kCluster:
    return {.plan_approval = true, .owns_cluster_lease = true};
  case contract::Role::kMachine:
    return {.immutable_inputs = true, .post_apply_refresh = true};
  case contract::Role::kMachinePool:
    return {.pool_membership = true, .post_apply_refresh = true, .ready_tracks_reapply = true};
  }
  return {};
}

} // namespace captf::lifecycle::testing
