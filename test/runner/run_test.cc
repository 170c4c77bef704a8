#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "contract/inputs.h"
#include "contract/json_adapter.h"
#include "contract/plan.h"
#include "contract/render.h"
#include "contract/result.h"
#include "runner/result_file.h"
#include "runner/run.h"
#include "test/contract/git_repo.h"
#include "test/runner/testing.h"

namespace captf::runner {
namespace {

namespace pb = ::captf::runner::v1alpha1;
using ::captf::runner::testing::CapturedLog;
using ::captf::runner::testing::FakeClock;
using ::captf::runner::testing::FakeProcessRunner;
using ::captf::runner::testing::FakeResponse;
using ::captf::runner::testing::FakeStopSource;
using ::captf::runner::testing::gzip;
using ::captf::runner::testing::readText;
using ::captf::runner::testing::RecordingLogWriter;
using ::captf::runner::testing::TempDir;
using ::captf::runner::testing::testdata;
using ::captf::runner::testing::writeText;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kBootstrapSecret[] = "#cloud-config\nssh_authorized_keys: [bootstrap-secret-key]\n";
constexpr char kPasswordSecret[] = "hunter2-very-secret";
constexpr char kCredentialSecret[] = "AKIA-CREDENTIAL-SECRET-123";
constexpr char kInputsHash[] =
    "h2:1111111111111111111111111111111111111111111111111111111111111111";

contract::CommonInputs common(std::string name) {
  return contract::CommonInputs{.cluster_name = "c1",
                                .cluster_namespace = "ns1",
                                .object_name = std::move(name),
                                .object_namespace = "ns1",
                                .template_name = ""};
}

std::vector<std::string> stepNames(const pb::RunResult& result) {
  std::vector<std::string> out;
  for (const pb::StepResult& step : result.steps()) {
    out.emplace_back(contract::stepName(step.step()));
  }
  return out;
}

class RunTest : public ::testing::Test {
protected:
  void SetUp() override {
    writeText(dir_ / "module/main.tf", "# a module\n");
    writeText(dir_ / "runtime", "not really a runtime\n", 0755);
    std::filesystem::create_directories(dir_ / "work");
    writeText(dir_ / "creds/AWS_SECRET_ACCESS_KEY", kCredentialSecret);
    env_ = {{"AWS_SECRET_ACCESS_KEY", kCredentialSecret},
            {"TF_IN_AUTOMATION", "1"},
            {"TF_LOG", "DEBUG"},
            {"KUBE_CONFIG_PATH", "/x"},
            {"HOME", "/root"},
            {"TMPDIR", dir_ / "tmp"}};
    options_.operation = pb::OPERATION_APPLY;
    options_.bin = {dir_ / "runtime"};
    options_.module = dir_ / "module";
    options_.providers = dir_ / "providers";
    options_.workdir = dir_ / "work";
    options_.config = dir_ / "config";
    options_.image = "registry.example/noop:v1";
    options_.backend_config = {"secret_suffix=0123456789abcdef-m", "namespace=ns1",
                               "in_cluster_config=true"};
    options_.lock_timeout = absl::Seconds(300);
    renderMachine();
  }

  void writeRoot(contract::RenderRequest request) {
    request.module_source = module_source_;
    auto root = contract::renderRoot(request);
    ASSERT_TRUE(root.ok()) << root.status();
    writeText(dir_ / "config/main.tf.json", root->main_tf_json);
    writeText(dir_ / "config/terraform.tfvars.json", root->tfvars_json);
  }

  void renderMachine() {
    contract::MachineInputs inputs;
    inputs.common = common("m1");
    inputs.machine_name = "m1";
    inputs.bootstrap.value = kBootstrapSecret;
    writeRoot(contract::RenderRequest{
        .role = contract::Role::kMachine,
        .inputs = contract::toInputsJson(inputs),
        .variables = {contract::UserVariable{.name = "db_password",
                                             .value = kPasswordSecret,
                                             .sensitivity = contract::Sensitivity::kSensitive}}});
  }

  void renderCluster() {
    contract::ClusterInputs inputs;
    inputs.common = common("c1");
    writeRoot(contract::RenderRequest{.role = contract::Role::kCluster,
                                      .inputs = contract::toInputsJson(inputs),
                                      .variables = {}});
    options_.operation = pb::OPERATION_APPLY;
    options_.guard_deletes = true;
    options_.inputs_hash = kInputsHash;
  }

  // plan exits 2 and show -json prints the fixture.
  void planShows(const std::string& fixture) {
    runner_.on("plan", FakeResponse{.exit_code = 2, .stdout_text = "Plan: changes\n"});
    runner_.on("show", FakeResponse{.stdout_text = testdata(fixture)});
  }

