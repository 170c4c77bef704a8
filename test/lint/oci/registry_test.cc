#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/digest.h"
#include "lint/oci/resolve.h"
#include "lint/oci/source.h"
#include "test/lint/oci/oci_test_util.h"

namespace captf::lint::oci {
namespace {

using testing::FakeRegistry;
using ::testing::HasSubstr;

// The bearer-token and basic flows against a local distribution-API server
// (test/lint/oci/oci_test_util.h): the rig's registry runs without
// authentication, so these flows are exercised here.
class Registry : public ::testing::Test {
protected:
  void SetUp() override {
    testing::LayoutBuilder layout(layout_dir_.path());
    image_ = layout.image(testing::goodMachineImage());
    layout.finish({image_}, {"v1"});
  }

  std::unique_ptr<ImageSource> open(const FakeRegistry& registry, const std::string& tag = "v1",
                                    KeychainEnv keychain = {}) {
    RegistryOptions options;
    options.insecure = true;
    options.keychain = std::move(keychain);
    options.http.connect_timeout = std::chrono::seconds(5);
    options.http.io_timeout = std::chrono::seconds(5);
    const std::string ref = registry.host() + "/team/module:" + tag;
    return openRegistry(ref, *parseRegistryReference(ref), options);
  }

  KeychainEnv withCredentials(const std::string& host, const std::string& user,
                              const std::string& password) {
    std::ofstream(keychain_dir_.path() / "config.json")
        << R"({"auths":{")" << host << R"(":{"auth":")"
        << contract::base64Encode(user + ":" + password) << R"("}}})";
    KeychainEnv env;
    env.docker_config = keychain_dir_.path().string();
    return env;
  }

  testing::TempDir layout_dir_;
  testing::TempDir keychain_dir_;
  testing::TempDir scratch_;
  Descriptor image_;
};

TEST_F(Registry, AnonymousPull) {
  FakeRegistry registry(layout_dir_.path(), {});
  auto source = open(registry);
  absl::StatusOr<Resolution> r = resolveImages(*source, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->digest, image_.digest);
  ASSERT_EQ(r->images.size(), 1u);
  absl::StatusOr<std::filesystem::path> layer =
      source->blobFile(r->images[0].manifest.layers[0], scratch_.path());
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_TRUE(std::filesystem::exists(*layer));
}

TEST_F(Registry, BearerTokenFlowAnonymous) {
  FakeRegistry::Options o;
  o.auth = FakeRegistry::Auth::kBearer;
  FakeRegistry registry(layout_dir_.path(), o);
  auto source = open(registry);
  absl::StatusOr<Resolution> r = resolveImages(*source, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->digest, image_.digest);
  EXPECT_EQ(registry.tokenRequests(), 1); // one token serves every later request
  EXPECT_EQ(registry.lastScope(), "repository:team/module:pull");
}

TEST_F(Registry, BearerTokenFlowWithCredentials) {
  FakeRegistry::Options o;
  o.auth = FakeRegistry::Auth::kBearer;
  o.token_needs_credentials = true;
  FakeRegistry registry(layout_dir_.path(), o);
  // Without credentials the token endpoint refuses.
  absl::StatusOr<Resolution> r = resolveImages(*open(registry), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("the token endpoint"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("no credentials were sent"));
  r = resolveImages(*open(registry, "v1", withCredentials(registry.host(), "user", "secret")), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->digest, image_.digest);
}

TEST_F(Registry, BasicAuthUsesTheKeychain) {
  FakeRegistry::Options o;
  o.auth = FakeRegistry::Auth::kBasic;
  FakeRegistry registry(layout_dir_.path(), o);
  absl::StatusOr<Resolution> r = resolveImages(*open(registry), {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("asks for a user and password"));
  r = resolveImages(*open(registry, "v1", withCredentials(registry.host(), "user", "wrong")), {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("401"));
  r = resolveImages(*open(registry, "v1",
                          withCredentials("https://" + registry.host() + "/v1/", "user", "secret")),
                    {});
  ASSERT_TRUE(r.ok()) << r.status();
}

TEST_F(Registry, AnUnknownTagNamesTheReference) {
  FakeRegistry registry(layout_dir_.path(), {});
  absl::StatusOr<Resolution> r = resolveImages(*open(registry, "nope"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("/team/module:nope"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("404 MANIFEST_UNKNOWN"));
}

TEST_F(Registry, PlainHttpNeedsInsecure) {
  FakeRegistry registry(layout_dir_.path(), {});
  RegistryOptions options; // not insecure: HTTPS only
  options.http.connect_timeout = std::chrono::seconds(5);
  options.http.io_timeout = std::chrono::seconds(5);
  const std::string ref = registry.host() + "/team/module:v1";
  auto source = openRegistry(ref, *parseRegistryReference(ref), options);
  absl::StatusOr<Resolution> r = resolveImages(*source, {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("cannot reach the registry"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("--insecure"));
}

TEST_F(Registry, AnUnreachableRegistryIsAnError) {
  int port = 0;
  {
    FakeRegistry closed(layout_dir_.path(), {});
    port = std::stoi(closed.host().substr(closed.host().find(':') + 1));
  } // the port is closed now
  const std::string ref = "127.0.0.1:" + std::to_string(port) + "/team/module:v1";
  RegistryOptions options;
  options.insecure = true;
  auto source = openRegistry(ref, *parseRegistryReference(ref), options);
  absl::StatusOr<Resolution> r = resolveImages(*source, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(ref));
}

TEST_F(Registry, AStalledRegistryTimesOut) {
  FakeRegistry::Options o;
  o.stall = true;
  FakeRegistry registry(layout_dir_.path(), o);
  RegistryOptions options;
  options.insecure = true;
  options.http.connect_timeout = std::chrono::milliseconds(300);
  options.http.io_timeout = std::chrono::milliseconds(300);
  const std::string ref = registry.host() + "/team/module:v1";
  auto source = openRegistry(ref, *parseRegistryReference(ref), options);
  absl::StatusOr<Resolution> r = resolveImages(*source, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("timed out"));
}

TEST(Url, ParsesAndResolves) {
  absl::StatusOr<Url> u = parseUrl("https://auth.example:8443/token?service=x");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "auth.example");
  EXPECT_EQ(u->port, "8443");
  EXPECT_EQ(u->target, "/token?service=x");
  EXPECT_EQ(parseUrl("http://h")->target, "/");
  EXPECT_EQ(parseUrl("https://[::1]:5000/v2/")->host, "::1");
  EXPECT_EQ(parseUrl("https://[::1]:5000/v2/")->authority(), "[::1]:5000");
  EXPECT_FALSE(parseUrl("ftp://h/").ok());
  EXPECT_FALSE(parseUrl("h/x").ok());
  EXPECT_EQ(resolveUrl(*u, "/blobs/x")->str(), "https://auth.example:8443/blobs/x");
  EXPECT_EQ(resolveUrl(*u, "https://cdn.example/b?sig=1")->str(), "https://cdn.example/b?sig=1");
  EXPECT_EQ(resolveUrl(*u, "other")->str(), "https://auth.example:8443/other");
}

} // namespace
} // namespace captf::lint::oci
