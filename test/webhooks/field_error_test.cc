#include <gtest/gtest.h>

#include "webhooks/field_error.h"

namespace captf::webhooks {
namespace {

using api::FieldPath;

TEST(FieldErrorTest, FormatsLikeApimachinery) {
  const FieldPath image = FieldPath("spec").child("source").child("image");
  EXPECT_EQ(toString(invalid(image, "x y", "bad")),
            "spec.source.image: Invalid value: \"x y\": bad");
  EXPECT_EQ(toString(invalid(FieldPath("spec").child("n"), 3, "too big")),
            "spec.n: Invalid value: 3: too big");
  EXPECT_EQ(toString(required(FieldPath("spec").child("identityRef"), "name one")),
            "spec.identityRef: Required value: name one");
  EXPECT_EQ(toString(forbidden(FieldPath("spec").child("p"), "no")), "spec.p: Forbidden: no");
  EXPECT_EQ(toString(tooMany(FieldPath("spec").child("variables"), 300, 256)),
            "spec.variables: Too many: 300: must have at most 256 items");
  EXPECT_EQ(toString(duplicate(FieldPath("spec").child("l").index(2), "a")),
            "spec.l[2]: Duplicate value: \"a\"");
  EXPECT_EQ(toString(notSupported(FieldPath("spec").child("e"), "x", {"A", "B"})),
            "spec.e: Unsupported value: \"x\": supported values: \"A\", \"B\"");
  EXPECT_EQ(toString(invalidObject(FieldPath("spec").child("o"), "is immutable")),
            "spec.o: Invalid value: is immutable");
  EXPECT_EQ(toString(forbidden(FieldPath(), "in use")), "Forbidden: in use");
  EXPECT_EQ(quote("a\"b\n"), "\"a\\\"b\\n\"");
  EXPECT_EQ(FieldPath("spec").child("variables").key("x.y").str(), "spec.variables[x.y]");
}

TEST(FieldErrorTest, InvalidStatusCarriesEveryCause) {
  const FieldErrorList errors = {
      invalid(FieldPath("spec").child("source").child("image"), "X", "must be lowercase"),
      forbidden(FieldPath("spec").child("jobs").child("securityContext").child("privileged"),
                "never"),
  };
  const nlohmann::json got = invalidStatus("TerraformMachine", "m1", errors);
  const nlohmann::json want = nlohmann::json::parse(R"({
    "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
    "message": "TerraformMachine.infrastructure.cluster.x-k8s.io \"m1\" is invalid: [spec.source.image: Invalid value: \"X\": must be lowercase, spec.jobs.securityContext.privileged: Forbidden: never]",
    "reason": "Invalid", "code": 422,
    "details": {"name": "m1", "group": "infrastructure.cluster.x-k8s.io", "kind": "TerraformMachine",
      "causes": [
        {"reason": "FieldValueInvalid", "message": "Invalid value: \"X\": must be lowercase", "field": "spec.source.image"},
        {"reason": "FieldValueForbidden", "message": "Forbidden: never", "field": "spec.jobs.securityContext.privileged"}
      ]}
  })");
  EXPECT_EQ(got, want) << got.dump(2);
}

TEST(FieldErrorTest, SingleErrorMessageHasNoBrackets) {
  const nlohmann::json got =
      forbiddenStatus("TerraformMachine", "m1", {forbidden(FieldPath("metadata"), "owned")});
  EXPECT_EQ(got["message"],
            "TerraformMachine.infrastructure.cluster.x-k8s.io \"m1\" is forbidden: metadata: "
            "Forbidden: owned");
  EXPECT_EQ(got["code"], 403);
  EXPECT_EQ(got["reason"], "Forbidden");
}

TEST(FieldErrorTest, RatchetDropsErrorsTheOldObjectHad) {
  const FieldError a = invalid(FieldPath("spec").child("a"), "1", "x");
  const FieldError b = invalid(FieldPath("spec").child("b"), "2", "y");
  const FieldError a_changed = invalid(FieldPath("spec").child("a"), "3", "x");
  EXPECT_EQ(ratchet({a, b}, {a}), (FieldErrorList{b}));
  EXPECT_EQ(ratchet({a_changed}, {a}), (FieldErrorList{a_changed}));
  EXPECT_EQ(ratchet({}, {a}), FieldErrorList{});
}

} // namespace
} // namespace captf::webhooks
