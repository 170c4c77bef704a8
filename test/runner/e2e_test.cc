// The runner on the rig (test/rig): real Jobs built the way the manager
// builds them (an init container running `runner copy` from a runner image,
// the module image's container running `/captf/bin/runner run`, the per-run
// Secret at /captf/config, the runner's RBAC), real OpenTofu and Terraform,
// state in Secrets through the kubernetes backend.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "contract/digest.h"
#include "contract/inputs_hash.h"
#include "contract/render.h"
#include "contract/result.h"
#include "contract/roles.h"
#include "contract/state.h"
#include "test/rig/fixture.h"
#include "test/runner/e2e_support.h"

namespace captf::runner {
namespace {

namespace fs = std::filesystem;
namespace pb = ::captf::runner::v1alpha1;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

using namespace ::captf::runner::e2e;

// The runner in the images is fully static: no ELF interpreter (PT_INTERP),
// so it runs in any module image, with or without a libc.
TEST(StaticRunnerTest, HasNoProgramInterpreter) {
  std::ifstream in(kRunnerStatic, std::ios::binary);
  std::string elf((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GE(elf.size(), 64U);
  ASSERT_EQ(elf.substr(0, 4), "\x7f"
                              "ELF");
  ASSERT_EQ(elf[4], 2) << "not ELF64";
  std::uint64_t phoff = 0;
  std::uint16_t phentsize = 0;
  std::uint16_t phnum = 0;
  std::memcpy(&phoff, elf.data() + 0x20, sizeof phoff);
  std::memcpy(&phentsize, elf.data() + 0x36, sizeof phentsize);
  std::memcpy(&phnum, elf.data() + 0x38, sizeof phnum);
  ASSERT_LE(phoff + std::uint64_t{phentsize} * phnum, elf.size());
  for (std::uint16_t i = 0; i < phnum; ++i) {
    std::uint32_t type = 0;
    std::memcpy(&type, elf.data() + phoff + std::uint64_t{phentsize} * i, sizeof type);
    EXPECT_NE(type, 3U) << "program header " << i << " is PT_INTERP: the runner is dynamic";
  }
}

class RunnerE2eTest : public ::testing::Test {
protected:
  void SetUp() override {
    // "runner-<slug>-<hash>": unique per test (parameters included) and a
    // valid namespace name.
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string slug = test.substr(0, 40);
    std::transform(slug.begin(), slug.end(), slug.begin(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 ? static_cast<char>(std::tolower(c))
                                                              : '-';
    });
    ns_ = "runner-" + slug + "-" + contract::sha256Hex(test).substr(0, 8);
    createNamespace(ns_);
  }

  std::string ns_;
};

// --- Tests -------------------------------------------------------------------

class RoleE2eTest : public RunnerE2eTest, public ::testing::WithParamInterface<contract::Role> {};

TEST_P(RoleE2eTest, NoopModuleAppliesAndTheResultCarriesItsOutputs) {
  const contract::Role role = GetParam();
  const std::string role_name(contract::roleSpec(role).name);
  const std::string image = Images::get().module("noop-" + role_name, noopModule(role), env().tofu);
  ASSERT_FALSE(image.empty());
  const std::string object = role_name + "-1";
  const contract::RenderRequest request = renderRequest(role, ns_, object);
  JobRequest job{
      .ns = ns_, .name = "apply-" + role_name, .image = image, .role = role, .object = object};
  job.config = rootFiles(request);
  std::vector<std::string> expected_steps = {"prepare", "init", "validate", "apply"};
  if (role == contract::Role::kCluster) {
    // Cluster applies are always guarded (docs/behaviour/approval.md#destructive-plan-guard).
    auto hash = contract::inputsHash(request, image);
    ASSERT_TRUE(hash.ok()) << hash.status();
    job.extra_args = {"--guard-deletes", "--inputs-hash=" + *hash};
    expected_steps = {"prepare", "init", "validate", "plan", "show-json", "apply"};
  }
  const JobOutcome outcome = runJob(job);
  ASSERT_TRUE(outcome.succeeded) << outcome.message << "\n" << outcome.log;
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_TRUE(outcome.result.has_succeeded());
  EXPECT_EQ(outcome.result.operation(), pb::OPERATION_APPLY);
  EXPECT_EQ(outcome.result.image(), image);
  EXPECT_EQ(outcome.result.runtime_version(), "1.12.6");
  std::vector<std::string> steps;
  for (const pb::StepResult& step : outcome.result.steps()) {
    steps.emplace_back(contract::stepName(step.step()));
    EXPECT_EQ(step.exit_code(), step.step() == pb::STEP_PLAN ? 2 : 0);
  }
  EXPECT_EQ(steps, expected_steps);
  EXPECT_EQ(outcome.result.changes().add(), 1U);

  // The outputs are in the result, checked against the role's types.
  const json& outputs = outcome.document["outputs"];
  EXPECT_EQ(outputs.value("state", ""), "valid") << outputs.dump();
  EXPECT_EQ(outputs["values"]["health"]["state"], "running");
  switch (role) {
  case contract::Role::kCluster:
    EXPECT_EQ(outputs["values"]["control_plane_endpoint"],
              json({{"host", "lb." + object + ".example"}, {"port", 6443}}));
    EXPECT_EQ(outputs["withheld"], json({"exports"}));
    EXPECT_THAT(outcome.message, Not(HasSubstr(kExportSecret)));
    EXPECT_EQ(outcome.result.plan().add(), 1U);
    break;
  case contract::Role::kMachine:
    EXPECT_THAT(outputs["values"]["provider_id"].get<std::string>(),
                ::testing::StartsWith("noop://"));
    EXPECT_EQ(outputs["values"]["addresses"][0]["address"], "10.0.0.10");
    break;
  case contract::Role::kMachinePool:
    EXPECT_EQ(outputs["values"]["replicas"], 3);
    EXPECT_EQ(outputs["values"]["provider_id_list"].size(), 3U);
    break;
  }

  // The state Secret exists, carries the backend labels, and is readable.
  const std::string suffix = stateSuffix(ns_, role, object);
  const json base = kubectlJson({"-n", ns_, "get", "secret", "tfstate-default-" + suffix});
  EXPECT_EQ(
      base["metadata"]["labels"].value("captf.infrastructure.cluster.x-k8s.io/owner-kind", ""),
      std::string(contract::roleSpec(role).kind));
  EXPECT_EQ(base["metadata"]["labels"].value("captf.io/managed", ""), "true");
  const StoredState state = readState(ns_, suffix);
  EXPECT_EQ(state.chunks.size(), 1U); // OpenTofu never splits
  EXPECT_GE(state.summary.serial, 1);
  EXPECT_EQ(state.summary.managed_resources, 1U);
  EXPECT_EQ(lockHolder(ns_, suffix), "");

  // Environment shaping, and no secret in the log or the result.
  EXPECT_THAT(outcome.log, HasSubstr("\"environment variable dropped\" name=\"TF_LOG\""));
  EXPECT_THAT(outcome.log, Not(HasSubstr("TRACE")));
  EXPECT_THAT(outcome.log + outcome.message, Not(HasSubstr(kCredentialValue)));
  EXPECT_THAT(outcome.log + outcome.message, Not(HasSubstr("e2e-bootstrap-secret")));
}

INSTANTIATE_TEST_SUITE_P(Roles, RoleE2eTest,
                         ::testing::Values(contract::Role::kCluster, contract::Role::kMachine,
                                           contract::Role::kMachinePool),
                         [](const auto& role_info) {
                           return std::string(contract::roleSpec(role_info.param).name);
                         });

TEST_F(RunnerE2eTest, GuardBlocksAReplacementUntilItsInputsHashIsApproved) {
  const contract::Role role = contract::Role::kCluster;
  const std::string v1 = Images::get().module("cluster-v1", noopModule(role, "1"), env().tofu);
  const std::string v2 = Images::get().module("cluster-v2", noopModule(role, "2"), env().tofu);
  const contract::RenderRequest request = renderRequest(role, ns_, "guarded");
  const std::string suffix = stateSuffix(ns_, role, "guarded");
  const auto hash1 = contract::inputsHash(request, v1);
  const auto hash2 = contract::inputsHash(request, v2);
  ASSERT_TRUE(hash1.ok() && hash2.ok());
  ASSERT_NE(*hash1, *hash2);

  JobOutcome outcome = runJob({.ns = ns_,
                               .name = "apply-v1",
                               .image = v1,
                               .role = role,
                               .object = "guarded",
                               .extra_args = {"--guard-deletes", "--inputs-hash=" + *hash1},
                               .config = rootFiles(request)});
  ASSERT_TRUE(outcome.succeeded) << outcome.message << "\n" << outcome.log;
  const std::int64_t serial = readState(ns_, suffix).summary.serial;

  // The new image replaces the resource: blocked, nothing changed.
  outcome = runJob({.ns = ns_,
                    .name = "apply-v2",
                    .image = v2,
                    .role = role,
                    .object = "guarded",
                    .extra_args = {"--guard-deletes", "--inputs-hash=" + *hash2},
                    .config = rootFiles(request)});
  EXPECT_FALSE(outcome.succeeded);
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.result.exit_code(), 1);
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_BLOCKED) << outcome.message;
  EXPECT_THAT(outcome.result.plan().resources(),
              Contains("module.role.terraform_data.cluster (replace)"));
  EXPECT_EQ(outcome.result.plan().destroy(), 1U);
  EXPECT_THAT(outcome.result.error().summary(), HasSubstr(*hash2));
  EXPECT_EQ(readState(ns_, suffix).summary.serial, serial);
  EXPECT_EQ(lockHolder(ns_, suffix), "");

  // An approval of another hash changes nothing; of this one, it applies.
  outcome = runJob({.ns = ns_,
                    .name = "apply-v2-wrong",
                    .image = v2,
                    .role = role,
                    .object = "guarded",
                    .extra_args = {"--guard-deletes", "--inputs-hash=" + *hash2,
                                   "--allow-deletes-hash=" + *hash1},
                    .config = rootFiles(request)});
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_BLOCKED);
  outcome = runJob({.ns = ns_,
                    .name = "apply-v2-approved",
                    .image = v2,
                    .role = role,
                    .object = "guarded",
                    .extra_args = {"--guard-deletes", "--inputs-hash=" + *hash2,
                                   "--allow-deletes-hash=" + *hash2},
                    .config = rootFiles(request)});
  ASSERT_TRUE(outcome.succeeded) << outcome.message << "\n" << outcome.log;
  EXPECT_EQ(outcome.result.changes().add(), 1U);
  EXPECT_EQ(outcome.result.changes().destroy(), 1U);
  EXPECT_GT(readState(ns_, suffix).summary.serial, serial);
}

// docs/decisions/manager-identity.md, "Delivery": every key of the
// credential mirror is a file byte for byte; only a text key is also an
// environment variable. A binary value (NUL, invalid UTF-8) in the
// environment would end the value at its NUL or stop the container from
// starting at all, so the Job never puts it there.
TEST_F(RunnerE2eTest, ABinaryCredentialIsAFileByteForByteAndNotInTheEnvironment) {
  // Invalid UTF-8 around a NUL and a newline.
  const std::string blob =
      std::string("\xff\xfe") + "binary-canary-77c1e0" + std::string("\0\x01\n\x02\xc3\x28\x80", 7);
  std::string blob_hex;
  for (const char c : blob) {
    static constexpr char kDigits[] = "0123456789abcdef";
    blob_hex += kDigits[(static_cast<unsigned char>(c) >> 4U) & 0xFU];
    blob_hex += kDigits[static_cast<unsigned char>(c) & 0xFU];
  }
  kubectlCreate({{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "captf-creds-binary"}, {"namespace", ns_}}},
                 {"data",
                  {{"NOOP_API_TOKEN", absl::Base64Escape(kCredentialValue)},
                   {"BLOB", absl::Base64Escape(blob)}}}});
  // The probe runs the test child from a local-exec (the image has no
  // shell), inside the runtime the runner started: the environment it sees
  // is the one a provider would.
  const std::string module =
      noopModule(contract::Role::kMachine) +
      "resource \"terraform_data\" \"probe\" {\n"
      "  input = var.machine_name\n"
      "  provisioner \"local-exec\" {\n"
      "    command     = \"out:probe-done\"\n"
      "    interpreter = [\"/captf/module/child\", \"env:NOOP_API_TOKEN\", \"env:BLOB\",\n"
      "                   \"envhas:binary-canary-77c1e0\",\n"
      "                   \"filehex:/var/run/captf/credentials/BLOB\"]\n"
      "  }\n"
      "}\n";
  const std::string image = Images::get().module("credential-probe", module, env().tofu);
  const contract::RenderRequest request = renderRequest(contract::Role::kMachine, ns_, "probe");
  JobRequest job{.ns = ns_,
                 .name = "apply-probe",
                 .image = image,
                 .role = contract::Role::kMachine,
                 .object = "probe",
                 .config = rootFiles(request)};
  job.credentials_secret = "captf-creds-binary";
  job.credential_env_keys = {"NOOP_API_TOKEN"}; // BLOB is not text
  const JobOutcome outcome = runJob(job);
  ASSERT_TRUE(outcome.succeeded) << outcome.message << "\n" << outcome.log;
  EXPECT_THAT(outcome.log, HasSubstr("probe-done"));

  // The file holds every byte; the environment has no trace of the value.
  EXPECT_THAT(outcome.log, HasSubstr("filehex /var/run/captf/credentials/BLOB=" + blob_hex + "\n"))
      << outcome.log;
  EXPECT_THAT(outcome.log, HasSubstr("BLOB unset"));
  EXPECT_THAT(outcome.log, HasSubstr("envhas: absent"));
  EXPECT_THAT(outcome.log, Not(HasSubstr("envhas: found")));
  // The text key is a variable too, and redacted where the runtime echoes it.
  EXPECT_THAT(outcome.log, HasSubstr("NOOP_API_TOKEN=[redacted]"));
  EXPECT_THAT(outcome.log + outcome.message, Not(HasSubstr(kCredentialValue)));

  // The pod the Job ran: BLOB is in no env entry, the mirror is mounted.
  const json pod = podOf(ns_, "apply-probe");
  const json& source = pod["spec"]["containers"][0];
  EXPECT_FALSE(source.contains("envFrom"));
  for (const json& var : source["env"]) {
    EXPECT_NE(var.value("name", ""), "BLOB");
  }
  bool mounted = false;
  for (const json& volume : pod["spec"]["volumes"]) {
    mounted = mounted || (volume.value("name", "") == "credentials" &&
                          volume["secret"].value("secretName", "") == "captf-creds-binary");
  }
  EXPECT_TRUE(mounted) << pod["spec"]["volumes"].dump();
}

