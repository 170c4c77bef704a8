#include <gtest/gtest.h>

#include "manager/api/codec.h"
#include "manager/api/templates.h"
#include "manager/api/terraform_cluster.h"
#include "manager/api/terraform_cluster_identity.h"
#include "manager/api/terraform_machine.h"
#include "manager/api/terraform_machine_pool.h"
#include "test/manager/api/fixtures.h"

namespace captf::api {
namespace {

using nlohmann::json;

template <class T> void expectRoundTrip(const T& original) {
  const json encoded = toJson(original);
  // Through text, as objects travel.
  absl::StatusOr<json> reparsed = parseJson(encoded.dump());
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  absl::StatusOr<T> decoded = fromJson<T>(*reparsed);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, original);
  EXPECT_EQ(toJson(*decoded), encoded);
}

TEST(CodecTest, RoundTripsEveryKindWithEveryField) {
  expectRoundTrip(testing::fullTerraformCluster());
  expectRoundTrip(testing::fullTerraformMachine());
  expectRoundTrip(testing::fullTerraformMachinePool());
  expectRoundTrip(testing::fullTerraformClusterTemplate());
  expectRoundTrip(testing::fullTerraformMachineTemplate());
  expectRoundTrip(testing::fullTerraformMachinePoolTemplate());
  expectRoundTrip(testing::fullTerraformClusterIdentity());
}

TEST(CodecTest, RoundTripsMinimalObjects) {
  expectRoundTrip(testing::minimalTerraformCluster());
  expectRoundTrip(testing::minimalTerraformMachine());
  expectRoundTrip(testing::minimalTerraformMachinePool());
  expectRoundTrip(testing::minimalTerraformClusterTemplate());
  expectRoundTrip(testing::minimalTerraformMachineTemplate());
  expectRoundTrip(testing::minimalTerraformMachinePoolTemplate());
  expectRoundTrip(testing::minimalTerraformClusterIdentity());
}

TEST(CodecTest, OmitsUnsetFieldsLikeGoOmitempty) {
  const json got = toJson(testing::minimalTerraformCluster());
  const json want = json::parse(R"({
    "apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1",
    "kind": "TerraformCluster",
    "metadata": {"name": "prod", "namespace": "team-a"},
    "spec": {"identityRef": {"name": "aws-prod"},
             "source": {"image": "registry.example.com/modules/cluster:v1.0.0"}}
  })");
  EXPECT_EQ(got, want) << got.dump(2);
}

TEST(CodecTest, KeepsExplicitZeroesOfOptionalFields) {
  TerraformMachinePool pool = testing::minimalTerraformMachinePool();
  pool.status = TerraformMachinePoolStatus{};
  pool.status->replicas = 0;
  pool.spec.jobs = JobPolicy{};
  pool.spec.jobs->lock_timeout_seconds = 0;
  const json got = toJson(pool);
  EXPECT_EQ(got["status"], json::parse(R"({"replicas": 0})"));
  EXPECT_EQ(got["spec"]["jobs"], json::parse(R"({"lockTimeoutSeconds": 0})"));
}

