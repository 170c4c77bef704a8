#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/digest.h"
#include "manager/workspace/names.h"

namespace captf::workspace {
namespace {

using ::testing::ElementsAre;

ObjectRef machine() {
  return {contract::Role::kMachine, "team-a", "demo-md-0-abcde", "uid-1", "demo"};
}

TEST(NamesTest, SuffixIsTheSpecifiedHashOfTheIdentity) {
  const std::string hash =
      contract::sha256Hex("team-a/TerraformMachine/demo-md-0-abcde").substr(0, 16);
  EXPECT_EQ(stateSuffix(machine()), hash + "-m");
  ObjectRef cluster{contract::Role::kCluster, "team-a", "demo", "", ""};
  EXPECT_EQ(stateSuffix(cluster),
            contract::sha256Hex("team-a/TerraformCluster/demo").substr(0, 16) + "-c");
  ObjectRef pool{contract::Role::kMachinePool, "team-a", "demo", "", ""};
  EXPECT_TRUE(stateSuffix(pool).ends_with("-mp"));
  // The UID is not part of the identity: a moved object keeps its state.
  ObjectRef moved = machine();
  moved.uid = "uid-2";
  EXPECT_EQ(stateSuffix(moved), stateSuffix(machine()));
}

TEST(NamesTest, NamesDerivedFromTheSuffix) {
  EXPECT_EQ(stateSecretName("s-m"), "tfstate-default-s-m");
  EXPECT_EQ(stateChunkName("s-m", 0), "tfstate-default-s-m");
  EXPECT_EQ(stateChunkName("s-m", 2), "tfstate-default-s-m-part-2");
  EXPECT_EQ(lockLeaseName("s-m"), "lock-tfstate-default-s-m");
  EXPECT_EQ(runLeaseName("s-m"), "captf-run-s-m");
  EXPECT_EQ(backupSecretName("s-m", "7-0123456789ab"), "captf-state-backup-s-m-7-0123456789ab");
  EXPECT_EQ(backupSecretName("s-m", "7-0123456789ab", 1),
            "captf-state-backup-s-m-7-0123456789ab-part-1");
  EXPECT_EQ(legacyBackupSecretName("s-m", 7), "captf-state-backup-s-m-7");
  EXPECT_EQ(legacyBackupSecretName("s-m", 7, 1), "captf-state-backup-s-m-7-part-1");
  EXPECT_EQ(runSecretName("captf-m-x-apply-a1-abcdef"), "captf-run-captf-m-x-apply-a1-abcdef");
}

TEST(NamesTest, DurableInputsNameIsShortenedOnlyWhenTooLong) {
  EXPECT_EQ(durableInputsSecretName(machine()), "captf-inputs-m-demo-md-0-abcde");
  ObjectRef pool{contract::Role::kMachinePool, "ns", "p", "", ""};
  EXPECT_EQ(durableInputsSecretName(pool), "captf-inputs-mp-p");
  ObjectRef longer{contract::Role::kCluster, "ns", std::string(250, 'a'), "", ""};
  EXPECT_EQ(durableInputsSecretName(longer),
            "captf-inputs-c-" + contract::sha256Hex(std::string(250, 'a')).substr(0, 16));
  ObjectRef fits{contract::Role::kCluster, "ns", std::string(253 - 15, 'a'), "", ""};
  EXPECT_EQ(durableInputsSecretName(fits).size(), 253U);
}

TEST(NamesTest, UnreadableStateNamesKeepTheStateSecretsName) {
  EXPECT_EQ(unreadableStateSecretName("tfstate-default-s-m", "0123456789"),
            "tfstate-default-s-m-unreadable-0123456789");
  EXPECT_EQ(unreadableStateSecretName("tfstate-default-s-m-part-2", "0123456789"),
            "tfstate-default-s-m-part-2-unreadable-0123456789");
  EXPECT_EQ(unreadableStateSelector("s-m"),
            "captf.io/state-unreadable=true,captf.io/state-unreadable-suffix=s-m");
  // The longest that fits is kept whole.
  const std::string fits(253 - 22, 'a');
  EXPECT_EQ(unreadableStateSecretName(fits, "0123456789"), fits + "-unreadable-0123456789");
}

TEST(NamesTest, UnreadableStateNamesOfLongSecretsAreCutAndHashed) {
  // A Secret of an unexpected name can be 253 characters long; its copy's
  // name stays a DNS subdomain of at most 253 and two of them stay apart.
  const std::string x(253, 'x');
  EXPECT_EQ(unreadableStateSecretName(x, "0123456789"), std::string(222, 'x') + "-" +
                                                            contract::sha256Hex(x).substr(0, 8) +
                                                            "-unreadable-0123456789");
  EXPECT_EQ(unreadableStateSecretName(x, "0123456789").size(), 253U);
  // Cut after "-." (222 characters kept): the cut ends in an alphanumeric.
  const std::string a = std::string(220, 'a') + "-." + std::string(31, 'b');
  const std::string b = std::string(220, 'a') + "-." + std::string(31, 'c');
  EXPECT_EQ(unreadableStateSecretName(a, "0123456789"), std::string(220, 'a') + "-" +
                                                            contract::sha256Hex(a).substr(0, 8) +
                                                            "-unreadable-0123456789");
  EXPECT_NE(unreadableStateSecretName(a, "0123456789"), unreadableStateSecretName(b, "0123456789"));
}

TEST(NamesTest, LabelValuesAreHashedAbove63Characters) {
  EXPECT_EQ(labelValue(std::string(63, 'x')), std::string(63, 'x'));
  EXPECT_EQ(labelValue(std::string(64, 'x')),
            contract::sha256Hex(std::string(64, 'x')).substr(0, 16));
}

TEST(NamesTest, BackendLabelsAreExactlyTheFiveOfTheSpec) {
  const auto labels = backendLabels(machine());
  EXPECT_THAT(
      labels,
      ElementsAre(
          std::pair<const std::string, std::string>{
              "captf.infrastructure.cluster.x-k8s.io/owner-kind", "TerraformMachine"},
          std::pair<const std::string, std::string>{
              "captf.infrastructure.cluster.x-k8s.io/owner-name", "demo-md-0-abcde"},
          std::pair<const std::string, std::string>{"captf.io/managed", "true"},
          std::pair<const std::string, std::string>{"cluster.x-k8s.io/cluster-name", "demo"},
          std::pair<const std::string, std::string>{"clusterctl.cluster.x-k8s.io/move", ""}));
  EXPECT_EQ(backendLabelsHcl(machine()),
            "{\"captf.infrastructure.cluster.x-k8s.io/owner-kind\" = \"TerraformMachine\", "
            "\"captf.infrastructure.cluster.x-k8s.io/owner-name\" = \"demo-md-0-abcde\", "
            "\"captf.io/managed\" = \"true\", \"cluster.x-k8s.io/cluster-name\" = \"demo\", "
            "\"clusterctl.cluster.x-k8s.io/move\" = \"\"}");
  const auto config = backendConfig(machine());
  ASSERT_EQ(config.size(), 4U);
  EXPECT_EQ(config[0], "secret_suffix=" + stateSuffix(machine()));
  EXPECT_EQ(config[1], "namespace=team-a");
  EXPECT_EQ(config[2], "in_cluster_config=true");
  EXPECT_EQ(config[3], "labels=" + backendLabelsHcl(machine()));
}

TEST(NamesTest, SelectorsAndOwnerReference) {
  EXPECT_EQ(stateSelector("s-m"), "tfstateSecretSuffix=s-m");
  EXPECT_EQ(backupSelector("s-m"), "captf.io/state-backup=true,captf.io/state-backup-suffix=s-m");
  const auto owner = ownerReference(machine());
  EXPECT_EQ(owner["apiVersion"], "infrastructure.cluster.x-k8s.io/v1alpha1");
  EXPECT_EQ(owner["kind"], "TerraformMachine");
  EXPECT_EQ(owner["uid"], "uid-1");
  EXPECT_EQ(owner["blockOwnerDeletion"], false);
  EXPECT_EQ(owner["controller"], false);
  EXPECT_EQ(ownerReference(machine(), OwnerControl::kController)["controller"], true);
}

} // namespace
} // namespace captf::workspace