// The runner process of a running pod, found on this host (the rig runs
// pods as local processes).
pid_t runnerPidOf(const std::string& pod) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) {
      continue;
    }
    std::ifstream cmdline_file(entry.path() / "cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(cmdline_file)), {});
    if (!cmdline.starts_with(std::string("/captf/bin/runner\0run\0", 22))) {
      continue;
    }
    std::ifstream environ_file(entry.path() / "environ", std::ios::binary);
    const std::string environment((std::istreambuf_iterator<char>(environ_file)), {});
    if (environment.find(std::string("HOSTNAME=") + pod + '\0') != std::string::npos) {
      return static_cast<pid_t>(std::stol(name));
    }
  }
  return -1;
}

TEST_F(RunnerE2eTest, SigtermDuringApplyEndsInterruptedWithTheLockReleasedAndStateIntact) {
  const contract::Role role = contract::Role::kMachine;
  const std::string image = Images::get().module("slow", slowMachineModule(), env().tofu);
  const contract::RenderRequest request = renderRequest(role, ns_, "slow");
  const std::string suffix = stateSuffix(ns_, role, "slow");
  startJob({.ns = ns_,
            .name = "apply-slow",
            .image = image,
            .role = role,
            .object = "slow",
            .stop_timeout = "60s",
            .grace_seconds = 90,
            .config = rootFiles(request)});
  const std::string pod = podOf(ns_, "apply-slow")["metadata"].value("name", "");
  // Wait until the runtime is inside the slow provisioner.
  bool applying = false;
  for (int i = 0; i < 900 && !applying; ++i) {
    applying = rig::podLog(env(), ns_, pod, "source").find("Executing:") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(applying) << rig::podLog(env(), ns_, pod, "source");
  // What the kubelet does to a container's main process on deletion. (The
  // rig signals the container's whole process group, which also ends the
  // bubblewrap sandbox before the runner can stop the runtime, so the test
  // sends the signal the way a container runtime does.)
  const pid_t pid = runnerPidOf(pod);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);

  const JobOutcome outcome = waitJob(ns_, "apply-slow");
  EXPECT_FALSE(outcome.succeeded);
  EXPECT_EQ(outcome.exit_code, 1) << outcome.log;
  EXPECT_EQ(outcome.result.error().kind(), pb::ERROR_KIND_INTERRUPTED) << outcome.message;
  EXPECT_EQ(outcome.result.error().step(), pb::STEP_APPLY);
  EXPECT_THAT(outcome.result.error().summary(),
              HasSubstr("interrupted by SIGTERM during step apply"));
  EXPECT_THAT(outcome.log, HasSubstr("Interrupt received"));
  // The runtime stopped gracefully: the lock is released and the state is
  // whole (the interrupted resource recorded as tainted).
  EXPECT_EQ(lockHolder(ns_, suffix), "");
  const StoredState state = readState(ns_, suffix);
  EXPECT_GE(state.summary.serial, 1);
  EXPECT_GE(state.summary.managed_resources, 1U);

  // And the next Job can use it at once.
  const JobOutcome destroyed = runJob({.ns = ns_,
                                       .name = "destroy-slow",
                                       .image = image,
                                       .role = role,
                                       .object = "slow",
                                       .op = "destroy",
                                       .config = rootFiles(request)});
  EXPECT_TRUE(destroyed.succeeded) << destroyed.message << "\n" << destroyed.log;
  EXPECT_GE(destroyed.result.changes().destroy(), 1U);
}

