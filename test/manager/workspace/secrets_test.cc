#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/digest.h"
#include "manager/workspace/secrets.h"
#include "test/contract/test_util.h"

namespace captf::workspace {
namespace {

using ::testing::HasSubstr;

ObjectRef cluster() {
  return {contract::Role::kCluster, "ns", "demo", "uid-1", "demo"};
}

contract::RenderedRoot root() {
  return {"{\"main\":true}\n", R"({"control_plane_endpoint":null,"control_plane_initialized":true})"
                               "\n"};
}

TEST(DurableInputsTest, ManifestRoundTrips) {
  const auto secret = durableInputsSecret(cluster(), root(), {"reg/x:v1", "sha256:aa", "ident"});
  EXPECT_EQ(secret["metadata"]["name"], "captf-inputs-c-demo");
  EXPECT_EQ(secret["metadata"]["namespace"], "ns");
  EXPECT_EQ(secret["type"], "Opaque");
  EXPECT_EQ(secret["data"].size(), 2U);
  EXPECT_EQ(secret["metadata"]["labels"]["captf.io/managed"], "true");
  EXPECT_EQ(secret["metadata"]["labels"]["clusterctl.cluster.x-k8s.io/move"], "");
  EXPECT_EQ(secret["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"], "demo");
  EXPECT_EQ(secret["metadata"]["annotations"]["captf.io/image"], "reg/x:v1");
  EXPECT_EQ(secret["metadata"]["annotations"]["captf.io/image-digest"], "sha256:aa");
  EXPECT_EQ(secret["metadata"]["annotations"]["captf.io/identity"], "ident");
  EXPECT_EQ(secret["metadata"]["ownerReferences"][0]["uid"], "uid-1");

  const auto read = readDurableInputs(secret);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->root.main_tf_json, root().main_tf_json);
  EXPECT_EQ(read->root.tfvars_json, root().tfvars_json);
  EXPECT_TRUE(read->control_plane_initialized);
  EXPECT_TRUE(read->control_plane_endpoint_null);
  EXPECT_EQ(read->annotations.image, "reg/x:v1");
  EXPECT_EQ(read->annotations.image_digest, "sha256:aa");
  EXPECT_EQ(read->annotations.identity, "ident");
}

TEST(DurableInputsTest, OmitsUnknownDigestAndReadsLatches) {
  contract::RenderedRoot other = root();
  other.tfvars_json = R"({"control_plane_endpoint":{"host":"h","port":1}})";
  const auto secret = durableInputsSecret(cluster(), other, {"reg/x:v1", std::nullopt, ""});
  EXPECT_FALSE(secret["metadata"]["annotations"].contains("captf.io/image-digest"));
  EXPECT_FALSE(secret["metadata"]["annotations"].contains("captf.io/identity"));
  const auto read = readDurableInputs(secret);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->control_plane_initialized);
  EXPECT_FALSE(read->control_plane_endpoint_null);
  EXPECT_FALSE(read->annotations.image_digest.has_value());
}

TEST(DurableInputsTest, RejectsDamagedSecretsNamingThem) {
  auto secret = durableInputsSecret(cluster(), root(), {"i", std::nullopt, ""});
  auto missing = secret;
  missing["data"].erase("terraform.tfvars.json");
  EXPECT_THAT(readDurableInputs(missing).status().message(),
              HasSubstr("captf-inputs-c-demo has no key terraform.tfvars.json"));
  auto garbage = secret;
  garbage["data"]["terraform.tfvars.json"] = contract::base64Encode("[1]");
  EXPECT_THAT(readDurableInputs(garbage).status().message(), HasSubstr("not a JSON object"));
  auto bad = secret;
  bad["data"]["main.tf.json"] = "%%%";
  EXPECT_EQ(readDurableInputs(bad).status().code(), absl::StatusCode::kFailedPrecondition);
}

// The tfvars hold input values, sensitive ones included: a broken file is
// named with the offset and the kind of error, never quoted.
TEST(DurableInputsTest, BrokenTfvarsAreNamedNeverQuoted) {
  const std::string value = "CANARY-7f3a9c2e5b10d4";
  auto secret = durableInputsSecret(cluster(), root(), {"i", std::nullopt, ""});
  for (const std::string& tfvars :
       {R"({"cluster_name":")" + value, R"({"cluster_name":")" + value + R"(\q"})",
        R"({"cluster_name":)" + value + "}"}) {
    secret["data"]["terraform.tfvars.json"] = contract::base64Encode(tfvars);
    const auto read = readDurableInputs(secret);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
    const std::string message(read.status().message());
    EXPECT_THAT(message,
                HasSubstr("captf-inputs-c-demo: terraform.tfvars.json: invalid JSON at byte "));
    contract::testing::expectNoSecret(message, value);
  }
}

TEST(DigestTest, PinsAndParsesImageIds) {
  const std::string hex(64, 'a');
  EXPECT_EQ(digestFromImageId("docker-pullable://reg.io/repo@sha256:" + hex), "sha256:" + hex);
  EXPECT_EQ(digestFromImageId("reg.io/repo@sha256:" + hex), "sha256:" + hex);
  EXPECT_EQ(digestFromImageId("sha256:" + hex), "sha256:" + hex);
  EXPECT_FALSE(digestFromImageId("reg.io/repo:v1").has_value());
  EXPECT_FALSE(digestFromImageId("reg.io/repo@sha256:abc").has_value());
  EXPECT_FALSE(digestFromImageId("reg.io/repo@sha256:" + std::string(64, 'G')).has_value());
  EXPECT_EQ(imageDigestPatch("sha256:" + hex)["metadata"]["annotations"]["captf.io/image-digest"],
            "sha256:" + hex);
}

TEST(RunSecretTest, OwnedByTheJob) {
  const auto secret = runSecret(cluster(), "captf-c-demo-apply-a1-abcdef", "job-uid", root());
  EXPECT_EQ(secret["metadata"]["name"], "captf-run-captf-c-demo-apply-a1-abcdef");
  EXPECT_EQ(secret["metadata"]["ownerReferences"][0]["kind"], "Job");
  EXPECT_EQ(secret["metadata"]["ownerReferences"][0]["uid"], "job-uid");
  EXPECT_EQ(secret["data"]["main.tf.json"], contract::base64Encode(root().main_tf_json));
  const auto restore = restoreRunSecret(cluster(), "captf-c-demo-restore-a1-abcdef", "u");
  EXPECT_EQ(restore["data"].size(), 1U);
  EXPECT_EQ(restore["data"]["main.tf.json"], contract::base64Encode(contract::renderRestoreRoot()));
}

} // namespace
} // namespace captf::workspace
