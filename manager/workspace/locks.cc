#include "manager/workspace/locks.h"

#include <algorithm>

#include "contract/json_adapter.h"
#include "contract/strings.h"
#include "contract/text.h"
#include "manager/workspace/json_util.h"

namespace captf::workspace {
namespace {

using contract::strCat;

std::string member(const nlohmann::json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || !found->is_string()) {
    return {};
  }
  return found->get<std::string>();
}

// Whoever can write Leases writes the lock info: a field goes into a
// message (a condition's, an Event's) clipped to this many bytes, so that the
// message stays far below the CRD's cap on a condition message
// (docs/behaviour/state.md#locks).
constexpr std::size_t kMaxShownBytes = 256;

std::string shown(std::string_view text) {
  return contract::clipText(contract::sanitizeUtf8(text), kMaxShownBytes);
}

std::string describe(const LockInfo& lock) {
  return strCat("lock ", lock.id.empty() ? "(no ID)" : shown(lock.id), " held by ",
                lock.who.empty() ? "an unknown holder" : shown(lock.who), " for ",
                lock.operation.empty() ? "an unknown operation" : shown(lock.operation), " since ",
                lock.created.empty() ? "an unknown time" : shown(lock.created));
}

// The hostname after `Who`'s last `@` ("" without one): in a Job, the pod.
std::string holderHost(const LockInfo& lock) {
  const std::size_t at = lock.who.rfind('@');
  return at == std::string::npos ? std::string() : lock.who.substr(at + 1);
}

} // namespace

bool heldByPodOf(const LockInfo& lock, std::string_view job) {
  const std::string host = holderHost(lock);
  return !job.empty() && host.size() > job.size() + 1 && host.starts_with(job) &&
         host[job.size()] == '-';
}

std::optional<LockInfo> readLock(const nlohmann::json& lease) {
  if (!lease.is_object()) {
    return std::nullopt;
  }
  // The backend's lock test is "holderIdentity present", an empty one
  // included; its unlock compares the ID it is given with this field.
  std::optional<std::string> holder = internal::stringAt(lease, "spec.holderIdentity");
  if (!holder) {
    return std::nullopt;
  }
  LockInfo lock;
  lock.id = *std::move(holder);
  const auto info_text = internal::annotation(lease, kLockInfoAnnotation);
  if (!info_text) {
    return lock;
  }
  auto info = contract::parseJson(*info_text, kLockInfoAnnotation);
  if (!info.ok() || !info->is_object()) {
    return lock;
  }
  lock.operation = member(*info, "Operation");
  lock.who = member(*info, "Who");
  lock.version = member(*info, "Version");
  lock.created = member(*info, "Created");
  return lock;
}

LockDecision decideLock(const std::optional<LockInfo>& lock, const OwnRunners& own) {
  LockDecision decision;
  if (!lock) {
    return decision;
  }
  decision.lock = *lock;
  const std::string host = holderHost(*lock);
  const bool ours =
      std::any_of(own.job_names.begin(), own.job_names.end(),
                  [&lock](const std::string& job) { return heldByPodOf(*lock, job); });
  // An empty ID cannot be given to --force-unlock.
  if (!ours || lock->id.empty()) {
    decision.state = LockState::kForeign;
    decision.message = strCat("State is locked by something other than this object's runner pods (",
                              describe(*lock), "); it is never unlocked automatically");
    return decision;
  }
  const auto pod = std::find_if(own.pods.begin(), own.pods.end(),
                                [&host](const RunnerPod& p) { return p.name == host; });
  if (pod != own.pods.end() && !pod->finished) {
    decision.state = LockState::kLive;
    decision.message = strCat("State is locked by the running runner pod ", shown(host), " (",
                              describe(*lock), ")");
    return decision;
  }
  const bool past_deadline =
      std::any_of(own.past_deadline.begin(), own.past_deadline.end(),
                  [&lock](const std::string& job) { return heldByPodOf(*lock, job); });
  if (pod == own.pods.end() && !past_deadline) {
    decision.state = LockState::kHolderGone;
    decision.message =
        strCat("State is locked (", describe(*lock), ") by runner pod ", shown(host),
               ", which no longer exists but may still run on a node that cannot be reached; it is "
               "force-unlocked once its Job's deadline and grace period have passed");
    return decision;
  }
  decision.state = LockState::kStale;
  decision.message =
      strCat("Stale ", describe(*lock), ": runner pod ", shown(host),
             pod == own.pods.end() ? " no longer exists and its Job is past its deadline"
                                   : " has finished",
             "; the next Job force-unlocks it");
  return decision;
}

} // namespace captf::workspace
