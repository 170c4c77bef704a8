#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "contract/json_adapter.h"
#include "contract/plan.h"

namespace captf::contract {
namespace {

using nlohmann::json;

constexpr std::string_view kPlan = R"({
  "format_version": "1.2",
  "resource_changes": [
    {"address": "aws_lb.api", "mode": "managed", "type": "aws_lb", "name": "api",
     "change": {"actions": ["no-op"], "before": {"name": "a"}, "after": {"name": "a"}}},
    {"address": "aws_instance.bastion[0]", "change": {"actions": ["delete", "create"],
     "before": {"ami": "ami-1"}, "after": {"ami": "ami-2"}}},
    {"address": "module.net.aws_subnet.private[\"zone-a\"]", "change": {"actions": ["create"]}},
    {"address": "aws_security_group.nodes", "change": {"actions": ["update"]}},
    {"address": "aws_eip.old", "change": {"actions": ["delete"]}},
    {"address": "data.aws_ami.ubuntu", "mode": "data", "change": {"actions": ["read"]}},
    {"address": "aws_instance.cp", "deposed": "00000001", "change": {"actions": ["delete"]}},
    {"address": "aws_s3_bucket.logs", "change": {"actions": ["no-op"], "importing": {"id": "logs"}}},
    {"address": "aws_iam_role.legacy", "change": {"actions": ["forget"]}}
  ]
})";

std::vector<PlannedChange> changes(std::string_view text = kPlan) {
  auto plan = parseJson(text, "plan");
  EXPECT_TRUE(plan.ok()) << plan.status();
  auto out = plannedChanges(*plan);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<PlannedChange>{};
}

TEST(PlanTest, ExtractsEveryResourceChange) {
  const auto all = changes();
  ASSERT_EQ(all.size(), 9U);
  EXPECT_EQ(all[1].address, "aws_instance.bastion[0]");
  EXPECT_EQ(all[1].actions, (std::vector<std::string>{"delete", "create"}));
  EXPECT_EQ(all[6].deposed, "00000001");
  EXPECT_TRUE(all[7].importing);
  EXPECT_FALSE(all[0].importing);
}

TEST(PlanTest, ClassifiesActionLists) {
  const auto classify = [](std::vector<std::string> actions) { return classifyActions(actions); };
  EXPECT_EQ(classify({"no-op"}).value(), ChangeAction::kNoOp);
  EXPECT_EQ(classify({"create"}).value(), ChangeAction::kCreate);
  EXPECT_EQ(classify({"update"}).value(), ChangeAction::kUpdate);
  EXPECT_EQ(classify({"delete"}).value(), ChangeAction::kDelete);
  EXPECT_EQ(classify({"delete", "create"}).value(), ChangeAction::kReplace);
  EXPECT_EQ(classify({"create", "delete"}).value(), ChangeAction::kReplace);
  EXPECT_EQ(classify({"read"}).value(), ChangeAction::kRead);
  EXPECT_EQ(classify({"forget"}).value(), ChangeAction::kForget);
  EXPECT_FALSE(classify({}).ok());
  EXPECT_FALSE(classify({"create", "create"}).ok());
  EXPECT_FALSE(classify({"explode"}).ok());
}

TEST(PlanTest, RejectsMalformedPlans) {
  for (const char* text :
       {R"([])", R"({"resource_changes": {}})", R"({"resource_changes": [1]})",
        R"({"resource_changes": [{"change": {"actions": ["create"]}}]})",
        R"({"resource_changes": [{"address": "", "change": {"actions": ["create"]}}]})",
        R"({"resource_changes": [{"address": "a.b"}]})",
        R"({"resource_changes": [{"address": "a.b", "change": {"actions": [1]}}]})",
        R"({"resource_changes": [{"address": "a.b", "change": {"actions": ["move"]}}]})"}) {
    auto plan = parseJson(text, "plan");
    ASSERT_TRUE(plan.ok());
    const auto out = plannedChanges(*plan);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  auto empty = parseJson(R"({"format_version": "1.2"})", "plan");
  EXPECT_TRUE(plannedChanges(*empty).value().empty());
}

TEST(PlanTest, EmptyPlanHasItsFixedHash) {
  // SHA-256 of the empty string.
  const std::string empty_hash =
      "p1:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  EXPECT_EQ(planHash({}), empty_hash);
  // Only no-ops is the empty plan too.
  EXPECT_EQ(planHash(changes(R"({"resource_changes": [
      {"address": "a.b", "change": {"actions": ["no-op"]}}]})")),
            empty_hash);
}

TEST(PlanTest, HashIgnoresOrderAndValues) {
  auto shuffled = changes();
  std::mt19937 random(7);
  std::shuffle(shuffled.begin(), shuffled.end(), random);
  EXPECT_EQ(planHash(changes()), planHash(shuffled));
  // Same addresses and actions, other values.
  std::string other(kPlan);
  other.replace(other.find("ami-2"), 5, "ami-9");
  EXPECT_EQ(planHash(changes()), planHash(changes(other)));
  EXPECT_TRUE(planHash(changes()).starts_with("p1:"));
  EXPECT_EQ(planHash(changes()).size(), 3U + 64U);
}

