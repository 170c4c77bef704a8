#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "manager/controllers/identity.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/metrics.h"
#include "manager/kube/errors.h"
#include "manager/kube/metrics.h"
#include "test/manager/controllers/fakes.h"
#include "test/manager/kube/fake_client.h"

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

json secretWith(const std::map<std::string, std::string>& values) {
  json data = json::object();
  for (const auto& [key, value] : values) {
    data[key] = absl::Base64Escape(value);
  }
  return {{"apiVersion", "v1"}, {"kind", "Secret"}, {"data", data}};
}

TEST(DeliveryOfTest, TextKeysAreAlsoVariablesEveryKeyIsAFile) {
  const CredentialDelivery delivery = deliveryOf(secretWith({
      {"AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"},
      {"pem", "-----BEGIN KEY-----\nMIIB\tx\n-----END KEY-----\n"},
      {"utf8", "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x94\x91"},
      {"empty", ""},
      {"TF_VAR_region", "us-east-1"}, // the runner drops it (docs/behaviour/jobs.md)
  }));
  EXPECT_EQ(delivery.files, (std::vector<std::string>{"AWS_ACCESS_KEY_ID", "TF_VAR_region", "empty",
                                                      "pem", "utf8"}));
  EXPECT_EQ(delivery.env, delivery.files);
  EXPECT_TRUE(delivery.file_only.empty());
}

TEST(DeliveryOfTest, ABinaryValueIsAFileOnly) {
  const CredentialDelivery delivery = deliveryOf(secretWith({
      {"nul", std::string("before\0after", 12)},
      {"latin1", "caf\xe9"},
      {"overlong", "\xc0\xaf"},
      {"surrogate", "\xed\xa0\x80"},
      {"beyond", "\xf4\x90\x80\x80"},
      {"truncated", "\xe2\x9c"},
      {"random", std::string("\x00\xff\xfe\x01", 4)},
      {"TOKEN", "text"},
  }));
  EXPECT_EQ(delivery.files.size(), 8U);
  EXPECT_EQ(delivery.env, (std::vector<std::string>{"TOKEN"}));
  for (const FileOnlyKey& key : delivery.file_only) {
    EXPECT_EQ(key.reason, FileOnlyReason::kBinaryValue) << key.key;
  }
  EXPECT_EQ(delivery.file_only.size(), 7U);
}

TEST(DeliveryOfTest, AKeyThatIsNoVariableNameIsAFileOnly) {
  const CredentialDelivery delivery =
      deliveryOf(secretWith({{"1password", "x"}, {"gcp.json", "{}"}, {"ok-key", "y"}}));
  EXPECT_EQ(delivery.env, (std::vector<std::string>{"gcp.json", "ok-key"}));
  EXPECT_EQ(delivery.file_only,
            (std::vector<FileOnlyKey>{{"1password", FileOnlyReason::kNotAnEnvName}}));
  EXPECT_EQ(fileOnlyReasonName(FileOnlyReason::kNotAnEnvName), "not an environment variable name");
}

TEST(DeliveryOfTest, WhatCannotBeDecodedIsAFileOnlyAndNoDataIsNothing) {
  const CredentialDelivery delivery =
      deliveryOf(json{{"data", {{"bad", "%%%not-base64"}, {"number", 7}}}});
  EXPECT_EQ(delivery.files, (std::vector<std::string>{"bad", "number"}));
  EXPECT_TRUE(delivery.env.empty());
  EXPECT_EQ(delivery.file_only.size(), 2U);
  EXPECT_EQ(deliveryOf(json{{"kind", "Secret"}}), CredentialDelivery{});
  EXPECT_EQ(deliveryOf(json{{"data", nullptr}}), CredentialDelivery{});
}

json workload(const std::string& name) {
  return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
          {"kind", "TerraformCluster"},
          {"metadata", {{"namespace", "t1"}, {"name", name}, {"uid", "uid-" + name}}}};
}

