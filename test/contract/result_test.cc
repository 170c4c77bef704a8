#include <random>
#include <string>

#include <gtest/gtest.h>

#include "contract/json_adapter.h"
#include "contract/plan.h"
#include "contract/result.h"
#include "test/contract/test_util.h"

namespace captf::contract {
namespace {

namespace pb = captf::runner::v1alpha1;
using nlohmann::json;

pb::RunResult blockedClusterApply() {
  pb::RunResult result;
  result.set_operation(pb::OPERATION_APPLY);
  result.set_image("registry.example.com/modules/aws-cluster:v1.4.2");
  result.set_runtime_version("1.8.5");
  result.set_exit_code(1);
  pb::RunError& error = *result.mutable_error();
  error.set_kind(pb::ERROR_KIND_BLOCKED);
  error.set_summary("the plan deletes or replaces 1 resource and no approval names inputs hash "
                    "h2:0a1b");
  const auto add_step = [&](pb::Step step, int exit_code, std::int64_t millis) {
    pb::StepResult& s = *result.add_steps();
    s.set_step(step);
    s.set_exit_code(exit_code);
    s.mutable_duration()->set_seconds(millis / 1000);
    s.mutable_duration()->set_nanos(static_cast<std::int32_t>((millis % 1000) * 1'000'000));
  };
  add_step(pb::STEP_INIT, 0, 2150);
  add_step(pb::STEP_VALIDATE, 0, 480);
  add_step(pb::STEP_PLAN, 2, 5003);
  add_step(pb::STEP_SHOW_JSON, 0, 310);
  const std::vector<PlannedChange> changes = {
      {.address = "aws_lb.api", .actions = {"delete", "create"}},
      {.address = "aws_security_group.cp", .actions = {"update"}}};
  *result.mutable_plan() = summarizePlan(changes);
  result.mutable_started_at()->set_seconds(1'767'225'600); // 2026-01-01T00:00:00Z
  result.mutable_duration()->set_seconds(8);
  return result;
}

pb::RunResult decoded(const std::string& text) {
  auto result = decodeResult(text);
  EXPECT_TRUE(result.ok()) << result.status() << "\n" << text;
  return result.ok() ? *result : pb::RunResult{};
}

TEST(ResultNamesTest, MatchTheApiSpellings) {
  EXPECT_EQ(operationName(pb::OPERATION_APPLY), "apply");
  EXPECT_EQ(operationName(pb::OPERATION_PLAN), "plan");
  EXPECT_EQ(operationName(pb::OPERATION_UNSPECIFIED), "");
  for (const char* name : {"apply", "destroy", "drift", "refresh", "restore", "plan"}) {
    EXPECT_EQ(operationName(parseOperation(name).value()), name);
  }
  EXPECT_FALSE(parseOperation("Apply").ok());
  for (const char* name :
       {"prepare", "init", "force-unlock", "validate", "plan", "show-json", "apply",
        "apply-refresh-only", "destroy", "state-push", "state-list", "fetch"}) {
    EXPECT_EQ(stepName(parseStep(name).value()), name);
  }
  EXPECT_FALSE(parseStep("version").ok());
  EXPECT_EQ(errorKindName(pb::ERROR_KIND_IMAGE_LAYOUT), "image-layout");
  EXPECT_EQ(errorKindName(pb::ERROR_KIND_STEP), "step");
  EXPECT_EQ(errorKindName(pb::ERROR_KIND_INTERRUPTED), "interrupted");
  EXPECT_EQ(errorKindName(pb::ERROR_KIND_BLOCKED), "blocked");
  EXPECT_EQ(errorKindName(pb::ERROR_KIND_PLAN_CHANGED), "plan-changed");
  EXPECT_EQ(fallbackSummary(pb::STEP_APPLY_REFRESH_ONLY, 137),
            "step apply-refresh-only exited 137; see the Job's logs");
}

TEST(ResultTest, GoldenEncoding) {
  const std::string text = encodeResult(blockedClusterApply());
  testing::expectGolden("result.blocked.json", text + "\n");
}

TEST(ResultTest, RoundTripsAReasonableResult) {
  const pb::RunResult original = blockedClusterApply();
  const pb::RunResult back = decoded(encodeResult(original));
  EXPECT_EQ(back.SerializeAsString(), original.SerializeAsString());
}

TEST(ResultTest, SuccessIsExplicit) {
  pb::RunResult result;
  result.set_operation(pb::OPERATION_REFRESH);
  result.mutable_succeeded();
  const std::string text = encodeResult(result);
  EXPECT_EQ(text, R"({"operation":"OPERATION_REFRESH","succeeded":{}})");
  EXPECT_TRUE(decoded(text).has_succeeded());
}

TEST(ResultTest, BoundsFieldsEvenWhenTheyFit) {
  pb::RunResult result = blockedClusterApply();
  result.mutable_error()->set_summary(std::string(600, 's'));
  for (int i = 0; i < 20; ++i) {
    result.add_steps()->set_step(pb::STEP_APPLY);
  }
  result.mutable_steps(23)->set_exit_code(9);
  result.mutable_started_at()->set_seconds(-70'000'000'000); // before year 1
  const pb::RunResult back = decoded(encodeResult(result));
  EXPECT_EQ(back.error().summary().size(), kMaxSummaryBytes);
  EXPECT_TRUE(back.error().summary().ends_with("..."));
  ASSERT_EQ(back.steps_size(), 16);
  EXPECT_EQ(back.steps(15).exit_code(), 9) << "the most recent steps are kept";
  EXPECT_FALSE(back.has_started_at());
}

TEST(ResultTest, InvalidUtf8IsReplaced) {
  pb::RunResult result = blockedClusterApply();
  result.mutable_error()->set_summary("Error: bad byte \xff here");
  const pb::RunResult back = decoded(encodeResult(result));
  EXPECT_EQ(back.error().summary(), "Error: bad byte \xEF\xBF\xBD here");
}

// A string that JSON escapes to six bytes per byte.
std::string controlChars(std::size_t n) {
  return std::string(n, '\x01');
}

TEST(ResultTest, DropsChangeCountsThenTheTailFirst) {
  pb::RunResult result = blockedClusterApply();
  result.mutable_changes()->set_add(3);
  result.mutable_error()->set_tail(controlChars(kMaxTailBytes));
  const std::string text = encodeResult(result);
  ASSERT_LE(text.size(), kMaxResultBytes);
  const pb::RunResult back = decoded(text);
  EXPECT_FALSE(back.has_changes());
  EXPECT_TRUE(back.error().tail().empty());
  EXPECT_EQ(back.plan().resources_size(), 2) << "the lists outlive the tail";
  EXPECT_EQ(back.steps_size(), 4);
}

TEST(ResultTest, DropsResourceListsBeforeSteps) {
  pb::RunResult result = blockedClusterApply();
  for (int i = 0; i < 50; ++i) {
    result.mutable_plan()->add_resources("module.big.null_resource.r[\"" + std::string(80, 'k') +
                                         std::to_string(i) + "\"] (create)");
  }
  result.mutable_drift()->add_resources("aws_instance.x");
  const std::string text = encodeResult(result);
  ASSERT_LE(text.size(), kMaxResultBytes);
  const pb::RunResult back = decoded(text);
  EXPECT_EQ(back.plan().resources_size(), 0);
  EXPECT_TRUE(back.plan().truncated());
  EXPECT_EQ(back.drift().resources_size(), 0);
  EXPECT_TRUE(back.drift().truncated());
  EXPECT_EQ(back.steps_size(), 4);
  // Hash and counts are kept.
  EXPECT_EQ(back.plan().plan_hash(), result.plan().plan_hash());
  EXPECT_EQ(back.plan().add(), 1U);
  EXPECT_EQ(back.plan().destroy(), 1U);
}

TEST(ResultTest, DropsStepsBeforeTouchingTheSummary) {
  pb::RunResult result = blockedClusterApply();
  result.mutable_error()->set_summary(controlChars(kMaxSummaryBytes));
  for (int i = 0; i < 12; ++i) {
    pb::StepResult& step = *result.add_steps();
    step.set_step(pb::STEP_APPLY_REFRESH_ONLY);
    step.set_exit_code(1);
    step.mutable_duration()->set_seconds(123456);
    step.mutable_duration()->set_nanos(789000000);
  }
  result.set_image(controlChars(40));
  const std::string text = encodeResult(result);
  ASSERT_LE(text.size(), kMaxResultBytes);
  const pb::RunResult back = decoded(text);
  EXPECT_EQ(back.steps_size(), 0);
  EXPECT_EQ(back.error().summary(), controlChars(kMaxSummaryBytes));
  EXPECT_EQ(back.image(), controlChars(40));
}

TEST(ResultTest, ClipsImageBeforeSummaryAsTheLastResort) {
  pb::RunResult result = blockedClusterApply();
  result.mutable_error()->set_summary(controlChars(kMaxSummaryBytes));
  result.set_image(controlChars(kMaxImageBytes));
  result.set_runtime_version(controlChars(kMaxRuntimeVersionBytes));
  const std::string text = encodeResult(result);
  ASSERT_LE(text.size(), kMaxResultBytes);
  const pb::RunResult back = decoded(text);
  EXPECT_TRUE(back.runtime_version().empty());
  EXPECT_LT(back.image().size(), kMaxImageBytes);
  EXPECT_EQ(back.error().summary(), controlChars(kMaxSummaryBytes));
  EXPECT_EQ(back.error().kind(), pb::ERROR_KIND_BLOCKED);
}

// Random results, far larger than the cap in every field: the encoding
// always fits, always decodes, and keeps what must be kept.
TEST(ResultPropertyTest, NeverExceedsTheCapWhateverFails) {
  std::mt19937_64 random(20260101);
  const auto uniform = [&](std::uint64_t low, std::uint64_t high) {
    return std::uniform_int_distribution<std::uint64_t>(low, high)(random);
  };
  const std::vector<std::string> alphabets = {"abcXYZ019/._-", "\x01\x1f\"\\",
                                              "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80",
                                              "\xff\xfe\xc3", "<>&="};
  const auto text = [&](std::size_t max_length) {
    const std::string& alphabet = alphabets[uniform(0, alphabets.size() - 1)];
    std::string out;
    const std::size_t length = uniform(0, max_length);
    for (std::size_t i = 0; i < length; ++i) {
      out += alphabet[uniform(0, alphabet.size() - 1)];
    }
    return out;
  };
  for (int iteration = 0; iteration < 300; ++iteration) {
    SCOPED_TRACE(iteration);
    pb::RunResult result;
    result.set_operation(static_cast<pb::Operation>(uniform(1, 6)));
    result.set_image(text(3000));
    result.set_runtime_version(text(500));
    const bool failed = uniform(0, 1) == 1;
    if (failed) {
      result.set_exit_code(static_cast<std::int32_t>(uniform(1, 255)));
      pb::RunError& error = *result.mutable_error();
      error.set_kind(static_cast<pb::ErrorKind>(uniform(1, 5)));
      error.set_step(static_cast<pb::Step>(uniform(1, 11)));
      error.set_summary(text(5000));
      error.set_tail(text(70000));
    } else {
      result.mutable_succeeded();
    }
    for (std::uint64_t i = uniform(0, 200); i > 0; --i) {
      pb::StepResult& step = *result.add_steps();
      step.set_step(static_cast<pb::Step>(uniform(1, 11)));
      step.set_exit_code(static_cast<std::int32_t>(uniform(0, 3)));
      step.mutable_duration()->set_seconds(
          static_cast<std::int64_t>(uniform(0, 1'000'000'000'000)));
    }
    if (uniform(0, 1) == 1) {
      pb::PlanSummary& plan = *result.mutable_plan();
      plan.set_plan_hash("p1:" + std::string(64, 'f'));
      plan.set_add(static_cast<std::uint32_t>(uniform(0, 1'000'000)));
      plan.set_destroy(static_cast<std::uint32_t>(uniform(0, 1'000'000)));
      for (std::uint64_t i = uniform(0, 400); i > 0; --i) {
        plan.add_resources(text(1000) + "x");
      }
    }
    if (uniform(0, 1) == 1) {
      pb::DriftSummary& drift = *result.mutable_drift();
      drift.set_change(static_cast<std::uint32_t>(uniform(0, 1'000'000)));
      for (std::uint64_t i = uniform(0, 400); i > 0; --i) {
        drift.add_resources(text(1000) + "x");
      }
    }
    if (uniform(0, 1) == 1) {
      result.mutable_changes()->set_add(static_cast<std::uint32_t>(uniform(0, 100)));
    }
    result.mutable_started_at()->set_seconds(
        static_cast<std::int64_t>(uniform(0, 400'000'000'000)));
    result.mutable_started_at()->set_nanos(static_cast<std::int32_t>(uniform(0, 1'999'999'999)));

    const std::string encoded = encodeResult(result);
    ASSERT_LE(encoded.size(), kMaxResultBytes);
    const auto back = decodeResult(encoded);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->operation(), result.operation());
    EXPECT_EQ(back->exit_code(), result.exit_code());
    EXPECT_EQ(back->outcome_case(), result.outcome_case());
    if (failed) {
      EXPECT_EQ(back->error().kind(), result.error().kind());
      EXPECT_EQ(back->error().step(), result.error().step());
    }
    EXPECT_EQ(back->plan().plan_hash(), result.plan().plan_hash());
    EXPECT_EQ(back->plan().add(), result.plan().add());
    EXPECT_EQ(back->plan().destroy(), result.plan().destroy());
    EXPECT_EQ(back->drift().change(), result.drift().change());
    if (back->plan().resources_size() < result.plan().resources_size()) {
      EXPECT_TRUE(back->plan().truncated());
    }
  }
}

TEST(DecodeResultTest, RejectsEmptyAndOversizedInput) {
  EXPECT_NE(decodeResult("").status().message().find("empty"), std::string::npos);
  EXPECT_NE(decodeResult(" \n\t").status().message().find("empty"), std::string::npos);
  const std::string big =
      R"({"operation":"OPERATION_APPLY","succeeded":{},"image":")" + std::string(4100, 'x') + "\"}";
  const auto status = decodeResult(big).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("4096"), std::string::npos) << status;
}

TEST(DecodeResultTest, ReportsTheByteOffsetOfSyntaxErrors) {
  const auto status = decodeResult(R"({"operation": "OPERATION_APPLY",, })").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  // nlohmann counts bytes read: the second ',' is the 33rd byte.
  EXPECT_NE(status.message().find("at byte 33"), std::string::npos) << status;
  // A truncated message, as a kubelet cut would leave it.
  EXPECT_NE(decodeResult(R"({"operation": "OPERA)").status().message().find("invalid JSON"),
            std::string::npos);
}

// A result document carries error text and, for the outputs, values of
// the module; what is wrong with one reaches conditions, Events and the run
// history, so the error names the place and the kind, never the content.
TEST(DecodeResultTest, ErrorsNeverQuoteTheDocument) {
  const std::string secret = "CANARY-7f3a9c2e5b10d4";
  const std::string open = R"({"operation":"OPERATION_APPLY","error":{"summary":")" + secret;
  for (const std::string& text : {
           open,                                  // cut inside a string, as a kubelet cut does
           open + R"(\q"}})",                     // a forbidden escape
           open + "\x01\"}}",                     // a raw control character
           R"({"exitCode":")" + secret + R"("})", // the wrong type
           R"({"exitCode":)" + secret + "}",      // not a literal
           R"({"startedAt":")" + secret + R"("})",
           R"({"plan":{"add":")" + secret + R"("}})",
           R"({"steps":[{"step":")" + secret + R"(","exitCode":")" + secret + R"("}]})",
       }) {
    const auto status = decodeResult(text).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
    testing::expectNoSecret(std::string(status.message()), secret);
  }
}

TEST(DecodeResultTest, RejectsWrongShapes) {
  for (const char* text :
       {R"([1])", R"("apply")", R"({"exitCode": "one"})", R"({"steps": {"step": "STEP_INIT"}})",
        R"({"plan": {"add": -1}})", R"({"operation": 3.5})", R"({"startedAt": "yesterday"})"}) {
    const auto status = decodeResult(text).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(std::string(status.message()).rfind("result document", 0), 0U) << status;
  }
}

TEST(DecodeResultTest, IgnoresUnknownFieldsFromNewerRunners) {
  const pb::RunResult result =
      decoded(R"({"operation":"OPERATION_DESTROY","succeeded":{"future":1},"newTopLevel":[1,2]})");
  EXPECT_EQ(result.operation(), pb::OPERATION_DESTROY);
}

TEST(DecodeResultTest, AcceptsTheProtoFieldNamesToo) {
  EXPECT_EQ(decoded(R"({"operation":"OPERATION_APPLY","exit_code":2,
                       "error":{"kind":"ERROR_KIND_STEP","step":"STEP_PLAN"}})")
                .exit_code(),
            2);
}

TEST(DecodeResultTest, EnforcesTheContract) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"succeeded":{}})", "operation is missing"},
      {R"({"operation":"OPERATION_FROM_THE_FUTURE","succeeded":{}})", "operation is missing"},
      {R"({"operation":"OPERATION_APPLY"})", "neither succeeded nor error"},
      {R"({"operation":"OPERATION_APPLY","exitCode":1,"succeeded":{}})",
       "a successful run has exit code 1"},
      {R"({"operation":"OPERATION_APPLY","error":{"kind":"ERROR_KIND_BLOCKED"}})",
       "a failed run has exit code 0"},
      {R"({"operation":"OPERATION_APPLY","exitCode":1,"error":{"summary":"x"}})",
       "error.kind is missing"},
      {R"({"operation":"OPERATION_APPLY","exitCode":1,"error":{"kind":"ERROR_KIND_STEP"}})",
       "a step error does not name its step"},
      {R"({"operation":"OPERATION_APPLY","succeeded":{},"steps":[{"exitCode":0}]})",
       "steps[0] does not name a known step"},
      {R"({"operation":"OPERATION_APPLY","exitCode":1,"error":{"kind":"ERROR_KIND_INTERRUPTED",
          "summary":")" +
           std::string(513, 's') + R"("}})",
       "error.summary is 513 bytes"},
      {R"({"operation":"OPERATION_PLAN","succeeded":{},"plan":{"resources":[""]}})",
       "a plan resource is 0 bytes"},
  };
  for (const auto& [text, expected] : cases) {
    const auto status = decodeResult(text).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.message().find(expected), std::string::npos)
        << "want \"" << expected << "\" in: " << status;
  }
  std::string many_steps = R"({"operation":"OPERATION_APPLY","succeeded":{},"steps":[)";
  for (int i = 0; i < 17; ++i) {
    many_steps += std::string(i == 0 ? "" : ",") + R"({"step":"STEP_INIT"})";
  }
  many_steps += "]}";
  EXPECT_NE(decodeResult(many_steps).status().message().find("17 steps"), std::string::npos);
}

