#pragma once

// A restore over an unreadable state
// (docs/behaviour/state.md#restore-over-an-unreadable-state): whether the
// state must be set aside before the backup is pushed, the Secrets that keep
// it, and whether a Secret found under one of their names is the leftover of
// an earlier attempt. Pure: the caller reads, writes and deletes.
//
// The runtime loads the current state before it pushes one, and fails on a
// state it cannot load; so the restore copies every chunk Secret of an
// unreadable state, byte for byte, to a Secret of its own, and only when
// every copy is in place deletes the chunks and starts the Job.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "manager/workspace/locks.h"
#include "manager/workspace/names.h"
#include "manager/workspace/state.h"

namespace captf::workspace {

enum class SetAsideDecision {
  // The state reads, or there is none: the push replaces it as it is.
  kNone,
  // Corrupt, inconsistent or encrypted: copy every chunk aside, delete the
  // chunks, then push.
  kSetAside,
  // Unreadable, but the lock is held by something else (or a runner of the
  // object still runs): nothing is touched; the restore Job waits for the
  // lock as every Job does.
  kLocked,
};

// `live`: the status of the state as read from the API server just before
// the restore Job is made; `lock`: the lock check of this pass.
SetAsideDecision decideSetAside(StateStatus live, LockState lock);

// The set-aside id: the first 10 hex of the SHA-256 over the names and
// `data` of the given state Secrets (in name order). The same unreadable
// state gets the same id, so a retried set-aside writes the same names;
// another content gets other names and never overwrites the first.
std::string setAsideId(const std::vector<nlohmann::json>& state_secrets);

struct SetAsideRequest {
  ObjectRef ref{};
  // The Secrets of stateSelector(suffix) as the API server returned them
  // (`data` base64); a Secret without the backend's suffix label of the
  // object is ignored.
  std::vector<nlohmann::json> state_secrets{};
  // StateReadable's reason of the unreadable state ("StateCorrupt", ...).
  std::string reason{};
  // RFC 3339.
  std::string set_aside_at{};
  // The backup serial the restore pushes.
  std::int64_t restore_serial = 0;
};

struct SetAsideCopy {
  // The state chunk Secret that is copied, then deleted.
  std::string source{};
  // Delete preconditions: the chunk exactly as it was copied.
  std::string source_uid{};
  std::string source_resource_version{};
  // The Secret to create: unreadableStateSecretName(source, id); `data`
  // copied verbatim (every key); labels state-unreadable=true,
  // state-unreadable-suffix, managed=true, clusterctl move and the owner
  // labels, never the backend's `tfstate*` labels nor a backup's (it is read
  // neither as state nor as a backup); annotations source, reason, set,
  // set-aside-at, restore-serial, the source's labels (JSON) and its
  // `captf.io/inputs-hash` when it has one; a non-blocking ownerReference to
  // the object (kept until the object is deleted or a person deletes it).
  nlohmann::json copy{};
};

// One copy per state Secret of the request, in name order.
// Precondition: request.ref.uid is set.
std::vector<SetAsideCopy> setAsideCopies(const SetAsideRequest& request);

// Whether `existing` (found when creating `wanted`, which returned
// AlreadyExists) is the same copy: a set-aside Secret of the same suffix,
// source and set with the same `data`. Then the copy of an earlier attempt
// is in place and the set-aside goes on; anything else stops it.
bool sameSetAsideCopy(const nlohmann::json& existing, const nlohmann::json& wanted);

} // namespace captf::workspace