TEST(CodecTest, EncodesWireNames) {
  const json got = toJson(testing::fullTerraformMachinePool());
  EXPECT_EQ(got["spec"]["source"]["imagePullPolicy"], "Always");
  EXPECT_EQ(got["spec"]["variablesFrom"][0]["format"], "JSON");
  EXPECT_EQ(got["status"]["activeJob"]["operation"], "apply");
  EXPECT_EQ(got["status"]["lastRun"]["error"]["kind"], "step");
  EXPECT_EQ(got["status"]["instances"][0]["state"], "running");
  EXPECT_EQ(got["status"]["conditions"][0]["lastTransitionTime"], "2023-11-14T22:15:00Z");
  EXPECT_EQ(got["spec"]["jobs"]["resources"]["requests"]["cpu"], "250m");
  EXPECT_EQ(got["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], true);
}

struct DecodeErrorCase {
  const char* name;
  const char* doc;
  const char* error;
};

class DecodeErrorTest : public ::testing::TestWithParam<DecodeErrorCase> {};

TEST_P(DecodeErrorTest, NamesTheFieldPath) {
  const DecodeErrorCase& c = GetParam();
  absl::StatusOr<TerraformCluster> got = fromJson<TerraformCluster>(json::parse(c.doc));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(got.status().message()), c.error);
}

constexpr const char* kBase = R"("identityRef": {"name": "i"}, "source": {"image": "r/m:1"})";

INSTANTIATE_TEST_SUITE_P(
    Cases, DecodeErrorTest,
    ::testing::Values(
        DecodeErrorCase{"NotAnObject", "[]", "<root>: Invalid type: expected object, got array"},
        DecodeErrorCase{"MissingSpec", R"({"metadata": {}})", "spec: Required value"},
        DecodeErrorCase{"NullRequired", R"({"spec": null})", "spec: Required value"},
        DecodeErrorCase{"MissingNested", R"({"spec": {"identityRef": {"name": "i"}}})",
                        "spec.source: Required value"},
        DecodeErrorCase{"WrongScalar",
                        R"({"spec": {"identityRef": {"name": "i"}, "source": {"image": 5}}})",
                        "spec.source.image: Invalid type: expected string, got integer"},
        DecodeErrorCase{"UnknownEnum",
                        R"({"spec": {"identityRef": {"name": "i"}, "source": {"image": "r/m:1"},
                                     "applyPolicy": "Sometimes"}})",
                        "spec.applyPolicy: Unsupported value: \"Sometimes\": supported values: "
                        "\"Automatic\", \"Manual\""},
        DecodeErrorCase{"ListItemPath",
                        R"({"spec": {"identityRef": {"name": "i"}, "source": {"image": "r/m:1"},
                                     "jobs": {"env": [{"name": "A"}, {"value": "x"}]}}})",
                        "spec.jobs.env[1].name: Required value"},
        DecodeErrorCase{"Int32Range",
                        R"({"spec": {"identityRef": {"name": "i"}, "source": {"image": "r/m:1"},
                                     "jobs": {"lockTimeoutSeconds": 4294967296}}})",
                        "spec.jobs.lockTimeoutSeconds: integer out of range"},
        DecodeErrorCase{"FractionalInteger",
                        R"({"spec": {"identityRef": {"name": "i"}, "source": {"image": "r/m:1"},
                                     "jobs": {"activeDeadlineSeconds": 1.5}}})",
                        "spec.jobs.activeDeadlineSeconds: Invalid type: expected integer, got "
                        "number"},
        DecodeErrorCase{"VariablesNotObject",
                        R"({"spec": {"identityRef": {"name": "i"}, "source": {"image": "r/m:1"},
                                     "variables": ["a"]}})",
                        "spec.variables: Invalid type: expected object, got array"},
        DecodeErrorCase{"MapValuePath", R"({"metadata": {"labels": {"a": 1}}, "spec": {}})",
                        "metadata.labels[a]: Invalid type: expected string, got integer"},
        DecodeErrorCase{"BadTime",
                        R"({"metadata": {"creationTimestamp": "yesterday"}, "spec": {}})",
                        "metadata.creationTimestamp: invalid RFC 3339 time \"yesterday\": want "
                        "YYYY-MM-DDTHH:MM:SS followed by Z or an offset"}),
    [](const ::testing::TestParamInfo<DecodeErrorCase>& p) { return p.param.name; });

TEST(CodecTest, IgnoresUnknownFields) {
  const json doc =
      json::parse(std::string(R"({"spec": {)") + kBase + R"(, "futureField": 1}, "extra": true})");
  absl::StatusOr<TerraformCluster> got = fromJson<TerraformCluster>(doc);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->spec.identity_ref.name, "i");
}

TEST(CodecTest, AcceptsIntegralFloatsAndNumericQuantities) {
  const json doc = json::parse(std::string(R"({"spec": {)") + kBase +
                               R"(, "jobs": {"activeDeadlineSeconds": 60.0,
                                  "resources": {"limits": {"cpu": 2}}}}})");
  absl::StatusOr<TerraformCluster> got = fromJson<TerraformCluster>(doc);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->spec.jobs->active_deadline_seconds, 60);
  EXPECT_EQ(got->spec.jobs->resources->limits.at("cpu").value, "2");
}

TEST(ParseJsonTest, ReportsTheByteOffset) {
  absl::StatusOr<json> got = parseJson(R"({"a": })");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(std::string(got.status().message()).find("malformed JSON at byte offset 6"),
            std::string::npos)
      << got.status();
  EXPECT_FALSE(parseJson("").ok());
  EXPECT_FALSE(parseJson("{} trailing").ok());
  EXPECT_TRUE(parseJson(R"({"a": [1, 2]})").ok());
  // The kind of error, never what was read (an AdmissionReview carries the
  // object, a Secret's data included).
  EXPECT_EQ(parseJson(R"({"a": "CANARY-7f3a)").status().message(),
            "malformed JSON at byte offset 18: unexpected end of input");
  EXPECT_EQ(parseJson(R"({"a": 1e999})").status().message(), "malformed JSON: number out of range");
}

TEST(TimeTest, ParsesRfc3339Variants) {
  EXPECT_EQ(formatTime(*parseTime("2024-02-29T23:59:59Z")), "2024-02-29T23:59:59Z");
  EXPECT_EQ(formatTime(*parseTime("2024-01-01T01:30:00.123456+02:00")), "2023-12-31T23:30:00Z");
  EXPECT_EQ(formatTime(*parseTime("2024-01-01t00:00:00-01:15")), "2024-01-01T01:15:00Z");
  EXPECT_EQ(formatTime(Time{}), "1970-01-01T00:00:00Z");
}

TEST(TimeTest, RejectsMalformedTimes) {
  for (const char* bad :
       {"", "2024-02-30T00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01 00:00:00Z",
        "2024-01-01T00:00:00", "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00+0100",
        "2024-01-01T00:00:00Zjunk", "20240101T000000Z"}) {
    EXPECT_FALSE(parseTime(bad).ok()) << bad;
  }
}

} // namespace
} // namespace captf::api