// What the CRD would refuse in status (found by workspace_result_fuzz):
// proto3 enums are open, so a number outside an enum parses and would reach
// status.lastRun as an empty name; a plan hash is copied as it is.
TEST(DecodeResultTest, RejectsWhatStatusCannotHold) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"operation":99,"succeeded":{}})", "operation is missing or unknown"},
      {R"({"operation":"OPERATION_APPLY","succeeded":{},"steps":[{"step":99}]})",
       "steps[0] does not name a known step"},
      {R"({"operation":"OPERATION_APPLY","exitCode":1,"error":{"kind":77}})",
       "error.kind is missing or unknown"},
      {R"({"operation":"OPERATION_APPLY","exitCode":1,"error":{"kind":"ERROR_KIND_STEP","step":42}})",
       "error.step is unknown"},
      // Not an enum, also found by the fuzzer: status.plan.planHash is
      // copied as it is, and the CRD caps it at 128.
      {R"({"operation":"OPERATION_PLAN","succeeded":{},"plan":{"planHash":")" +
           std::string(129, 'h') + R"("}})",
       "plan.planHash is 129 bytes, over 128"},
  };
  for (const auto& [text, expected] : cases) {
    const auto status = decodeResult(text).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.message().find(expected), std::string::npos)
        << "want \"" << expected << "\" in: " << status;
  }
}

} // namespace
} // namespace captf::contract