TEST(PlanTest, HashChangesWithAnyAddressActionImportOrDeposedKey) {
  const std::string base = planHash(changes());
  std::vector<std::vector<PlannedChange>> variants;
  for (std::size_t i = 0; i < changes().size(); ++i) {
    auto dropped = changes();
    if (dropped[i].actions == std::vector<std::string>{"no-op"} && !dropped[i].importing) {
      continue; // no-ops are not part of the hash
    }
    dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(i));
    variants.push_back(dropped);
  }
  auto renamed = changes();
  renamed[2].address = "module.net.aws_subnet.private[\"zone-b\"]";
  variants.push_back(renamed);
  auto reordered_replace = changes();
  reordered_replace[1].actions = {"create", "delete"};
  variants.push_back(reordered_replace);
  auto create_and_import = changes();
  create_and_import[2].importing = true;
  variants.push_back(create_and_import);
  auto other_deposed = changes();
  other_deposed[6].deposed = "00000002";
  variants.push_back(other_deposed);
  auto current_not_deposed = changes();
  current_not_deposed[6].deposed.clear();
  variants.push_back(current_not_deposed);
  std::set<std::string> seen = {base};
  for (std::size_t i = 0; i < variants.size(); ++i) {
    EXPECT_TRUE(seen.insert(planHash(variants[i])).second) << "variant " << i;
  }
}

TEST(PlanTest, HashFramingCannotBeForgedThroughAddresses) {
  // An address containing the entry separators must not collide with two
  // entries.
  const std::vector<PlannedChange> two = {{.address = "a.b", .actions = {"create"}},
                                          {.address = "c.d", .actions = {"create"}}};
  const std::vector<PlannedChange> one = {
      {.address = "a.b\"|create\n\"c.d", .actions = {"create"}}};
  EXPECT_NE(planHash(two), planHash(one));
}

TEST(PlanTest, DestructiveMeansDeleteOrReplace) {
  const auto all = changes();
  std::vector<std::string> destructive;
  for (const auto& change : all) {
    if (isDestructive(change)) {
      destructive.push_back(change.address);
    }
  }
  EXPECT_EQ(destructive, (std::vector<std::string>{"aws_instance.bastion[0]", "aws_eip.old",
                                                   "aws_instance.cp"}));
}

TEST(PlanTest, SummaryCountsLikeTerraform) {
  const auto summary = summarizePlan(changes());
  EXPECT_EQ(summary.plan_hash(), planHash(changes()));
  EXPECT_EQ(summary.add(), 2U);     // create + replace
  EXPECT_EQ(summary.change(), 1U);  // update
  EXPECT_EQ(summary.destroy(), 3U); // delete + replace + deposed delete
  EXPECT_EQ(summary.import(), 1U);
  EXPECT_FALSE(summary.truncated());
  const std::vector<std::string> resources(summary.resources().begin(), summary.resources().end());
  EXPECT_EQ(resources, (std::vector<std::string>{
                           "aws_eip.old (delete)", "aws_iam_role.legacy (forget)",
                           "aws_instance.bastion[0] (replace)", "aws_instance.cp (delete)",
                           "aws_security_group.nodes (update)", "data.aws_ami.ubuntu (read)",
                           "module.net.aws_subnet.private[\"zone-a\"] (create)"}));
}

TEST(PlanTest, SummaryTruncatesAtTheLimit) {
  std::vector<PlannedChange> many;
  many.reserve(60);
  for (int i = 0; i < 60; ++i) {
    many.push_back(
        {.address = "null_resource.r[" + std::to_string(100 + i) + "]", .actions = {"create"}});
  }
  const auto summary = summarizePlan(many);
  EXPECT_EQ(summary.resources_size(), 50);
  EXPECT_TRUE(summary.truncated());
  EXPECT_EQ(summary.add(), 60U);
  EXPECT_EQ(summary.resources(0), "null_resource.r[100] (create)");
  EXPECT_EQ(summarizePlan(many, 60).resources_size(), 60);
  EXPECT_FALSE(summarizePlan(many, 60).truncated());
}

TEST(PlanTest, LongAddressesAreClippedToTheApiLimit) {
  const std::string address = "module.x.null_resource.r[\"" + std::string(700, 'k') + "\"]";
  const std::string entry = formatPlanResource(address, ChangeAction::kReplace);
  EXPECT_EQ(entry.size(), kMaxPlanResourceBytes);
  EXPECT_TRUE(entry.ends_with("... (replace)")) << entry;
  EXPECT_EQ(formatPlanResource("a.b", ChangeAction::kCreate), "a.b (create)");
}

TEST(PlanTest, DriftSummaryListsDistinctSortedAddresses) {
  std::vector<PlannedChange> drift;
  for (int i = 25; i > 0; --i) {
    drift.push_back(
        {.address = "aws_instance.w[" + std::to_string(10 + i) + "]", .actions = {"update"}});
  }
  drift.push_back({.address = "aws_instance.w[11]", .actions = {"update"}});
  drift.push_back({.address = "aws_instance.gone", .actions = {"no-op"}});
  const auto summary = summarizeDrift(drift);
  EXPECT_EQ(summary.change(), 26U);
  EXPECT_EQ(summary.resources_size(), 20);
  EXPECT_TRUE(summary.truncated());
  EXPECT_EQ(summary.resources(0), "aws_instance.w[11]");
  EXPECT_EQ(summary.resources(1), "aws_instance.w[12]");
  EXPECT_TRUE(std::is_sorted(summary.resources().begin(), summary.resources().end()));
}

} // namespace
} // namespace captf::contract
