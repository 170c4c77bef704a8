#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "manager/controllers/kinds.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "test/manager/kube/fake_client.h"

namespace captf::controllers {
namespace {

using nlohmann::json;

json terraformCluster(const std::string& rv) {
  return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
          {"kind", "TerraformCluster"},
          {"metadata", {{"namespace", "t1"}, {"name", "c1"}, {"resourceVersion", rv}}},
          {"status", {{"ready", false}}}};
}

// A pass that read a stale copy must not write back what it read.
TEST(PatchStatusTest, IsRefusedForACopyOlderThanTheServers) {
  kube::testing::FakeClient api;
  api.put(terraformCluster("5"));
  const json stale = terraformCluster("4");
  const absl::Status s = patchStatus(api, stale, json{{"ready", false}}, json{{"ready", true}});
  EXPECT_TRUE(kube::isConflict(s)) << s;
  EXPECT_EQ(api.writes(), 0U);
  EXPECT_TRUE(
      patchStatus(api, terraformCluster("5"), json{{"ready", false}}, json{{"ready", true}}).ok());
  EXPECT_EQ((*api.get(kinds::kTerraformCluster, {"t1", "c1"}))["status"]["ready"], true);
}

// The pass's own annotation write moves its copy along, so its status
// patch afterwards is not refused.
TEST(PatchStatusTest, FollowsThePassesOwnAnnotationWrite) {
  kube::testing::FakeClient api;
  api.put(terraformCluster("5"));
  json object = terraformCluster("5");
  ASSERT_TRUE(patchAnnotation(api, object, "captf.io/x", std::string("y")).ok());
  EXPECT_NE(kube::meta::resourceVersion(object), "5");
  EXPECT_TRUE(patchStatus(api, object, json{{"ready", false}}, json{{"ready", true}}).ok());
}

} // namespace
} // namespace captf::controllers