  RunOutcome execute() {
    RunContext context{.processes = runner_,
                       .stop = stop_,
                       .clock = clock_,
                       .runtime_output = output_,
                       .log = log_.log,
                       .container_env = env_,
                       .credentials_dir = dir_ / "creds"};
    RunOutcome outcome = executeRun(options_, context);
    // Every outcome must make a valid termination message.
    const std::string document = encodeResultDocument(outcome.result, outcome.outputs);
    EXPECT_LE(document.size(), contract::kMaxResultBytes);
    auto decoded = contract::decodeResult(document);
    EXPECT_TRUE(decoded.ok()) << decoded.status() << "\n" << document;
    return outcome;
  }

  std::vector<std::string> argsOf(const std::string& command) {
    const ProcessSpec* spec = runner_.call(command);
    return spec == nullptr ? std::vector<std::string>{} : spec->args;
  }

  // Everything that left the runner: the pod log and the result.
  std::string everythingWritten(const RunOutcome& outcome) {
    return output_.all() + log_.stream.str() +
           encodeResultDocument(outcome.result, outcome.outputs) + outcome.result.error().tail();
  }

  TempDir dir_;
  // The root's module call; "" for kModuleSource.
  std::string module_source_;
  RunOptions options_;
  FakeProcessRunner runner_;
  FakeStopSource stop_;
  FakeClock clock_;
  RecordingLogWriter output_;
  CapturedLog log_;
  Environment env_;
};

TEST_F(RunTest, MachineApplyRunsInitValidateApplyInTheGeneratedRoot) {
  runner_.on("apply", FakeResponse{.stdout_text = testdata("tofu/apply-create.stdout")});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0);
  ASSERT_TRUE(outcome.result.has_succeeded()) << outcome.result.DebugString();
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init", "validate", "apply", "output"));
  EXPECT_THAT(argsOf("init"), ElementsAre("init", "-input=false", "-no-color", "-lock-timeout=300s",
                                          "-backend-config=secret_suffix=0123456789abcdef-m",
                                          "-backend-config=namespace=ns1",
                                          "-backend-config=in_cluster_config=true"));
  EXPECT_THAT(argsOf("validate"), ElementsAre("validate", "-json", "-no-color"));
  EXPECT_THAT(argsOf("apply"),
              ElementsAre("apply", "-input=false", "-no-color", "-lock-timeout=300s",
                          "-auto-approve", "-var-file=terraform.tfvars.json"));
  EXPECT_THAT(stepNames(outcome.result), ElementsAre("prepare", "init", "validate", "apply"));
  EXPECT_EQ(outcome.result.runtime_version(), "1.12.6");
  EXPECT_EQ(outcome.result.image(), "registry.example/noop:v1");
  EXPECT_EQ(outcome.result.changes().add(), 7U);

  const ProcessSpec& init = *runner_.call("init");
  EXPECT_EQ(init.path, dir_ / "runtime");
  EXPECT_EQ(init.cwd, dir_ / "work/root");
  EXPECT_THAT(init.env, Contains("HOME=" + (dir_ / "work")));
  EXPECT_THAT(init.env, Contains("TF_DATA_DIR=" + (dir_ / "work/.terraform")));
  EXPECT_THAT(init.env, Contains("TF_IN_AUTOMATION=1"));
  EXPECT_THAT(init.env, Not(Contains("TF_LOG=DEBUG")));
  EXPECT_THAT(init.env, Not(Contains("KUBE_CONFIG_PATH=/x")));
  EXPECT_THAT(log_.stream.str(), HasSubstr("\"environment variable dropped\" name=\"TF_LOG\""));
  EXPECT_THAT(log_.stream.str(), Not(HasSubstr("DEBUG")));

