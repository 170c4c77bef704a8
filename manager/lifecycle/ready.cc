#include "manager/lifecycle/ready.h"

#include <algorithm>

#include "contract/strings.h"
#include "manager/api/conditions.h"

namespace captf::lifecycle {

namespace c = api::conditions;
using api::ConditionStatus;

const api::Condition* findCondition(std::span<const api::Condition> conditions,
                                    std::string_view type) {
  for (const api::Condition& condition : conditions) {
    if (condition.type == type) {
      return &condition;
    }
  }
  return nullptr;
}

bool conditionIs(std::span<const api::Condition> conditions, std::string_view type,
                 ConditionStatus status) {
  const api::Condition* condition = findCondition(conditions, type);
  return condition != nullptr && condition->status == status;
}

ConditionChange setCondition(std::vector<api::Condition>& conditions, std::string_view type,
                             ConditionStatus status, std::string_view reason,
                             std::string_view message, std::int64_t generation,
                             const api::Time& now) {
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [&](const api::Condition& existing) { return existing.type == type; });
  if (it == conditions.end()) {
    conditions.push_back(api::Condition{.type = std::string(type),
                                        .status = status,
                                        .observed_generation = generation,
                                        .last_transition_time = now,
                                        .reason = std::string(reason),
                                        .message = std::string(message)});
    return ConditionChange::kTransition;
  }
  ConditionChange change = ConditionChange::kNone;
  if (it->status != status) {
    it->status = status;
    it->last_transition_time = now;
    change = ConditionChange::kTransition;
  }
  if (it->reason != reason) {
    it->reason = std::string(reason);
    change = ConditionChange::kTransition;
  }
  if (it->message != message || it->observed_generation != generation) {
    it->message = std::string(message);
    it->observed_generation = generation;
    if (change == ConditionChange::kNone) {
      change = ConditionChange::kMessage;
    }
  }
  return change;
}

bool isNegativePolarity(std::string_view type) {
  return type == c::kDeleting || type == c::kDriftDetected || type == c::kDeletionBlocked;
}

std::vector<std::string_view> readyInputs(const workspace::KindTraits& traits, bool provisioned) {
  if (!provisioned) {
    return {c::kDependenciesReady, c::kIdentityAllowed,       c::kCredentialsMirrored,
            c::kRunnerRbacReady,   c::kApplyJobSucceeded,     c::kStateReadable,
            c::kOutputsValid,      c::kInfrastructureHealthy, c::kDeleting};
  }
  if (traits.ready_tracks_reapply) {
    return {c::kInfrastructureHealthy, c::kApplyJobSucceeded, c::kDeleting};
  }
  return {c::kInfrastructureHealthy, c::kDeleting};
}

api::Condition summarizeReady(std::span<const api::Condition> conditions,
                              std::span<const std::string_view> inputs) {
  std::vector<std::string> bad;
  std::vector<std::string> unknown;
  for (std::string_view type : inputs) {
    const api::Condition* condition = findCondition(conditions, type);
    if (condition == nullptr) {
      unknown.push_back(contract::strCat("* ", type, ": Condition not yet reported"));
      continue;
    }
    const std::string& detail = condition->message.empty() ? condition->reason : condition->message;
    const ConditionStatus problem =
        isNegativePolarity(type) ? ConditionStatus::kTrue : ConditionStatus::kFalse;
    if (condition->status == problem) {
      bad.push_back(contract::strCat("* ", type, ": ", detail));
    } else if (condition->status == ConditionStatus::kUnknown) {
      unknown.push_back(contract::strCat("* ", type, ": ", detail));
    }
  }
  api::Condition ready;
  ready.type = std::string(c::kReady);
  if (!bad.empty()) {
    ready.status = ConditionStatus::kFalse;
    ready.reason = std::string(c::kReasonNotReady);
    ready.message = contract::strJoin(bad, "\n");
  } else if (!unknown.empty()) {
    ready.status = ConditionStatus::kUnknown;
    ready.reason = std::string(c::kReasonReadyUnknown);
    ready.message = contract::strJoin(unknown, "\n");
  } else {
    ready.status = ConditionStatus::kTrue;
    ready.reason = std::string(c::kReasonReady);
  }
  return ready;
}

ConditionChange setReady(std::vector<api::Condition>& conditions,
                         const workspace::KindTraits& traits, bool provisioned,
                         std::int64_t generation, const api::Time& now) {
  const std::vector<std::string_view> inputs = readyInputs(traits, provisioned);
  const api::Condition ready = summarizeReady(conditions, inputs);
  return setCondition(conditions, ready.type, ready.status, ready.reason, ready.message, generation,
                      now);
}

} // namespace captf::lifecycle
