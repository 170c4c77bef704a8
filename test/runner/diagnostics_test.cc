#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "contract/result.h"
#include "runner/diagnostics.h"
#include "runner/redact.h"
#include "test/runner/testing.h"

namespace captf::runner {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using ::captf::runner::testing::testdata;
using ::testing::HasSubstr;
using ::testing::Not;

class RuntimeDiagnosticsTest : public ::testing::TestWithParam<std::string> {};

// Real stderr of `plan` on a module with two errors, from both runtimes,
// with and without colour (testdata/generate.sh).
TEST_P(RuntimeDiagnosticsTest, SummaryComesFromErrorHeaders) {
  for (const std::string file : {"plan-error.nocolor.stderr", "plan-error.color.stderr"}) {
    const std::string stderr_text = testdata(GetParam() + "/" + file);
    ASSERT_FALSE(stderr_text.empty());
    const DiagnosticText text = diagnosticsFromStderr(stderr_text);
    EXPECT_EQ(text.summary, "Reference to undeclared input variable (main.tf line 1); "
                            "Reference to undeclared local value (main.tf line 2)")
        << GetParam() << "/" << file;
    EXPECT_THAT(text.tail, HasSubstr("Error: Reference to undeclared input variable\n"));
    EXPECT_THAT(text.tail, HasSubstr("has not been declared"));
    EXPECT_THAT(text.tail, Not(HasSubstr("\x1b[")));
    EXPECT_THAT(text.tail, Not(HasSubstr("\xE2\x94\x82")));
  }
}

TEST_P(RuntimeDiagnosticsTest, ValidateSummaryComesFromJsonDiagnostics) {
  const DiagnosticText text =
      diagnosticsFromValidateJson(testdata(GetParam() + "/validate-error.json"));
  EXPECT_EQ(text.summary, "Reference to undeclared input variable (main.tf line 1); "
                          "Reference to undeclared local value (main.tf line 2)");
  EXPECT_THAT(text.tail, HasSubstr("A local value with the name \"nope\" has not been declared."));
}

TEST_P(RuntimeDiagnosticsTest, ApplySummaryLineGivesTheCounts) {
  const std::string stdout_text = testdata(GetParam() + "/apply-create.stdout");
  std::optional<pb::ResourceChanges> found;
  std::size_t start = 0;
  while (start < stdout_text.size()) {
    const auto end = std::min(stdout_text.find('\n', start), stdout_text.size());
    if (auto changes = parseChangeSummary(stdout_text.substr(start, end - start))) {
      found = changes;
    }
    start = end + 1;
  }
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->add(), 7U);
  EXPECT_EQ(found->change(), 0U);
  EXPECT_EQ(found->destroy(), 0U);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, RuntimeDiagnosticsTest, ::testing::Values("tofu", "terraform"));

TEST(DiagnosticsTest, ChangeSummaryForms) {
  auto changes =
      parseChangeSummary("Apply complete! Resources: 1 imported, 2 added, 3 changed, 4 destroyed.");
  ASSERT_TRUE(changes.has_value());
  EXPECT_EQ(changes->import(), 1U);
  EXPECT_EQ(changes->add(), 2U);
  EXPECT_EQ(changes->change(), 3U);
  EXPECT_EQ(changes->destroy(), 4U);
  changes = parseChangeSummary("Destroy complete! Resources: 5 destroyed.");
  ASSERT_TRUE(changes.has_value());
  EXPECT_EQ(changes->destroy(), 5U);
  EXPECT_FALSE(parseChangeSummary("terraform_data.x: Creation complete after 0s").has_value());
  EXPECT_FALSE(parseChangeSummary("Apply complete! Resources: lots added.").has_value());
  EXPECT_FALSE(parseChangeSummary("Plan: 1 to add, 0 to change, 0 to destroy.").has_value());
}

TEST(DiagnosticsTest, NoErrorHeaderMeansEmptySummary) {
  // Terraform's force-unlock failure has no "Error:" header.
  const DiagnosticText text =
      diagnosticsFromStderr("\x1b[31mFailed to unlock state: lock id mismatch\x1b[0m\x1b[0m\n");
  EXPECT_EQ(text.summary, "");
  EXPECT_EQ(stripTerminalDecoration("\x1b[31mFailed\x1b[0m"), "Failed\n");
  EXPECT_EQ(diagnosticsFromValidateJson("not json").summary, "");
  EXPECT_EQ(diagnosticsFromValidateJson(R"({"valid":true,"diagnostics":[]})").summary, "");
}

TEST(DiagnosticsTest, WarningsDoNotEndUpInTheSummary) {
  const DiagnosticText text = diagnosticsFromStderr(
      "Warning: Deprecated attribute\n\n  on main.tf line 4:\n\nUse x.\n\n"
      "Error: Invalid count argument\n\n  on modules/a/main.tf line 12, in resource \"x\" \"y\":\n"
      "  12:   count = local.n\n\nThe count value depends on resource attributes.\n");
  EXPECT_EQ(text.summary, "Invalid count argument (modules/a/main.tf line 12)");
  EXPECT_THAT(text.tail, Not(HasSubstr("Deprecated")));
}

TEST(DiagnosticsTest, FallbackWhenNothingWasFound) {
  const Failure failure = stepFailure(pb::STEP_INIT, 3, DiagnosticText{}, Redactor());
  EXPECT_EQ(failure.summary, "step init exited 3; see the Job's logs");
  EXPECT_EQ(failure.tail, "");
}

TEST(DiagnosticsTest, SummaryIsCappedAfterRedaction) {
  Redactor redactor;
  const std::string secret = "s3cr3t-value-that-is-long";
  redactor.addSecret(secret);
  DiagnosticText text;
  // The secret straddles byte 512: clipping first would leave its prefix.
  text.summary = std::string(500, 'a') + secret + std::string(600, 'b');
  text.tail = "Error: x\n" + secret + "\n" + std::string(10000, 'c');
  const Failure failure = stepFailure(pb::STEP_APPLY, 1, text, redactor);
  EXPECT_LE(failure.summary.size(), contract::kMaxSummaryBytes);
  EXPECT_THAT(failure.summary, Not(HasSubstr("s3cr")));
  EXPECT_LE(failure.tail.size(), contract::kMaxTailBytes);
  EXPECT_THAT(failure.tail, Not(HasSubstr(secret)));
  EXPECT_THAT(failure.tail, HasSubstr("[redacted]"));
}

TEST(RedactorTest, ReplacesEverySecretLongestFirst) {
  Redactor redactor;
  redactor.addSecret("abcd");
  redactor.addSecret("abcdefgh");
  redactor.addSecret("xyz"); // too short: never redacted
  redactor.addSecret("abcd");
  EXPECT_EQ(redactor.secretCount(), 2U);
  EXPECT_EQ(redactor.redact("1 abcdefgh 2 abcd 3 xyz abcdabcd"),
            "1 [redacted] 2 [redacted] 3 xyz [redacted][redacted]");
}

TEST(RedactorTest, MultiLineSecretsAreRedactedLineByLine) {
  Redactor redactor;
  redactor.addSecret(
      "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nshort\n-----END KEY-----\n");
  EXPECT_EQ(redactor.redact("got MIIEvQIBADANBgkqhkiG9w0BAQEFAASC here"), "got [redacted] here");
  EXPECT_EQ(redactor.redact("short"), "short");
}

} // namespace
} // namespace captf::runner