  EXPECT_EQ(readText(dir_ / "work/root/main.tf.json"), readText(dir_ / "config/main.tf.json"));
  EXPECT_EQ(readText(dir_ / "work/root/terraform.tfvars.json"),
            readText(dir_ / "config/terraform.tfvars.json"));
}

TEST_F(RunTest, BinPrefixArgumentsComeFirst) {
  options_.bin = {dir_ / "runtime", "--wrapped"};
  execute();
  std::vector<std::string> init_args;
  for (const ProcessSpec& spec : runner_.calls()) {
    if (spec.args.size() > 1 && spec.args[1] == "init") {
      init_args = spec.args;
    }
  }
  EXPECT_THAT(init_args,
              ElementsAre("--wrapped", "init", "-input=false", "-no-color", "-lock-timeout=300s",
                          "-backend-config=secret_suffix=0123456789abcdef-m",
                          "-backend-config=namespace=ns1",
                          "-backend-config=in_cluster_config=true"));
}

class GuardTest : public RunTest, public ::testing::WithParamInterface<std::string> {};

// Real `show -json` output of a plan that replaces (both orders), deletes,
// updates, creates and imports (testdata/generate.sh).
TEST_P(GuardTest, BlocksDeletesAndReplacementsWithoutApproval) {
  renderCluster();
  planShows(GetParam() + "/mixed-destructive.json");
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  ASSERT_TRUE(outcome.result.has_error());
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_BLOCKED);
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init", "validate", "plan", "show"));
  EXPECT_THAT(outcome.result.plan().resources(),
              ::testing::IsSupersetOf(
                  {"terraform_data.cbd (replace)", "terraform_data.gone (delete)",
                   "terraform_data.replace (replace)", "terraform_data.update (update)"}));
  EXPECT_EQ(outcome.result.plan().destroy(), 3U);
  EXPECT_THAT(outcome.result.error().summary(),
              HasSubstr("3 resource(s) would be deleted or replaced (terraform_data.cbd (replace), "
                        "terraform_data.gone (delete), terraform_data.replace (replace))"));
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr(kInputsHash));
  EXPECT_FALSE(outcome.outputs.has_value());
  // The plan JSON (which carries values) is never logged.
  EXPECT_THAT(output_.all(), Not(HasSubstr("triggers_replace")));
  EXPECT_THAT(argsOf("plan"), ElementsAre("plan", "-input=false", "-no-color", "-lock-timeout=300s",
                                          "-detailed-exitcode", "-var-file=terraform.tfvars.json",
                                          "-out=" + (dir_ / "work/plan.tfplan")));
  EXPECT_THAT(argsOf("show"), ElementsAre("show", "-json", "-no-color", dir_ / "work/plan.tfplan"));
}

TEST_P(GuardTest, ApprovalOfThisInputsHashLetsThePlanApply) {
  renderCluster();
  options_.allow_deletes_hash = kInputsHash;
  planShows(GetParam() + "/mixed-destructive.json");
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0) << outcome.result.DebugString();
  EXPECT_THAT(runner_.commands(),
              ElementsAre("version", "init", "validate", "plan", "show", "apply", "output"));
  EXPECT_THAT(argsOf("apply"), ElementsAre("apply", "-input=false", "-no-color",
                                           "-lock-timeout=300s", dir_ / "work/plan.tfplan"));
  EXPECT_EQ(outcome.result.plan().destroy(), 3U);
}

TEST_P(GuardTest, ApprovalOfAnotherInputsHashDoesNot) {
  renderCluster();
  options_.allow_deletes_hash =
      "h2:2222222222222222222222222222222222222222222222222222222222222222";
  planShows(GetParam() + "/mixed-destructive.json");
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_BLOCKED);
  EXPECT_EQ(runner_.call("apply"), nullptr);
}

TEST_P(GuardTest, PlansThatDeleteNothingApplyWithoutApproval) {
  for (const std::string fixture : {"update-only.json", "create-only.json"}) {
    runner_ = FakeProcessRunner();
    renderCluster();
    planShows(GetParam() + "/" + fixture);
    const RunOutcome outcome = execute();
    EXPECT_EQ(outcome.exit_code, 0) << fixture << ": " << outcome.result.DebugString();
    EXPECT_NE(runner_.call("apply"), nullptr) << fixture;
  }
}

TEST_P(GuardTest, DestroyPlansAreDestructive) {
  renderCluster();
  planShows(GetParam() + "/destroy-all.json");
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_BLOCKED);
  EXPECT_EQ(outcome.result.plan().destroy(), 7U);
}

