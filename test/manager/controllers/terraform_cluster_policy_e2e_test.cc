// The TerraformCluster lifecycle beyond apply and destroy, end to end on the
// rig's capi tier (real manager process, real Jobs, real OpenTofu, a real
// Cluster API Cluster owning each object):
//
//   * applyPolicy Manual (docs/reference/api.md, docs/behaviour/lifecycle.md,
//   docs/behaviour/approval.md): a change runs a plan Job
//     whose plan waits in status.plan; a wrong approval applies nothing; an
//     approval whose plan changed before the apply stops with PlanChanged;
//     approving the new plan applies it once and clears status.plan and the
//     annotation; switching back to Automatic applies what waited.
//   * drift (docs/behaviour/drift-and-health.md): scheduled drift Jobs report no drift; an
//   out-of-band
//     change is reported (Report) without applying; Remediate applies once
//     and resolves it.
//   * restore (docs/behaviour/state.md): backups of each serial; restoring an earlier
//     one adopts the backup's inputs hash and re-applies the current inputs.
//   * variablesFrom (docs/reference/api.md, docs/reference/flags.md "Caches"): a change to a
//   labeled source
//     wakes the object at once and applies the new values.
//   * run leases and the cluster operation gate (docs/behaviour/lifecycle.md): a run Lease held
//     by another live Job, and a machine Job of the same cluster applying,
//     each keep the apply waiting (condition, Event, one lease_waits_total
//     count per wait) until that Job finishes; then the apply runs once.
//   * Pod Security (docs/behaviour/security.md#pod-security): the default Job
//     runs in a namespace enforcing baseline; with runAsNonRoot and a
//     non-zero runAsUser it runs in one enforcing restricted.
//
// The noop module's resources are terraform_data, which have no remote
// object a refresh could find changed. The module therefore also reads the
// identity's credential file at plan time: rotating the credentials Secret
// (not an input, so not hashed) changes what OpenTofu plans for unchanged
// inputs. That is the out-of-band change behind the drift and plan-changed
// cases.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "contract/roles.h"
#include "contract/state.h"
#include "manager/api/keys.h"
#include "test/manager/controllers/manager_e2e.h"
#include "test/runner/e2e_support.h"

namespace captf::controllers {
namespace {

using e2e::apply;
using e2e::conditionOf;
using e2e::env;
using e2e::eventually;
using e2e::getJson;
using e2e::kubectl;
using e2e::mergePatch;
using e2e::readyTrue;
using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// The credentials key the module reads (a file under the mirror mount).
constexpr char kTokenKey[] = "ROTATING_TOKEN";
// The generated root calls the role module as module.role (docs/behaviour/inputs.md).
constexpr char kRole[] = "module.role.";
// Waits that include one or more Jobs (a loaded machine runs each in
// tens of seconds).
constexpr std::chrono::seconds kJobWait{480};

std::string str(std::string_view s) {
  return std::string(s);
}

class TerraformClusterPolicyE2eTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    e2e::installManager(manager_);
    ASSERT_FALSE(HasFatalFailure());
    manager_.runner_image = runner::e2e::Images::get().runner();
    const std::string main_tf = runner::e2e::noopModule(contract::Role::kCluster) +
                                "variable \"size\" {\n"
                                "  type    = string\n"
                                "  default = \"small\"\n"
                                "}\n"
                                "resource \"terraform_data\" \"sized\" {\n"
                                "  input = var.size\n"
                                "}\n"
                                "resource \"terraform_data\" \"credential\" {\n"
                                "  input = sha256(file(\"/var/run/captf/credentials/" +
                                std::string(kTokenKey) +
                                "\"))\n"
                                "}\n";
    module_image_ = runner::e2e::Images::get().module("tc-policy", main_tf, env().tofu);
    // Longer than the suite runs, so that no wake-up in these tests comes
    // from a resync: what a test sees follows from what it changed.
    manager_.sync_period = "10h";
    manager_.start();
  }

  static void TearDownTestSuite() { manager_.stopCleanly(); }

  // A tenant `ns` (identity of the same name) with a TerraformCluster `name`
  // (`spec` merged over source and identity) owned by Cluster `cluster`.
  static void createObjects(const std::string& ns, const std::string& name,
                            const std::string& cluster, const json& spec) {
    e2e::createTenant(ns, ns, {{kTokenKey, "rotation-1"}});
    json full = {{"source", {{"image", module_image_}}}, {"identityRef", {{"name", ns}}}};
    full.update(spec);
    e2e::createClusterPair(ns, name, cluster, full);
  }

  // Deletes the Cluster and waits until the TerraformCluster is gone.
  static void deleteObjects(const std::string& ns, const std::string& name,
                            const std::string& cluster) {
    ASSERT_EQ(
        kubectl({"-n", ns, "delete", "clusters.v1beta2.cluster.x-k8s.io", cluster, "--wait=false"})
            .exit_code,
        0);
    EXPECT_TRUE(eventually(
        [&] {
          return kubectl({"-n", ns, "get", "terraformcluster", name}).exit_code != 0;
        },
        kJobWait))
        << tc(ns, name).dump(2);
  }

