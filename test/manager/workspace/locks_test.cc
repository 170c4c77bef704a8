#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/workspace/locks.h"

namespace captf::workspace {
namespace {

using ::testing::HasSubstr;

nlohmann::json lease(std::string_view holder, std::string_view info) {
  nlohmann::json out = {{"metadata", {{"name", "lock-tfstate-default-s-m"}}},
                        {"spec", {{"holderIdentity", holder}}}};
  if (!info.empty()) {
    out["metadata"]["annotations"]["app.terraform.io/lock-info"] = info;
  }
  return out;
}

constexpr std::string_view kInfo =
    R"({"ID":"4f1d-lock","Operation":"OperationTypeApply","Who":"runner@captf-m-x-apply-a1-abcdef-7xk2p","Version":"1.12.6","Created":"2026-01-02T03:04:05Z"})";

TEST(LocksTest, ReadsTheBackendsLockInfo) {
  EXPECT_FALSE(readLock(nullptr).has_value());
  nlohmann::json unlocked = lease("", kInfo);
  unlocked["spec"].erase("holderIdentity"); // what the backend's unlock leaves
  EXPECT_FALSE(readLock(unlocked).has_value());
  const auto lock = readLock(lease("4f1d-lock", kInfo));
  ASSERT_TRUE(lock.has_value());
  EXPECT_EQ(lock->id, "4f1d-lock");
  EXPECT_EQ(lock->operation, "OperationTypeApply");
  EXPECT_EQ(lock->who, "runner@captf-m-x-apply-a1-abcdef-7xk2p");
  EXPECT_EQ(lock->created, "2026-01-02T03:04:05Z");
  const auto garbled = readLock(lease("id-only", "{not json"));
  ASSERT_TRUE(garbled.has_value());
  EXPECT_EQ(garbled->id, "id-only");
  EXPECT_EQ(garbled->who, "");
}

// The backend locks when holderIdentity is present (an empty one included)
// and unlocks only with the ID equal to it: that field is the lock ID, even
// when the lock info names another.
TEST(LocksTest, TheLockIdIsTheHolderIdentity) {
  const auto edited = readLock(lease("5c2d-by-hand", kInfo));
  ASSERT_TRUE(edited.has_value());
  EXPECT_EQ(edited->id, "5c2d-by-hand");
  EXPECT_EQ(edited->who, "runner@captf-m-x-apply-a1-abcdef-7xk2p");
  const OwnRunners finished{{"captf-m-x-apply-a1-abcdef"}, {}, {"captf-m-x-apply-a1-abcdef"}};
  EXPECT_EQ(decideLock(edited, finished).state, LockState::kStale);
  EXPECT_EQ(decideLock(edited, finished).lock.id, "5c2d-by-hand");

  const auto empty = readLock(lease("", kInfo));
  ASSERT_TRUE(empty.has_value()) << "an empty holderIdentity is held";
  const LockDecision decision = decideLock(empty, finished);
  EXPECT_EQ(decision.state, LockState::kForeign) << "no ID to force-unlock with";
  EXPECT_THAT(decision.message, HasSubstr("lock (no ID)"));
}

TEST(LocksTest, DecidesLiveStaleForeignAndFree) {
  const auto lock = readLock(lease("4f1d-lock", kInfo));
  const std::string pod = "captf-m-x-apply-a1-abcdef-7xk2p";
  struct Case {
    const char* name;
    std::optional<LockInfo> lock;
    OwnRunners own;
    LockState want;
  };
  const Case cases[] = {
      {"no lock", std::nullopt, {}, LockState::kFree},
      {"our running pod", lock, {{"captf-m-x-apply-a1-abcdef"}, {{pod, false}}}, LockState::kLive},
      {"our finished pod", lock, {{"captf-m-x-apply-a1-abcdef"}, {{pod, true}}}, LockState::kStale},
      {"our pod is gone, its Job past its deadline",
       lock,
       {{"captf-m-x-apply-a1-abcdef"}, {}, {"captf-m-x-apply-a1-abcdef"}},
       LockState::kStale},
      // A pod deleted with --force on a lost node may run on.
      {"our pod is gone, its Job within its deadline",
       lock,
       {{"captf-m-x-apply-a1-abcdef"}, {}},
       LockState::kHolderGone},
      {"another Job past its deadline is no proof",
       lock,
       {{"captf-m-x-apply-a1-abcdef", "captf-m-x-apply-a2-012345"},
        {},
        {"captf-m-x-apply-a2-012345"}},
       LockState::kHolderGone},
      {"a finished pod needs no deadline",
       lock,
       {{"captf-m-x-apply-a1-abcdef"}, {{pod, true}}},
       LockState::kStale},
      {"another object's job", lock, {{"captf-m-y-apply-a1-abcdef"}, {}}, LockState::kForeign},
      {"prefix is not enough", lock, {{"captf-m-x-apply-a1-abc"}, {}}, LockState::kForeign},
      {"no @ in Who",
       readLock(lease("id", R"({"ID":"id","Who":"captf-m-x-apply-a1-abcdef-7xk2p"})")),
       {{"captf-m-x-apply-a1-abcdef"}, {}},
       LockState::kForeign},
      {"no lock info",
       readLock(lease("id", "")),
       {{"captf-m-x-apply-a1-abcdef"}, {}},
       LockState::kForeign},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const LockDecision decision = decideLock(c.lock, c.own);
    EXPECT_EQ(decision.state, c.want);
    if (c.want == LockState::kStale) {
      EXPECT_EQ(decision.lock.id, "4f1d-lock");
    }
    if (c.want == LockState::kHolderGone) {
      EXPECT_THAT(decision.message, HasSubstr("captf-m-x-apply-a1-abcdef-7xk2p, which no longer "
                                              "exists but may still run"));
      EXPECT_THAT(decision.message, HasSubstr("deadline"));
    }
  }
}

TEST(LocksTest, TellsWhichJobsPodHoldsTheLock) {
  const auto lock = readLock(lease("4f1d-lock", kInfo));
  ASSERT_TRUE(lock.has_value());
  EXPECT_TRUE(heldByPodOf(*lock, "captf-m-x-apply-a1-abcdef"));
  EXPECT_FALSE(heldByPodOf(*lock, "captf-m-x-apply-a1-abc"));
  EXPECT_FALSE(heldByPodOf(*lock, "captf-m-y-apply-a1-abcdef"));
  EXPECT_FALSE(heldByPodOf(*lock, ""));
}

TEST(LocksTest, ForeignMessageNamesHolderOperationAndTime) {
  const auto decision = decideLock(readLock(lease("4f1d-lock", kInfo)), {});
  EXPECT_EQ(decision.state, LockState::kForeign);
  EXPECT_THAT(decision.message, HasSubstr("runner@captf-m-x-apply-a1-abcdef-7xk2p"));
  EXPECT_THAT(decision.message, HasSubstr("OperationTypeApply"));
  EXPECT_THAT(decision.message, HasSubstr("2026-01-02T03:04:05Z"));
}

// Whoever can write Leases writes the lock info, up to the API server's
// 256 KiB of annotations: each field is clipped in the message, which
// becomes the StateReadable condition's (the CRD caps it at 32768
// characters) and an Event's; the decision and the lock ID are unchanged
// (found by workspace_lock_fuzz).
TEST(LocksTest, MessageClipsEachFieldOfTheLockInfo) {
  const std::string huge(100'000, 'w');
  const nlohmann::json info = {{"ID", "id-" + huge},
                               {"Operation", huge},
                               {"Who", "runner@captf-m-x-apply-a1-abcdef-" + huge},
                               {"Created", huge}};
  const OwnRunners own{.job_names = {"captf-m-x-apply-a1-abcdef"},
                       .pods = {},
                       .past_deadline = {"captf-m-x-apply-a1-abcdef"}};
  const auto lock = readLock(lease("id-" + huge, info.dump()));
  ASSERT_TRUE(lock.has_value());
  EXPECT_EQ(lock->id, "id-" + huge);
  const auto stale = decideLock(lock, own);
  EXPECT_EQ(stale.state, LockState::kStale);
  EXPECT_LT(stale.message.size(), 2048U);
  EXPECT_THAT(stale.message, HasSubstr("held by runner@captf-m-x-apply-a1-abcdef-www"));
  const auto foreign = decideLock(lock, {});
  EXPECT_EQ(foreign.state, LockState::kForeign);
  EXPECT_LT(foreign.message.size(), 2048U);
}

} // namespace
} // namespace captf::workspace