TEST_P(GuardTest, ExpectPlanComparesThePlanHash) {
  renderCluster();
  options_.guard_deletes = false;
  options_.inputs_hash.clear();
  const std::string fixture = GetParam() + "/update-only.json";
  auto document = contract::parseJson(testdata(fixture), "fixture");
  ASSERT_TRUE(document.ok());
  auto changes = contract::plannedChanges(*document);
  ASSERT_TRUE(changes.ok());
  const std::string hash = contract::planHash(*changes);

  options_.expect_plan = "p1:0000";
  planShows(fixture);
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_PLAN_CHANGED);
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.plan().plan_hash(), hash);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr(hash));
  EXPECT_EQ(runner_.call("apply"), nullptr);

  runner_ = FakeProcessRunner();
  options_.expect_plan = hash;
  planShows(fixture);
  outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0) << outcome.result.DebugString();
  EXPECT_NE(runner_.call("apply"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, GuardTest, ::testing::Values("tofu", "terraform"));

TEST_F(RunTest, GuardedApplyWithAnEmptyPlanSkipsApplyAndSucceeds) {
  renderCluster();
  runner_.on("plan", FakeResponse{.exit_code = 0});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_TRUE(outcome.result.has_succeeded());
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init", "validate", "plan", "output"));
  EXPECT_EQ(outcome.result.plan().plan_hash(), contract::planHash({}));
}

TEST_F(RunTest, PlanOperationReportsThePlanAndAppliesNothing) {
  renderCluster();
  options_.operation = pb::OPERATION_PLAN;
  options_.guard_deletes = false;
  planShows("tofu/mixed-destructive.json");
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init", "validate", "plan", "show"));
  EXPECT_EQ(outcome.result.plan().add(), 4U);
  EXPECT_EQ(outcome.result.plan().change(), 1U);
  EXPECT_EQ(outcome.result.plan().destroy(), 3U);
  EXPECT_EQ(outcome.result.plan().import(), 1U);
  EXPECT_THAT(outcome.result.plan().plan_hash(), ::testing::StartsWith("p1:"));
  EXPECT_FALSE(outcome.outputs.has_value());
}

TEST_F(RunTest, DriftRefreshesThenPlansWithoutRefresh) {
  options_.operation = pb::OPERATION_DRIFT;
  planShows("terraform/update-only.json");
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_THAT(runner_.commands(),
              ElementsAre("version", "init", "apply", "plan", "show", "output"));
  EXPECT_THAT(argsOf("apply"),
              ElementsAre("apply", "-input=false", "-no-color", "-lock-timeout=300s",
                          "-refresh-only", "-auto-approve", "-var-file=terraform.tfvars.json"));
  EXPECT_THAT(argsOf("plan"), Contains("-refresh=false"));
  EXPECT_THAT(stepNames(outcome.result),
              ElementsAre("prepare", "init", "apply-refresh-only", "plan", "show-json"));
  EXPECT_EQ(outcome.result.drift().change(), 1U);
  EXPECT_THAT(outcome.result.drift().resources(), ElementsAre("terraform_data.update"));
}

TEST_F(RunTest, DriftWithoutChangesReportsAnEmptySummary) {
  options_.operation = pb::OPERATION_DRIFT;
  runner_.on("plan", FakeResponse{.exit_code = 0});
  const RunOutcome outcome = execute();
  EXPECT_TRUE(outcome.result.has_drift());
  EXPECT_EQ(outcome.result.drift().change(), 0U);
  EXPECT_EQ(runner_.call("show"), nullptr);
}

TEST_F(RunTest, DestroyAndRefresh) {
  options_.operation = pb::OPERATION_DESTROY;
  runner_.on("destroy", FakeResponse{.stdout_text = "Destroy complete! Resources: 2 destroyed.\n"});
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init", "destroy"));
  EXPECT_THAT(argsOf("destroy"),
              ElementsAre("destroy", "-input=false", "-no-color", "-lock-timeout=300s",
                          "-auto-approve", "-var-file=terraform.tfvars.json"));
  EXPECT_EQ(outcome.result.changes().destroy(), 2U);
  EXPECT_FALSE(outcome.outputs.has_value());

  runner_ = FakeProcessRunner();
  options_.operation = pb::OPERATION_REFRESH;
  outcome = execute();
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init", "apply", "output"));
  EXPECT_THAT(argsOf("apply"), Contains("-refresh-only"));
}

TEST_F(RunTest, OutputsAreReadAndCheckedButNeverLogged) {
  runner_.on("output", FakeResponse{.stdout_text = R"({
    "provider_id": {"sensitive": true, "type": "string", "value": "noop://m1-secretish"},
    "addresses": {"sensitive": true, "type": "dynamic", "value": []},
    "failure_domain": {"sensitive": true, "type": "dynamic", "value": null},
    "interruptible": {"sensitive": true, "type": "bool", "value": false},
    "health": {"sensitive": true, "type": "dynamic",
               "value": {"state": "running", "healthy": true}}})"});
  const RunOutcome outcome = execute();
  ASSERT_TRUE(outcome.outputs.has_value());
  EXPECT_EQ(outcome.outputs->state, OutputsState::kValid);
  EXPECT_EQ(outcome.outputs->values["provider_id"], "noop://m1-secretish");
  EXPECT_THAT(output_.all() + log_.stream.str(), Not(HasSubstr("noop://m1-secretish")));
  EXPECT_THAT(argsOf("output"), ElementsAre("output", "-json"));
}

TEST_F(RunTest, UnreadableOutputsDoNotFailTheRun) {
  runner_.on("output", FakeResponse{.exit_code = 1, .stderr_text = "Error: no state\n"});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0);
  ASSERT_TRUE(outcome.outputs.has_value());
  EXPECT_EQ(outcome.outputs->state, OutputsState::kUnreadable);
}

