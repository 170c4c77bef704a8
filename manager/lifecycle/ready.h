#pragma once

// Condition helpers (metav1.Condition semantics) and the Ready summary of
// docs/behaviour/lifecycle.md (Cluster API's SetSummaryCondition). Pure functions over
// status.conditions; the condition types and reasons are in
// manager/api/conditions.h.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "manager/api/core_types.h"
#include "manager/workspace/kind_traits.h"

namespace captf::lifecycle {

// The condition of `type`, or nullptr.
const api::Condition* findCondition(std::span<const api::Condition> conditions,
                                    std::string_view type);

// Whether a condition of the type has that status (false when missing).
bool conditionIs(std::span<const api::Condition> conditions, std::string_view type,
                 api::ConditionStatus status);

// What setCondition changed.
enum class ConditionChange {
  kNone,
  // Only the message or observedGeneration changed.
  kMessage,
  // Status or reason changed (or the condition is new): the transitions
  // that the ConditionChanged event and the failure counters count.
  kTransition,
};

// Sets (adds or updates) a condition. lastTransitionTime becomes `now` when
// the status changes or the condition is new, and is kept otherwise.
// observedGeneration is set to `generation`. Keeps the list's order; a new
// condition is appended.
ConditionChange setCondition(std::vector<api::Condition>& conditions, std::string_view type,
                             api::ConditionStatus status, std::string_view reason,
                             std::string_view message, std::int64_t generation,
                             const api::Time& now);

// Whether True is the problem for this type: Deleting, DriftDetected,
// DeletionBlocked.
bool isNegativePolarity(std::string_view type);

// The condition types Ready summarizes for a kind (docs/behaviour/lifecycle.md), in order:
// before provisioning DependenciesReady, IdentityAllowed,
// CredentialsMirrored, RunnerRBACReady, ApplyJobSucceeded, StateReadable,
// OutputsValid, InfrastructureHealthy, Deleting; after provisioning
// InfrastructureHealthy, Deleting (with ready_tracks_reapply, a pool's:
// InfrastructureHealthy, ApplyJobSucceeded, Deleting).
std::vector<std::string_view> readyInputs(const workspace::KindTraits& traits, bool provisioned);

// The Ready condition (type Ready, observedGeneration and
// lastTransitionTime left for setCondition) summarizing `inputs` of
// `conditions`:
//   False/NotReady when any input is "bad" (False, or True for a negative
//   type); else Unknown/ReadyUnknown when any is Unknown or missing; else
//   True/Ready.
// Message: empty when True; else one line "* <Type>: <message>" per bad
// input (or per unknown input when none is bad), in input order, using the
// reason when the message is empty, "Condition not yet reported" for a
// missing one.
api::Condition summarizeReady(std::span<const api::Condition> conditions,
                              std::span<const std::string_view> inputs);

// setCondition of summarizeReady(conditions, readyInputs(traits,
// provisioned)).
ConditionChange setReady(std::vector<api::Condition>& conditions,
                         const workspace::KindTraits& traits, bool provisioned,
                         std::int64_t generation, const api::Time& now);

} // namespace captf::lifecycle
