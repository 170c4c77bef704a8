#pragma once

// Timing of the lifecycle (docs/behaviour/lifecycle.md: retry backoff, re-check
// cadences; drift-and-health.md: refresh and drift schedules) and the per-object
// jitter. Pure functions over plain values; `now` is always passed in.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "manager/api/time.h"
#include "manager/api/workspace.h"
#include "manager/lifecycle/history.h"

namespace captf::lifecycle {

using Seconds = std::chrono::seconds;
using TimePoint = std::chrono::sys_seconds;

// docs/behaviour/lifecycle.md#retry-backoff.
inline constexpr Seconds kBackoffBase{60};
inline constexpr Seconds kBackoffCap{600};
// docs/behaviour/lifecycle.md#re-check-cadences.
inline constexpr Seconds kLeaseRecheck{30};
inline constexpr Seconds kApprovalRecheck{600};
// docs/behaviour/lifecycle.md / docs/behaviour/drift-and-health.md / docs/behaviour/pools.md.
inline constexpr Seconds kPendingRefreshBase{30};
inline constexpr Seconds kPendingRefreshCeiling{300};
inline constexpr Seconds kConvergingRefresh{30};

// The jitter source: a fraction in [0, 1) that scales "up to 10% of the
// interval". Plain data so tests inject exact values; the controllers use
// jitterFor(uid).
struct Jitter {
  double fraction = 0.0;

  // interval × 0.1 × fraction, rounded down to whole seconds.
  Seconds of(Seconds interval) const;
};

// The deterministic jitter of an object (docs/behaviour/lifecycle.md): the first 8 bytes of
// sha256(uid) as a fraction of 2^64. Objects created together spread out;
// the same UID always gets the same jitter.
Jitter jitterFor(std::string_view uid);

// lifecycle.md#retry-backoff: 1m × 2^(n−1) capped at 10m; the cap outright once n ≥
// `failed_jobs_history_limit` (so a limit of 0 or 1 waits 10m from the
// first failure). n ≤ 0 ⇒ 0.
Seconds backoffDelay(std::int32_t consecutive_failures, std::int32_t failed_jobs_history_limit);

// Consecutive counting failures (JobOutcome::kFailed) of `operation` among
// the retained Jobs, newest first, stopping at its newest success;
// interrupted, blocked and plan-changed Jobs are skipped (neither counted
// nor ending the run).
std::int32_t consecutiveFailures(std::span<const JobRecord> jobs, api::Operation operation);

// How many of the operation's newest finished Jobs, in a row, were
// interrupted at their own deadline (kInterrupted with deadline_exceeded).
std::int32_t deadlineStreak(std::span<const JobRecord> jobs, api::Operation operation);

// An interrupted run that hit its deadline is retried at once this many
// times in a row; the next one waits the backoff cap
// (docs/behaviour/lifecycle.md#retry-backoff). Fewer when
// failedJobsHistoryLimit retains fewer Jobs: min(this, max(limit, 1)).
inline constexpr std::int32_t kDeadlineRetriesAtOnce = 2;

// When `operation` may run again after failures: the newest finished Job
// of the operation failed in a way that counts (JobOutcome::kFailed) ⇒ its
// finish time + backoffDelay(consecutiveFailures); the newest Jobs were
// interrupted at their deadline more than kDeadlineRetriesAtOnce times in
// a row ⇒ its finish time + the backoff cap. nullopt when nothing holds it
// back: no finished Job, a success, or a newest Job that was interrupted
// (retried without backoff, docs/behaviour/lifecycle.md), blocked or
// plan-changed (those wait on their own trigger — an approval runs at
// once).
std::optional<TimePoint> retryNotBefore(std::span<const JobRecord> jobs, api::Operation operation,
                                        std::int32_t failed_jobs_history_limit);

// docs/behaviour/lifecycle.md row 3: the wait before the next refresh while health reads
// `pending`, given status.pendingRefreshes = n ≥ 1: 30s × 2^(n−1) capped
// at 5m (30s, 1m, 2m, 4m, 5m, ...). n ≤ 0 ⇒ 30s.
Seconds pendingRefreshDelay(std::int32_t pending_refreshes);

// Conversions between api::Time and TimePoint.
TimePoint toTimePoint(const api::Time& t);
api::Time toApiTime(TimePoint t);

} // namespace captf::lifecycle
