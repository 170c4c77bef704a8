#include <string>

#include <gtest/gtest.h>

#include "contract/json_adapter.h"
#include "contract/render.h"
#include "test/contract/fixtures.h"
#include "test/contract/test_util.h"

namespace captf::contract {
namespace {

using nlohmann::json;
using testing::clusterRequest;
using testing::expectGolden;
using testing::machinePoolRequest;
using testing::machineRequest;

RenderedRoot render(const RenderRequest& request) {
  auto root = renderRoot(request);
  EXPECT_TRUE(root.ok()) << root.status();
  return root.ok() ? *root : RenderedRoot{};
}

json parsed(const std::string& text) {
  auto value = parseJson(text, "test");
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? *value : json();
}

TEST(RenderTest, GoldenCluster) {
  const RenderedRoot root = render(clusterRequest());
  expectGolden("cluster.main.tf.json", root.main_tf_json);
  expectGolden("cluster.terraform.tfvars.json", root.tfvars_json);
}

TEST(RenderTest, GoldenMachine) {
  const RenderedRoot root = render(machineRequest());
  expectGolden("machine.main.tf.json", root.main_tf_json);
  expectGolden("machine.terraform.tfvars.json", root.tfvars_json);
}

TEST(RenderTest, GoldenMachinePool) {
  const RenderedRoot root = render(machinePoolRequest());
  expectGolden("machinepool.main.tf.json", root.main_tf_json);
  expectGolden("machinepool.terraform.tfvars.json", root.tfvars_json);
}

TEST(RenderTest, GoldenRestore) {
  expectGolden("restore.main.tf.json", renderRestoreRoot());
}

TEST(RenderTest, RootHasPartialBackendModuleCallAndSensitiveOutputs) {
  for (const RenderRequest& request : {clusterRequest(), machineRequest(), machinePoolRequest()}) {
    const RoleSpec& spec = roleSpec(request.role);
    SCOPED_TRACE(spec.name);
    const json main = parsed(render(request).main_tf_json);
    EXPECT_EQ(main.at("terraform"), json::parse(R"({"backend": {"kubernetes": {}}})"));
    const json& module = main.at("module").at("role");
    EXPECT_EQ(module.at("source"), "../../module");
    // Every variable is forwarded by name, and nothing else is passed.
    EXPECT_EQ(module.size(), main.at("variable").size() + 1);
    for (const auto& [name, variable] : main.at("variable").items()) {
      EXPECT_EQ(module.at(name), "${var." + name + "}");
    }
    for (const InputSpec& input_spec : spec.inputs) {
      const json& variable = main.at("variable").at(std::string(input_spec.name));
      EXPECT_EQ(variable.at("type"), terraformType(*input_spec.declared_type));
      EXPECT_EQ(variable.contains("default"),
                input_spec.value_type->nullability == Nullability::kNullable);
      EXPECT_EQ(variable.value("sensitive", false), input_spec.name == input::kBootstrapData);
    }
    ASSERT_EQ(main.at("output").size(), spec.outputs.size());
    for (const OutputSpec& output_spec : spec.outputs) {
      const std::string name(output_spec.name);
      EXPECT_EQ(main.at("output").at(name),
                json({{"value", "${module.role." + name + "}"}, {"sensitive", true}}));
    }
  }
}

TEST(RenderTest, ClusterRootNeverDeclaresClusterOutputs) {
  const RenderedRoot root = render(clusterRequest());
  EXPECT_EQ(root.main_tf_json.find("captf_cluster_outputs"), std::string::npos);
  EXPECT_EQ(root.tfvars_json.find("captf_cluster_outputs"), std::string::npos);
}

TEST(RenderTest, UserVariablesAreUntypedAndSensitiveOnlyFromSecrets) {
  const json main = parsed(render(clusterRequest()).main_tf_json);
  EXPECT_EQ(main.at("variable").at("region"), json::object());
  EXPECT_EQ(main.at("variable").at("api_token"), json({{"sensitive", true}}));
  const json tfvars = parsed(render(clusterRequest()).tfvars_json);
  EXPECT_EQ(tfvars.at("region"), "eu-west-1");
  EXPECT_EQ(tfvars.at("api_token"), "s3cr3t");
  const json pool_tfvars = parsed(render(machinePoolRequest()).tfvars_json);
  EXPECT_EQ(pool_tfvars.at("instance_type"), json::parse(R"({"size":"m5.large","spot":true})"));
}

TEST(RenderTest, TfvarsHoldExactlyTheInputsAndVariables) {
  const RenderRequest request = machineRequest();
  EXPECT_EQ(parsed(render(request).tfvars_json), request.inputs);
}

TEST(RenderTest, PreservesBytesWithoutHtmlEscaping) {
  const RenderedRoot root = render(machineRequest());
  EXPECT_NE(root.tfvars_json.find("\"a<b&c\""), std::string::npos) << root.tfvars_json;
}

TEST(RenderTest, IsDeterministic) {
  EXPECT_EQ(render(machinePoolRequest()).main_tf_json, render(machinePoolRequest()).main_tf_json);
  RenderRequest reordered = clusterRequest();
  std::swap(reordered.variables[0], reordered.variables[1]);
  EXPECT_EQ(render(reordered).main_tf_json, render(clusterRequest()).main_tf_json);
  EXPECT_EQ(render(reordered).tfvars_json, render(clusterRequest()).tfvars_json);
}

TEST(RenderTest, RejectsBadVariables) {
  RenderRequest request = machineRequest();
  request.variables = {{.name = "machine_name", .value = "x"},
                       {.name = "count", .value = 1},
                       {.name = "ok", .value = 1},
                       {.name = "ok", .value = 2},
                       {.name = "ratio", .value = 0.25},
                       {.name = "captf_x", .value = "secret-value"}};
  const auto root = renderRoot(request);
  ASSERT_EQ(root.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(root.status().message());
  for (const char* expected : {"\"machine_name\" is a contract input", "\"count\" is a module",
                               "\"ok\" is set more than once", "variable \"ratio\"",
                               "\"captf_x\" uses the reserved prefix"}) {
    EXPECT_NE(message.find(expected), std::string::npos) << expected << "\nin: " << message;
  }
  EXPECT_EQ(message.find("secret-value"), std::string::npos) << "values are never echoed";
}

TEST(RenderTest, RejectsInvalidInputs) {
  RenderRequest request = machineRequest();
  request.inputs.erase("control_plane");
  EXPECT_EQ(renderRoot(request).status().code(), absl::StatusCode::kInvalidArgument);
  request = machineRequest();
  request.inputs["machine_name"] = std::string("\xC3\x28");
  EXPECT_EQ(renderRoot(request).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RenderTest, SizeCapNamesTheSize) {
  RenderRequest request = machineRequest();
  const std::size_t base = render(request).totalBytes();
  // Fill the exports until the two files are exactly at the cap.
  const std::size_t room = kMaxRenderedBytes - base;
  const std::string filler_key = "filler";
  // "filler":"<x>", adds key, quotes, colon and comma: 12 bytes plus the value.
  request.inputs["captf_cluster_outputs"][filler_key] = std::string(room - 12, 'x');
  const auto at_cap = renderRoot(request);
  ASSERT_TRUE(at_cap.ok()) << at_cap.status();
  EXPECT_EQ(at_cap->totalBytes(), kMaxRenderedBytes);

  request.inputs["captf_cluster_outputs"][filler_key] = std::string(room - 11, 'x');
  const auto over = renderRoot(request);
  ASSERT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("1000001 bytes, over the limit of 1000000 bytes"),
            std::string::npos)
      << over.status();
  EXPECT_EQ(renderedBytesOverLimit(over.status()), std::optional<std::size_t>(1000001));
  EXPECT_EQ(renderedBytesOverLimit(absl::InvalidArgumentError("x")), std::nullopt);
  EXPECT_EQ(renderedBytesOverLimit(absl::ResourceExhaustedError("x")), std::nullopt);
}

TEST(RenderTest, RestoreRootIsBackendOnly) {
  EXPECT_EQ(parsed(renderRestoreRoot()),
            json::parse(R"({"terraform":{"backend":{"kubernetes":{}}}})"));
}

} // namespace
} // namespace captf::contract
