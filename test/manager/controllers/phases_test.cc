// The reconcile pass's phases on their own (docs/decisions/manager-reconcile-pass.md,
// "Structure"), each over a hand-built WorkloadPass of a TerraformCluster
// and the in-memory API server:
//   - JobStarter: no Job without credentials in place; an apply never
//     writes over a durable inputs Secret CAPTF did not make (no Lease, no
//     Job); a copy the API server has moved past ends the pass as stale;
//     the run Lease held by another Job is waited for;
//   - RunBookkeeping: no active Job clears status.activeJob; an active one
//     is reported and waited for;
//   - PassInputs: a Git URL that does not parse blocks the inputs.
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/controllers/job_start.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/metrics.h"
#include "manager/controllers/pass_inputs.h"
#include "manager/controllers/run_bookkeeping.h"
#include "manager/controllers/terraform_cluster_kind.h"
#include "manager/kube/clock.h"
#include "manager/kube/metrics.h"
#include "manager/lifecycle/names.h"
#include "manager/lifecycle/ready.h"
#include "manager/workspace/names.h"
#include "test/manager/controllers/fake_deps.h"
#include "test/manager/kube/fake_client.h"
#include "test/manager/kube/fakes.h"

namespace captf::controllers::phases_testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
namespace cond = api::conditions;

constexpr char kPhaseNs[] = "p1";
constexpr char kPhaseName[] = "c1";

class PhaseTest : public ::testing::Test, protected FakeReconcilerDeps {
protected:
  PhaseTest() : kind_(terraformClusterKind(deps())) { store_.put(object()); }

  static json object() {
    return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
            {"kind", "TerraformCluster"},
            {"metadata",
             {{"name", kPhaseName},
              {"namespace", kPhaseNs},
              {"uid", "uid-c1"},
              {"generation", 1},
              {"resourceVersion", "7"}}},
            {"spec", {{"source", {{"image", "registry.local/team/cluster:v1"}}}}}};
  }

  // A pass as reconcilePass sets it up, its credentials in place and a
  // decision to apply from a rendered root.
  std::unique_ptr<WorkloadPass> newPass(const json& as_read) {
    auto pass = std::make_unique<WorkloadPass>(store_, events_);
    pass->object = as_read;
    pass->kind = *kind_->begin(pass->object);
    pass->meta = &pass->kind->meta();
    pass->spec = &pass->kind->spec();
    pass->status = &pass->kind->status();
    pass->original = &pass->kind->original();
    pass->log = kube::Logger(kube::testing::quietLogger());
    pass->generation = 1;
    pass->id = lifecycle::ObjectIdentity{kind_->role(), kPhaseNs, kPhaseName};
    pass->suffix = lifecycle::stateSuffix(pass->id);
    pass->ref = workspace::ObjectRef{kind_->role(), kPhaseNs, kPhaseName, "uid-c1", ""};
    pass->identity.allowed = {"True", "Allowed", ""};
    pass->identity.mirrored = {"True", "Mirrored", ""};
    pass->rbac = {"True", "Ready", ""};
    pass->rendered = workspace::RenderedInputs{.root = {.main_tf_json = "{}", .tfvars_json = "{}"},
                                               .inputs_hash = "h2:one"};
    pass->decision.action = lifecycle::Action::kRunJob;
    pass->decision.operation = api::Operation::kApply;
    pass->decision.attempt = 1;
    pass->decision.inputs_hash = "h2:one";
    pass->source_identity = pass->spec->source.image;
    return pass;
  }

  std::string reason(const WorkloadPass& pass, std::string_view type) const {
    const api::Condition* c = lifecycle::findCondition(pass.status->conditions, type);
    return c == nullptr ? "" : c->reason;
  }
  size_t count(const kube::GroupVersionKind& gvk) {
    kube::ListOptions options;
    options.ns = kPhaseNs;
    return store_.list(gvk, options)->items.size();
  }

  std::unique_ptr<WorkloadKind> kind_;
};

TEST_F(PhaseTest, JobStarterStartsNoJobWithoutCredentials) {
  auto pass = newPass(object());
  pass->identity.allowed = {"False", std::string(cond::kReasonNamespaceNotAllowed), "not here"};
  JobStarter starter(deps(), *kind_);
  ASSERT_TRUE(starter.start(*pass).ok());
  EXPECT_EQ(reason(*pass, cond::kApplyJobSucceeded), cond::kReasonIdentityNotAllowed);
  EXPECT_EQ(pass->result.requeue_after, lifecycle::kLeaseRecheck);
  EXPECT_EQ(count(kinds::kJob), 0U);
  EXPECT_EQ(count(kinds::kLease), 0U);
}

