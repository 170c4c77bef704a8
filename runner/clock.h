#pragma once

// Time, behind an interface so unit tests control it: wall time for the
// result's start timestamp, monotonic time for durations.

#include <chrono>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace captf::runner {

class Clock {
public:
  virtual ~Clock() = default;
  virtual absl::Time now() const = 0;
  virtual std::chrono::steady_clock::time_point monotonicNow() const = 0;
};

class SystemClock final : public Clock {
public:
  absl::Time now() const override { return absl::Now(); }
  std::chrono::steady_clock::time_point monotonicNow() const override {
    return std::chrono::steady_clock::now();
  }
};

} // namespace captf::runner
