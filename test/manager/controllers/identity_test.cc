#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "manager/controllers/identity.h"

namespace captf::controllers {
namespace {

using nlohmann::json;

TEST(MirrorSecretNameTest, PrefixesTheIdentity) {
  EXPECT_EQ(mirrorSecretName("aws-prod"), "captf-creds-aws-prod");
}

TEST(MirrorSecretNameTest, HashesNamesThatWouldExceed253Characters) {
  const std::string name = mirrorSecretName(std::string(250, 'a'));
  EXPECT_EQ(name.size(), std::string("captf-creds-").size() + 16);
  EXPECT_EQ(name.rfind("captf-creds-", 0), 0U);
  EXPECT_NE(name, mirrorSecretName(std::string(250, 'b')));
}

TEST(SourceHashTest, ChangesWithAnyKeyOrValue) {
  const json data = {{"a", "MQ=="}, {"b", "Mg=="}};
  EXPECT_EQ(sourceHash(data), sourceHash(json{{"b", "Mg=="}, {"a", "MQ=="}}));
  EXPECT_NE(sourceHash(data), sourceHash(json{{"a", "MQ=="}, {"b", "Mw=="}}));
  EXPECT_NE(sourceHash(data), sourceHash(json{{"a", "MQ=="}}));
  // Key/value boundaries are framed: "ab"+"" differs from "a"+"b".
  EXPECT_NE(sourceHash(json{{"ab", ""}}), sourceHash(json{{"a", "b"}}));
}

TEST(NamespaceAllowedTest, UnsetAllowsNothing) {
  EXPECT_FALSE(*namespaceAllowed(json(), "ns", json::object()));
  EXPECT_FALSE(*namespaceAllowed(json::object(), "ns", json::object()));
}

TEST(NamespaceAllowedTest, ListOrSelector) {
  const json list = {{"list", {"a", "b"}}};
  EXPECT_TRUE(*namespaceAllowed(list, "b", json::object()));
  EXPECT_FALSE(*namespaceAllowed(list, "c", json::object()));
  const json selector = {{"selector", {{"matchLabels", {{"tenant", "x"}}}}}};
  EXPECT_TRUE(*namespaceAllowed(selector, "c", json{{"tenant", "x"}}));
  EXPECT_FALSE(*namespaceAllowed(selector, "c", json{{"tenant", "y"}}));
  const json both = {{"list", {"a"}}, {"selector", {{"matchLabels", {{"tenant", "x"}}}}}};
  EXPECT_TRUE(*namespaceAllowed(both, "a", json::object()));
  EXPECT_TRUE(*namespaceAllowed(both, "z", json{{"tenant", "x"}}));
}

TEST(NamespaceAllowedTest, EmptySelectorAllowsEveryNamespace) {
  EXPECT_TRUE(*namespaceAllowed(json{{"selector", json::object()}}, "any", json::object()));
}

TEST(NamespaceAllowedTest, InvalidSelectorIsAnError) {
  const json bad = {
      {"selector",
       {{"matchExpressions", {{{"key", "k"}, {"operator", "Sometimes"}, {"values", {"v"}}}}}}}};
  EXPECT_FALSE(namespaceAllowed(bad, "ns", json::object()).ok());
}

} // namespace
} // namespace captf::controllers
