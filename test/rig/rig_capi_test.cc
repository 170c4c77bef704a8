// Proves the capi tier of the rig: Cluster API's core controllers and
// webhooks run against the rig's API server, with conversion between the
// v1beta1 and v1beta2 APIs served by the core manager.
#include <chrono>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/rig/fixture.h"

namespace captf::rig {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;

TEST(RigCapiTest, ClusterApiCoreReconcilesAndConvertsClusters) {
  const Env& env = shared(Tier::kCapi);
  CommandResult r = run({env.clusterctl, "version", "-o", "short"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("v1.14"));

  ASSERT_EQ(kubectl(env, {"create", "namespace", "capi-smoke"}).exit_code, 0);
  // A stand-in infrastructure CRD with the contract label: Cluster API reads
  // the label to convert references between its API versions.
  r = kubectl(env, {"apply", "-f", "-"}, R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: smokeclusters.infrastructure.cluster.x-k8s.io
  labels: {cluster.x-k8s.io/v1beta2: v1alpha1}
spec:
  group: infrastructure.cluster.x-k8s.io
  scope: Namespaced
  names: {plural: smokeclusters, singular: smokecluster, kind: SmokeCluster, listKind: SmokeClusterList}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The core manager's validating webhook answers: a Cluster with nothing to
  // build is refused with its message.
  const std::string cluster = R"(
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: c1, namespace: capi-smoke}
spec:
  clusterNetwork:
    pods: {cidrBlocks: [192.168.0.0/16]}
)";
  r = kubectl(env, {"apply", "-f", "-"}, cluster);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("one of spec.controlPlaneRef, spec.infrastructureRef or "
                                  "spec.topology must be set"));
  r = kubectl(env, {"apply", "-f", "-"}, cluster + R"(
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: SmokeCluster, name: c1}
)");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // The Cluster controller reconciles it: it waits for its infrastructure.
  std::string phase;
  for (int i = 0; i < 300 && phase.empty(); ++i) {
    r = kubectl(env,
                {"-n", "capi-smoke", "get", "cluster", "c1", "-o", "jsonpath={.status.phase}"});
    phase = r.output;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(phase, "Provisioning");

  // Reading it as v1beta1 goes through the conversion webhook.
  r = kubectl(env, {"-n", "capi-smoke", "get", "clusters.v1beta1.cluster.x-k8s.io", "c1", "-o",
                    "jsonpath={.apiVersion} {.spec.clusterNetwork.pods.cidrBlocks[0]}"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // (kubectl also prints the deprecation warning of v1beta1.)
  EXPECT_THAT(r.output, EndsWith("\ncluster.x-k8s.io/v1beta1 192.168.0.0/16"));
  r = kubectl(env, {"-n", "capi-smoke", "get", "clusters.v1beta1.cluster.x-k8s.io", "c1", "-o",
                    "jsonpath={.spec.infrastructureRef.apiVersion}"});
  EXPECT_THAT(r.output, EndsWith("\ninfrastructure.cluster.x-k8s.io/v1alpha1"));
}

} // namespace
} // namespace captf::rig