TEST_F(RunTest, ValidateFailureIsSummarizedFromItsJson) {
  runner_.on("validate", FakeResponse{.exit_code = 1,
                                      .stdout_text = testdata("tofu/validate-error.json"),
                                      .stderr_text = "ignored\n"});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_STEP);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_VALIDATE);
  EXPECT_EQ(outcome.result.error().summary(),
            "Reference to undeclared input variable (main.tf line 1); Reference to undeclared "
            "local value (main.tf line 2)");
  EXPECT_EQ(runner_.call("apply"), nullptr);
  // validate's JSON is both captured and logged.
  EXPECT_THAT(output_.all(), HasSubstr("Reference to undeclared local value"));
}

TEST_F(RunTest, FailingStepKeepsItsExitCodeAndRedactsSecrets) {
  runner_.on(
      "apply",
      FakeResponse{.exit_code = 3,
                   .stdout_text = std::string("echo ") + kPasswordSecret + "\n",
                   .stderr_text = std::string("\x1b[31m\xE2\x94\x82\x1b[0m Error: Invalid value ") +
                                  kPasswordSecret + "\n\nprovider said " + kCredentialSecret +
                                  "\nbootstrap-secret-key\n"});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 3);
  EXPECT_EQ(outcome.result.exit_code(), 3);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_APPLY);
  EXPECT_EQ(outcome.result.error().summary(), "Invalid value [redacted]");
  EXPECT_THAT(outcome.result.error().tail(), HasSubstr("provider said [redacted]"));
  const std::string written = everythingWritten(outcome);
  EXPECT_THAT(written, Not(HasSubstr(kPasswordSecret)));
  EXPECT_THAT(written, Not(HasSubstr(kCredentialSecret)));
  EXPECT_THAT(written, HasSubstr("[redacted]"));
}

TEST_F(RunTest, FallbackSummaryWhenTheRuntimeSaysNothing) {
  runner_.on("init", FakeResponse{.exit_code = 1, .stderr_text = "something odd\n"});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().summary(), "step init exited 1; see the Job's logs");
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init"));
}

TEST_F(RunTest, RuntimeThatCannotStartFailsTheStepWithExitOne) {
  runner_.on("init", FakeResponse{.start_error = absl::PermissionDeniedError("cannot execute x")});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_INIT);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("step init could not start"));
}

TEST_F(RunTest, SigtermDuringApplyIsInterrupted) {
  runner_.on("apply", FakeResponse{.exit_code = 1,
                                   .stderr_text = "Error: execution halted\n",
                                   .stop_forwarded = true,
                                   .side_effect = [this] { stop_.requested = true; }});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_INTERRUPTED);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_APPLY);
  EXPECT_THAT(outcome.result.error().summary(),
              HasSubstr("interrupted by SIGTERM during step apply"));
  // Nothing starts after a stop.
  EXPECT_EQ(runner_.call("output"), nullptr);
}

// docs/behaviour/jobs.md#execution-sequence: an apply that changed resources
// and could not write the state (the API server away) leaves errored.tfstate;
// the runner pushes it until it lands, so the next run does not create the
// resources again. The run stays failed.
TEST_F(RunTest, AnApplyThatCouldNotWriteTheStatePushesErroredTfstate) {
  options_.errored_state_push_delay = absl::ZeroDuration();
  runner_.on("apply", FakeResponse{.exit_code = 1,
                                   .stderr_text = "Error: Failed to save state\n",
                                   .side_effect = [this] {
                                     writeText(dir_ / "work/root/errored.tfstate", "{}");
                                   }});
  // The first push fails (the API server still away), the second lands.
  runner_.on("state push", FakeResponse{.exit_code = 1, .side_effect = [this] {
                                          runner_.on("state push", FakeResponse{});
                                        }});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_APPLY);
  const std::vector<std::string> commands = runner_.commands();
  EXPECT_EQ(std::count(commands.begin(), commands.end(), "state push"), 2);
  EXPECT_THAT(argsOf("state push"),
              ::testing::ElementsAre("state", "push", "-lock=false", "errored.tfstate"));
  EXPECT_THAT(log_.stream.str(), HasSubstr("errored.tfstate pushed"));
}