TEST_F(PhaseTest, JobStarterNeverWritesOverADurableInputsSecretItDidNotMake) {
  const std::string name = workspace::durableInputsSecretName(
      workspace::ObjectRef{contract::Role::kCluster, kPhaseNs, kPhaseName, "uid-c1", ""});
  const json foreign = {{"apiVersion", "v1"},
                        {"kind", "Secret"},
                        {"metadata", {{"name", name}, {"namespace", kPhaseNs}}},
                        {"data", {{"k", "dg=="}}}};
  store_.put(foreign);
  auto pass = newPass(object());
  JobStarter starter(deps(), *kind_);
  ASSERT_TRUE(starter.start(*pass).ok());
  EXPECT_EQ(reason(*pass, cond::kApplyJobSucceeded), cond::kReasonInputsSecretConflict);
  EXPECT_THAT(events_.reasons, ElementsAre(std::string(cond::kReasonInputsSecretConflict)));
  EXPECT_EQ(count(kinds::kJob), 0U);
  EXPECT_EQ(count(kinds::kLease), 0U);
  EXPECT_EQ(store_.get(kinds::kSecret, {kPhaseNs, name})->value("data", json()), foreign["data"]);
}

TEST_F(PhaseTest, JobStarterEndsAPassOverACopyTheApiServerMovedPast) {
  json moved = object();
  moved["metadata"]["resourceVersion"] = "8";
  store_.put(moved);
  auto pass = newPass(object());
  JobStarter starter(deps(), *kind_);
  ASSERT_TRUE(starter.start(*pass).ok());
  EXPECT_TRUE(pass->stale);
  EXPECT_EQ(count(kinds::kJob), 0U);
  EXPECT_EQ(count(kinds::kLease), 0U);
}

TEST_F(PhaseTest, JobStarterWaitsForARunLeaseAnotherJobHolds) {
  // The Lease's holder Job exists and runs.
  const std::string holder = "captf-c-c1-apply-a1-other";
  store_.put({{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", holder}, {"namespace", kPhaseNs}, {"uid", "uid-j"}}},
              {"status", {{"active", 1}}}});
  store_.put({{"apiVersion", "coordination.k8s.io/v1"},
              {"kind", "Lease"},
              {"metadata",
               {{"name", lifecycle::runLeaseName(lifecycle::ObjectIdentity{contract::Role::kCluster,
                                                                           kPhaseNs, kPhaseName})},
                {"namespace", kPhaseNs}}},
              {"spec",
               {{"holderIdentity", holder},
                {"leaseDurationSeconds", 3600},
                {"acquireTime", "2023-11-14T22:13:20.000000Z"},
                {"renewTime", "2023-11-14T22:13:20.000000Z"}}}});
  auto pass = newPass(object());
  pass->now = api::Time{std::chrono::time_point_cast<std::chrono::seconds>(clock_.wallNow())};
  JobStarter starter(deps(), *kind_);
  ASSERT_TRUE(starter.start(*pass).ok());
  EXPECT_EQ(reason(*pass, cond::kApplyJobSucceeded), cond::kReasonWaitingForRunLease);
  EXPECT_THAT(events_.reasons, Contains("WaitingForRunLease"));
  EXPECT_EQ(pass->counts.size(), 1U);
  EXPECT_EQ(pass->result.requeue_after, lifecycle::kLeaseRecheck);
  EXPECT_EQ(count(kinds::kJob), 1U); // only the holder
}

TEST_F(PhaseTest, RunBookkeepingWithoutAnActiveJobClearsStatusActiveJob) {
  json as_read = object();
  as_read["status"] = {{"activeJob", {{"name", "gone"}, {"operation", "apply"}, {"attempt", 1}}}};
  auto pass = newPass(as_read);
  ASSERT_TRUE(pass->status->active_job);
  RunBookkeeping bookkeeping(deps(), *kind_);
  EXPECT_FALSE(bookkeeping.waitForActiveJob(*pass));
  EXPECT_FALSE(pass->status->active_job);
}

TEST_F(PhaseTest, RunBookkeepingWaitsForTheActiveJob) {
  auto pass = newPass(object());
  RunJob run;
  run.record.name = "captf-c-c1-apply-a1-abc";
  run.record.operation = api::Operation::kApply;
  run.record.attempt = 1;
  run.record.outcome = lifecycle::JobOutcome::kActive;
  pass->jobs.push_back(run);
  pass->active = &pass->jobs.back();
  RunBookkeeping bookkeeping(deps(), *kind_);
  EXPECT_TRUE(bookkeeping.waitForActiveJob(*pass));
  ASSERT_TRUE(pass->status->active_job);
  EXPECT_EQ(pass->status->active_job->name, run.record.name);
  EXPECT_EQ(reason(*pass, cond::kInfrastructureHealthy), cond::kReasonProvisioning);
  EXPECT_EQ(pass->result.requeue_after, std::chrono::minutes(1));
}

TEST_F(PhaseTest, PassInputsBlockAGitSourceWhoseUrlDoesNotParse) {
  json as_read = object();
  as_read["spec"]["source"] = {{"git",
                                {{"url", "not a url"},
                                 {"runtimeImage", "registry.local/team/runtime:v1"},
                                 {"ref", {{"branch", "main"}}}}}};
  auto pass = newPass(as_read);
  pass->rendered.reset();
  PassInputs inputs(deps(), *kind_);
  ASSERT_TRUE(inputs.reconcileInputs(*pass).ok());
  EXPECT_TRUE(pass->inputs_blocked);
  EXPECT_FALSE(pass->rendered);
  EXPECT_EQ(reason(*pass, cond::kDependenciesReady), cond::kReasonGitCredentialsInvalid);
}

} // namespace
} // namespace captf::controllers::phases_testing
