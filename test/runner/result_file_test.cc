#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "contract/result.h"
#include "runner/result_file.h"
#include "test/runner/testing.h"

namespace captf::runner {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using ::captf::runner::testing::readText;
using ::captf::runner::testing::TempDir;
using json = nlohmann::json;

pb::RunResult hugeFailure() {
  pb::RunResult result;
  result.set_operation(pb::OPERATION_APPLY);
  result.set_image(std::string(3000, 'i'));
  result.set_runtime_version("1.12.6");
  result.set_exit_code(1);
  pb::RunError* error = result.mutable_error();
  error->set_kind(pb::ERROR_KIND_STEP);
  error->set_step(pb::STEP_APPLY);
  error->set_summary(std::string(5000, 's'));
  error->set_tail(std::string(100000, 't'));
  for (int i = 0; i < 40; ++i) {
    pb::StepResult* step = result.add_steps();
    step->set_step(pb::STEP_PLAN);
    step->set_exit_code(2);
  }
  pb::PlanSummary* plan = result.mutable_plan();
  plan->set_plan_hash("p1:abc");
  plan->set_add(500);
  for (int i = 0; i < 500; ++i) {
    plan->add_resources("module.role.terraform_data.resource_with_a_long_name[" +
                        std::to_string(i) + "] (create)");
  }
  return result;
}

OutputsReport bigOutputs() {
  OutputsReport report;
  report.state = OutputsState::kValid;
  for (int i = 0; i < 300; ++i) {
    report.values["instances"].push_back({{"provider_id", "noop://instance-" + std::to_string(i)}});
  }
  return report;
}

TEST(ResultFileTest, AlwaysFitsAndDecodes) {
  for (const bool with_outputs : {false, true}) {
    std::optional<OutputsReport> outputs;
    if (with_outputs) {
      outputs = bigOutputs();
    }
    const std::string document = encodeResultDocument(hugeFailure(), outputs);
    EXPECT_LE(document.size(), contract::kMaxResultBytes);
    auto decoded = contract::decodeResult(document);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->error().kind(), pb::ERROR_KIND_STEP);
    EXPECT_EQ(decoded->plan().plan_hash(), "p1:abc");
    EXPECT_EQ(decoded->plan().add(), 500U);
  }
}

TEST(ResultFileTest, OutputsTakeOnlyTheSpaceLeft) {
  pb::RunResult result;
  result.set_operation(pb::OPERATION_APPLY);
  result.mutable_succeeded();
  OutputsReport small;
  small.state = OutputsState::kValid;
  small.values["provider_id"] = "noop://m1";
  json document = json::parse(encodeResultDocument(result, small));
  EXPECT_EQ(document["outputs"]["state"], "valid");
  EXPECT_EQ(document["outputs"]["values"]["provider_id"], "noop://m1");

  // Too big for values: the lists and the state stay.
  OutputsReport big = bigOutputs();
  big.pending = {"replicas"};
  document = json::parse(encodeResultDocument(result, big));
  EXPECT_FALSE(document["outputs"].contains("values"));
  EXPECT_EQ(document["outputs"]["pending"], json({"replicas"}));

  // A result that fills the document leaves no room at all; the contract's
  // fields win.
  pb::RunResult full;
  full.set_operation(pb::OPERATION_PLAN);
  full.mutable_succeeded();
  pb::PlanSummary* plan = full.mutable_plan();
  plan->set_plan_hash("p1:abc");
  while (contract::encodeResult(full).size() < 3900) {
    plan->add_resources(std::string(90, 'r') + " (create)");
  }
  const std::size_t short_by = 4090 - contract::encodeResult(full).size();
  plan->mutable_resources(0)->insert(0, std::string(short_by, 'r'));
  const std::string encoded = contract::encodeResult(full);
  ASSERT_EQ(encoded.size(), 4090U);
  EXPECT_EQ(encodeResultDocument(full, small), encoded);
}

TEST(ResultFileTest, WritesTheDocument) {
  TempDir dir;
  const std::string path = dir / "termination-log";
  testing::writeText(path, std::string(5000, 'x'));
  ASSERT_TRUE(writeResultDocument(path, R"({"operation":"OPERATION_APPLY"})").ok());
  EXPECT_EQ(readText(path), R"({"operation":"OPERATION_APPLY"})");
  EXPECT_FALSE(writeResultDocument(dir / "missing/dir/file", "{}").ok());
}

} // namespace
} // namespace captf::runner
