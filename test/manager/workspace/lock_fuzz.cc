// libFuzzer target for the state lock check (docs/behaviour/state.md#locks):
// the lock Lease and its `app.terraform.io/lock-info` annotation are written
// by whoever can write Leases in the namespace, the runner's module code
// included. The bytes are read twice: as the annotation's text on a held
// Lease, and, when they parse as a JSON object, as the Lease itself. Each read goes through
// readLock and decideLock with this object's Jobs and pods. Invariants:
//   - no crash, leak or undefined behaviour;
//   - the decision's message, which becomes the StateReadable condition's
//     message and a Warning Event, is bounded (the CRD caps a condition's
//     message at 32768 characters, and an over-long one makes the API server
//     refuse the whole status write) and valid UTF-8;
//   - an annotation that is not a JSON object is never quoted (the canary
//     placed in it does not reach the message);
//   - a lock is called ours (live or stale) only when its holder is a pod
//     name of one of the object's Jobs.
// Inputs go up to 262144 bytes, the API server's cap on an object's
// annotations (LLVMFuzzerInitialize sets -max_len unless given one). Run:
//   build/fuzz/test/manager/workspace/workspace_lock_fuzz -max_total_time=600
//       /tmp/lock-corpus test/manager/workspace/fuzz/lock_corpus
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "contract/json_adapter.h"
#include "manager/workspace/locks.h"
#include "test/fuzz_check.h"

namespace {

using captf::fuzz::check;
using captf::fuzz::checkText;
namespace workspace = captf::workspace;

// Far above what a message names (ID, holder, operation, time, pod) when
// each is a sensible length, far below the CRD's cap.
constexpr std::size_t kMaxMessageBytes = 4096;

const workspace::OwnRunners& ownRunners() {
  static const workspace::OwnRunners kOwn{
      .job_names = {"tfm-web-apply-7c9d2", "tfm-web-plan-1a2b3"},
      .pods = {{.name = "tfm-web-apply-7c9d2-xk2lp", .finished = false},
               {.name = "tfm-web-plan-1a2b3-q8n4v", .finished = true}},
  };
  return kOwn;
}

void exercise(const nlohmann::json& lease, bool quotable_annotation) {
  const std::optional<workspace::LockInfo> lock = workspace::readLock(lease);
  const workspace::LockDecision decision = workspace::decideLock(lock, ownRunners());
  checkText(decision.message, kMaxMessageBytes, "the lock decision's message");
  if (!lock) {
    check(decision.state == workspace::LockState::kFree, "no holder is a free lock");
    return;
  }
  // An empty holderIdentity is held (the backend takes it so) but cannot
  // be forced open.
  check(!lock->id.empty() || decision.state == workspace::LockState::kForeign,
        "a held lock without an ID is foreign");
  if (!quotable_annotation) {
    captf::fuzz::checkNoCanary(decision.message, "a message about an unreadable lock-info");
  }
  bool ours = false;
  for (const std::string& job : ownRunners().job_names) {
    ours = ours || workspace::heldByPodOf(*lock, job);
  }
  if (decision.state == workspace::LockState::kLive ||
      decision.state == workspace::LockState::kStale ||
      decision.state == workspace::LockState::kHolderGone) {
    check(ours, "only a pod of the object's Jobs holds a live, stale or gone holder's lock");
  } else {
    check(decision.state == workspace::LockState::kForeign && !ours, "any other holder is foreign");
  }
}

nlohmann::json leaseWith(std::string_view annotation) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata",
           {{"name", "lock-tfstate-default-0123456789abcdef-m"},
            {"annotations", {{std::string(workspace::kLockInfoAnnotation), annotation}}}}},
          {"spec", {{"holderIdentity", "holder-id-1"}}}};
}

} // namespace

// Without a -max_len of its own, a run gets -max_len=262144.
// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer looks for.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  captf::fuzz::defaultMaxLen(argc, argv, 262144);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Only valid UTF-8 reaches an annotation: the API server stores JSON.
  if (captf::fuzz::validUtf8(bytes)) {
    auto info = captf::contract::parseJson(bytes, "lock-info");
    exercise(leaseWith(bytes), info.ok() && info->is_object());
  }
  auto lease = captf::contract::parseJson(bytes, "lease");
  if (lease.ok() && lease->is_object()) {
    exercise(*lease, true);
  }
  return 0;
}