  static json tc(const std::string& ns, const std::string& name) {
    return getJson({"-n", ns, "get", "terraformcluster", name});
  }
  static std::string suffix(const std::string& ns, const std::string& name) {
    return runner::e2e::stateSuffix(ns, contract::Role::kCluster, name);
  }
  static json stateSecret(const std::string& ns, const std::string& name) {
    return getJson({"-n", ns, "get", "secret", "tfstate-default-" + suffix(ns, name)});
  }
  // The adopted state's captf.io/inputs-hash ("" when none).
  static std::string stateHash(const std::string& ns, const std::string& name) {
    const json secret = stateSecret(ns, name);
    if (!secret.is_object()) {
      return "";
    }
    return secret["metadata"]
        .value("annotations", json::object())
        .value(str(api::kAnnotationInputsHash), "");
  }
  // The state document itself (chunks assembled, gunzipped).
  static json stateDocument(const std::string& ns, const std::string& name) {
    const json secrets =
        getJson({"-n", ns, "get", "secrets", "-l", "tfstateSecretSuffix=" + suffix(ns, name)});
    std::vector<contract::NamedChunk> chunks;
    for (const json& secret : secrets.value("items", json::array())) {
      std::string data;
      if (!absl::Base64Unescape(secret["data"].value("tfstate", ""), &data)) {
        return {};
      }
      chunks.push_back({secret["metadata"]["name"].get<std::string>(), data});
    }
    auto ordered = contract::orderChunks("tfstate-default-" + suffix(ns, name), chunks);
    if (!ordered.ok()) {
      return {};
    }
    auto text = contract::assembleState(*ordered);
    if (!text.ok()) {
      return {};
    }
    json parsed = json::parse(*text, nullptr, false);
    return parsed.is_discarded() ? json() : parsed;
  }
  // The `input` attribute of terraform_data.<resource> in the state ("" if none).
  static std::string stateInput(const std::string& ns, const std::string& name,
                                const std::string& resource) {
    const json state = stateDocument(ns, name);
    for (const json& r : state.value("resources", json::array())) {
      if (r.value("type", "") == "terraform_data" && r.value("name", "") == resource &&
          !r.value("instances", json::array()).empty()) {
        // terraform_data's input is dynamically typed: {"value": ..., "type": ...}.
        json input = r["instances"][0].value("attributes", json::object()).value("input", json());
        if (input.is_object() && input.contains("value")) {
          input = input["value"];
        }
        return input.is_string() ? input.get<std::string>() : input.dump();
      }
    }
    return "";
  }
  // The Jobs of `name` with operation `op`, oldest attempt first.
  static std::vector<json> jobsOf(const std::string& ns, const std::string& name,
                                  const std::string& op) {
    const json list =
        getJson({"-n", ns, "get", "jobs", "-l",
                 str(api::kLabelOwnerName) + "=" + name + "," + str(api::kLabelOp) + "=" + op});
    std::vector<json> jobs;
    for (const json& job : list.value("items", json::array())) {
      jobs.push_back(job);
    }
    std::sort(jobs.begin(), jobs.end(), [](const json& a, const json& b) {
      return std::stoi(a["metadata"]["labels"].value(str(api::kLabelAttempt), "0")) <
             std::stoi(b["metadata"]["labels"].value(str(api::kLabelAttempt), "0"));
    });
    return jobs;
  }
  static bool succeeded(const json& job) {
    return job.value("status", json::object()).value("succeeded", 0) >= 1;
  }
  static std::string annotation(const json& object, std::string_view key) {
    if (!object.is_object()) {
      return "";
    }
    return object["metadata"].value("annotations", json::object()).value(str(key), "");
  }
  static bool hasAnnotation(const json& object, std::string_view key) {
    return object.is_object() &&
           object["metadata"].value("annotations", json::object()).contains(str(key));
  }
  static json statusOf(const json& object) {
    return object.is_object() ? object.value("status", json::object()) : json::object();
  }
  // Sets annotation `key` = `value` on the TerraformCluster.
  static void annotate(const std::string& ns, const std::string& name, std::string_view key,
                       const std::string& value) {
    const rig::CommandResult r = kubectl(
        {"-n", ns, "annotate", "terraformcluster", name, str(key) + "=" + value, "--overwrite"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // Waits until the first apply made the object Provisioned and Ready.
  static void waitProvisioned(const std::string& ns, const std::string& name) {
    ASSERT_TRUE(eventually(
        [&] {
          const json object = tc(ns, name);
          return readyTrue(object) &&
                 statusOf(object)
                     .value("initialization", json::object())
                     .value("provisioned", false) &&
                 !stateHash(ns, name).empty();
        },
        kJobWait))
        << tc(ns, name).dump(2) << "\n"
        << manager_.logText();
  }
  // Whether an Event `reason` regarding `name` exists whose note contains `text`.
  static bool hasEvent(const std::string& ns, const std::string& name, const std::string& reason,
                       const std::string& text = "") {
    for (const json& event : e2e::eventsFor(ns, name, reason)) {
      if (event.value("note", "").find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  // Creates namespace `ns` enforcing Pod Security `level` (baseline or
  // restricted), before any pod of it exists.
  static void enforcePodSecurity(const std::string& ns, const std::string& level) {
    apply({{"apiVersion", "v1"},
           {"kind", "Namespace"},
           {"metadata",
            {{"name", ns}, {"labels", {{"pod-security.kubernetes.io/enforce", level}}}}}});
  }
  // Asks the API server, without creating it, to admit a pod of `spec` in `ns`.
  static rig::CommandResult dryRunPod(const std::string& ns, const json& spec) {
    const json pod = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", "pod-security-probe"}, {"namespace", ns}}},
                      {"spec", spec}};
    return kubectl({"create", "--dry-run=server", "-f", "-"}, pod.dump());
  }

  // One rig and module image per suite (SetUpTestSuite), shared by its cases.
  // NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables): gtest suite state
  static inline std::string module_image_;
  static inline e2e::ManagerRig manager_;
  // NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)
};

// docs/behaviour/approval.md end to end: plan, review, a wrong approval, a plan that changed
// before its approved apply, the approved apply, and back to Automatic.
TEST_F(TerraformClusterPolicyE2eTest, ManualPolicyAppliesOnlyTheApprovedPlan) {
  const std::string ns = "tc-manual";
  const std::string name = "m1";
  createObjects(ns, name, "cm1",
                {{"applyPolicy", "Manual"},
                 {"variables", {{"size", "small"}}},
                 {"drift", {{"intervalSeconds", 0}}}});
  // The first apply is never gated.
  waitProvisioned(ns, name);
  const std::string hash1 = stateHash(ns, name);
  ASSERT_EQ(jobsOf(ns, name, "apply").size(), 1U);
  EXPECT_THAT(jobsOf(ns, name, "plan"), IsEmpty());
  EXPECT_FALSE(statusOf(tc(ns, name)).contains("plan"));

  // 1. A change runs a plan Job; its plan waits in status.plan.
  mergePatch(ns, "terraformcluster", name, {{"spec", {{"variables", {{"size", "large"}}}}}});
  json plan;
  ASSERT_TRUE(eventually(
      [&] {
        const json object = tc(ns, name);
        plan = statusOf(object).value("plan", json());
        return plan.is_object() && plan.value("inputsHash", "") != hash1 &&
               conditionOf(object, "ApplyJobSucceeded", "reason") == "PlanAwaitingApproval";
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  const std::string plan_hash = plan.value("planHash", "");
  const std::string hash2 = plan.value("inputsHash", "");
  EXPECT_THAT(plan_hash, StartsWith("p1:"));
  EXPECT_THAT(hash2, StartsWith("h2:"));
  EXPECT_EQ(plan.value("change", 0), 1) << plan.dump(2);
  EXPECT_EQ(plan.value("add", 0), 0) << plan.dump(2);
  EXPECT_EQ(plan.value("destroy", 0), 0) << plan.dump(2);
  EXPECT_THAT(plan.value("resources", json::array()),
              ElementsAre(std::string(kRole) + "terraform_data.sized (update)"));
  EXPECT_TRUE(plan.contains("createdAt"));
  // The plan came from a plan Job of those inputs.
  const std::vector<json> plans = jobsOf(ns, name, "plan");
  ASSERT_EQ(plans.size(), 1U);
  EXPECT_EQ(plans[0]["metadata"]["name"], plan.value("job", ""));
  EXPECT_TRUE(succeeded(plans[0]));
  EXPECT_EQ(annotation(plans[0], api::kAnnotationInputsHash), hash2);
  // The condition names the exact approve command; Ready stays True.
  json object = tc(ns, name);
  EXPECT_THAT(conditionOf(object, "ApplyJobSucceeded", "status"), "Unknown");
  EXPECT_THAT(
      conditionOf(object, "ApplyJobSucceeded", "message"),
      HasSubstr("annotate terraformcluster " + name + " captf.io/approve-plan=" + plan_hash));
  EXPECT_TRUE(readyTrue(object));
  EXPECT_TRUE(eventually([&] { return hasEvent(ns, name, "PlanReady", plan_hash); }))
      << json(e2e::eventsFor(ns, name)).dump(2);
  // Nothing applied.
  EXPECT_EQ(stateHash(ns, name), hash1);
  EXPECT_EQ(jobsOf(ns, name, "apply").size(), 1U);

  // 2. An approval naming another plan applies nothing. The same patch
  //    bumps the generation (spec.jobs is not hashed), so observedGeneration
  //    shows a pass that read the approval.
  const std::string wrong = "p1:" + std::string(64, '0');
  mergePatch(ns, "terraformcluster", name,
             {{"metadata", {{"annotations", {{str(api::kAnnotationApprovePlan), wrong}}}}},
              {"spec", {{"jobs", {{"successfulJobsHistoryLimit", 4}}}}}});
  ASSERT_TRUE(eventually([&] {
    const json o = tc(ns, name);
    return o.is_object() &&
           statusOf(o).value("observedGeneration", 0) == o["metadata"].value("generation", -1);
  })) << tc(ns, name).dump(2);
  object = tc(ns, name);
  EXPECT_EQ(jobsOf(ns, name, "apply").size(), 1U);
  EXPECT_EQ(stateHash(ns, name), hash1);
  EXPECT_EQ(statusOf(object)["plan"].value("planHash", ""), plan_hash);
  EXPECT_EQ(conditionOf(object, "ApplyJobSucceeded", "reason"), "PlanAwaitingApproval");
  // A stale approval persists until consumed.
  EXPECT_EQ(annotation(object, api::kAnnotationApprovePlan), wrong);

  // 3. The plan changes between review and apply: the credential the module
  //    reads is rotated, then the reviewed plan is approved. The approved
  //    apply re-plans, finds an extra change and stops (PlanChanged); its
  //    plan replaces status.plan and nothing is applied.
  e2e::rotateCredentials(ns, {{kTokenKey, "rotation-2"}});
  annotate(ns, name, api::kAnnotationApprovePlan, plan_hash);
  json changed;
  ASSERT_TRUE(eventually(
      [&] {
        const json o = tc(ns, name);
        changed = statusOf(o).value("plan", json());
        return changed.is_object() && changed.value("planHash", "") != plan_hash &&
               conditionOf(o, "ApplyJobSucceeded", "reason") == "PlanChanged";
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  const std::string changed_hash = changed.value("planHash", "");
  EXPECT_EQ(changed.value("inputsHash", ""), hash2);
  EXPECT_EQ(changed.value("change", 0), 2) << changed.dump(2);
  EXPECT_THAT(changed.value("resources", json::array()),
              ElementsAre(std::string(kRole) + "terraform_data.credential (update)",
                          std::string(kRole) + "terraform_data.sized (update)"));
  std::vector<json> applies = jobsOf(ns, name, "apply");
  ASSERT_EQ(applies.size(), 2U);
  EXPECT_EQ(applies[1]["metadata"]["name"], changed.value("job", ""));
  EXPECT_EQ(annotation(applies[1], api::kAnnotationApprovedPlan), plan_hash);
  EXPECT_TRUE(eventually([&] {
    return hasAnnotation(jobsOf(ns, name, "apply")[1], api::kAnnotationPlanChanged);
  })) << jobsOf(ns, name, "apply")[1].dump(2);
  EXPECT_THAT(conditionOf(tc(ns, name), "ApplyJobSucceeded", "message"),
              HasSubstr("captf.io/approve-plan=" + changed_hash));
  EXPECT_TRUE(eventually([&] { return hasEvent(ns, name, "PlanChanged"); }));
  EXPECT_EQ(stateHash(ns, name), hash1);
  EXPECT_EQ(stateInput(ns, name, "sized"), "small");

  // 4. Approving the new plan applies it once; the approval and status.plan
  //    are cleared.
  annotate(ns, name, api::kAnnotationApprovePlan, changed_hash);
  ASSERT_TRUE(eventually(
      [&] {
        const json o = tc(ns, name);
        return stateHash(ns, name) == hash2 && !statusOf(o).contains("plan") &&
               !hasAnnotation(o, api::kAnnotationApprovePlan) &&
               conditionOf(o, "ApplyJobSucceeded", "reason") == "ApplySucceeded";
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  applies = jobsOf(ns, name, "apply");
  ASSERT_EQ(applies.size(), 3U);
  EXPECT_TRUE(succeeded(applies[2]));
  EXPECT_EQ(annotation(applies[2], api::kAnnotationApprovedPlan), changed_hash);
  EXPECT_EQ(stateInput(ns, name, "sized"), "large");
  EXPECT_TRUE(readyTrue(tc(ns, name)));
  EXPECT_TRUE(eventually([&] {
    return hasEvent(ns, name, "PlanApproved", changed_hash) &&
           hasEvent(ns, name, "PlanApplied", changed_hash);
  })) << json(e2e::eventsFor(ns, name)).dump(2);

  // 5. Another change waits for approval; switching to Automatic applies it
  //    (guarded, no plan approval) and clears status.plan.
  mergePatch(ns, "terraformcluster", name, {{"spec", {{"variables", {{"size", "medium"}}}}}});
  std::string hash3;
  ASSERT_TRUE(eventually(
      [&] {
        const json o = tc(ns, name);
        const json p = statusOf(o).value("plan", json());
        hash3 = p.is_object() ? p.value("inputsHash", "") : "";
        return !hash3.empty() && hash3 != hash2 &&
               conditionOf(o, "ApplyJobSucceeded", "reason") == "PlanAwaitingApproval";
      },
      kJobWait))
      << tc(ns, name).dump(2);
  EXPECT_EQ(jobsOf(ns, name, "apply").size(), 3U);
  mergePatch(ns, "terraformcluster", name, {{"spec", {{"applyPolicy", "Automatic"}}}});
  ASSERT_TRUE(eventually(
      [&] {
        const json o = tc(ns, name);
        return stateHash(ns, name) == hash3 && !statusOf(o).contains("plan") &&
               conditionOf(o, "ApplyJobSucceeded", "reason") == "ApplySucceeded";
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  applies = jobsOf(ns, name, "apply");
  ASSERT_FALSE(applies.empty());
  EXPECT_FALSE(hasAnnotation(applies.back(), api::kAnnotationApprovedPlan));
  EXPECT_EQ(annotation(applies.back(), api::kAnnotationInputsHash), hash3);
  EXPECT_EQ(stateInput(ns, name, "sized"), "medium");

  deleteObjects(ns, name, "cm1");
}

// docs/behaviour/drift-and-health.md: drift Jobs on a short interval report no drift; an
// out-of-band change is reported without applying (Report); Remediate applies once and resolves it.
TEST_F(TerraformClusterPolicyE2eTest, DriftIsCheckedReportedAndRemediated) {
  const std::string ns = "tc-drift";
  const std::string name = "d1";
  createObjects(ns, name, "cd1",
                {{"variables", {{"size", "small"}}},
                 {"drift", {{"intervalSeconds", 10}, {"action", "Report"}}}});
  waitProvisioned(ns, name);
  const std::string hash = stateHash(ns, name);
  const auto drift_gauge = [&] {
    return e2e::metricValue(manager_.metrics(), "captf_drift_detected",
                            {{"kind", "TerraformCluster"}, {"namespace", ns}, {"name", name}});
  };

  // A scheduled drift check finds nothing.
  ASSERT_TRUE(eventually(
      [&] {
        const json o = tc(ns, name);
        return conditionOf(o, "DriftDetected", "reason") == "NoDrift" &&
               conditionOf(o, "DriftJobSucceeded", "reason") == "DriftChecked";
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  json object = tc(ns, name);
  EXPECT_EQ(conditionOf(object, "DriftDetected", "status"), "False");
  EXPECT_TRUE(statusOf(object).contains("lastDriftCheck"));
  std::vector<json> drifts = jobsOf(ns, name, "drift");
  ASSERT_FALSE(drifts.empty());
  EXPECT_TRUE(std::any_of(drifts.begin(), drifts.end(), succeeded));
  EXPECT_EQ(drift_gauge(), 0.0);
  EXPECT_TRUE(readyTrue(object));

  // The credential the module reads is rotated: the next check reports
  // drift (Report: condition, Event, gauge) and applies nothing.
  e2e::rotateCredentials(ns, {{kTokenKey, "rotation-2"}});
  ASSERT_TRUE(eventually(
      [&] { return conditionOf(tc(ns, name), "DriftDetected", "reason") == "DriftReported"; },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  object = tc(ns, name);
  EXPECT_EQ(conditionOf(object, "DriftDetected", "status"), "True");
  const json last_run = statusOf(object).value("lastRun", json::object());
  EXPECT_EQ(last_run.value("operation", ""), "drift");
  const json drift = last_run.value("drift", json::object());
  EXPECT_EQ(drift.value("change", 0), 1) << last_run.dump(2);
  EXPECT_THAT(drift.value("resources", json::array()),
              Contains(std::string(kRole) + "terraform_data.credential"));
  EXPECT_THAT(conditionOf(object, "DriftDetected", "message"),
              HasSubstr(last_run.value("job", "")));
  EXPECT_TRUE(eventually([&] { return hasEvent(ns, name, "DriftDetected"); }))
      << json(e2e::eventsFor(ns, name)).dump(2);
  EXPECT_TRUE(eventually([&] { return drift_gauge() == 1.0; }));
  EXPECT_TRUE(readyTrue(object)); // drift is never part of Ready
  // Still nothing applied after one more check reported it again.
  const std::string reported_by = last_run.value("job", "");
  ASSERT_TRUE(eventually(
      [&] {
        const json o = tc(ns, name);
        const json run = statusOf(o).value("lastRun", json::object());
        return run.value("operation", "") == "drift" && run.value("job", "") != reported_by &&
               conditionOf(o, "DriftDetected", "reason") == "DriftReported";
      },
      kJobWait))
      << tc(ns, name).dump(2);
  EXPECT_EQ(jobsOf(ns, name, "apply").size(), 1U);
  EXPECT_EQ(stateHash(ns, name), hash);

  // Remediate: the next check that finds the drift starts one remediation
  // apply of the current inputs; its success resolves the drift, and the
  // checks after it find none.
  mergePatch(ns, "terraformcluster", name, {{"spec", {{"drift", {{"action", "Remediate"}}}}}});
  std::string remediation;
  ASSERT_TRUE(eventually(
      [&] {
        for (const json& job : jobsOf(ns, name, "apply")) {
          if (annotation(job, api::kAnnotationDriftRemediation) == "true" && succeeded(job)) {
            remediation = job["metadata"]["name"];
          }
        }
        return !remediation.empty() &&
               conditionOf(tc(ns, name), "DriftDetected", "reason") == "NoDrift";
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  EXPECT_TRUE(eventually([&] {
    return hasEvent(ns, name, "DriftRemediationStarted", remediation) &&
           hasEvent(ns, name, "DriftResolved");
  })) << json(e2e::eventsFor(ns, name)).dump(2);
  // A drift check after the remediation finds no drift, and the remediation
  // ran exactly once.
  const int remediation_attempt = std::stoi(
      jobsOf(ns, name, "apply").back()["metadata"]["labels"].value(str(api::kLabelAttempt), "0"));
  ASSERT_TRUE(eventually(
      [&] {
        const std::vector<json> applies = jobsOf(ns, name, "apply");
        const std::vector<json> checks = jobsOf(ns, name, "drift");
        const std::string applied_at =
            applies.back()["metadata"]["creationTimestamp"].get<std::string>();
        const bool checked_after = std::any_of(checks.begin(), checks.end(), [&](const json& job) {
          return succeeded(job) &&
                 job["metadata"]["creationTimestamp"].get<std::string>() > applied_at;
        });
        const json o = tc(ns, name);
        return checked_after && conditionOf(o, "DriftDetected", "reason") == "NoDrift" &&
               statusOf(o).value("lastRun", json::object()).value("operation", "") == "drift";
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  int remediations = 0;
  for (const json& job : jobsOf(ns, name, "apply")) {
    remediations += annotation(job, api::kAnnotationDriftRemediation) == "true" ? 1 : 0;
  }
  EXPECT_EQ(remediations, 1);
  EXPECT_EQ(std::stoi(jobsOf(ns, name, "apply")
                          .back()["metadata"]["labels"]
                          .value(str(api::kLabelAttempt), "0")),
            remediation_attempt);
  EXPECT_EQ(stateHash(ns, name), hash); // the same inputs, applied again
  EXPECT_TRUE(eventually([&] { return drift_gauge() == 0.0; }));

  deleteObjects(ns, name, "cd1");
}

// docs/behaviour/state.md: each new serial is backed up; restoring an earlier backup
// pushes it, removes the request, adopts the backup's inputs hash, and the
// current inputs (which differ) are applied again.
TEST_F(TerraformClusterPolicyE2eTest, RestoreAdoptsTheBackupAndReappliesCurrentInputs) {
  const std::string ns = "tc-restore";
  const std::string name = "r1";
  createObjects(ns, name, "cr1",
                {{"variables", {{"size", "small"}}}, {"drift", {{"intervalSeconds", 0}}}});
  waitProvisioned(ns, name);
  const std::string hash1 = stateHash(ns, name);
  // The first serial is backed up.
  std::int64_t serial1 = 0;
  ASSERT_TRUE(eventually([&] {
    const json backups = statusOf(tc(ns, name)).value("stateBackups", json::array());
    if (backups.size() != 1) {
      return false;
    }
    serial1 = backups[0].value("serial", 0);
    return serial1 > 0;
  })) << tc(ns, name).dump(2);

  // A change is applied and its serial backed up too.
  mergePatch(ns, "terraformcluster", name, {{"spec", {{"variables", {{"size", "large"}}}}}});
  std::string hash2;
  ASSERT_TRUE(eventually(
      [&] {
        hash2 = stateHash(ns, name);
        return !hash2.empty() && hash2 != hash1 &&
               statusOf(tc(ns, name)).value("stateBackups", json::array()).size() == 2;
      },
      kJobWait))
      << tc(ns, name).dump(2);
  EXPECT_EQ(stateInput(ns, name, "sized"), "large");
  const size_t applies_before = jobsOf(ns, name, "apply").size();
  ASSERT_EQ(applies_before, 2U);

  // Restore the first serial.
  annotate(ns, name, api::kAnnotationRestoreState, std::to_string(serial1));
  ASSERT_TRUE(eventually(
      [&] {
        const json o = tc(ns, name);
        return conditionOf(o, "RestoreJobSucceeded", "reason") == "StateRestored" &&
               !hasAnnotation(o, api::kAnnotationRestoreState);
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  const std::vector<json> restores = jobsOf(ns, name, "restore");
  ASSERT_EQ(restores.size(), 1U);
  EXPECT_TRUE(succeeded(restores[0]));
  EXPECT_EQ(annotation(restores[0], api::kAnnotationRestoreSerial), std::to_string(serial1));
  EXPECT_TRUE(eventually([&] { return hasEvent(ns, name, "StateRestored"); }));

  // The restored state carries the backup's inputs hash, so the current
  // inputs (size=large) differ and are applied again: one more apply, and
  // the state ends with the current inputs and hash.
  ASSERT_TRUE(eventually(
      [&] {
        const std::vector<json> applies = jobsOf(ns, name, "apply");
        return applies.size() == applies_before + 1 && succeeded(applies.back()) &&
               stateHash(ns, name) == hash2 &&
               conditionOf(tc(ns, name), "ApplyJobSucceeded", "reason") == "ApplySucceeded";
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  EXPECT_EQ(annotation(jobsOf(ns, name, "apply").back(), api::kAnnotationInputsHash), hash2);
  EXPECT_EQ(stateInput(ns, name, "sized"), "large");
  // The restore's own adoption (the backup's hash), before the re-apply.
  EXPECT_TRUE(eventually([&] {
    return hasEvent(ns, name, "StateAdopted",
                    restores[0]["metadata"]["name"].get<std::string>() +
                        " adopted with inputs hash " + hash1);
  })) << json(e2e::eventsFor(ns, name)).dump(2);
  EXPECT_TRUE(readyTrue(tc(ns, name)));

  deleteObjects(ns, name, "cr1");
}

// docs/reference/flags.md "Caches": a labeled variablesFrom source is watched (data stripped);
// changing it wakes the object, whose next pass reads the new values from
// the API server and applies them. With a 10-minute sync period only the
// watch can do that within seconds.
TEST_F(TerraformClusterPolicyE2eTest, AVariablesSourceChangeIsAppliedAtOnce) {
  const std::string ns = "tc-vars";
  const std::string name = "v1";
  e2e::createTenant(ns, ns, {{kTokenKey, "rotation-1"}});
  apply(
      {{"apiVersion", "v1"},
       {"kind", "ConfigMap"},
       {"metadata",
        {{"name", "sizes"}, {"namespace", ns}, {"labels", {{str(api::kLabelVariables), "true"}}}}},
       {"data", {{"size", "medium"}}}});
  createObjects(ns, name, "cv1",
                {{"variablesFrom", json::array({{{"configMapRef", {{"name", "sizes"}}}}})},
                 {"drift", {{"intervalSeconds", 0}}}});
  waitProvisioned(ns, name);
  EXPECT_EQ(stateInput(ns, name, "sized"), "medium");
  ASSERT_EQ(jobsOf(ns, name, "apply").size(), 1U);

  mergePatch(ns, "configmap", "sizes", {{"data", {{"size", "huge"}}}});
  ASSERT_TRUE(eventually(
      [&] {
        const std::vector<json> applies = jobsOf(ns, name, "apply");
        return applies.size() == 2 && succeeded(applies.back()) &&
               stateInput(ns, name, "sized") == "huge";
      },
      kJobWait))
      << "the ConfigMap's change did not bring a second apply (no resync can: sync period 10h)\n"
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();

  deleteObjects(ns, name, "cv1");
}

// A Job standing in for another run (another manager's, or a machine's of
// the same cluster): a managed apply Job with `labels` that sleeps
// `seconds` in the module image (no runner, no Secrets).
void holderJob(const std::string& ns, const std::string& name, const json& labels, int seconds,
               const std::string& image) {
  json all = {{str(api::kLabelManaged), "true"},
              {str(api::kLabelOp), "apply"},
              {str(api::kLabelAttempt), "1"}};
  all.update(labels);
  apply({{"apiVersion", "batch/v1"},
         {"kind", "Job"},
         {"metadata", {{"name", name}, {"namespace", ns}, {"labels", all}}},
         {"spec",
          {{"backoffLimit", 0},
           {"template",
            {{"spec",
              {{"restartPolicy", "Never"},
               {"automountServiceAccountToken", false},
               {"containers",
                json::array(
                    {{{"name", "source"},
                      {"image", image},
                      {"command", json::array({"/captf/module/child",
                                               "sleep:" + std::to_string(seconds)})}}})}}}}}}}});
}

std::string jobCompletion(const std::string& ns, const std::string& name) {
  return getJson({"-n", ns, "get", "job", name})
      .value("status", json::object())
      .value("completionTime", "");
}

double appliesCounted(const e2e::ManagerRig& manager) {
  return e2e::metricValue(manager.metrics(), "captf_jobs_total",
                          {{"kind", "TerraformCluster"}, {"op", "apply"}, {"result", "succeeded"}})
      .value_or(0);
}

double leaseWaits(const e2e::ManagerRig& manager, const std::string& reason) {
  return e2e::metricValue(manager.metrics(), "captf_lease_waits_total",
                          {{"kind", "TerraformCluster"}, {"reason", reason}})
      .value_or(0);
}

// docs/behaviour/lifecycle.md run lease: the object's run Lease is held by another live Job (as
// after a leader handover, or by an overlapping --watch-filter manager).
// The apply waits, counted once, and takes the Lease over once that Job
// has finished.
TEST_F(TerraformClusterPolicyE2eTest, ARunLeaseHeldByALiveJobDelaysTheApplyUntilItFinishes) {
  const std::string ns = "tc-run-lease";
  const std::string name = "l1";
  const std::string lease = "captf-run-" + suffix(ns, name);
  const double waits_before = leaseWaits(manager_, "run_lease");
  const double applies_before = appliesCounted(manager_);
  e2e::createTenant(ns, ns, {{kTokenKey, "rotation-1"}});
  holderJob(ns, "other-manager-apply", json::object(), 45, module_image_);
  // Unlabelled, so the orphan sweep leaves it alone before the object exists.
  apply({{"apiVersion", "coordination.k8s.io/v1"},
         {"kind", "Lease"},
         {"metadata", {{"name", lease}, {"namespace", ns}}},
         {"spec", {{"holderIdentity", "other-manager-apply"}, {"leaseDurationSeconds", 600}}}});
  createObjects(ns, name, "crl1", {{"drift", {{"intervalSeconds", 0}}}});

  ASSERT_TRUE(eventually(
      [&] {
        const json object = tc(ns, name);
        return conditionOf(object, "ApplyJobSucceeded", "reason") == "WaitingForRunLease" &&
               conditionOf(object, "ApplyJobSucceeded", "status") == "Unknown" &&
               conditionOf(object, "ApplyJobSucceeded", "message").find("other-manager-apply") !=
                   std::string::npos;
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  EXPECT_TRUE(eventually([&] {
    return hasEvent(ns, name, "WaitingForRunLease", "other-manager-apply");
  })) << json(e2e::eventsFor(ns, name)).dump(2);
  EXPECT_THAT(jobsOf(ns, name, "apply"), IsEmpty()) << "no Job while another holds the lease";

  waitProvisioned(ns, name);
  const std::vector<json> applies = jobsOf(ns, name, "apply");
  ASSERT_EQ(applies.size(), 1U);
  const std::string holder_done = jobCompletion(ns, "other-manager-apply");
  ASSERT_FALSE(holder_done.empty()) << "the apply ran while the holder was live";
  // RFC 3339 UTC timestamps of one clock compare as strings.
  EXPECT_GE(applies[0]["metadata"].value("creationTimestamp", ""), holder_done);
  // Taken over (the manager's labels), and released once the apply was
  // bookkept.
  const json taken = getJson({"-n", ns, "get", "lease", lease});
  EXPECT_EQ(taken["metadata"].value("labels", json::object()).value(str(api::kLabelLease), ""),
            "run")
      << taken.dump(2);
  EXPECT_EQ(taken["spec"].value("holderIdentity", ""), "") << taken.dump(2);
  // Re-checked every 30 s while the holder ran 45 s: still one wait.
  EXPECT_EQ(leaseWaits(manager_, "run_lease") - waits_before, 1);
  // The finished Job counts once however many passes saw it.
  EXPECT_TRUE(eventually([&] { return appliesCounted(manager_) - applies_before == 1; }));
  EXPECT_EQ(appliesCounted(manager_) - applies_before, 1);

  deleteObjects(ns, name, "crl1");
  EXPECT_NE(kubectl({"-n", ns, "get", "lease", lease}).exit_code, 0)
      << "final cleanup deletes the run Lease";
}

// docs/behaviour/lifecycle.md cluster operation gate: a machine of the cluster is applying. The
// cluster's apply takes the cluster write Lease, waits for the machine's
// Job to finish (counted once), then runs.
TEST_F(TerraformClusterPolicyE2eTest, AClusterApplyWaitsForTheMachineOperationsOfItsCluster) {
  const std::string ns = "tc-gate";
  const std::string name = "g1";
  const std::string cluster = "cg1";
  const double waits_before = leaseWaits(manager_, "machine_operations");
  e2e::createTenant(ns, ns, {{kTokenKey, "rotation-1"}});
  holderJob(ns, "machine-apply",
            {{str(api::kLabelOwnerKind), "TerraformMachine"},
             {str(api::kLabelOwnerName), "m1"},
             {str(api::kLabelClusterName), cluster}},
            20, module_image_);
  createObjects(ns, name, cluster, {{"drift", {{"intervalSeconds", 0}}}});

  ASSERT_TRUE(eventually(
      [&] {
        const json object = tc(ns, name);
        return conditionOf(object, "ApplyJobSucceeded", "reason") ==
                   "WaitingForMachineOperations" &&
               conditionOf(object, "ApplyJobSucceeded", "status") == "Unknown";
      },
      kJobWait))
      << tc(ns, name).dump(2) << "\n"
      << manager_.logText();
  EXPECT_TRUE(eventually([&] { return hasEvent(ns, name, "WaitingForMachineOperations"); }))
      << json(e2e::eventsFor(ns, name)).dump(2);
  // The cluster write Lease is held while waiting, so new machine
  // operations queue behind the cluster's.
  const json leases =
      getJson({"-n", ns, "get", "leases", "-l", str(api::kLabelLease) + "=cluster"});
  ASSERT_EQ(leases.value("items", json::array()).size(), 1U) << leases.dump(2);
  EXPECT_THAT(leases["items"][0]["spec"].value("holderIdentity", ""),
              StartsWith("captf-c-" + name + "-apply-a1-"));
  EXPECT_THAT(jobsOf(ns, name, "apply"), IsEmpty());

  waitProvisioned(ns, name);
  const std::vector<json> applies = jobsOf(ns, name, "apply");
  ASSERT_EQ(applies.size(), 1U);
  const std::string machine_done = jobCompletion(ns, "machine-apply");
  ASSERT_FALSE(machine_done.empty());
  EXPECT_GE(applies[0]["metadata"].value("creationTimestamp", ""), machine_done);
  EXPECT_EQ(leaseWaits(manager_, "machine_operations") - waits_before, 1);

  deleteObjects(ns, name, cluster);
}

// docs/behaviour/security.md#pod-security: the default Job's pod is admitted
// where Pod Security baseline is enforced, apply and destroy alike.
TEST_F(TerraformClusterPolicyE2eTest, TheDefaultJobRunsWherePodSecurityBaselineIsEnforced) {
  const std::string ns = "tc-pss-baseline";
  const std::string name = "b1";
  enforcePodSecurity(ns, "baseline");
  createObjects(ns, name, "cb1", {{"drift", {{"intervalSeconds", 0}}}});
  waitProvisioned(ns, name);
  const std::vector<json> applies = jobsOf(ns, name, "apply");
  ASSERT_EQ(applies.size(), 1U);
  EXPECT_TRUE(succeeded(applies[0]));

  // The scratch volumes' bounds, as the API server stored them
  // (docs/behaviour/jobs.md).
  json spec = applies[0]["spec"]["template"]["spec"];
  EXPECT_EQ(spec["containers"][0]["resources"]["requests"]["ephemeral-storage"], "3136Mi");
  for (const json& volume : spec["volumes"]) {
    if (volume.contains("emptyDir")) {
      EXPECT_TRUE(volume["emptyDir"].contains("sizeLimit")) << volume.dump();
    }
  }

  // The namespace does enforce baseline: the same pod on the node's
  // network is refused.
  spec["hostNetwork"] = true;
  const rig::CommandResult refused = dryRunPod(ns, spec);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, HasSubstr("violates PodSecurity \"baseline:latest\""));
  EXPECT_THAT(refused.output, HasSubstr("hostNetwork=true"));

  deleteObjects(ns, name, "cb1");
}

// docs/behaviour/security.md#pod-security: with runAsNonRoot and a non-zero
// runAsUser in jobs.podSecurityContext (the other restricted settings are
// the defaults) the Job's pod is admitted where Pod Security restricted is
// enforced; without them it is not.
TEST_F(TerraformClusterPolicyE2eTest,
       WithRunAsNonRootTheJobRunsWherePodSecurityRestrictedIsEnforced) {
  const std::string ns = "tc-pss-restricted";
  const std::string name = "r1";
  enforcePodSecurity(ns, "restricted");
  createObjects(
      ns, name, "cr1",
      {{"drift", {{"intervalSeconds", 0}}},
       {"jobs", {{"podSecurityContext", {{"runAsNonRoot", true}, {"runAsUser", 65532}}}}}});
  waitProvisioned(ns, name);
  const std::vector<json> applies = jobsOf(ns, name, "apply");
  ASSERT_EQ(applies.size(), 1U);
  EXPECT_TRUE(succeeded(applies[0]));

  // The default Job's pod (the same without the two settings) is refused.
  json spec = applies[0]["spec"]["template"]["spec"];
  spec["securityContext"].erase("runAsNonRoot");
  spec["securityContext"].erase("runAsUser");
  const rig::CommandResult refused = dryRunPod(ns, spec);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, HasSubstr("violates PodSecurity \"restricted:latest\""));
  EXPECT_THAT(refused.output, HasSubstr("runAsNonRoot != true"));
  EXPECT_THAT(refused.output, HasSubstr("container \"source\""));

  deleteObjects(ns, name, "cr1");
}

} // namespace
} // namespace captf::controllers
