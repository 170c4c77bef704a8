// TerraformClusterIdentity end to end on the rig's capi tier: the `manager`
// executable with exactly the shipped RBAC and its webhooks, real Jobs, real
// OpenTofu.
//
//   an identity reports its Secret (Ready SecretFound / SecretNotFound, with
//   Events) and drops the owner references a legacy version put on it; a
//   namespace it does not allow is refused with a clear condition and no
//   Job, allowing it lets the cluster there provision, revoking it again
//   deletes the copy there; status.namespaces lists the namespaces holding
//   a copy; rotating the Secret rewrites every copy byte for byte and the
//   next Job of each object sees the new bytes (a binary key as a file only);
//   deleting an identity in use is refused until no namespace holds a copy.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "contract/digest.h"
#include "contract/roles.h"
#include "test/manager/controllers/manager_e2e.h"
#include "test/runner/e2e_support.h"
#include "webhooks/registrations.h"

namespace captf::controllers {
namespace {

using e2e::apply;
using e2e::conditionOf;
using e2e::env;
using e2e::eventually;
using e2e::getJson;
using e2e::kubectl;
using e2e::readyTrue;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kHome[] = "tci-home";   // allowed from the start
constexpr char kGuest[] = "tci-guest"; // allowed later, then revoked
constexpr char kIdentity[] = "tci-shared";
constexpr char kWebhooks[] = "captf-identity-e2e-webhooks";

// The noop cluster module, reporting in its health message the first 16
// hex characters of sha256 of the credential files it was given
// (`token <hash> blob <hash|none>`), with a variable `touch` that only
// re-applies it.
std::string credentialProbeModule() {
  const std::string health =
      "output \"health\" {\n"
      "  value = {\n"
      "    state = \"running\", healthy = true, reasons = [],\n"
      "    message = join(\" \", [\n"
      "      \"token\", try(substr(filesha256(\"/var/run/captf/credentials/NOOP_API_TOKEN\"), 0, "
      "16), \"none\"),\n"
      "      \"blob\", try(substr(filesha256(\"/var/run/captf/credentials/BLOB\"), 0, 16), "
      "\"none\"),\n"
      "    ])\n"
      "  }\n"
      "}\n";
  return runner::e2e::noopModule(contract::Role::kCluster, "1", health) + "variable \"touch\" {\n"
                                                                          "  type    = string\n"
                                                                          "  default = \"\"\n"
                                                                          "}\n";
}

// Every byte of a literal, NULs included.
template <std::size_t N> std::string bytes(const char (&text)[N]) {
  return std::string(text, N - 1);
}

// What the probe module reports for these credential bytes.
std::string probeMessage(const std::string& token, const std::optional<std::string>& blob) {
  return "token " + contract::sha256Hex(token).substr(0, 16) + " blob " +
         (blob ? contract::sha256Hex(*blob).substr(0, 16) : std::string("none"));
}

class TerraformClusterIdentityE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    auto& images = runner::e2e::Images::get();
    manager_.runner_image = images.runner();
    cluster_image_ = images.module("tci-e2e-cluster", credentialProbeModule(), env().tofu);
    e2e::createTenant(kHome, kIdentity, {{"NOOP_API_TOKEN", runner::e2e::kCredentialValue}});
    kubectl({"create", "namespace", kGuest});
    manager_.start();
    ASSERT_FALSE(HasFatalFailure());
    // The manager's own webhooks, by URL (the delete guard is one of them).
    std::ifstream cert_in(manager_.dir + "/certs/tls.crt");
    const std::string ca((std::istreambuf_iterator<char>(cert_in)), {});
    apply(webhooks::validatingWebhookConfiguration(
        webhooks::UrlClientConfig{"https://127.0.0.1:" + std::to_string(manager_.webhook_port), ca},
        kWebhooks));
  }
  static void TearDownTestSuite() {
    kubectl({"delete", "validatingwebhookconfiguration", kWebhooks});
    manager_.stopCleanly();
  }