std::vector<std::string> ownerNames(const json& secret) {
  std::vector<std::string> names;
  for (const json& ref : secret["metadata"].value("ownerReferences", json::array())) {
    names.push_back(ref.value("name", ""));
  }
  return names;
}

// The mirror of identity "aws" shared by every object of namespace t1: the
// API server (`api_`) has what the cache (`cache_`) has not seen yet.
class MirrorTest : public ::testing::Test {
protected:
  MirrorTest() : metrics_(registry_, "v", "c"), resolver_(cache_, api_, events_, metrics_) {
    cache_.put({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                {"kind", "TerraformClusterIdentity"},
                {"metadata", {{"name", "aws"}, {"resourceVersion", "1"}}},
                {"spec",
                 {{"allowedNamespaces", {{"list", {"t1"}}}},
                  {"secretRef", {{"namespace", "captf-system"}, {"name", "aws-creds"}}}}}});
    api_.put({{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata",
               {{"namespace", "captf-system"}, {"name", "aws-creds"}, {"resourceVersion", "1"}}},
              {"data", {{"key", "c2VjcmV0"}}}});
  }

  // Mirror owned by `owners`, at resourceVersion `rv`.
  json mirror(const std::vector<std::string>& owners, const std::string& rv) {
    json refs = json::array();
    for (const std::string& owner : owners) {
      refs.push_back({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                      {"kind", "TerraformCluster"},
                      {"name", owner},
                      {"uid", "uid-" + owner}});
    }
    return {{"apiVersion", "v1"},
            {"kind", "Secret"},
            {"metadata",
             {{"namespace", "t1"},
              {"name", "captf-creds-aws"},
              {"uid", "mirror-uid"},
              {"resourceVersion", rv},
              {"labels", {{"captf.io/mirrored", "true"}, {"captf.io/managed", "true"}}},
              {"annotations",
               {{"captf.io/identity", "aws"},
                {"captf.io/source-hash", sourceHash(json{{"key", "c2VjcmV0"}})}}},
              {"ownerReferences", refs}}},
            {"type", "Opaque"},
            {"data", {{"key", "c2VjcmV0"}}}};
  }
  // Both hold the mirror; the cache's copy is one write behind.
  void staleCache(const std::vector<std::string>& cached, const std::vector<std::string>& live) {
    cache_.put(mirror(cached, "2"));
    api_.put(mirror(live, "3"));
  }
  json live() { return *api_.get(kinds::kSecret, {"t1", "captf-creds-aws"}); }

  kube::MetricsRegistry registry_;
  CaptfMetrics metrics_;
  kube::testing::FakeClient cache_;
  kube::testing::FakeClient api_;
  Reasons events_;
  IdentityResolver resolver_;
};