TEST_F(RunTest, AFailedApplyWithoutErroredTfstatePushesNothing) {
  options_.errored_state_push_delay = absl::ZeroDuration();
  runner_.on("apply", FakeResponse{.exit_code = 1, .stderr_text = "Error: boom\n"});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(runner_.call("state push"), nullptr);
}

TEST_F(RunTest, ErroredTfstateThatNeverLandsIsTriedABoundedNumberOfTimes) {
  options_.errored_state_push_delay = absl::ZeroDuration();
  options_.errored_state_push_attempts = 3;
  runner_.on("apply", FakeResponse{.exit_code = 1, .side_effect = [this] {
                                     writeText(dir_ / "work/root/errored.tfstate", "{}");
                                   }});
  runner_.on("state push", FakeResponse{.exit_code = 1});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  const std::vector<std::string> commands = runner_.commands();
  EXPECT_EQ(std::count(commands.begin(), commands.end(), "state push"), 3);
  EXPECT_THAT(log_.stream.str(), HasSubstr("errored.tfstate could not be pushed"));
}

TEST_F(RunTest, StopBetweenStepsStartsNoFurtherStep) {
  runner_.on("init", FakeResponse{.side_effect = [this] { stop_.requested = true; }});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_INTERRUPTED);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_VALIDATE);
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init"));
}

TEST_F(RunTest, RuntimeKilledAfterTheStopTimeoutExitsOne) {
  runner_.on("apply", FakeResponse{.exit_code = 137, .stop_forwarded = true, .killed = true});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_INTERRUPTED);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("killed after the 60s stop timeout"));
}

TEST_F(RunTest, LastStepThatFinishesDespiteAStopSucceeds) {
  runner_.on("apply", FakeResponse{.stop_forwarded = true,
                                   .side_effect = [this] { stop_.requested = true; }});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_TRUE(outcome.result.has_succeeded());
}

TEST_F(RunTest, ForceUnlockRunsAfterInitAndAcceptsAnUnlockedState) {
  options_.force_unlock = "4f1c-lock";
  runner_.on(
      "force-unlock",
      FakeResponse{.exit_code = 1,
                   .stderr_text =
                       "\x1b[31mFailed to unlock state: state is already unlocked\x1b[0m\n"});
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0) << outcome.result.DebugString();
  EXPECT_THAT(runner_.commands(),
              ElementsAre("version", "init", "force-unlock", "validate", "apply", "output"));
  EXPECT_THAT(argsOf("force-unlock"), ElementsAre("force-unlock", "-force", "4f1c-lock"));

  runner_ = FakeProcessRunner();
  runner_.on("force-unlock",
             FakeResponse{.exit_code = 1, .stderr_text = "Error: lock id \"x\" does not match\n"});
  outcome = execute();
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_FORCE_UNLOCK);
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init", "force-unlock"));
}

TEST_F(RunTest, ImageLayoutIsCheckedBeforeAnythingRuns) {
  std::filesystem::remove(dir_ / "module/main.tf");
  writeText(dir_ / "module/README.md", "no module here");
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_IMAGE_LAYOUT);
  EXPECT_THAT(outcome.result.error().summary(),
              HasSubstr("has no .tf, .tf.json, .tofu or .tofu.json"));
  EXPECT_TRUE(runner_.calls().empty());

  writeText(dir_ / "module/main.tofu.json", "{}");
  ::chmod((dir_ / "runtime").c_str(), 0644);
  outcome = execute();
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_IMAGE_LAYOUT);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("is not executable"));
  EXPECT_TRUE(runner_.calls().empty());
}

TEST_F(RunTest, PrepareFailuresAreStepPrepare) {
  std::filesystem::remove(dir_ / "config/terraform.tfvars.json");
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_STEP);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_PREPARE);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("terraform.tfvars.json does not exist"));
  EXPECT_TRUE(runner_.calls().empty());

  renderMachine();
  writeText(dir_ / "elsewhere/main.tf", "");
  options_.module = dir_ / "elsewhere";
  outcome = execute();
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_PREPARE);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("which is not --module"));
}

TEST_F(RunTest, ProviderMirrorGetsACliConfig) {
  std::filesystem::create_directories(dir_ / "providers/registry.opentofu.org");
  execute();
  EXPECT_EQ(readText(dir_ / "work/cli.tfrc"), providerMirrorCliConfig(dir_ / "providers"));
  EXPECT_THAT(runner_.call("init")->env,
              Contains("TF_CLI_CONFIG_FILE=" + (dir_ / "work/cli.tfrc")));
}

TEST_F(RunTest, MissingTmpdirDefaultsUnderTheWorkdir) {
  env_.erase("TMPDIR");
  execute();
  EXPECT_THAT(runner_.call("init")->env, Contains("TMPDIR=" + (dir_ / "work/tmp")));
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "work/tmp"));
}

