// Proves the integration tier of the rig: a real kube-apiserver on real etcd
// with RBAC on. kubectl is the client here so that the rig is proven
// independently of the project's own Kubernetes client.
#include <regex>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/rig/fixture.h"

namespace captf::rig {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kWidgetCrd = R"(
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.rig.captf.io
spec:
  group: rig.captf.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
)";

class RigIntegrationTest : public ::testing::Test {
protected:
  void SetUp() override { env_ = &shared(Tier::kIntegration); }

  void installCrd() {
    CommandResult r = kubectl(*env_, {"apply", "-f", "-"}, kWidgetCrd);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = kubectl(*env_, {"wait", "--for=condition=Established", "--timeout=30s",
                        "crd/widgets.rig.captf.io"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  const Env* env_ = nullptr;
};

TEST_F(RigIntegrationTest, ServesTheVersionItWasBuiltAs) {
  CommandResult r = kubectl(*env_, {"version", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(R"("gitVersion": "v1.36.3")"));
}

TEST_F(RigIntegrationTest, CustomResourceLifecycleThroughTheApiServer) {
  installCrd();
  // The schema is enforced: a widget without a size is refused.
  CommandResult bad = kubectl(*env_, {"create", "-f", "-"},
                              "{\"apiVersion\":\"rig.captf.io/v1\",\"kind\":\"Widget\","
                              "\"metadata\":{\"name\":\"bad\"},\"spec\":{}}");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("spec.size: Required value"));

  // The list's own resourceVersion (the first one in the document).
  CommandResult list =
      kubectl(*env_, {"get", "--raw", "/apis/rig.captf.io/v1/namespaces/default/widgets"});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(list.output, m, std::regex(R"re("resourceVersion":"(\d+)")re")))
      << list.output;
  const std::string rv = m[1];

  CommandResult r = kubectl(*env_, {"create", "-f", "-"},
                            "{\"apiVersion\":\"rig.captf.io/v1\",\"kind\":\"Widget\","
                            "\"metadata\":{\"name\":\"w1\"},\"spec\":{\"size\":3}}");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = kubectl(*env_, {"get", "widget", "w1", "-o", "jsonpath={.spec.size}"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "3");
  r = kubectl(*env_, {"patch", "widget", "w1", "--type=merge", "-p", R"({"spec":{"size":5}})"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = kubectl(*env_, {"delete", "widget", "w1", "--wait=true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = kubectl(*env_, {"get", "widget", "w1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("NotFound"));

  // A watch from before the create replays the three changes in order.
  r = kubectl(*env_, {"get", "--raw",
                      "/apis/rig.captf.io/v1/namespaces/default/widgets?watch=1&timeoutSeconds=2"
                      "&resourceVersion=" +
                          rv});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t added = r.output.find(R"("type":"ADDED")");
  const size_t modified = r.output.find(R"("type":"MODIFIED")");
  const size_t deleted = r.output.find(R"("type":"DELETED")");
  ASSERT_NE(added, std::string::npos) << r.output;
  ASSERT_NE(modified, std::string::npos) << r.output;
  ASSERT_NE(deleted, std::string::npos) << r.output;
  EXPECT_LT(added, modified);
  EXPECT_LT(modified, deleted);
  EXPECT_THAT(r.output.substr(modified, deleted - modified), HasSubstr(R"("size":5)"));
}

TEST_F(RigIntegrationTest, RbacRefusesAUserWithoutRights) {
  installCrd();
  const std::string alice = userKubeconfig(*env_, "alice", {"rig-testers"});
  ASSERT_FALSE(alice.empty());
  CommandResult r = run({env_->kubectl, "--kubeconfig", alice, "get", "widgets"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr(R"(User "alice" cannot list resource "widgets")"));

  // Grant read access to her group: list works, delete is still refused.
  r = kubectl(*env_, {"create", "role", "widget-reader", "--verb=get,list",
                      "--resource=widgets.rig.captf.io"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = kubectl(*env_, {"create", "rolebinding", "widget-reader", "--role=widget-reader",
                      "--group=rig-testers"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = kubectl(*env_, {"create", "-f", "-"},
              "{\"apiVersion\":\"rig.captf.io/v1\",\"kind\":\"Widget\","
              "\"metadata\":{\"name\":\"w2\"},\"spec\":{\"size\":1}}");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // RBAC changes reach the authorizer's cache within a moment.
  for (int i = 0; i < 50; ++i) {
    r = run({env_->kubectl, "--kubeconfig", alice, "get", "widget", "w2", "-o", "name"});
    if (r.exit_code == 0) {
      break;
    }
    run({"sleep", "0.1"});
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("widget.rig.captf.io/w2"));
  r = run({env_->kubectl, "--kubeconfig", alice, "delete", "widget", "w2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr(R"(cannot delete resource "widgets")"));
  EXPECT_THAT(kubectl(*env_, {"get", "widget", "w2"}).output, Not(HasSubstr("NotFound")));
}

} // namespace
} // namespace captf::rig