TEST_F(MirrorTest, AnOwnerIsMergedIntoTheListWhateverTheCacheShows) {
  staleCache({"a"}, {"a", "b"});
  const IdentityResult result = resolver_.resolve(workload("c"), "aws");
  EXPECT_TRUE(result.transient.ok()) << result.transient;
  EXPECT_TRUE(result.mirrored.isTrue()) << result.mirrored.message;
  EXPECT_EQ(ownerNames(live()), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(api_.writes(), 1U);
}

TEST_F(MirrorTest, RotatedDataWrittenFromAStaleCacheRereadsTheApiServerAndKeepsEveryOwner) {
  staleCache({"a"}, {"a", "b"});
  api_.put({{"apiVersion", "v1"},
            {"kind", "Secret"},
            {"metadata",
             {{"namespace", "captf-system"}, {"name", "aws-creds"}, {"resourceVersion", "9"}}},
            {"data", {{"key", "cm90YXRlZA=="}}}});
  const IdentityResult result = resolver_.resolve(workload("c"), "aws");
  EXPECT_TRUE(result.transient.ok()) << result.transient;
  EXPECT_TRUE(result.mirrored.isTrue()) << result.mirrored.message;
  const json mirror = live();
  EXPECT_EQ(ownerNames(mirror), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(mirror["data"], (json{{"key", "cm90YXRlZA=="}}));
  EXPECT_EQ(mirror["metadata"]["annotations"]["captf.io/source-hash"],
            sourceHash(json{{"key", "cm90YXRlZA=="}}));
}

TEST_F(MirrorTest, TheDeliveryIsThatOfTheDataTheMirrorNowHolds) {
  api_.put({{"apiVersion", "v1"},
            {"kind", "Secret"},
            {"metadata",
             {{"namespace", "captf-system"}, {"name", "aws-creds"}, {"resourceVersion", "9"}}},
            {"data", {{"TOKEN", "dGV4dA=="}, {"blob", "AP8="}}}});
  const IdentityResult result = resolver_.resolve(workload("c"), "aws");
  ASSERT_TRUE(result.mirrored.isTrue()) << result.mirrored.message;
  EXPECT_EQ(live()["data"], (json{{"TOKEN", "dGV4dA=="}, {"blob", "AP8="}}));
  EXPECT_EQ(result.delivery.files, (std::vector<std::string>{"TOKEN", "blob"}));
  EXPECT_EQ(result.delivery.env, (std::vector<std::string>{"TOKEN"}));

  // Not mirrored: no delivery (and no Job).
  json foreign = mirror({}, "11");
  foreign["metadata"]["labels"] = json::object();
  api_.put(foreign);
  cache_.put(foreign);
  const IdentityResult refused = resolver_.resolve(workload("d"), "aws");
  EXPECT_FALSE(refused.mirrored.isTrue());
  EXPECT_EQ(refused.delivery, CredentialDelivery{});
}

TEST_F(MirrorTest, AMirrorCreatedMeanwhileIsJoinedNotReplaced) {
  api_.put(mirror({"b"}, "3")); // created by another object; not cached yet
  const IdentityResult result = resolver_.resolve(workload("c"), "aws");
  EXPECT_TRUE(result.mirrored.isTrue()) << result.mirrored.message;
  EXPECT_EQ(ownerNames(live()), (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(events_.reasons.empty()) << "no MirrorCreated: another object created it";
}

TEST_F(MirrorTest, ASameNamedSecretCaptfDoesNotManageIsNeverOverwritten) {
  json foreign = mirror({}, "3");
  foreign["metadata"]["labels"] = json::object();
  api_.put(foreign);
  const IdentityResult result = resolver_.resolve(workload("c"), "aws");
  EXPECT_EQ(result.mirrored.status, "False");
  EXPECT_NE(result.mirrored.message.find("never overwritten"), std::string::npos);
  EXPECT_EQ(api_.writes(), 0U);
}

TEST_F(MirrorTest, ReleaseFromAStaleCacheKeepsOwnersAddedSince) {
  staleCache({"a", "b"}, {"a", "b", "c"});
  ASSERT_TRUE(resolver_.release(workload("a"), "aws").ok());
  EXPECT_EQ(ownerNames(live()), (std::vector<std::string>{"b", "c"}));
}

TEST_F(MirrorTest, TheLastOwnerLeavingDeletesOnlyWhenNoOwnerWasAddedSince) {
  staleCache({"a"}, {"a", "b"});
  ASSERT_TRUE(resolver_.release(workload("a"), "aws").ok());
  EXPECT_EQ(ownerNames(live()), (std::vector<std::string>{"b"})) << "b's owner reference stays";
  EXPECT_TRUE(events_.reasons.empty());

  ASSERT_TRUE(resolver_.release(workload("b"), "aws").ok());
  EXPECT_TRUE(kube::isNotFound(api_.get(kinds::kSecret, {"t1", "captf-creds-aws"}).status()));
  EXPECT_EQ(events_.reasons, (std::vector<std::string>{"MirrorRemoved"}));
}

} // namespace
} // namespace captf::controllers
