#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/lifecycle/names.h"

namespace captf::lifecycle {
namespace {

using ::testing::MatchesRegex;

ObjectIdentity machine(std::string name) {
  return ObjectIdentity{.role = contract::Role::kMachine, .ns = "ns1", .name = std::move(name)};
}

TEST(NamesTest, JobNameShape) {
  struct Case {
    contract::Role role{};
    std::string name{};
    api::Operation op{};
    std::int32_t attempt{};
    std::string pattern{};
  };
  const Case cases[] = {
      {contract::Role::kCluster, "c1", api::Operation::kApply, 1,
       "captf-c-c1-apply-a1-[0-9a-f]{6}"},
      {contract::Role::kMachine, "worker-0", api::Operation::kRefresh, 40,
       "captf-m-worker-0-refresh-a40-[0-9a-f]{6}"},
      {contract::Role::kMachinePool, "pool", api::Operation::kRestore, 2,
       "captf-mp-pool-restore-a2-[0-9a-f]{6}"},
      // 57 characters exactly: kept.
      {contract::Role::kMachine, std::string(33, 'x'), api::Operation::kDrift, 9,
       "captf-m-x{33}-drift-a9-[0-9a-f]{6}"},
      // 58 characters: the name part becomes 16 hex characters.
      {contract::Role::kMachine, std::string(34, 'x'), api::Operation::kDrift, 9,
       "captf-m-[0-9a-f]{16}-drift-a9-[0-9a-f]{6}"},
      {contract::Role::kMachinePool, std::string(253, 'n'), api::Operation::kDestroy, 123456789,
       "captf-mp-[0-9a-f]{16}-destroy-a123456789-[0-9a-f]{6}"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ObjectIdentity object{.role = c.role, .ns = "ns", .name = c.name};
    const std::string name =
        jobName(object, {.inputs_hash = "h2:x", .operation = c.op, .attempt = c.attempt});
    EXPECT_THAT(name, MatchesRegex(c.pattern));
    EXPECT_LE(name.size(), kMaxJobName);
  }
}

TEST(NamesTest, JobNameIsDeterministicAndSeparatesItsParts) {
  const JobNameParts parts{.inputs_hash = "h2:a",
                           .operation = api::Operation::kDrift,
                           .attempt = 3,
                           .tick = "captf-m-w-drift-a2-123456"};
  EXPECT_EQ(jobName(machine("w"), parts), jobName(machine("w"), parts));
  std::set<std::string> names{};
  names.insert(jobName(machine("w"), parts));
  for (const auto& vary : std::vector<std::function<void(JobNameParts&)>>{
           [](JobNameParts& p) { p.inputs_hash = "h2:b"; },
           [](JobNameParts& p) { p.tick = "captf-m-w-drift-a3-654321"; },
           [](JobNameParts& p) { p.tick = ""; }, [](JobNameParts& p) { p.attempt = 4; },
           [](JobNameParts& p) { p.operation = api::Operation::kRefresh; }}) {
    JobNameParts changed = parts;
    vary(changed);
    names.insert(jobName(machine("w"), changed));
  }
  EXPECT_EQ(names.size(), 6U);
  // The namespace is not part of a Job name (Jobs live in the object's).
  ObjectIdentity other = machine("w");
  other.ns = "ns2";
  EXPECT_EQ(jobName(other, parts), jobName(machine("w"), parts));
}

TEST(NamesTest, LeaseAndSecretNames) {
  EXPECT_THAT(clusterLeaseName("ns1", "c1"), MatchesRegex("captf-cluster-[0-9a-f]{16}"));
  EXPECT_NE(clusterLeaseName("ns1", "c1"), clusterLeaseName("ns2", "c1"));
  EXPECT_NE(clusterLeaseName("ns1", "c1"), clusterLeaseName("ns1", "c2"));
  // No separator ambiguity between namespace and cluster.
  EXPECT_NE(clusterLeaseName("a-b", "c"), clusterLeaseName("a", "b-c"));
  const ObjectIdentity object = machine("w");
  EXPECT_EQ(runLeaseName(object), "captf-run-" + stateSuffix(object));
  EXPECT_EQ(lockLeaseName(object), "lock-tfstate-default-" + stateSuffix(object));
  EXPECT_EQ(stateSecretName(object), "tfstate-default-" + stateSuffix(object));
  EXPECT_EQ(perRunSecretName("captf-m-w-apply-a1-abcdef"), "captf-run-captf-m-w-apply-a1-abcdef");
  EXPECT_EQ(labelSafeName("short"), "short");
  EXPECT_THAT(labelSafeName(std::string(64, 'a')), MatchesRegex("[0-9a-f]{16}"));
}

} // namespace
} // namespace captf::lifecycle