  static json identity(const std::string& name = kIdentity) {
    return getJson({"get", "terraformclusteridentity", name});
  }
  static json tc(const std::string& ns, const std::string& name) {
    return getJson({"-n", ns, "get", "terraformcluster", name});
  }
  static json mirror(const std::string& ns) {
    return getJson({"-n", ns, "get", "secret", std::string("captf-creds-") + kIdentity});
  }
  static json source() {
    return getJson(
        {"-n", "captf-system", "get", "secret", std::string(kIdentity) + "-credentials"});
  }
  static std::vector<std::string> namespaces() {
    std::vector<std::string> out;
    for (const json& ns :
         identity().value("status", json::object()).value("namespaces", json::array())) {
      out.push_back(ns.get<std::string>());
    }
    return out;
  }
  static void allow(const std::vector<std::string>& list) {
    e2e::mergePatch("", "terraformclusteridentity", kIdentity,
                    {{"spec", {{"allowedNamespaces", {{"list", list}}}}}});
  }
  static size_t applyJobs(const std::string& ns, const std::string& name) {
    return e2e::runJobs(ns, name, "apply").size();
  }
  // Events about a cluster-scoped object, in any namespace.
  static std::string identityEvents(const std::string& name) {
    return kubectl({"get", "events.events.k8s.io", "-A", "--field-selector",
                    "regarding.name=" + name, "-o", "json"})
        .output;
  }
  static void createCluster(const std::string& ns, const std::string& name) {
    e2e::createClusterPair(
        ns, name, name,
        {{"source", {{"image", cluster_image_}}}, {"identityRef", {{"name", kIdentity}}}});
  }

  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static e2e::ManagerRig manager_;
  static std::string cluster_image_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

// NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
e2e::ManagerRig TerraformClusterIdentityE2eTest::manager_;
std::string TerraformClusterIdentityE2eTest::cluster_image_;
// NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)

TEST_F(TerraformClusterIdentityE2eTest, AnIdentityReportsItsSecretAndDropsLegacyOwners) {
  ASSERT_TRUE(eventually([] {
    return conditionOf(identity(), "Ready", "reason") == "SecretFound";
  })) << identity().dump(2)
      << manager_.logText();
  EXPECT_THAT(identityEvents(kIdentity), HasSubstr("IdentitySecretFound"));

  // An owner reference an earlier version put on the source Secret goes;
  // the Secret's data stays as it was.
  const json before = source();
  e2e::mergePatch("captf-system", "secret", std::string(kIdentity) + "-credentials",
                  {{"metadata",
                    {{"ownerReferences",
                      {{{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                        {"kind", "TerraformCluster"},
                        {"name", "legacy"},
                        {"uid", "9d3b9a52-0000-4000-8000-000000000001"}}}}}}});
  e2e::mergePatch("", "terraformclusteridentity", kIdentity,
                  {{"metadata", {{"annotations", {{"e2e.captf.io/poke", "1"}}}}}});
  EXPECT_TRUE(eventually([] {
    return source()["metadata"].value("ownerReferences", json::array()).empty();
  })) << source()["metadata"].dump(2);
  EXPECT_EQ(source()["data"], before["data"]);

  // An identity whose Secret is missing.
  apply({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
         {"kind", "TerraformClusterIdentity"},
         {"metadata", {{"name", "tci-missing"}}},
         {"spec",
          {{"secretRef", {{"name", "tci-missing"}, {"namespace", "captf-system"}}},
           {"allowedNamespaces", {{"list", {kHome}}}}}}});
  EXPECT_TRUE(eventually([] {
    const json missing = identity("tci-missing");
    return conditionOf(missing, "Ready", "status") == "False" &&
           conditionOf(missing, "Ready", "reason") == "SecretNotFound";
  })) << identity("tci-missing").dump(2);
  EXPECT_THAT(identityEvents("tci-missing"), HasSubstr("IdentitySecretNotFound"));
  kubectl({"delete", "terraformclusteridentity", "tci-missing"});
}

TEST_F(TerraformClusterIdentityE2eTest,
       ANamespaceIsRefusedUntilAllowedAndLosesItsCopyOnRevocation) {
  createCluster(kHome, "home");
  createCluster(kGuest, "guest");
  ASSERT_TRUE(eventually([] { return readyTrue(tc(kHome, "home")); }))
      << tc(kHome, "home").dump(2) << manager_.logText();
  // Refused with a clear condition, and no Job.
  ASSERT_TRUE(eventually([] {
    return conditionOf(tc(kGuest, "guest"), "IdentityAllowed", "reason") == "NamespaceNotAllowed";
  })) << tc(kGuest, "guest").dump(2);
  EXPECT_THAT(conditionOf(tc(kGuest, "guest"), "IdentityAllowed", "message"),
              HasSubstr("does not allow namespace tci-guest"));
  EXPECT_EQ(applyJobs(kGuest, "guest"), 0U);
  EXPECT_EQ(
      kubectl({"-n", kGuest, "get", "secret", std::string("captf-creds-") + kIdentity}).exit_code,
      1);
  EXPECT_TRUE(eventually([] { return namespaces() == std::vector<std::string>{kHome}; }))
      << identity().dump(2);

  // Allowed: the identity change wakes the cluster, which provisions.
  allow({kHome, kGuest});
  ASSERT_TRUE(eventually([] { return readyTrue(tc(kGuest, "guest")); }))
      << tc(kGuest, "guest").dump(2) << manager_.logText();
  EXPECT_EQ(applyJobs(kGuest, "guest"), 1U);
  EXPECT_EQ(mirror(kGuest)["data"], source()["data"]);
  EXPECT_TRUE(eventually([] {
    return namespaces() == std::vector<std::string>{kGuest, kHome};
  })) << identity().dump(2);

  // Revoked: the copy there goes at once, the cluster there is refused
  // again, its infrastructure untouched; the other namespace keeps its copy.
  allow({kHome});
  EXPECT_TRUE(eventually([] {
    return kubectl({"-n", kGuest, "get", "secret", std::string("captf-creds-") + kIdentity})
               .exit_code != 0;
  })) << manager_.logText();
  EXPECT_TRUE(eventually([] {
    return conditionOf(tc(kGuest, "guest"), "IdentityAllowed", "reason") == "NamespaceNotAllowed";
  })) << tc(kGuest, "guest").dump(2);
  EXPECT_TRUE(eventually([] { return namespaces() == std::vector<std::string>{kHome}; }))
      << identity().dump(2);
  EXPECT_TRUE(mirror(kHome).is_object());
  EXPECT_THAT(identityEvents(kIdentity), HasSubstr("MirrorRevoked"));
  EXPECT_EQ(applyJobs(kGuest, "guest"), 1U);
}

TEST_F(TerraformClusterIdentityE2eTest, RotatingTheSecretRewritesEveryCopyByteForByte) {
  ASSERT_TRUE(eventually([] { return mirror(kHome).is_object(); })) << manager_.logText();
  // Multi-line, tabs, non-ASCII: copied byte for byte. (Bytes that are not
  // text, a NUL among them: the next test.)
  apply({{"apiVersion", "v1"},
         {"kind", "Secret"},
         {"metadata",
          {{"name", std::string(kIdentity) + "-credentials"}, {"namespace", "captf-system"}}},
         {"data",
          {{"NOOP_API_TOKEN", absl::Base64Escape(runner::e2e::kCredentialValue)},
           {"EXTRA", absl::Base64Escape("line 1\nline 2\n\t\xc3\xa9 \xe2\x9c\x93\n")}}}});
  // The source Secret is not watched: the identity's next resync (30 s
  // here) or a using object's pass finds the rotation.
  EXPECT_TRUE(eventually([] { return mirror(kHome)["data"] == source()["data"]; },
                         std::chrono::seconds(120)))
      << mirror(kHome).dump(2) << manager_.logText();
  EXPECT_EQ(mirror(kHome)["data"].size(), 2U);
}

// docs/decisions/manager-identity.md, "Rotation": a rotation alone
// re-applies nothing (the credential is not in the inputs hash, docs/behaviour/inputs.md);
// the next Job of each object using the identity, whatever starts it, gets
// the new bytes, because the pass that creates a Job rewrites a stale mirror
// first. The probe module reports hashes of the files it was given; a
// binary key (NUL, invalid UTF-8) is a file only and the Job still starts.
TEST_F(TerraformClusterIdentityE2eTest, TheNextJobAfterARotationSeesTheNewCredential) {
  const std::vector<std::pair<std::string, std::string>> clusters = {{kHome, "home"},
                                                                     {kGuest, "guest"}};
  allow({kHome, kGuest});
  for (const auto& [ns, name] : clusters) {
    ASSERT_TRUE(eventually([&] {
      return conditionOf(tc(ns, name), "IdentityAllowed", "status") == "True" &&
             mirror(ns).is_object();
    })) << tc(ns, name).dump(2)
        << manager_.logText();
    EXPECT_EQ(conditionOf(tc(ns, name), "InfrastructureHealthy", "message"),
              probeMessage(runner::e2e::kCredentialValue, std::nullopt));
  }
  const auto rotate = [](const std::string& token, const std::string& blob) {
    apply({{"apiVersion", "v1"},
           {"kind", "Secret"},
           {"metadata",
            {{"name", std::string(kIdentity) + "-credentials"}, {"namespace", "captf-system"}}},
           {"data",
            {{"NOOP_API_TOKEN", absl::Base64Escape(token)}, {"BLOB", absl::Base64Escape(blob)}}}});
  };
  const auto touch = [&](const std::string& value) {
    for (const auto& [ns, name] : clusters) {
      e2e::mergePatch(ns, "terraformcluster", name,
                      {{"spec", {{"variables", {{"touch", value}}}}}});
    }
  };
  std::map<std::string, std::vector<std::string>> seen;
  for (const auto& [ns, name] : clusters) {
    seen[ns] = e2e::runJobs(ns, name, "apply");
  }
  // The newest apply Job of the cluster in `ns`: it succeeded, references
  // the mirror (the text key through a secretKeyRef, the binary one in no
  // env entry), and the module reported `message`.
  const auto next_apply_sees = [&](const std::string& ns, const std::string& name,
                                   const std::string& message) {
    std::string job;
    const bool reported = eventually(
        [&] {
          for (const std::string& candidate : e2e::runJobs(ns, name, "apply")) {
            if (std::find(seen[ns].begin(), seen[ns].end(), candidate) == seen[ns].end()) {
              job = candidate;
            }
          }
          return !job.empty() &&
                 conditionOf(tc(ns, name), "InfrastructureHealthy", "message") == message;
        },
        std::chrono::seconds(300));
    EXPECT_TRUE(reported) << ns << "/" << name << " new apply Job '" << job << "'\n"
                          << tc(ns, name).dump(2) << manager_.logText();
    if (job.empty()) {
      return;
    }
    seen[ns].push_back(job);
    const json spec = getJson({"-n", ns, "get", "job", job});
    EXPECT_GE(spec["status"].value("succeeded", 0), 1) << spec["status"].dump();
    const json& pod = spec["spec"]["template"]["spec"];
    const json& source = pod["containers"][0];
    EXPECT_FALSE(source.contains("envFrom"));
    EXPECT_THAT(source["env"], ::testing::Contains(json::parse(R"({"name":"NOOP_API_TOKEN",
        "valueFrom":{"secretKeyRef":{"name":"captf-creds-tci-shared","key":"NOOP_API_TOKEN",
        "optional":true}}})")));
    for (const json& var : source["env"]) {
      EXPECT_NE(var.value("name", ""), "BLOB");
    }
    EXPECT_THAT(pod["volumes"], ::testing::Contains(json::parse(R"({"name":"credentials",
        "secret":{"secretName":"captf-creds-tci-shared","defaultMode":288}})")));
  };

  // 1. Rotated; the next apply (a variable changed) sees the rotated bytes.
  //    (That every copy is rewritten by the identity's own resync is
  //    RotatingTheSecretRewritesEveryCopyByteForByte.)
  const std::string token1 = "rotated-credential-1-4d7a";
  const std::string blob1 = bytes("\xff\xfe\0binary\x80\n\xc3\x28");
  rotate(token1, blob1);
  touch("1");
  for (const auto& [ns, name] : clusters) {
    next_apply_sees(ns, name, probeMessage(token1, blob1));
  }

  // 2. Rotated and re-applied at once, without waiting for the identity's
  //    resync: the pass that creates the Job rewrites the copy first.
  const std::string token2 = "rotated-credential-2-9e05";
  const std::string blob2 = bytes("\0\0\xfe second");
  rotate(token2, blob2);
  touch("2");
  for (const auto& [ns, name] : clusters) {
    next_apply_sees(ns, name, probeMessage(token2, blob2));
    EXPECT_EQ(mirror(ns)["data"], source()["data"]);
  }
}

TEST_F(TerraformClusterIdentityE2eTest, ZDeletingAnIdentityInUseIsRefusedUntilNoCopyIsLeft) {
  ASSERT_FALSE(namespaces().empty());
  const auto refused = kubectl({"delete", "terraformclusteridentity", kIdentity, "--wait=false"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, HasSubstr(kHome)) << refused.output;
  // The clusters go (their destroys use the copy), then the copies.
  for (const auto& [ns, name] : {std::pair{kHome, "home"}, std::pair{kGuest, "guest"}}) {
    kubectl({"-n", ns, "delete", "clusters.v1beta2.cluster.x-k8s.io", name, "--wait=false"});
  }
  // The guest cluster's destroy waits for access: allow it again.
  allow({kHome, kGuest});
  ASSERT_TRUE(eventually(
      [] {
        return kubectl({"-n", kHome, "get", "terraformcluster", "home"}).exit_code != 0 &&
               kubectl({"-n", kGuest, "get", "terraformcluster", "guest"}).exit_code != 0;
      },
      std::chrono::seconds(240)))
      << manager_.logText();
  EXPECT_TRUE(eventually([] { return namespaces().empty(); })) << identity().dump(2);
  EXPECT_EQ(kubectl({"delete", "terraformclusteridentity", kIdentity}).exit_code, 0);
}

} // namespace
} // namespace captf::controllers
