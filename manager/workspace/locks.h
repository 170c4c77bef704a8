#pragma once

// The state lock check before a Job starts (docs/behaviour/state.md, lifecycle.md): is the
// backend's lock Lease `lock-tfstate-default-<suffix>` free, held by a live
// runner of this object, held by one of this object's runners that is gone
// or finished (stale: the next Job force-unlocks it), or held by anyone else
// (StateReadable=False/StateLocked, never touched). A pure decision.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace captf::workspace {

// The backend's lock-info annotation on the lock Lease.
inline constexpr std::string_view kLockInfoAnnotation = "app.terraform.io/lock-info";

// What the backend recorded about the holder (`app.terraform.io/lock-info`
// JSON {ID, Operation, Who, Version, Created}); fields it lacks stay empty.
struct LockInfo {
  std::string id{};        // lock ID: spec.holderIdentity, what the backend's unlock compares
  std::string operation{}; // e.g. "OperationTypeApply"
  std::string who{};       // "<user>@<hostname>"; hostname = pod name in a Job
  std::string version{};
  std::string created{};
};

// Reads the holder from a lock Lease (as the API server returns it).
// nullopt when the Lease is absent (null JSON) or has no
// spec.holderIdentity (what an unlock leaves behind); an empty one is held,
// as the backend takes it. An unparsable lock-info annotation yields a
// LockInfo with only `id` set (the holder is then unknown and never
// auto-unlocked). The lock info's own `ID` is not used: the backend's
// unlock compares against spec.holderIdentity.
std::optional<LockInfo> readLock(const nlohmann::json& lease);

// A runner pod of this object: one of the pods of the object's own Jobs
// (listed by the caller, e.g. by the Jobs' owner labels).
struct RunnerPod {
  std::string name{};
  // Pod phase Succeeded or Failed, or every container terminated.
  bool finished = false;
};

struct OwnRunners {
  // Names of this object's Jobs still present. A pod named
  // "<job>-<anything>" belongs to such a Job.
  std::vector<std::string> job_names{};
  // The pods of those Jobs that exist now.
  std::vector<RunnerPod> pods{};
  // Those of job_names whose pods cannot run any more: created longer ago
  // than their activeDeadlineSeconds plus terminationGracePeriodSeconds.
  std::vector<std::string> past_deadline{};
};

enum class LockState {
  kFree,       // no holder: proceed
  kLive,       // held by a live runner pod of this object: the next Job just waits
  kStale,      // held by a runner of this object that has finished, or whose pod
               // is gone and whose Job is past its deadline and grace period:
               // the next Job gets --force-unlock <id>, event ForceUnlocked
  kHolderGone, // held by a runner whose pod is gone but whose Job is not past
               // its deadline: a pod deleted without its node's word may still
               // run somewhere, so no Job starts until that time (StateLocked)
  kForeign,    // unknown holder or not ours: StateLocked, never auto-unlocked
};

struct LockDecision {
  LockState state = LockState::kFree;
  // kStale, kLive, kForeign: the holder as read.
  LockInfo lock{};
  // kForeign: the StateReadable=False/StateLocked message, naming holder,
  // operation and time; kStale: what is being unlocked (for the event).
  std::string message{};
  // kHolderGone: when the lock may be forced (the caller's, from the
  // holder's Job), to look again then.
  std::optional<std::chrono::sys_seconds> forced_from{};
};

// The docs/behaviour/state.md#locks rule. A holder is "ours" when `Who` has an `@` and the hostname
// after it is a pod of one of `own.job_names` ("<job>-..."), present in
// `own.pods` or not. Ours and not finished ⇒ kLive; ours and finished ⇒
// kStale; ours, no longer existing, its Job past its deadline and grace
// period ⇒ kStale, before that ⇒ kHolderGone; anything else ⇒ kForeign. A Job pruned from
// history leaves its pods' locks foreign: deliberately conservative.
LockDecision decideLock(const std::optional<LockInfo>& lock, const OwnRunners& own);

// Whether `lock`'s holder (the hostname of `Who`) is a pod of the Job named
// `job` ("<job>-..."): the rule decideLock uses to call a holder ours.
bool heldByPodOf(const LockInfo& lock, std::string_view job);

} // namespace captf::workspace
