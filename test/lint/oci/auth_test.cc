#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/digest.h"
#include "lint/oci/auth.h"
#include "test/lint/oci/oci_test_util.h"

namespace captf::lint::oci {
namespace {

using ::testing::HasSubstr;

TEST(Challenges, ParsesABearerChallenge) {
  absl::StatusOr<std::vector<Challenge>> c = parseChallenges(
      R"(Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull")");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].scheme, "bearer");
  EXPECT_EQ((*c)[0].params.at("realm"), "https://auth.example/token");
  EXPECT_EQ((*c)[0].params.at("service"), "registry.example");
  EXPECT_EQ((*c)[0].params.at("scope"), "repository:a/b:pull");
}

TEST(Challenges, ParsesSeveralChallengesQuotedCommasAndEscapes) {
  absl::StatusOr<std::vector<Challenge>> c = parseChallenges(
      R"(Basic realm="a, \"quoted\" realm", BEARER Realm=https://t/x , scope="repository:a:pull,push")");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[0].scheme, "basic");
  EXPECT_EQ((*c)[0].params.at("realm"), R"(a, "quoted" realm)");
  EXPECT_EQ((*c)[1].scheme, "bearer");
  EXPECT_EQ((*c)[1].params.at("realm"), "https://t/x");
  EXPECT_EQ((*c)[1].params.at("scope"), "repository:a:pull,push");
}

TEST(Challenges, AcceptsBareSchemesAndToken68) {
  absl::StatusOr<std::vector<Challenge>> c = parseChallenges("Negotiate abc==, Basic");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[0].scheme, "negotiate");
  EXPECT_EQ((*c)[1].scheme, "basic");
}

TEST(Challenges, RejectsMalformedHeaders) {
  EXPECT_FALSE(parseChallenges("").ok());
  EXPECT_FALSE(parseChallenges(R"(Bearer realm="unterminated)").ok());
  EXPECT_FALSE(parseChallenges(R"(Bearer realm="x" service="y")").ok());
  EXPECT_FALSE(parseChallenges(R"("quoted")").ok());
}

TEST(Keychain, PrefersDockerConfigThenPodmanFiles) {
  testing::TempDir tmp;
  KeychainEnv env;
  env.home = (tmp.path() / "home").string();
  env.xdg_runtime_dir = (tmp.path() / "run").string();
  EXPECT_FALSE(keychainFile(env).has_value());
  std::filesystem::create_directories(tmp.path() / "run" / "containers");
  std::ofstream(tmp.path() / "run" / "containers" / "auth.json") << "{}";
  EXPECT_EQ(keychainFile(env)->filename(), "auth.json");
  std::filesystem::create_directories(tmp.path() / "home" / ".docker");
  std::ofstream(tmp.path() / "home" / ".docker" / "config.json") << "{}";
  EXPECT_EQ(keychainFile(env)->filename(), "config.json");
  env.docker_config = (tmp.path() / "elsewhere").string(); // set but empty: Podman's again
  EXPECT_EQ(keychainFile(env)->filename(), "auth.json");
}

TEST(Keychain, FindsCredentialsByHost) {
  testing::TempDir tmp;
  std::ofstream(tmp.path() / "config.json") << R"({"auths":{
      "https://registry.example:5000/v1/":{"auth":")" +
                                                   contract::base64Encode("alice:s3cret") + R"("},
      "https://index.docker.io/v1/":{"username":"bob","password":"pw"}}})";
  KeychainEnv env;
  env.docker_config = tmp.path().string();
  absl::StatusOr<std::optional<Credentials>> c = lookupCredentials("registry.example:5000", env);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->username, "alice");
  EXPECT_EQ((*c)->password, "s3cret");
  c = lookupCredentials("index.docker.io", env);
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->username, "bob");
  c = lookupCredentials("ghcr.io", env);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_value());
  std::ofstream(tmp.path() / "config.json") << "not json";
  EXPECT_THAT(std::string(lookupCredentials("ghcr.io", env).status().message()),
              HasSubstr("is not a JSON object"));
}

TEST(Token, ReadsTokenOrAccessToken) {
  EXPECT_EQ(*parseTokenResponse(R"({"token":"a","access_token":"b"})"), "a");
  EXPECT_EQ(*parseTokenResponse(R"({"access_token":"b"})"), "b");
  EXPECT_FALSE(parseTokenResponse(R"({"expires_in":3})").ok());
  EXPECT_FALSE(parseTokenResponse("<html>").ok());
}

TEST(Base64, DecodesWhatDockerConfigWritersWrite) {
  for (std::string_view s : {"", "a", "ab", "abc", "user:pass word"}) {
    EXPECT_EQ(*base64Decode(contract::base64Encode(s)), s);
  }
  EXPECT_EQ(contract::base64Encode("alice:s3cret"), "YWxpY2U6czNjcmV0");
  EXPECT_EQ(*base64Decode("YWxpY2U6czNjcmV0\n"), "alice:s3cret");
  EXPECT_EQ(*base64Decode("YTpi"), "a:b");
  EXPECT_EQ(*base64Decode("YQ"), "a") << "unpadded";
  EXPECT_EQ(*base64Decode("-_8="), "\xfb\xff") << "URL-safe alphabet";
  EXPECT_FALSE(base64Decode("@@").ok());
  EXPECT_EQ(basicAuthorization({"a", "b"}), "Basic YTpi");
  EXPECT_EQ(queryEscape("repository:a/b:pull"), "repository%3Aa%2Fb%3Apull");
}

} // namespace
} // namespace captf::lint::oci