class RestoreTest : public RunTest {
protected:
  void SetUp() override {
    RunTest::SetUp();
    options_.operation = pb::OPERATION_RESTORE;
    std::filesystem::remove_all(dir_ / "config");
    const std::string compressed = gzip(kState);
    const std::size_t third = compressed.size() / 3 + 1;
    for (std::size_t i = 0; i < 3; ++i) {
      writeText(dir_ / ("config/restore/" + std::to_string(i)),
                compressed.substr(i * third, third));
    }
  }

  static constexpr std::string_view kState =
      R"({"version":4,"terraform_version":"1.11.4","serial":12,"lineage":"lin-1","outputs":{},)"
      R"("resources":[{"mode":"managed","type":"terraform_data","name":"a","instances":[{},{}]},)"
      R"({"mode":"data","type":"x","name":"d","instances":[{}]}]})";
};

TEST_F(RestoreTest, AssemblesTheBackupPushesItAndListsIt) {
  options_.restore_chunks = 3;
  options_.restore_resources = 1;
  runner_.on(
      "state list",
      FakeResponse{.stdout_text =
                       "module.role.terraform_data.a[0]\nmodule.role.terraform_data.a[1]\n"});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 0) << outcome.result.DebugString();
  EXPECT_THAT(runner_.commands(), ElementsAre("version", "init", "state push", "state list"));
  EXPECT_THAT(argsOf("state push"), ElementsAre("state", "push", "-force", "-lock-timeout=300s",
                                                dir_ / "work/restore.tfstate"));
  EXPECT_THAT(argsOf("state list"), ElementsAre("state", "list"));
  EXPECT_EQ(readText(dir_ / "work/restore.tfstate"), kState);
  EXPECT_EQ(readText(dir_ / "work/root/main.tf.json"), contract::renderRestoreRoot());
  EXPECT_THAT(stepNames(outcome.result),
              ElementsAre("prepare", "init", "state-push", "state-list"));
  EXPECT_FALSE(outcome.outputs.has_value());
}

TEST_F(RestoreTest, AnEmptyListingAfterPushingResourcesFails) {
  runner_.on("state list", FakeResponse{.stdout_text = "data.x.d\n"});
  const RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_STATE_LIST);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("the backup has 1"));
}

TEST_F(RestoreTest, BackupThatDoesNotMatchTheControllersCountIsNotPushed) {
  options_.restore_resources = 4;
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_PREPARE);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("--restore-resources says 4"));
  EXPECT_TRUE(runner_.calls().empty());

  options_.restore_resources.reset();
  options_.restore_chunks = 2;
  outcome = execute();
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("--restore-chunks says 2"));

  options_.restore_chunks = 0;
  std::filesystem::remove(dir_ / "config/restore/1");
  outcome = execute();
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("chunk 1 is missing"));
  EXPECT_TRUE(runner_.calls().empty());
}

TEST(UsageOutcomeTest, IsADecodableExitTwoResult) {
  const RunOutcome outcome = usageOutcome(pb::OPERATION_APPLY, "unknown flag: --x");
  EXPECT_EQ(outcome.exit_code, 2);
  auto decoded = contract::decodeResult(encodeResultDocument(outcome.result, std::nullopt));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->exit_code(), 2);
  EXPECT_EQ(decoded->error().summary(), "invalid arguments: unknown flag: --x");
}

TEST_F(RunTest, HugeFailureStillMakesAValidTerminationMessage) {
  std::string noise;
  for (int i = 0; i < 3000; ++i) {
    noise += "Error: failure number " + std::to_string(i) + "\n\n  detail " +
             std::string(200, 'x') + "\n\n";
  }
  runner_.on("apply", FakeResponse{.exit_code = 1, .stderr_text = noise});
  const RunOutcome outcome = execute();
  EXPECT_LE(outcome.result.error().summary().size(), contract::kMaxSummaryBytes);
  const std::string document = encodeResultDocument(outcome.result, outcome.outputs);
  EXPECT_LE(document.size(), contract::kMaxResultBytes);
}

// --- Git module sources (--git-url) --------------------------------------------

