#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/digest.h"
#include "lint/oci/resolve.h"
#include "lint/oci/source.h"
#include "test/contract/tcp_servers.h"
#include "test/lint/oci/oci_test_util.h"

namespace captf::lint::oci {
namespace {

using contract::testing::CannedHttpServer;
using contract::testing::httpResponse;
using testing::FakeRegistry;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// What a body must never bring into an error: as if the registry had
// pointed us at a service of the cluster that answers with a secret.
constexpr std::string_view kCanary = "CANARY-metadata-7f3a";

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

// A registry names its token realm, and the client would send it the
// registry's credentials: an https realm on any host is how real
// registries work; a plain-HTTP one only on the registry's own host, when
// the registry itself is configured for plain HTTP.
TEST(TokenRealm, HttpsAnywhereAndPlainHttpOnlyOnAnInsecureRegistrysOwnHost) {
  struct Case {
    std::string realm;
    std::string registry;
    bool insecure;
    bool allowed;
  };
  const std::vector<Case> cases = {
      {"https://auth.docker.io/token", "registry-1.docker.io", false, true},
      {"https://auth.example.com:8443/token", "reg.example.com:5000", true, true},
      {"http://auth.docker.io/token", "registry-1.docker.io", false, false},
      {"http://reg.example.com:5001/token", "reg.example.com:5000", false, false},
      {"http://reg.example.com:5001/token", "reg.example.com:5000", true, true},
      {"http://REG.example.com/token", "reg.example.com", true, true},
      {"http://127.0.0.1:8080/x", "localhost:5000", true, false},
      {"http://169.254.169.254/latest", "reg.example.com:5000", true, false},
      {"http://[::1]:5001/token", "[::1]:5000", true, true},
      {"http://[::2]:5001/token", "[::1]:5000", true, false},
  };
  for (const Case& c : cases) {
    const absl::Status s = checkTokenRealm(*parseUrl(c.realm), c.registry, c.insecure);
    EXPECT_EQ(s.ok(), c.allowed) << c.realm << " for " << c.registry << ": " << s;
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
      EXPECT_THAT(std::string(s.message()), HasSubstr("the registry " + c.registry));
      const Url realm = *parseUrl(c.realm);
      EXPECT_THAT(std::string(s.message()), HasSubstr(realm.scheme + "://" + realm.authority()));
      EXPECT_THAT(std::string(s.message()), Not(HasSubstr(realm.target))); // nor its path
    }
  }
}

TEST_F(Registry, APlainHttpRealmOnAnotherHostIsRefusedAndNeverAsked) {
  CannedHttpServer realm(httpResponse(403, "Forbidden", {}, kCanary));
  const std::string realm_url = "http://127.0.0.1:" + std::to_string(realm.port()) + "/x";
  CannedHttpServer registry(httpResponse(
      401, "Unauthorized",
      {{"WWW-Authenticate", R"(Bearer realm=")" + realm_url + R"(",service="s")"}}, "{}"));
  // The registry is "localhost", the realm 127.0.0.1: another host.
  const std::string ref = "localhost:" + std::to_string(registry.port()) + "/team/module:v1";
  RegistryOptions options;
  options.insecure = true;
  options.http.connect_timeout = std::chrono::seconds(5);
  options.http.io_timeout = std::chrono::seconds(5);
  absl::StatusOr<Resolution> r =
      resolveImages(*openRegistry(ref, *parseRegistryReference(ref), options), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
  const std::string message(r.status().message());
  EXPECT_THAT(message, HasSubstr("the registry localhost:" + std::to_string(registry.port())));
  EXPECT_THAT(message, HasSubstr("http://127.0.0.1:" + std::to_string(realm.port())));
  EXPECT_THAT(message, Not(HasSubstr(kCanary)));
  EXPECT_THAT(realm.requests(), IsEmpty());
  EXPECT_THAT(registry.requests(), Not(IsEmpty()));
}

TEST_F(Registry, AnErrorAnswersBodyIsNeverQuoted) {
  const std::vector<std::string> bodies = {
      std::string(kCanary),
      R"({"errors":[{"code":"MANIFEST_UNKNOWN","message":")" + std::string(kCanary) + R"("}]})",
      R"({"errors":[{"code":")" + std::string(kCanary) + R"(","message":"x"}]})",
  };
  for (const std::string& body : bodies) {
    for (const int status : {404, 500}) {
      CannedHttpServer registry(httpResponse(status, "Nope", {}, body));
      const std::string ref = registry.host() + "/team/module:v1";
      RegistryOptions options;
      options.insecure = true;
      absl::StatusOr<Resolution> r =
          resolveImages(*openRegistry(ref, *parseRegistryReference(ref), options), {});
      ASSERT_FALSE(r.ok());
      const std::string message(r.status().message());
      EXPECT_THAT(message, HasSubstr(registry.host()));
      EXPECT_THAT(message, HasSubstr(std::to_string(status)));
      EXPECT_THAT(message, Not(HasSubstr(kCanary))) << body;
    }
  }
  // Nor a manifest's, from a registry that speaks the API.
  for (const std::string& body : bodies) {
    CannedHttpServer registry(httpResponse(404, "Not Found", {}, body));
    registry.route("/v2/", httpResponse(200, "OK", {}, "{}"));
    const std::string ref = registry.host() + "/team/module:v1";
    RegistryOptions options;
    options.insecure = true;
    absl::StatusOr<Resolution> r =
        resolveImages(*openRegistry(ref, *parseRegistryReference(ref), options), {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
    const std::string message(r.status().message());
    EXPECT_THAT(message,
                HasSubstr("GET manifest v1 from " + registry.host() + "/team/module answered 404"));
    EXPECT_THAT(message, Not(HasSubstr(kCanary))) << body;
  }
  // Nor the token endpoint's (here on the plain-HTTP registry's own host).
  CannedHttpServer realm(httpResponse(401, "Unauthorized", {}, kCanary));
  CannedHttpServer registry(httpResponse(
      401, "Unauthorized",
      {{"WWW-Authenticate",
        "Bearer realm=\"http://127.0.0.1:" + std::to_string(realm.port()) + "/token\""}},
      "{}"));
  const std::string ref = registry.host() + "/team/module:v1";
  RegistryOptions options;
  options.insecure = true;
  absl::StatusOr<Resolution> r =
      resolveImages(*openRegistry(ref, *parseRegistryReference(ref), options), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("answered 401"));
  EXPECT_THAT(std::string(r.status().message()), Not(HasSubstr(kCanary)));
  EXPECT_THAT(realm.requests(), Not(IsEmpty()));
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
