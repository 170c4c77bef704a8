#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/api/conditions.h"
#include "manager/lifecycle/ready.h"
#include "test/manager/lifecycle/testing.h"

namespace captf::lifecycle {
namespace {

namespace c = api::conditions;
using api::ConditionStatus;
using testing::at;
using ::testing::ElementsAre;

api::Condition makeCondition(std::string_view type, ConditionStatus status, std::string reason,
                             std::string message = "") {
  return api::Condition{.type = std::string(type),
                        .status = status,
                        .observed_generation = 1,
                        .last_transition_time = at(-100),
                        .reason = std::move(reason),
                        .message = std::move(message)};
}

TEST(ReadyTest, SetConditionTransitions) {
  std::vector<api::Condition> conditions{};
  EXPECT_EQ(setCondition(conditions, c::kPaused, ConditionStatus::kFalse, c::kReasonNotPaused, "",
                         1, at(-100)),
            ConditionChange::kTransition);
  ASSERT_EQ(conditions.size(), 1U);
  EXPECT_EQ(conditions[0].last_transition_time, at(-100));
  // Same status and reason, new message: lastTransitionTime kept.
  EXPECT_EQ(setCondition(conditions, c::kPaused, ConditionStatus::kFalse, c::kReasonNotPaused,
                         "note", 2, at(-50)),
            ConditionChange::kMessage);
  EXPECT_EQ(conditions[0].last_transition_time, at(-100));
  EXPECT_EQ(conditions[0].observed_generation, 2);
  // Nothing changed.
  EXPECT_EQ(setCondition(conditions, c::kPaused, ConditionStatus::kFalse, c::kReasonNotPaused,
                         "note", 2, at(-40)),
            ConditionChange::kNone);
  // Reason only: a transition, lastTransitionTime kept (status unchanged).
  EXPECT_EQ(
      setCondition(conditions, c::kPaused, ConditionStatus::kFalse, "Other", "note", 2, at(-30)),
      ConditionChange::kTransition);
  EXPECT_EQ(conditions[0].last_transition_time, at(-100));
  // Status: lastTransitionTime moves.
  EXPECT_EQ(setCondition(conditions, c::kPaused, ConditionStatus::kTrue, c::kReasonPaused, "", 2,
                         at(-20)),
            ConditionChange::kTransition);
  EXPECT_EQ(conditions[0].last_transition_time, at(-20));
  // Order kept, new types appended.
  setCondition(conditions, c::kDeleting, ConditionStatus::kFalse, c::kReasonNotDeleting, "", 2,
               at(0));
  setCondition(conditions, c::kPaused, ConditionStatus::kFalse, c::kReasonNotPaused, "", 2, at(0));
  ASSERT_EQ(conditions.size(), 2U);
  EXPECT_EQ(conditions[0].type, c::kPaused);
  EXPECT_TRUE(conditionIs(conditions, c::kDeleting, ConditionStatus::kFalse));
  EXPECT_FALSE(conditionIs(conditions, c::kReady, ConditionStatus::kFalse));
  EXPECT_EQ(findCondition(conditions, c::kReady), nullptr);
}

TEST(ReadyTest, ReadyInputsPerKind) {
  EXPECT_EQ(readyInputs(testing::traitsOf(contract::Role::kMachine), false).size(), 9U);
  EXPECT_EQ(readyInputs(testing::traitsOf(contract::Role::kCluster), false).front(),
            c::kDependenciesReady);
  EXPECT_THAT(readyInputs(testing::traitsOf(contract::Role::kCluster), true),
              ElementsAre(c::kInfrastructureHealthy, c::kDeleting));
  EXPECT_THAT(readyInputs(testing::traitsOf(contract::Role::kMachine), true),
              ElementsAre(c::kInfrastructureHealthy, c::kDeleting));
  EXPECT_THAT(readyInputs(testing::traitsOf(contract::Role::kMachinePool), true),
              ElementsAre(c::kInfrastructureHealthy, c::kApplyJobSucceeded, c::kDeleting));
  EXPECT_TRUE(isNegativePolarity(c::kDeleting));
  EXPECT_TRUE(isNegativePolarity(c::kDriftDetected));
  EXPECT_TRUE(isNegativePolarity(c::kDeletionBlocked));
  EXPECT_FALSE(isNegativePolarity(c::kReady));
}

TEST(ReadyTest, Summary) {
  const api::Condition healthy = makeCondition(c::kInfrastructureHealthy, ConditionStatus::kTrue,
                                               std::string(c::kReasonHealthy));
  const api::Condition not_deleting =
      makeCondition(c::kDeleting, ConditionStatus::kFalse, std::string(c::kReasonNotDeleting));
  struct Case {
    std::string name{};
    contract::Role role{};
    bool provisioned{};
    std::vector<api::Condition> conditions{};
    ConditionStatus status{};
    std::string reason{};
    std::string message{};
  };
  const std::vector<Case> cases = {
      {"provisioned machine, healthy",
       contract::Role::kMachine,
       true,
       {healthy, not_deleting},
       ConditionStatus::kTrue,
       "Ready",
       ""},
      {"deleting (negative polarity) makes Ready False",
       contract::Role::kMachine,
       true,
       {healthy,
        makeCondition(c::kDeleting, ConditionStatus::kTrue, "Deleting", "destroy running")},
       ConditionStatus::kFalse,
       "NotReady",
       "* Deleting: destroy running"},
      {"after provisioning, credentials and drift never flip Ready",
       contract::Role::kCluster,
       true,
       {healthy, not_deleting,
        makeCondition(c::kIdentityAllowed, ConditionStatus::kFalse, "NamespaceNotAllowed"),
        makeCondition(c::kDriftDetected, ConditionStatus::kTrue, "DriftReported")},
       ConditionStatus::kTrue,
       "Ready",
       ""},
      {"a pool's failed re-apply is visible",
       contract::Role::kMachinePool,
       true,
       {healthy, not_deleting,
        makeCondition(c::kApplyJobSucceeded, ConditionStatus::kFalse, "ApplyFailed",
                      "step apply failed")},
       ConditionStatus::kFalse,
       "NotReady",
       "* ApplyJobSucceeded: step apply failed"},
      {"before provisioning a waiting dependency is Unknown; missing ones are listed",
       contract::Role::kMachine,
       false,
       {makeCondition(c::kDependenciesReady, ConditionStatus::kUnknown, "WaitingForBootstrapData"),
        not_deleting},
       ConditionStatus::kUnknown,
       "ReadyUnknown",
       "* DependenciesReady: WaitingForBootstrapData\n"
       "* IdentityAllowed: Condition not yet reported\n"
       "* CredentialsMirrored: Condition not yet reported\n"
       "* RunnerRBACReady: Condition not yet reported\n"
       "* ApplyJobSucceeded: Condition not yet reported\n"
       "* StateReadable: Condition not yet reported\n"
       "* OutputsValid: Condition not yet reported\n"
       "* InfrastructureHealthy: Condition not yet reported"},
      {"False wins over Unknown and only the False inputs are listed",
       contract::Role::kCluster,
       true,
       {makeCondition(c::kInfrastructureHealthy, ConditionStatus::kFalse, "Provisioning",
                      "apply running")},
       ConditionStatus::kFalse,
       "NotReady",
       "* InfrastructureHealthy: apply running"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    std::vector<api::Condition> conditions = k.conditions;
    setReady(conditions, testing::traitsOf(k.role), k.provisioned, 3, at(0));
    const api::Condition* ready = findCondition(conditions, c::kReady);
    ASSERT_NE(ready, nullptr);
    EXPECT_EQ(ready->status, k.status);
    EXPECT_EQ(ready->reason, k.reason);
    EXPECT_EQ(ready->message, k.message);
    EXPECT_EQ(ready->observed_generation, 3);
  }
}

} // namespace
} // namespace captf::lifecycle
