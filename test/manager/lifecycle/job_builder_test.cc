#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manager/lifecycle/job_builder.h"
#include "manager/workspace/names.h"

namespace captf::lifecycle {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

JobBuildRequest request(contract::Role role = contract::Role::kCluster) {
  JobBuildRequest r{};
  r.object = ObjectIdentity{.role = role, .ns = "team-a", .name = "tc1"};
  r.object_uid = "uid-1";
  r.cluster_name = "c1";
  r.job_name = "captf-c-tc1-apply-a2-abcdef";
  r.operation = api::Operation::kApply;
  r.attempt = 2;
  r.image = "registry.example/mod@sha256:" + std::string(64, 'a');
  r.image_reference = "registry.example/mod:v1";
  r.runner_image = "ghcr.io/captf-io/cluster-api-provider-terraform:v0.1.0";
  r.policy = resolveJobPolicy(std::nullopt, std::nullopt);
  r.credentials_secret = "captf-creds-aws";
  r.inputs_hash = "h2:abc";
  return r;
}

json containerNamed(const json& list, std::string_view name) {
  for (const json& c : list) {
    if (c["name"] == name) {
      return c;
    }
  }
  ADD_FAILURE() << "no container " << name;
  return json::object();
}

TEST(JobBuilderTest, RunnerArgsOfAGuardedClusterApply) {
  JobBuildRequest r = request();
  r.options.guard_deletes = true;
  r.options.allow_deletes_hash = "h2:abc";
  r.force_unlock_id = "lock-123";
  const ObjectIdentity owner{.role = contract::Role::kCluster,
                             .ns = "team-a",
                             .name = "tc1",
                             .uid = "",
                             .cluster_name = "c1"};
  EXPECT_THAT(
      runnerArgs(r),
      ElementsAre("--op=apply", "--bin=/captf/runtime", "--image=registry.example/mod:v1",
                  "--module=/captf/module", "--providers=/captf/providers", "--workdir=/captf/work",
                  "--config=/captf/config", "--lock-timeout=300s", "--stop-timeout=570s",
                  "--backend-config=secret_suffix=" + workspace::stateSuffix(owner),
                  "--backend-config=namespace=team-a", "--backend-config=in_cluster_config=true",
                  "--backend-config=labels=" + workspace::backendLabelsHcl(owner),
                  "--force-unlock=lock-123", "--guard-deletes", "--inputs-hash=h2:abc",
                  "--allow-deletes-hash=h2:abc",
                  "--event-object=infrastructure.cluster.x-k8s.io/v1alpha1/TerraformCluster/"
                  "team-a/tc1/uid-1",
                  "--job-name=captf-c-tc1-apply-a2-abcdef"));
}

TEST(JobBuilderTest, RunnerArgsOptionalFlags) {
  JobBuildRequest plain = request(contract::Role::kMachine);
  plain.runner_events = false;
  plain.operation = api::Operation::kRefresh;
  plain.policy.lock_timeout_seconds = 42;
  plain.termination_grace_period_seconds = 90;
  const std::vector<std::string> args = runnerArgs(plain);
  EXPECT_EQ(args.size(), 13U);
  EXPECT_EQ(args[0], "--op=refresh");
  EXPECT_EQ(args[7], "--lock-timeout=42s");
  EXPECT_EQ(args[8], "--stop-timeout=60s");

  JobBuildRequest approved = request();
  approved.options.expect_plan = "p1:xyz";
  EXPECT_THAT(runnerArgs(approved), ::testing::Contains("--expect-plan=p1:xyz"));
  EXPECT_THAT(runnerArgs(approved), ::testing::Not(::testing::Contains("--guard-deletes")));

  JobBuildRequest restore = request();
  restore.operation = api::Operation::kRestore;
  restore.options.restore_serial = 7;
  restore.restore_chunk_secrets = {"b-7", "b-7-part-1"};
  restore.restore_resources = 12;
  const std::vector<std::string> restore_args = runnerArgs(restore);
  EXPECT_EQ(restore_args[restore_args.size() - 2], "--restore-chunks=2");
  EXPECT_EQ(restore_args.back(), "--restore-resources=12");
}

TEST(JobBuilderTest, Job) {
  JobBuildRequest r = request();
  r.options.guard_deletes = true;
  r.options.drift_remediation = true;
  r.policy.image_pull_secrets = {{"pull"}};
  r.policy.env = {{.name = "HTTPS_PROXY", .value = "http://proxy:3128", .value_from = {}},
                  {.name = "TF_LOG", .value = "TRACE", .value_from = {}}};
  r.image_pull_policy = api::PullPolicy::kAlways;
  auto built = buildJob(r);
  ASSERT_TRUE(built.ok()) << built.status();
  const json& job = *built;
  EXPECT_EQ(job["apiVersion"], "batch/v1");
  EXPECT_EQ(job["kind"], "Job");
  EXPECT_EQ(job["metadata"]["name"], r.job_name);
  EXPECT_EQ(job["metadata"]["namespace"], "team-a");
  const json labels = {{"captf.infrastructure.cluster.x-k8s.io/op", "apply"},
                       {"captf.infrastructure.cluster.x-k8s.io/attempt", "2"},
                       {"captf.io/managed", "true"},
                       {"captf.infrastructure.cluster.x-k8s.io/owner-kind", "TerraformCluster"},
                       {"captf.infrastructure.cluster.x-k8s.io/owner-name", "tc1"},
                       {"cluster.x-k8s.io/cluster-name", "c1"}};
  EXPECT_EQ(job["metadata"]["labels"], labels);
  EXPECT_EQ(job["spec"]["template"]["metadata"]["labels"], labels);
  EXPECT_EQ(job["metadata"]["annotations"],
            json({{"captf.io/inputs-hash", "h2:abc"}, {"captf.io/drift-remediation", "true"}}));
  const json& owner = job["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["apiVersion"], "infrastructure.cluster.x-k8s.io/v1alpha1");
  EXPECT_EQ(owner["kind"], "TerraformCluster");
  EXPECT_EQ(owner["name"], "tc1");
  EXPECT_EQ(owner["uid"], "uid-1");
  EXPECT_EQ(owner["controller"], true);

  const json& spec = job["spec"];
  EXPECT_EQ(spec["backoffLimit"], 0);
  EXPECT_EQ(spec["activeDeadlineSeconds"], 3600);
  EXPECT_FALSE(spec.contains("ttlSecondsAfterFinished"));
  const json& pod = spec["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"], "Never");
  EXPECT_EQ(pod["terminationGracePeriodSeconds"], 600);
  EXPECT_EQ(pod["serviceAccountName"], "captf-runner");
  EXPECT_EQ(pod["imagePullSecrets"], json::parse(R"([{"name":"pull"}])"));
  EXPECT_EQ(pod["securityContext"],
            json::parse(R"({"fsGroup":65532,"seccompProfile":{"type":"RuntimeDefault"}})"));

  const json init = containerNamed(pod["initContainers"], "runner");
  EXPECT_EQ(init["image"], r.runner_image);
  EXPECT_EQ(init["command"], json::parse(R"(["/runner","copy","/captf/bin/runner"])"));
  EXPECT_EQ(init["resources"], json::parse(R"({"requests":{"cpu":"10m","memory":"32Mi"},
                            "limits":{"cpu":"100m","memory":"64Mi"}})"));
  EXPECT_EQ(init["securityContext"]["runAsUser"], 65532);
  EXPECT_EQ(init["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(init["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(init["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(init["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_EQ(init["volumeMounts"], json::parse(R"([{"name":"bin","mountPath":"/captf/bin"}])"));

  ASSERT_EQ(pod["containers"].size(), 1U);
  const json source = containerNamed(pod["containers"], "source");
  EXPECT_EQ(source["image"], r.image);
  EXPECT_EQ(source["imagePullPolicy"], "Always");
  EXPECT_EQ(source["command"], json::parse(R"(["/captf/bin/runner","run"])"));
  EXPECT_EQ(source["args"], json(runnerArgs(r)));
  EXPECT_EQ(source["env"], json::parse(R"([
      {"name":"TF_IN_AUTOMATION","value":"1"},
      {"name":"TF_INPUT","value":"0"},
      {"name":"HOME","value":"/captf/work"},
      {"name":"TMPDIR","value":"/tmp"},
      {"name":"KUBE_NAMESPACE","value":"team-a"},
      {"name":"CHECKPOINT_DISABLE","value":"1"},
      {"name":"HTTPS_PROXY","value":"http://proxy:3128"}])"));
  EXPECT_FALSE(source.contains("envFrom")) << "credentials are env entries one by one";
  EXPECT_EQ(source["resources"],
            json::parse(R"({"requests":{"cpu":"250m","memory":"512Mi","ephemeral-storage":"3136Mi"},
                      "limits":{"memory":"2Gi"}})"));
  EXPECT_EQ(source["securityContext"], json::parse(R"({
      "allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]},
      "readOnlyRootFilesystem":true,"seccompProfile":{"type":"RuntimeDefault"}})"));
  EXPECT_EQ(source["volumeMounts"], json::parse(R"([
      {"name":"bin","mountPath":"/captf/bin","readOnly":true},
      {"name":"work","mountPath":"/captf/work"},
      {"name":"tmp","mountPath":"/tmp"},
      {"name":"config","mountPath":"/captf/config","readOnly":true},
      {"name":"credentials","mountPath":"/var/run/captf/credentials","readOnly":true}])"));
  EXPECT_EQ(pod["volumes"], json::parse(R"([
      {"name":"bin","emptyDir":{"sizeLimit":"64Mi"}},
      {"name":"work","emptyDir":{"sizeLimit":"2Gi"}},
      {"name":"tmp","emptyDir":{"sizeLimit":"1Gi"}},
      {"name":"config","secret":{"secretName":"captf-run-captf-c-tc1-apply-a2-abcdef"}},
      {"name":"credentials","secret":{"secretName":"captf-creds-aws","defaultMode":288}}])"));
}

// docs/decisions/manager-identity.md, "Delivery": each text key of the
// mirror is one optional secretKeyRef, after the Job's own variables and
// before jobs.env; a key named like one of those stays a file only. The
// mirror stays mounted whole.
TEST(JobBuilderTest, CredentialEnvKeysAreSecretKeyRefsOfTheMirror) {
  JobBuildRequest r = request();
  r.policy.env = {
      {.name = "HTTPS_PROXY", .value = "http://$(PROXY_USER)@proxy:3128", .value_from = {}}};
  r.credential_env_keys = {"AWS_ACCESS_KEY_ID", "HOME",           "HTTPS_PROXY",
                           "PROXY_USER",        "aws.secret-key", "TF_VAR_x"};
  auto built = buildJob(r);
  ASSERT_TRUE(built.ok()) << built.status();
  const json& pod = (*built)["spec"]["template"]["spec"];
  const json source = containerNamed(pod["containers"], "source");
  const auto ref = [](const std::string& key) {
    return json{
        {"name", key},
        {"valueFrom",
         {{"secretKeyRef", {{"name", "captf-creds-aws"}, {"key", key}, {"optional", true}}}}}};
  };
  EXPECT_EQ(source["env"],
            json::array({
                {{"name", "TF_IN_AUTOMATION"}, {"value", "1"}},
                {{"name", "TF_INPUT"}, {"value", "0"}},
                {{"name", "HOME"}, {"value", "/captf/work"}},
                {{"name", "TMPDIR"}, {"value", "/tmp"}},
                {{"name", "KUBE_NAMESPACE"}, {"value", "team-a"}},
                {{"name", "CHECKPOINT_DISABLE"}, {"value", "1"}},
                ref("AWS_ACCESS_KEY_ID"),
                ref("PROXY_USER"),
                ref("aws.secret-key"),
                // The runner drops it (docs/behaviour/jobs.md), logging its name.
                ref("TF_VAR_x"),
                {{"name", "HTTPS_PROXY"}, {"value", "http://$(PROXY_USER)@proxy:3128"}},
            }));
  EXPECT_FALSE(source.contains("envFrom"));
  EXPECT_EQ(pod["volumes"][4], json::parse(R"({"name":"credentials",
      "secret":{"secretName":"captf-creds-aws","defaultMode":288}})"));

  // No text key: the fixed variables only, the files still mounted.
  r.credential_env_keys.clear();
  r.policy.env.clear();
  built = buildJob(r);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ((*built)["spec"]["template"]["spec"]["containers"][0]["env"].size(), 6U);
  EXPECT_EQ((*built)["spec"]["template"]["spec"]["volumes"][4]["secret"]["secretName"],
            "captf-creds-aws");
}

TEST(JobBuilderTest, EnvVarNamesAreThoseEveryApiServerAccepts) {
  for (const char* name : {"A", "_", "AWS_ACCESS_KEY_ID", "a.b-c", "-x", ".x", "x9"}) {
    EXPECT_TRUE(isEnvVarName(name)) << name;
  }
  for (const char* name : {"", "1KEY", "A B", "A=B", "A/B", "é", "A\nB"}) {
    EXPECT_FALSE(isEnvVarName(name)) << name;
  }
  EXPECT_TRUE(isEnvVarName(std::string(253, 'a')));
  EXPECT_FALSE(isEnvVarName(std::string(254, 'a')));
}

TEST(JobBuilderTest, RestoreProjectsTheBackupChunks) {
  JobBuildRequest r = request(contract::Role::kMachine);
  r.job_name = "captf-m-tc1-restore-a1-abcdef";
  r.operation = api::Operation::kRestore;
  r.attempt = 1;
  r.inputs_hash = "";
  r.options.restore_serial = 9;
  r.restore_chunk_secrets = {"captf-state-backup-x-9", "captf-state-backup-x-9-part-1"};
  auto built = buildJob(r);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ((*built)["metadata"]["annotations"], json({{"captf.io/restore-serial", "9"}}));
  EXPECT_EQ((*built)["spec"]["template"]["spec"]["volumes"][3], json::parse(R"({
      "name":"config","projected":{"sources":[
        {"secret":{"name":"captf-run-captf-m-tc1-restore-a1-abcdef"}},
        {"secret":{"name":"captf-state-backup-x-9",
                   "items":[{"key":"tfstate","path":"restore/0"}]}},
        {"secret":{"name":"captf-state-backup-x-9-part-1",
                   "items":[{"key":"tfstate","path":"restore/1"}]}}]}})"));
}

TEST(JobBuilderTest, AGitSourceFetchesIntoAnEmptyDirWithItsCredentials) {
  JobBuildRequest r = request();
  r.image = "registry.example/runtimes/tofu:1.12.6";
  r.image_reference = r.image;
  r.git = GitFetch{"https://git.example.com/m.git", std::string(40, 'c'), "refs/heads/main",
                   "cluster/aws", "git-creds"};
  auto built = buildJob(r);
  ASSERT_TRUE(built.ok()) << built.status();
  const json& pod = (*built)["spec"]["template"]["spec"];
  const json source = containerNamed(pod["containers"], "source");
  EXPECT_EQ(source["image"], "registry.example/runtimes/tofu:1.12.6");
  const auto args = source["args"].get<std::vector<std::string>>();
  EXPECT_THAT(args, ::testing::Contains("--module=/captf/source/repo/cluster/aws"));
  EXPECT_THAT(args, ::testing::Contains("--git-url=https://git.example.com/m.git"));
  EXPECT_THAT(args, ::testing::Contains("--git-commit=" + std::string(40, 'c')));
  EXPECT_THAT(args, ::testing::Contains("--git-ref=refs/heads/main"));
  EXPECT_THAT(args, ::testing::Contains("--git-checkout=/captf/source/repo"));
  EXPECT_THAT(args, ::testing::Contains("--git-credentials=/var/run/captf/git"));
  EXPECT_THAT(source["volumeMounts"],
              ::testing::Contains(json({{"name", "source"}, {"mountPath", "/captf/source"}})));
  EXPECT_THAT(source["volumeMounts"], ::testing::Contains(json({{"name", "git-credentials"},
                                                                {"mountPath", "/var/run/captf/git"},
                                                                {"readOnly", true}})));
  EXPECT_THAT(pod["volumes"], ::testing::Contains(json::parse(
                                  R"({"name":"source","emptyDir":{"sizeLimit":"1Gi"}})")));
  EXPECT_THAT(pod["volumes"], ::testing::Contains(json::parse(R"({"name":"git-credentials","secret":
                  {"secretName":"git-creds","defaultMode":288}})")));
  EXPECT_EQ((*built)["metadata"]["annotations"]["captf.io/git-commit"], std::string(40, 'c'));

  r.git->commit = "abc";
  EXPECT_EQ(buildJob(r).status().code(), absl::StatusCode::kInvalidArgument);
  r.git->commit = std::string(40, 'c');
  r.git->path = "../x";
  EXPECT_EQ(buildJob(r).status().code(), absl::StatusCode::kInvalidArgument);
}

// docs/behaviour/jobs.md, volumes: every scratch emptyDir has a sizeLimit, and
// the `source` container requests their sum as ephemeral-storage, so the
// scheduler places the pod where that much disk is free. A policy's
// resources that name ephemeral-storage keep their own (a limit below the
// default request would otherwise make the Job invalid).
TEST(JobBuilderTest, ScratchVolumesAreBoundedAndTheirSumIsRequested) {
  const auto sizes = [](const json& pod) {
    std::map<std::string, std::string> out;
    for (const json& volume : pod["volumes"]) {
      if (volume.contains("emptyDir")) {
        out[volume["name"].get<std::string>()] = volume["emptyDir"].value("sizeLimit", "");
      }
    }
    return out;
  };
  const auto pod_of = [](const JobBuildRequest& r) {
    auto built = buildJob(r);
    EXPECT_TRUE(built.ok()) << built.status();
    return built.ok() ? (*built)["spec"]["template"]["spec"] : json::object();
  };
  const auto requested = [](const json& pod) {
    return containerNamed(pod["containers"], "source")["resources"];
  };

  JobBuildRequest r = request();
  json pod = pod_of(r);
  EXPECT_EQ(sizes(pod),
            (std::map<std::string, std::string>{{"bin", "64Mi"}, {"work", "2Gi"}, {"tmp", "1Gi"}}));
  EXPECT_EQ(requested(pod)["requests"]["ephemeral-storage"], "3136Mi");
  EXPECT_EQ(containerNamed(pod["initContainers"], "runner")["resources"]["requests"],
            json::parse(R"({"cpu":"10m","memory":"32Mi"})"))
      << "the init container writes only into bin, which the source container's request covers";

  JobBuildRequest git = request();
  git.image = "registry.example/runtimes/tofu:1.12.6";
  git.git = GitFetch{"https://git.example.com/m.git", std::string(40, 'c'), "", "", ""};
  pod = pod_of(git);
  EXPECT_EQ(sizes(pod), (std::map<std::string, std::string>{
                            {"bin", "64Mi"}, {"work", "2Gi"}, {"tmp", "1Gi"}, {"source", "1Gi"}}));
  EXPECT_EQ(requested(pod)["requests"]["ephemeral-storage"], "4160Mi");

  // The policy's resources replace the defaults whole; the request is added.
  r.policy.resources = api::ResourceRequirements{};
  r.policy.resources.requests["cpu"] = api::Quantity{"1"};
  EXPECT_EQ(requested(pod_of(r)),
            json::parse(R"({"requests":{"cpu":"1","ephemeral-storage":"3136Mi"}})"));
  // Unless they name ephemeral-storage, as a request or as a limit.
  r.policy.resources.requests["ephemeral-storage"] = api::Quantity{"8Gi"};
  EXPECT_EQ(requested(pod_of(r)),
            json::parse(R"({"requests":{"cpu":"1","ephemeral-storage":"8Gi"}})"));
  r.policy.resources.requests.erase("ephemeral-storage");
  r.policy.resources.limits["ephemeral-storage"] = api::Quantity{"1Gi"};
  EXPECT_EQ(requested(pod_of(r)),
            json::parse(R"({"requests":{"cpu":"1"},"limits":{"ephemeral-storage":"1Gi"}})"));
}

// docs/decisions/run-reports.md: with reports the runner gets the address
// and the Job only the token's hash; --runner-events=false gives neither.
TEST(JobBuilderTest, RunReportsPassTheAddressAndOnlyTheTokensHash) {
  JobBuildRequest r = request();
  r.report_address = "captf-runner-reports.captf-system.svc:9444";
  r.report_token_hash = "sha256:0123";
  auto job = buildJob(r);
  ASSERT_TRUE(job.ok()) << job.status();
  const json& args = (*job)["spec"]["template"]["spec"]["containers"][0]["args"];
  EXPECT_THAT(args.get<std::vector<std::string>>(),
              ::testing::Contains("--report-address=captf-runner-reports.captf-system.svc:9444"));
  EXPECT_EQ((*job)["metadata"]["annotations"]["captf.io/report-token-hash"], "sha256:0123");

  r.runner_events = false;
  job = buildJob(r);
  ASSERT_TRUE(job.ok()) << job.status();
  for (const json& arg : (*job)["spec"]["template"]["spec"]["containers"][0]["args"]) {
    EXPECT_FALSE(arg.get<std::string>().starts_with("--report-address")) << arg;
    EXPECT_FALSE(arg.get<std::string>().starts_with("--event-object")) << arg;
  }
  EXPECT_FALSE((*job)["metadata"]
                   .value("annotations", json::object())
                   .contains("captf.io/report-token-hash"));
}

TEST(JobBuilderTest, ApprovedPlanAnnotation) {
  JobBuildRequest r = request();
  r.options.expect_plan = "p1:xyz";
  auto built = buildJob(r);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ((*built)["metadata"]["annotations"]["captf.io/approved-plan"], "p1:xyz");
}

TEST(JobBuilderTest, InvalidRequests) {
  struct Case {
    std::string name{};
    std::function<void(JobBuildRequest&)> breakIt;
    std::string message{};
  };
  const std::vector<Case> cases = {
      {"job name", [](JobBuildRequest& r) { r.job_name.clear(); }, "job_name"},
      {"namespace", [](JobBuildRequest& r) { r.object.ns.clear(); }, "object.ns"},
      {"uid", [](JobBuildRequest& r) { r.object_uid.clear(); }, "object_uid"},
      {"image", [](JobBuildRequest& r) { r.image.clear(); }, "image"},
      {"runner image", [](JobBuildRequest& r) { r.runner_image.clear(); }, "runner_image"},
      {"credentials", [](JobBuildRequest& r) { r.credentials_secret.clear(); },
       "credentials_secret"},
      {"credential env name", [](JobBuildRequest& r) { r.credential_env_keys = {"1KEY"}; },
       "credential_env_keys"},
      {"credential env twice",
       [](JobBuildRequest& r) {
         r.credential_env_keys = {"K", "K"};
       },
       "listed twice"},
      {"attempt", [](JobBuildRequest& r) { r.attempt = 0; }, "attempt"},
      {"guard without hash",
       [](JobBuildRequest& r) {
         r.options.guard_deletes = true;
         r.inputs_hash.clear();
       },
       "inputs_hash"},
      {"guard on a destroy",
       [](JobBuildRequest& r) {
         r.options.guard_deletes = true;
         r.operation = api::Operation::kDestroy;
       },
       "need an apply"},
      {"restore without chunks",
       [](JobBuildRequest& r) {
         r.operation = api::Operation::kRestore;
         r.options.restore_serial = 1;
       },
       "chunk Secrets"},
      {"grace period", [](JobBuildRequest& r) { r.termination_grace_period_seconds = 30; },
       "terminationGracePeriodSeconds"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    JobBuildRequest r = request();
    c.breakIt(r);
    auto built = buildJob(r);
    ASSERT_FALSE(built.ok());
    EXPECT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(built.status().message(), HasSubstr(c.message));
  }
}

} // namespace
} // namespace captf::lifecycle