// The Terraform these cases run: $CAPTF_TERRAFORM, else kTerraform. They
// are the `terraform` label (test/runner/CMakeLists.txt) and fail, never
// skip, when it is missing.
std::string terraformBinary() {
  const char* path = std::getenv("CAPTF_TERRAFORM");
  return path != nullptr && *path != '\0' ? path : kTerraform;
}

#define REQUIRE_TERRAFORM()                                                                        \
  ASSERT_TRUE(fs::exists(terraformBinary()))                                                       \
      << "Terraform is not at " << terraformBinary()                                               \
      << " (set CAPTF_TERRAFORM): the Terraform runtime cases need Terraform >= 1.11, whose "      \
         "kubernetes backend splits large states (docs/runner.md, \"Testing with Terraform\")"

TEST_F(RunnerE2eTest, TerraformRuntimeAppliesAndDestroys) {
  REQUIRE_TERRAFORM();
  const contract::Role role = contract::Role::kMachine;
  const std::string image =
      Images::get().module("terraform-machine", noopModule(role), terraformBinary());
  const contract::RenderRequest request = renderRequest(role, ns_, "tf-1");
  JobOutcome outcome = runJob({.ns = ns_,
                               .name = "apply-tf",
                               .image = image,
                               .role = role,
                               .object = "tf-1",
                               .config = rootFiles(request)});
  ASSERT_TRUE(outcome.succeeded) << outcome.message << "\n" << outcome.log;
  EXPECT_EQ(outcome.result.runtime_version(), "1.11.4");
  EXPECT_EQ(outcome.document["outputs"].value("state", ""), "valid") << outcome.message;
  EXPECT_EQ(readState(ns_, stateSuffix(ns_, role, "tf-1")).summary.terraform_version, "1.11.4");

  outcome = runJob({.ns = ns_,
                    .name = "destroy-tf",
                    .image = image,
                    .role = role,
                    .object = "tf-1",
                    .op = "destroy",
                    .config = rootFiles(request)});
  ASSERT_TRUE(outcome.succeeded) << outcome.message << "\n" << outcome.log;
  EXPECT_EQ(outcome.result.changes().destroy(), 1U);
}

