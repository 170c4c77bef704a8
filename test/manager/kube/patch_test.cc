#include <gtest/gtest.h>

#include "manager/kube/patch.h"

namespace captf::kube {
namespace {

TEST(MergePatchTest, DiffsNestedObjectsAndNullsRemovals) {
  Json original = Json::parse(R"({"metadata":{"name":"a","labels":{"x":"1","y":"2"},
    "resourceVersion":"7"},"spec":{"list":[1,2],"keep":true,"drop":1}})");
  Json modified = original;
  modified["metadata"]["labels"].erase("y");
  modified["metadata"]["labels"]["z"] = "3";
  modified["spec"]["list"] = {1, 2, 3};
  modified["spec"].erase("drop");

  Json patch = createMergePatch(original, modified);
  EXPECT_EQ(patch, Json::parse(R"({"metadata":{"labels":{"y":null,"z":"3"}},
    "spec":{"list":[1,2,3],"drop":null}})"));
  EXPECT_EQ(applyMergePatch(original, patch), modified);
}

TEST(MergePatchTest, NoChangeIsAnEmptyPatch) {
  Json object = {{"a", {{"b", 1}}}};
  EXPECT_EQ(createMergePatch(object, object), Json::object());
}

TEST(MergePatchTest, OptimisticLockCarriesTheReadVersion) {
  Json original = {{"metadata", {{"resourceVersion", "42"}}}, {"spec", {{"a", 1}}}};
  Json modified = original;
  modified["spec"]["a"] = 2;
  Json patch = createMergePatch(original, modified, OptimisticLock::kYes);
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(patch["spec"]["a"], 2);
}

TEST(JsonPatchTest, EscapesPointerTokens) {
  EXPECT_EQ(escapePointerToken("cluster.x-k8s.io/name"), "cluster.x-k8s.io~1name");
  EXPECT_EQ(escapePointerToken("a~b"), "a~0b");
  EXPECT_EQ(jsonPointer({"metadata", "labels", "a/b"}), "/metadata/labels/a~1b");
}

TEST(JsonPatchTest, BuildsAndApplies) {
  Json object = Json::parse(R"({"metadata":{"resourceVersion":"5","labels":{"a/b":"x"}},
    "spec":{"n":1}})");
  JsonPatch patch;
  patch.test("/metadata/resourceVersion", "5")
      .replace("/spec/n", 2)
      .remove(jsonPointer({"metadata", "labels", "a/b"}))
      .add("/spec/list", Json::array({1}));
  ASSERT_EQ(patch.document().size(), 4U);
  EXPECT_EQ(patch.document()[0], Json::parse(R"({"op":"test","path":"/metadata/resourceVersion",
    "value":"5"})"));
  auto patched = applyJsonPatch(object, patch.document());
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["spec"]["n"], 2);
  EXPECT_TRUE((*patched)["metadata"]["labels"].empty());

  JsonPatch stale;
  stale.test("/metadata/resourceVersion", "4").replace("/spec/n", 3);
  EXPECT_FALSE(applyJsonPatch(object, stale.document()).ok());
}

TEST(JsonPatchTest, DiffRoundTrips) {
  Json a = Json::parse(R"({"x":[1,2,3],"y":{"z":"q"}})");
  Json b = Json::parse(R"({"x":[1,3],"y":{"w":"q"},"n":null})");
  auto patch = JsonPatch::diff(a, b);
  EXPECT_FALSE(patch.empty());
  auto applied = applyJsonPatch(a, patch.document());
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(*applied, b);
}

} // namespace
} // namespace captf::kube
