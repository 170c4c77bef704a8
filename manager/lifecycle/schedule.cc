#include "manager/lifecycle/schedule.h"

#include <algorithm>
#include <cmath>

#include "contract/digest.h"

namespace captf::lifecycle {

Seconds Jitter::of(Seconds interval) const {
  const double f = std::clamp(fraction, 0.0, 1.0);
  return Seconds(
      static_cast<Seconds::rep>(std::floor(static_cast<double>(interval.count()) * 0.1 * f)));
}

Jitter jitterFor(std::string_view uid) {
  const std::string hex = contract::sha256Hex(uid);
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    const char c = hex[i];
    const auto digit = static_cast<std::uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    value = (value << 4U) | digit;
  }
  // 2^64 as a double; the quotient is in [0, 1] (1 only by rounding).
  const double fraction = static_cast<double>(value) / 18446744073709551616.0;
  return Jitter{std::min(fraction, 0.9999999)};
}

Seconds backoffDelay(std::int32_t consecutive_failures, std::int32_t failed_jobs_history_limit) {
  if (consecutive_failures <= 0) {
    return Seconds(0);
  }
  if (consecutive_failures >= failed_jobs_history_limit) {
    return kBackoffCap;
  }
  // 1m × 2^(n−1): the cap is reached by n = 5, so the shift never
  // overflows.
  const std::int32_t shift = std::min(consecutive_failures - 1, 10);
  return std::min(kBackoffBase * (std::int64_t{1} << shift), kBackoffCap);
}

namespace {

// The finished runs of `operation`, the latest attempt first.
std::vector<const JobRecord*> finishedLatestFirst(std::span<const JobRecord> jobs,
                                                  api::Operation operation) {
  std::vector<const JobRecord*> of_op;
  for (const JobRecord& job : jobs) {
    if (job.operation == operation && job.outcome != JobOutcome::kActive) {
      of_op.push_back(&job);
    }
  }
  std::sort(of_op.begin(), of_op.end(),
            [](const JobRecord* a, const JobRecord* b) { return a->attempt > b->attempt; });
  return of_op;
}

} // namespace

std::int32_t consecutiveFailures(std::span<const JobRecord> jobs, api::Operation operation) {
  std::int32_t n = 0;
  for (const JobRecord* job : finishedLatestFirst(jobs, operation)) {
    if (job->outcome == JobOutcome::kSucceeded) {
      break;
    }
    if (countsForBackoff(job->outcome)) {
      ++n;
    }
  }
  return n;
}

std::int32_t deadlineStreak(std::span<const JobRecord> jobs, api::Operation operation) {
  std::int32_t n = 0;
  for (const JobRecord* job : finishedLatestFirst(jobs, operation)) {
    if (job->outcome != JobOutcome::kInterrupted || !job->deadline_exceeded) {
      break;
    }
    ++n;
  }
  return n;
}

std::optional<TimePoint> retryNotBefore(std::span<const JobRecord> jobs, api::Operation operation,
                                        std::int32_t failed_jobs_history_limit) {
  const JobRecord* newest = newestFinished(jobs, operation);
  if (newest == nullptr) {
    return std::nullopt;
  }
  const std::optional<api::Time>& at = newest->finished ? newest->finished : newest->created;
  if (!at) {
    return std::nullopt;
  }
  if (countsForBackoff(newest->outcome)) {
    return toTimePoint(*at) +
           backoffDelay(consecutiveFailures(jobs, operation), failed_jobs_history_limit);
  }
  // A run that keeps hitting its deadline is not retried at once forever:
  // pruning retains at most max(limit, 1) of them, so the threshold is
  // capped by what can be seen.
  const std::int32_t at_once =
      std::min(kDeadlineRetriesAtOnce, std::max(failed_jobs_history_limit, 1) - 1);
  if (newest->outcome == JobOutcome::kInterrupted && newest->deadline_exceeded &&
      deadlineStreak(jobs, operation) > at_once) {
    return toTimePoint(*at) + kBackoffCap;
  }
  return std::nullopt;
}

Seconds pendingRefreshDelay(std::int32_t pending_refreshes) {
  if (pending_refreshes <= 1) {
    return kPendingRefreshBase;
  }
  const std::int32_t shift = std::min(pending_refreshes - 1, 10);
  return std::min(kPendingRefreshBase * (std::int64_t{1} << shift), kPendingRefreshCeiling);
}

TimePoint toTimePoint(const api::Time& t) {
  return t.value;
}

api::Time toApiTime(TimePoint t) {
  return api::Time{t};
}

} // namespace captf::lifecycle
