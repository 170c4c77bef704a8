#include <gtest/gtest.h>

#include "manager/api/codec.h"
#include "test/manager/api/fixtures.h"
#include "webhooks/admission.h"

namespace captf::webhooks {
namespace {

namespace t = api::testing;
using nlohmann::json;

json review(const std::string& kind, const std::string& op, const json& object,
            const json& old_object = nullptr) {
  json req = {
      {"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
      {"kind",
       {{"group", "infrastructure.cluster.x-k8s.io"}, {"version", "v1alpha1"}, {"kind", kind}}},
      {"resource",
       {{"group", "infrastructure.cluster.x-k8s.io"}, {"version", "v1alpha1"}, {"resource", "x"}}},
      {"name", "obj"},
      {"namespace", "team-a"},
      {"operation", op},
      {"userInfo",
       {{"username", "alice"},
        {"uid", "u-1"},
        {"groups", {"team-a", "system:authenticated"}},
        {"extra", {{"scopes", {"x"}}}}}},
      {"object", object},
      {"oldObject", old_object},
      {"dryRun", false}};
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", req}};
}

AdmissionRequest parse(const json& doc) {
  absl::StatusOr<AdmissionRequest> r = parseAdmissionReview(doc.dump());
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : AdmissionRequest{};
}

TEST(AdmissionReviewTest, DecodesEveryField) {
  const json obj = api::toJson(t::minimalTerraformMachine());
  json doc = review("TerraformMachine", "UPDATE", obj, obj);
  doc["request"]["dryRun"] = true;
  doc["request"]["subResource"] = "status";
  const AdmissionRequest r = parse(doc);
  EXPECT_EQ(r.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(r.group, "infrastructure.cluster.x-k8s.io");
  EXPECT_EQ(r.version, "v1alpha1");
  EXPECT_EQ(r.kind, "TerraformMachine");
  EXPECT_EQ(r.sub_resource, "status");
  EXPECT_EQ(r.name, "obj");
  EXPECT_EQ(r.namespace_, "team-a");
  EXPECT_EQ(r.operation, AdmissionOperation::kUpdate);
  EXPECT_EQ(r.user_info,
            (UserInfo{"alice", "u-1", {"team-a", "system:authenticated"}, {{"scopes", {"x"}}}}));
  EXPECT_EQ(r.object, obj);
  EXPECT_EQ(r.old_object, obj);
  EXPECT_TRUE(r.dry_run);
}

TEST(AdmissionReviewTest, RejectsMalformedReviewsWithClearErrors) {
  const json ok = review("TerraformMachine", "CREATE", json::object());
  struct Case {
    std::string body;
    std::string error;
  };
  auto with = [&](const std::function<void(json&)>& f) {
    json d = ok;
    f(d);
    return d.dump();
  };
  const std::vector<Case> cases = {
      {"", "malformed JSON at byte offset 0"},
      {"{\"apiVersion\": ", "malformed JSON at byte offset 15"},
      {"[]", "<root>: expected an AdmissionReview object"},
      {with([](json& d) { d["apiVersion"] = "admission.k8s.io/v1beta1"; }),
       "expected an admission.k8s.io/v1 AdmissionReview, got apiVersion "
       "\"admission.k8s.io/v1beta1\" kind \"AdmissionReview\""},
      {with([](json& d) { d["kind"] = 7; }), "<root>.kind: expected string"},
      {with([](json& d) { d.erase("request"); }), "request: expected object"},
      {with([](json& d) { d["request"]["uid"] = ""; }), "request.uid: must be a non-empty string"},
      {with([](json& d) { d["request"]["uid"] = 12; }), "request.uid: expected string"},
      {with([](json& d) { d["request"].erase("kind"); }), "request.kind: expected object"},
      {with([](json& d) { d["request"]["kind"]["kind"] = true; }),
       "request.kind.kind: expected string"},
      {with([](json& d) { d["request"]["operation"] = "PATCH"; }),
       "request.operation: unsupported value \"PATCH\": want CREATE, UPDATE, DELETE or CONNECT"},
      {with([](json& d) { d["request"]["userInfo"]["groups"] = {1}; }),
       "request.userInfo.groups: expected array of strings"},
      {with([](json& d) {
         d["request"]["userInfo"]["extra"] = {{"k", "v"}};
       }),
       "request.userInfo.extra[k]: expected array of strings"},
      {with([](json& d) { d["request"]["object"] = "x"; }), "request.object: expected object"},
      {with([](json& d) { d["request"]["dryRun"] = "yes"; }), "request.dryRun: expected boolean"},
      {with([](json& d) { d["request"]["operation"] = "UPDATE"; }),
       "UPDATE requests carry request.object and request.oldObject"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<AdmissionRequest> r = parseAdmissionReview(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(std::string(r.status().message()).starts_with(c.error))
        << c.body << "\n got: " << r.status().message() << "\nwant: " << c.error;
  }
}

class FakeLookups : public AdmissionLookups {
public:
  absl::StatusOr<std::optional<OwnerMachine>> getMachine(std::string_view ns,
                                                         std::string_view name) override {
    machine_calls.push_back(std::string(ns) + "/" + std::string(name));
    return machine;
  }
  absl::StatusOr<std::optional<ClusterInfo>> getCluster(std::string_view ns,
                                                        std::string_view name) override {
    cluster_calls.push_back(std::string(ns) + "/" + std::string(name));
    return cluster;
  }
  absl::StatusOr<IdentityUsageSnapshot> identityUsage() override { return usage; }

  absl::StatusOr<std::optional<OwnerMachine>> machine = std::optional<OwnerMachine>();
  absl::StatusOr<std::optional<ClusterInfo>> cluster = std::optional<ClusterInfo>();
  absl::StatusOr<IdentityUsageSnapshot> usage = IdentityUsageSnapshot{};
  std::vector<std::string> machine_calls;
  std::vector<std::string> cluster_calls;
};

class FakeReviewer : public AccessReviewer {
public:
  absl::StatusOr<AccessDecision> review(const json& sar) override {
    requests.push_back(sar);
    return decision;
  }
  absl::StatusOr<AccessDecision> decision = AccessDecision{true, false, "", ""};
  std::vector<json> requests;
};

class AdmissionHandlerTest : public ::testing::Test {
protected:
  AdmissionResponse handle(const json& doc) { return handler_.handle(parse(doc)); }

  FakeLookups lookups_;
  FakeReviewer reviewer_;
  AdmissionHandler handler_{lookups_, reviewer_};
};

TEST_F(AdmissionHandlerTest, AllowsValidObjectsAndEchoesTheUid) {
  const AdmissionResponse r =
      handle(review("TerraformCluster", "CREATE", api::toJson(t::minimalTerraformCluster())));
  EXPECT_TRUE(r.allowed) << r.status.dump();
  EXPECT_EQ(r.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  const json encoded = json::parse(encodeAdmissionReview(r));
  EXPECT_EQ(encoded, json::parse(R"({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
      "response": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": true}})"));
}

TEST_F(AdmissionHandlerTest, DeniesInvalidObjectsWith422AndEveryCause) {
  api::TerraformMachine m = t::minimalTerraformMachine();
  m.spec.source.image = "NoTag";
  m.spec.variables = {{"captf_x", 1}};
  const AdmissionResponse r = handle(review("TerraformMachine", "CREATE", api::toJson(m)));
  ASSERT_FALSE(r.allowed);
  EXPECT_EQ(r.status["code"], 422);
  EXPECT_EQ(r.status["reason"], "Invalid");
  ASSERT_EQ(r.status["details"]["causes"].size(), 2U);
  EXPECT_EQ(r.status["details"]["causes"][0]["field"], "spec.source.image");
  EXPECT_EQ(r.status["details"]["causes"][1]["field"], "spec.variables[captf_x]");
  EXPECT_EQ(r.status["details"]["name"], "prod-md-0-abc");
  const json encoded = json::parse(encodeAdmissionReview(r));
  EXPECT_EQ(encoded["response"]["allowed"], false);
  EXPECT_EQ(encoded["response"]["status"], r.status);
}

TEST_F(AdmissionHandlerTest, SkipsStatusAndForeignRequests) {
  api::TerraformMachine m = t::minimalTerraformMachine();
  m.spec.source.image = "NoTag";
  json doc = review("TerraformMachine", "CREATE", api::toJson(m));
  doc["request"]["subResource"] = "status";
  EXPECT_TRUE(handle(doc).allowed);

  doc = review("TerraformMachine", "CREATE", api::toJson(m));
  doc["request"]["kind"]["group"] = "cluster.x-k8s.io";
  const AdmissionResponse r = handle(doc);
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.status["code"], 400);

  doc = review("Unknown", "CREATE", json::object());
  EXPECT_EQ(handle(doc).status["message"], "unsupported kind \"Unknown\"");
}

TEST_F(AdmissionHandlerTest, UndecodableObjectIsABadRequest) {
  json obj = api::toJson(t::minimalTerraformMachine());
  obj["spec"]["source"]["image"] = 1;
  const AdmissionResponse r = handle(review("TerraformMachine", "CREATE", obj));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.status["code"], 400);
  EXPECT_EQ(r.status["message"],
            "cannot decode request.object: spec.source.image: Invalid type: expected string, got "
            "integer");
}

TEST_F(AdmissionHandlerTest, TemplateDryRunFromTopologyIsExempt) {
  api::TerraformMachineTemplate old_obj = t::minimalTerraformMachineTemplate();
  api::TerraformMachineTemplate obj = old_obj;
  obj.spec.template_.spec.source.image = "registry.example.com/modules/machine:v2";
  obj.metadata.annotations["topology.cluster.x-k8s.io/dry-run"] = "";
  json doc = review("TerraformMachineTemplate", "UPDATE", api::toJson(obj), api::toJson(old_obj));
  EXPECT_FALSE(handle(doc).allowed);
  doc["request"]["dryRun"] = true;
  EXPECT_TRUE(handle(doc).allowed);
}

TEST_F(AdmissionHandlerTest, MachineDeleteAsksForTheOwner) {
  api::TerraformMachine m = t::minimalTerraformMachine();
  m.metadata.owner_references = {
      {"cluster.x-k8s.io/v1beta2", "Machine", "prod-md-0-xyz", "uid-1", true, true}};
  m.metadata.labels["cluster.x-k8s.io/cluster-name"] = "prod";
  lookups_.machine = std::optional<OwnerMachine>(OwnerMachine{
      "prod-md-0-xyz", "uid-1", "prod", false,
      ObjectRef{"infrastructure.cluster.x-k8s.io", "TerraformMachine", "prod-md-0-abc"}});
  AdmissionResponse r = handle(review("TerraformMachine", "DELETE", nullptr, api::toJson(m)));
  ASSERT_FALSE(r.allowed);
  EXPECT_EQ(r.status["code"], 403);
  EXPECT_EQ(r.status["details"]["causes"][0]["field"], "metadata.ownerReferences");
  EXPECT_EQ(lookups_.machine_calls, std::vector<std::string>{"team-a/prod-md-0-xyz"});
  EXPECT_TRUE(lookups_.cluster_calls.empty());

  // clusterctl move: the Cluster is looked up and must be paused.
  m.metadata.annotations["clusterctl.cluster.x-k8s.io/delete-for-move"] = "";
  lookups_.cluster = std::optional<ClusterInfo>(ClusterInfo{"team-a", "prod", true, {}});
  r = handle(review("TerraformMachine", "DELETE", nullptr, api::toJson(m)));
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(lookups_.cluster_calls, std::vector<std::string>{"team-a/prod"});

  lookups_.machine = absl::UnavailableError("apiserver down");
  r = handle(review("TerraformMachine", "DELETE", nullptr, api::toJson(m)));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.status["code"], 500);
  EXPECT_EQ(r.status["message"],
            "cannot check the owner Machine \"prod-md-0-xyz\": apiserver down");
}

TEST_F(AdmissionHandlerTest, IdentityCreateRunsASubjectAccessReviewAsTheUser) {
  const api::TerraformClusterIdentity identity = t::minimalTerraformClusterIdentity();
  reviewer_.decision = AccessDecision{false, false, "no RBAC policy matched", ""};
  AdmissionResponse r = handle(review("TerraformClusterIdentity", "CREATE", api::toJson(identity)));
  ASSERT_FALSE(r.allowed);
  EXPECT_EQ(r.status["code"], 422);
  EXPECT_EQ(r.status["details"]["causes"][0],
            json::parse(R"j({"reason": "FieldValueForbidden", "field": "spec.secretRef",
              "message": "Forbidden: user \"alice\" may not get Secret \"captf-system/aws-prod-credentials\": only someone who can read the credentials may point an identity at them (no RBAC policy matched)"})j"));
  ASSERT_EQ(reviewer_.requests.size(), 1U);
  EXPECT_EQ(reviewer_.requests[0], json::parse(R"({
    "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
    "spec": {"resourceAttributes": {"namespace": "captf-system", "verb": "get", "group": "",
             "version": "v1", "resource": "secrets", "name": "aws-prod-credentials"},
             "user": "alice", "uid": "u-1", "groups": ["team-a", "system:authenticated"],
             "extra": {"scopes": ["x"]}}})"));

  reviewer_.decision = AccessDecision{true, false, "", ""};
  EXPECT_TRUE(handle(review("TerraformClusterIdentity", "CREATE", api::toJson(identity))).allowed);

  reviewer_.decision = absl::DeadlineExceededError("timeout");
  r = handle(review("TerraformClusterIdentity", "CREATE", api::toJson(identity)));
  EXPECT_EQ(r.status["code"], 500);
}

TEST_F(AdmissionHandlerTest, IdentityUpdateReviewsOnlyASecretRefChange) {
  const api::TerraformClusterIdentity old_obj = t::minimalTerraformClusterIdentity();
  api::TerraformClusterIdentity obj = old_obj;
  obj.spec.allowed_namespaces = api::AllowedNamespaces{{"team-a"}, {}};
  reviewer_.decision = AccessDecision{false, true, "denied", ""};
  EXPECT_TRUE(
      handle(review("TerraformClusterIdentity", "UPDATE", api::toJson(obj), api::toJson(old_obj)))
          .allowed);
  EXPECT_TRUE(reviewer_.requests.empty());
  obj.spec.secret_ref.name = "other";
  EXPECT_FALSE(
      handle(review("TerraformClusterIdentity", "UPDATE", api::toJson(obj), api::toJson(old_obj)))
          .allowed);
  EXPECT_EQ(reviewer_.requests.size(), 1U);
}

TEST_F(AdmissionHandlerTest, IdentityDeleteChecksUsage) {
  api::TerraformClusterIdentity identity = t::minimalTerraformClusterIdentity();
  IdentityUsageSnapshot usage;
  usage.clusters.push_back(t::minimalTerraformCluster());
  lookups_.usage = usage;
  AdmissionResponse r =
      handle(review("TerraformClusterIdentity", "DELETE", nullptr, api::toJson(identity)));
  ASSERT_FALSE(r.allowed);
  EXPECT_EQ(r.status["code"], 403);
  lookups_.usage = IdentityUsageSnapshot{};
  EXPECT_TRUE(
      handle(review("TerraformClusterIdentity", "DELETE", nullptr, api::toJson(identity))).allowed);
}

// Robustness: every truncation of a real review, and every node of it
// replaced by each JSON type, decodes to a value or an error and is then
// handled without crashing (the sanitizers watch for the rest).
void replaceEachNode(const json& root, json& node, std::vector<std::string>& bodies,
                     const std::vector<json>& replacements) {
  const json saved = node;
  for (const json& r : replacements) {
    node = r;
    bodies.push_back(root.dump());
  }
  node = saved;
  if (node.is_object()) {
    for (auto& [k, v] : node.items()) {
      replaceEachNode(root, v, bodies, replacements);
    }
  } else if (node.is_array()) {
    for (json& v : node) {
      replaceEachNode(root, v, bodies, replacements);
    }
  }
}

TEST_F(AdmissionHandlerTest, SurvivesMangledInput) {
  // A small object keeps the run short; every node kind is still present.
  api::TerraformMachine m = t::minimalTerraformMachine();
  m.metadata.owner_references = t::fullTerraformMachine().metadata.owner_references;
  m.spec.variables = {{"region", "x"}};
  m.spec.jobs = api::JobPolicy{};
  m.spec.jobs->env = {{"A", "b", std::nullopt}};
  json doc = review("TerraformMachine", "UPDATE", api::toJson(m), json::object());
  std::vector<std::string> bodies;
  const std::string full = doc.dump();
  for (std::size_t n = 0; n < full.size(); n += 7) {
    bodies.push_back(full.substr(0, n));
  }
  json root = doc;
  replaceEachNode(
      root, root, bodies,
      {json(nullptr), json(1), json(-1.5), json("x"), json::array(), json::object(), json(true)});
  std::size_t decoded = 0;
  for (const std::string& body : bodies) {
    absl::StatusOr<AdmissionRequest> r = parseAdmissionReview(body);
    if (r.ok()) {
      ++decoded;
      const AdmissionResponse resp = handler_.handle(*r);
      EXPECT_EQ(resp.uid, r->uid);
      EXPECT_FALSE(encodeAdmissionReview(resp).empty());
    }
  }
  EXPECT_GT(decoded, 0U);
  EXPECT_LT(decoded, bodies.size());
}

TEST(AdmissionResponseTest, BadRequestCarriesTheMessage) {
  const json encoded = json::parse(encodeAdmissionReview(badRequest("", "malformed JSON")));
  EXPECT_EQ(encoded["response"]["allowed"], false);
  EXPECT_EQ(encoded["response"]["status"]["code"], 400);
  EXPECT_EQ(encoded["response"]["status"]["message"], "malformed JSON");
}

} // namespace
} // namespace captf::webhooks
