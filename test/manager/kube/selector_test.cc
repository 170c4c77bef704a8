#include <gtest/gtest.h>

#include "manager/kube/selector.h"

namespace captf::kube {
namespace {

Json labels(std::initializer_list<std::pair<const char*, const char*>> pairs) {
  Json out = Json::object();
  for (const auto& [k, v] : pairs) {
    out[k] = v;
  }
  return out;
}

TEST(LabelSelectorTest, ParsesEveryOperator) {
  auto selector = LabelSelector::parse("env in (prod, staging),tier!=cache, app=web,!legacy,team,"
                                       "zone notin (a)");
  ASSERT_TRUE(selector.ok()) << selector.status();
  EXPECT_EQ(selector->requirements().size(), 6U);
  EXPECT_EQ(selector->str(),
            "app=web,env in (prod,staging),!legacy,team,tier!=cache,zone notin (a)");

  EXPECT_TRUE(selector->matches(labels({{"env", "prod"}, {"app", "web"}, {"team", "x"}})));
  EXPECT_FALSE(selector->matches(labels({{"env", "dev"}, {"app", "web"}, {"team", "x"}})));
  EXPECT_FALSE(selector->matches(
      labels({{"env", "prod"}, {"app", "web"}, {"team", "x"}, {"tier", "cache"}})));
  EXPECT_FALSE(
      selector->matches(labels({{"env", "prod"}, {"app", "web"}, {"team", "x"}, {"legacy", "1"}})));
  EXPECT_FALSE(selector->matches(labels({{"env", "prod"}, {"app", "web"}})));
  EXPECT_FALSE(
      selector->matches(labels({{"env", "prod"}, {"app", "web"}, {"team", "x"}, {"zone", "a"}})));
}

TEST(LabelSelectorTest, EmptyMatchesEverything) {
  auto selector = LabelSelector::parse("  ");
  ASSERT_TRUE(selector.ok());
  EXPECT_TRUE(selector->empty());
  EXPECT_TRUE(selector->matches(Json::object()));
  EXPECT_TRUE(selector->matches(labels({{"a", "b"}})));
}

TEST(LabelSelectorTest, DoubleEqualsAndKeysWithPrefixes) {
  auto selector = LabelSelector::parse("cluster.x-k8s.io/cluster-name==c1");
  ASSERT_TRUE(selector.ok());
  EXPECT_TRUE(selector->matches(labels({{"cluster.x-k8s.io/cluster-name", "c1"}})));
  EXPECT_FALSE(selector->matches(labels({{"cluster.x-k8s.io/cluster-name", "c2"}})));
}

TEST(LabelSelectorTest, RejectsBrokenSyntax) {
  for (const char* text : {"a in b", "a in (b", "=b", "a=b,,c", "a in ()", "a b"}) {
    EXPECT_FALSE(LabelSelector::parse(text).ok()) << text;
  }
}

TEST(LabelSelectorTest, FromJson) {
  auto selector = LabelSelector::fromJson(Json::parse(R"({
    "matchLabels": {"app": "web"},
    "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["cache"]},
                         {"key": "team", "operator": "Exists"}]})"));
  ASSERT_TRUE(selector.ok()) << selector.status();
  EXPECT_TRUE(selector->matches(labels({{"app", "web"}, {"team", "t"}})));
  EXPECT_FALSE(selector->matches(labels({{"app", "web"}})));
  EXPECT_FALSE(
      LabelSelector::fromJson(Json::parse(R"({"matchExpressions":[{"key":"a","operator":"In"}]})"))
          .ok());
  EXPECT_FALSE(LabelSelector::fromJson(
                   Json::parse(R"({"matchExpressions":[{"key":"a","operator":"Near"}]})"))
                   .ok());
  auto null_selector = LabelSelector::fromJson(Json());
  ASSERT_TRUE(null_selector.ok());
  EXPECT_TRUE(null_selector->empty());
}

TEST(FieldSelectorTest, MatchesFieldsLikeTheServer) {
  auto selector = FieldSelector::parse("metadata.name=a, spec.nodeName!=n1,status.phase==Running");
  ASSERT_TRUE(selector.ok());
  EXPECT_EQ(selector->str(), "metadata.name=a,spec.nodeName!=n1,status.phase=Running");
  Json pod = {{"metadata", {{"name", "a"}}},
              {"spec", {{"nodeName", "n2"}}},
              {"status", {{"phase", "Running"}}}};
  EXPECT_TRUE(selector->matches(pod));
  pod["spec"]["nodeName"] = "n1";
  EXPECT_FALSE(selector->matches(pod));
  // A missing field reads as "".
  auto empty_field = FieldSelector::parse("spec.missing=");
  ASSERT_TRUE(empty_field.ok());
  EXPECT_TRUE(empty_field->matches(pod));
  EXPECT_FALSE(FieldSelector::parse("novalue").ok());
}

} // namespace
} // namespace captf::kube
