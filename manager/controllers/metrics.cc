#include "manager/controllers/metrics.h"

#include <map>

#include "contract/roles.h"
#include "manager/api/enum_names.h"
#include "manager/api/keys.h"
#include "manager/api/workspace.h"
#include "manager/controllers/kinds.h"
#include "manager/kube/object.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/history.h"

namespace captf::controllers {

namespace {

using kube::str;

constexpr char kJobsActive[] = "captf_jobs_active";

std::string alpha(const char* help) {
  return std::string("[ALPHA] ") + help;
}

std::string jobsActiveHelp() {
  return alpha("Runner Jobs running now, from the Job cache.");
}

// Jobs run from seconds to the one-hour default deadline.
std::vector<double> jobBuckets() {
  return {1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200};
}

} // namespace

CaptfMetrics::CaptfMetrics(kube::MetricsRegistry& r, const std::string& version,
                           const std::string& commit)
    : jobs_total(
          r.counter("captf_jobs_total", alpha("Completed runner Jobs."), {"kind", "op", "result"})),
      job_duration_seconds(r.histogram("captf_job_duration_seconds",
                                       alpha("Wall time of runner Jobs from start to finish."),
                                       {"kind", "op", "result"}, jobBuckets())),
      job_step_duration_seconds(r.histogram(
          "captf_job_step_duration_seconds", alpha("Duration of the steps of runner Jobs."),
          {"kind", "op", "step"}, {0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600})),
      job_queue_seconds(
          r.histogram("captf_job_queue_seconds",
                      alpha("Time from Job creation until its source container started."),
                      {"kind", "op"}, {0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600})),
      job_errors_total(r.counter("captf_job_errors_total",
                                 alpha("Runner Jobs that did not succeed."),
                                 {"kind", "op", "error_kind", "step"})),
      job_attempts(r.histogram("captf_job_attempts",
                               alpha("Attempts a succeeded Job needed (1 + failed Jobs of its "
                                     "operation since it last succeeded)."),
                               {"kind", "op"}, {1, 2, 3, 4, 5, 10})),
      resources_changed_total(r.counter("captf_resources_changed_total",
                                        alpha("Resources changed by runner Jobs."),
                                        {"kind", "op", "action"})),
      drift_resources_total(r.counter("captf_drift_resources_total",
                                      alpha("Resources a drift Job found to add/change/destroy."),
                                      {"kind", "action"})),
      reconcile_op_decisions_total(r.counter("captf_reconcile_op_decisions_total",
                                             alpha("What reconcile decided to run, and why."),
                                             {"kind", "op", "reason"})),
      state_read_errors_total(r.counter("captf_state_read_errors_total",
                                        alpha("State reads that turned unreadable."),
                                        {"kind", "reason"})),
      outputs_invalid_total(r.counter("captf_outputs_invalid_total",
                                      alpha("Module outputs that turned invalid."),
                                      {"kind", "reason"})),
      drift_detected(r.gauge("captf_drift_detected",
                             alpha("1 while DriftDetected is True, else 0."),
                             {"kind", "namespace", "name"})),
      ready(r.gauge("captf_ready", alpha("Ready condition: 1 True, 0 False, -1 Unknown."),
                    {"kind", "namespace", "name"})),
      infrastructure_healthy(
          r.gauge("captf_infrastructure_healthy",
                  alpha("InfrastructureHealthy condition: 1 True, 0 False, -1 Unknown."),
                  {"kind", "namespace", "name"})),
      state_resources(r.gauge("captf_state_resources",
                              alpha("Managed resources in the object's state."),
                              {"kind", "namespace", "name"})),
      state_bytes(r.gauge("captf_state_bytes",
                          alpha("Compressed state size summed over its Secrets."),
                          {"kind", "namespace", "name"})),
      inputs_bytes(r.gauge("captf_inputs_bytes",
                           alpha("Size of the rendered main.tf.json and terraform.tfvars.json."),
                           {"kind", "namespace", "name"})),
      last_success_timestamp_seconds(
          r.gauge("captf_last_success_timestamp_seconds",
                  alpha("Unix time the newest successful Job of the operation finished. The "
                        "drift and refresh series exist only while the object is scheduled for "
                        "them (not paused or deleting, with a drift interval, respectively a "
                        "recurring refresh) and then carry status.lastDriftCheck and "
                        "status.lastRefresh."),
                  {"kind", "namespace", "name", "op"})),
      unhealthy_samples(r.gauge("captf_unhealthy_samples",
                                alpha("TerraformMachine status.unhealthySamples."),
                                {"namespace", "name"})),
      lock_force_unlocks_total(r.counter("captf_lock_force_unlocks_total",
                                         alpha("Stale state locks force-unlocked."), {"kind"})),
      identity_denied_total(r.counter("captf_identity_denied_total",
                                      alpha("Identity resolutions that were denied."), {"reason"})),
      image_inspect_errors_total(
          r.counter("captf_image_inspect_errors_total",
                    alpha("Registry or label failures resolving template capacity."), {"reason"})),
      image_pull_failures_total(
          r.counter("captf_image_pull_failures_total",
                    alpha("Runner Jobs whose pod started waiting for an image it cannot pull."),
                    {"kind", "op"})),
      inputs_hash_changes_total(
          r.counter("captf_inputs_hash_changes_total",
                    alpha("Applies started because a mutable kind's inputs changed."), {"kind"})),
      remediation_requests_total(r.counter("captf_remediation_requests_total",
                                           alpha("Machine remediation requests and withdrawals."),
                                           {"action"})),
      destructive_plan_approvals_consumed_total(r.counter(
          "captf_destructive_plan_approvals_consumed_total",
          alpha("Destructive-plan approvals removed after a successful apply."), {"kind"})),
      lease_waits_total(r.counter("captf_lease_waits_total",
                                  alpha("Waits for a run lease or the cluster operation gate."),
                                  {"kind", "reason"})),
      state_backups_total(r.counter("captf_state_backups_total",
                                    alpha("State backups taken, pruned or skipped."),
                                    {"kind", "result"})),
      state_restores_total(r.counter("captf_state_restores_total",
                                     alpha("State restores by result."), {"kind", "result"})),
      plan_approvals_total(r.counter("captf_plan_approvals_total",
                                     alpha("Approved plans applied, or found changed."),
                                     {"kind", "result"})),
      git_ls_remote_total(r.counter("captf_git_ls_remote_total",
                                    alpha("Git remote listings of the ref watcher, by result (ok "
                                          "or the failure class)."),
                                    {"result"})),
      build_info(r.gauge("captf_build_info", alpha("Build information; constant 1."),
                         {"version", "commit", "contract"})),
      registry_(r) {
  build_info.withLabels({version, commit, std::string(contract::kContractVersion)}).set(1);
  r.gaugeFunc(kJobsActive, jobsActiveHelp(), {"kind", "op"}, [](Samples&) {});
}

void CaptfMetrics::countActiveJobsFrom(kube::Reader& jobs) {
  // Re-registering a scrape-time gauge replaces its collector under the
  // registry's lock, so a render sees the old source or the new one.
  registry_.gaugeFunc(kJobsActive, jobsActiveHelp(), {"kind", "op"}, [&jobs](Samples& samples) {
    kube::ListOptions managed;
    managed.label_selector = str(api::kLabelManaged) + "=true";
    auto listed = jobs.list(kinds::kJob, managed);
    if (!listed.ok()) {
      return; // a scrape without the series rather than a wrong count
    }
    Samples counted = activeJobs(listed->items);
    samples.insert(samples.end(), counted.begin(), counted.end());
  });
}

CaptfMetrics::Samples CaptfMetrics::activeJobs(const std::vector<nlohmann::json>& jobs) {
  std::map<std::vector<std::string>, double> counts;
  for (const nlohmann::json& job : jobs) {
    auto record = lifecycle::jobRecordFromJob(job);
    if (record.ok() && record->outcome == lifecycle::JobOutcome::kActive) {
      counts[{kube::meta::labels(job).value(str(api::kLabelOwnerKind), ""),
              str(api::enumName(record->operation))}] += 1;
    }
  }
  return {counts.begin(), counts.end()};
}

void CaptfMetrics::forgetObject(const std::string& kind, const std::string& ns,
                                const std::string& name) {
  for (kube::GaugeFamily* family : {&drift_detected, &ready, &infrastructure_healthy,
                                    &state_resources, &state_bytes, &inputs_bytes}) {
    family->remove({kind, ns, name});
  }
  for (const auto& [op, op_name] : api::EnumNames<api::Operation>::kValues) {
    last_success_timestamp_seconds.remove({kind, ns, name, std::string(op_name)});
  }
  if (kind == "TerraformMachine") {
    unhealthy_samples.remove({ns, name});
  }
}

double CaptfMetrics::conditionValue(const std::string& status) {
  if (status == "True") {
    return 1;
  }
  if (status == "False") {
    return 0;
  }
  return -1;
}

} // namespace captf::controllers