// The checkout comes from a bare repository on disk (libgit2's local
// transport); --git-url's parser allows https and ssh only, so the test
// sets the parsed URL directly.
class RunGitTest : public RunTest {
protected:
  void SetUp() override {
    RunTest::SetUp();
    repo_ = std::make_unique<contract::testing::GitRepo>(dir_ / "remote.git");
    commit_ = repo_->commit(
        {{"modules/vpc/main.tf", "variable \"x\" {}\n"},
         {"modules/vpc/run.sh", "#!/bin/sh\n", contract::testing::GitMode::kExecutable},
         {"README.md", "# modules\n"}});
    options_.git_url = repo_->gitUrl();
    options_.git_commit = commit_;
    options_.git_ref = "refs/heads/main";
    options_.git_checkout = dir_ / "checkout";
    options_.module = dir_ / "checkout/modules/vpc";
    // What the manager renders for a Git source (contract::gitModuleSource),
    // with this test's layout: <dir>/work/root/../../checkout/modules/vpc.
    module_source_ = "../../checkout/modules/vpc";
    renderMachine();
  }

  std::unique_ptr<contract::testing::GitRepo> repo_;
  std::string commit_;
};

TEST_F(RunGitTest, FetchRunsFirstAndTheRootCallsTheModuleInTheCheckout) {
  RunOutcome outcome = execute();
  ASSERT_TRUE(outcome.result.has_succeeded()) << outcome.result.error().summary();
  EXPECT_THAT(stepNames(outcome.result),
              ElementsAre("fetch", "prepare", "init", "validate", "apply"));
  EXPECT_EQ(readText(dir_ / "checkout/modules/vpc/main.tf"), "variable \"x\" {}\n");
  EXPECT_EQ(readText(dir_ / "checkout/README.md"), "# modules\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "checkout/.git"));
  EXPECT_EQ(readText(dir_ / "work/root/main.tf.json"), readText(dir_ / "config/main.tf.json"));
  EXPECT_EQ(runner_.call("init")->cwd, dir_ / "work/root");
  EXPECT_THAT(log_.stream.str(), HasSubstr(commit_));
}

TEST_F(RunGitTest, TheRootMustCallTheModuleInTheCheckout) {
  module_source_.clear(); // ../../module: not --module
  renderMachine();
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_PREPARE);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("which is not --module"));
  EXPECT_THAT(stepNames(outcome.result), ElementsAre("fetch", "prepare"));
}

TEST_F(RunGitTest, AFailedFetchEndsTheRunAsStepFetch) {
  options_.git_commit = std::string(40, '7');
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.exit_code(), 1);
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_STEP);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_FETCH);
  EXPECT_EQ(outcome.result.error().summary(),
            "fetch: " + repo_->url() + ": commit 777777777777 is not in the repository");
  EXPECT_THAT(stepNames(outcome.result), ElementsAre("fetch"));
  EXPECT_EQ(outcome.result.steps(0).exit_code(), 1);
  EXPECT_TRUE(runner_.calls().empty());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "checkout"));
}

TEST_F(RunGitTest, BadGitCredentialsFailTheFetchWithoutTheirValues) {
  writeText(dir_ / "git-creds/token", "tok-en-value");
  writeText(dir_ / "git-creds/password", "pass-word-value");
  options_.git_credentials = dir_ / "git-creds";
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_FETCH);
  EXPECT_THAT(outcome.result.error().summary(),
              HasSubstr("fetch: git credentials: both token and password are set"));
  EXPECT_THAT(everythingWritten(outcome), Not(HasSubstr("-value")));
  EXPECT_TRUE(runner_.calls().empty());
}

TEST_F(RunGitTest, AModuleMissingFromTheCheckoutIsALayoutError) {
  options_.module = dir_ / "checkout/modules/missing";
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_IMAGE_LAYOUT);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr("module source: "));
  EXPECT_THAT(stepNames(outcome.result), ElementsAre("fetch"));
  EXPECT_TRUE(runner_.calls().empty());
}

TEST_F(RunGitTest, AStopBeforeTheFetchIsInterrupted) {
  stop_.requested = true;
  RunOutcome outcome = execute();
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_INTERRUPTED);
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_FETCH);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "checkout"));
}

TEST_F(RunGitTest, ARestoreFetchesButCallsNoModule) {
  options_.operation = pb::OPERATION_RESTORE;
  writeText(dir_ / "config/restore/0",
            gzip(R"({"version":4,"terraform_version":"1.11.4","serial":1,"lineage":"l",)"
                 R"("outputs":{},"resources":[{"mode":"managed","type":"terraform_data",)"
                 R"("name":"a","instances":[{}]}]})"));
  runner_.on("state list", FakeResponse{.stdout_text = "terraform_data.a\n"});
  RunOutcome outcome = execute();
  EXPECT_THAT(stepNames(outcome.result),
              ElementsAre("fetch", "prepare", "init", "state-push", "state-list"));
  EXPECT_TRUE(outcome.result.has_succeeded()) << outcome.result.error().summary();
}

} // namespace
} // namespace captf::runner