std::string randomBase64(std::size_t bytes) {
  std::mt19937_64 random(42);
  std::string raw(bytes, '\0');
  for (char& c : raw) {
    c = static_cast<char>(random() & 0xFF);
  }
  return absl::Base64Escape(raw);
}

// Terraform splits a large state into <base>-part-N Secrets (OpenTofu never
// does): the chunk reader is proven on state Terraform really wrote, and a
// restore Job assembles such a backup and pushes it.
TEST_F(RunnerE2eTest, TerraformChunkedStateIsReadAndRestored) {
  REQUIRE_TERRAFORM();
  const contract::Role role = contract::Role::kMachine;
  // 1. Terraform writes a chunked state (the runner on this host, against
  //    the rig's API server through its kubeconfig).
  const fs::path base = fs::path(env().dir) / "runner-e2e" / ns_;
  fs::remove_all(base);
  fs::create_directories(base / "module");
  fs::create_directories(base / "work");
  fs::create_directories(base / "config");
  std::ofstream(base / "module/main.tf") << bigMachineModule();
  const contract::RenderRequest request = renderRequest(
      role, ns_, "big", {contract::UserVariable{.name = "blob", .value = randomBase64(520'000)}});
  for (const auto& [name, text] : rootFiles(request)) {
    std::ofstream(base / "config" / name) << text;
  }
  const std::string suffix = stateSuffix(ns_, role, "big");
  const rig::CommandResult applied = rig::run(
      {kRunnerStatic, "run", "--op=apply", "--bin=" + terraformBinary(),
       "--module=" + (base / "module").string(), "--workdir=" + (base / "work").string(),
       "--config=" + (base / "config").string(), "--providers=" + (base / "providers").string(),
       "--result=" + (base / "result.json").string(), "--lock-timeout=60s",
       "--backend-config=secret_suffix=" + suffix, "--backend-config=namespace=" + ns_,
       "--backend-config=config_path=" + env().kubeconfig,
       "--backend-config=labels=" + backendLabels(role, "big")});
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  const StoredState written = readState(ns_, suffix);
  ASSERT_GE(written.chunks.size(), 3U) << "Terraform did not split the state";
  EXPECT_EQ(written.summary.terraform_version, "1.11.4");
  EXPECT_EQ(written.summary.managed_resources, 2U);

  // 2. The controller's backup: each chunk's data copied verbatim.
  std::vector<std::string> backup_secrets;
  auto ordered = contract::orderChunks("tfstate-default-" + suffix, written.chunks);
  ASSERT_TRUE(ordered.ok());
  for (std::size_t i = 0; i < ordered->size(); ++i) {
    const std::string name = "captf-state-backup-" + suffix + "-" +
                             std::to_string(written.summary.serial) +
                             (i == 0 ? "" : "-part-" + std::to_string(i));
    kubectlCreate({{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", name}, {"namespace", ns_}}},
                   {"data", {{"tfstate", absl::Base64Escape((*ordered)[i])}}}});
    backup_secrets.push_back(name);
  }

  // 3. A restore Job for another object assembles and pushes it.
  const std::string image =
      Images::get().module("terraform-big", bigMachineModule(), terraformBinary());
  const std::string restored_suffix = stateSuffix(ns_, role, "restored");
  JobRequest restore{.ns = ns_,
                     .name = "restore",
                     .image = image,
                     .role = role,
                     .object = "restored",
                     .op = "restore",
                     .extra_args = {"--restore-chunks=" + std::to_string(backup_secrets.size()),
                                    "--restore-resources=2"}};
  restore.config = {{std::string(contract::kMainFileName), contract::renderRestoreRoot()}};
  restore.restore_secrets = backup_secrets;
  const JobOutcome outcome = runJob(restore);
  ASSERT_TRUE(outcome.succeeded) << outcome.message << "\n" << outcome.log;
  EXPECT_THAT(outcome.log, HasSubstr("\"restore backup assembled\" chunks=" +
                                     std::to_string(backup_secrets.size())));
  const StoredState pushed = readState(ns_, restored_suffix);
  EXPECT_GE(pushed.chunks.size(), 3U);
  // The backup's lineage, its serial or the next one: Terraform 1.11 counts
  // the push into an empty backend as a write (serial + 1).
  EXPECT_EQ(pushed.summary.lineage, written.summary.lineage);
  EXPECT_GE(pushed.summary.serial, written.summary.serial);
  EXPECT_LE(pushed.summary.serial, written.summary.serial + 1);
  EXPECT_EQ(pushed.summary.managed_resources, 2U);
}

} // namespace
} // namespace captf::runner
