#pragma once

// The captf_* metrics of docs/reference/metrics.md (docs/reference/metrics.md), registered
// once in the manager's registry. Names, types and labels are normative; HELP
// texts carry the component-base stability prefix "[ALPHA] ". Failure
// counters count transitions (the caller decides when), gauges per object are
// removed with the object (forgetObject).

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "manager/kube/client.h"
#include "manager/kube/metrics.h"

namespace captf::controllers {

class CaptfMetrics {
public:
  // Registers every family in `registry` (which must outlive this object)
  // and sets captf_build_info{version, commit, contract} to 1.
  // captf_jobs_active is registered too, with no samples until
  // countActiveJobsFrom() names where the Jobs are.
  CaptfMetrics(kube::MetricsRegistry& registry, const std::string& version,
               const std::string& commit);

  // captf_jobs_active{kind, op} is computed at every scrape from the
  // managed Jobs `jobs` lists (the manager's Job cache). `jobs` must outlive
  // the registry's renders. Thread-safe; call again to replace the source.
  void countActiveJobsFrom(kube::Reader& jobs);
  // The captf_jobs_active samples of `jobs`: running runner Jobs by their
  // owner kind label and operation, sorted. Jobs that are not run Jobs
  // (no operation label) or have finished are left out.
  using Samples = std::vector<std::pair<std::vector<std::string>, double>>;
  static Samples activeJobs(const std::vector<nlohmann::json>& jobs);

  kube::CounterFamily& jobs_total;                                // kind, op, result
  kube::HistogramFamily& job_duration_seconds;                    // kind, op, result
  kube::HistogramFamily& job_step_duration_seconds;               // kind, op, step
  kube::HistogramFamily& job_queue_seconds;                       // kind, op
  kube::CounterFamily& job_errors_total;                          // kind, op, error_kind, step
  kube::HistogramFamily& job_attempts;                            // kind, op
  kube::CounterFamily& resources_changed_total;                   // kind, op, action
  kube::CounterFamily& drift_resources_total;                     // kind, action
  kube::CounterFamily& reconcile_op_decisions_total;              // kind, op, reason
  kube::CounterFamily& state_read_errors_total;                   // kind, reason
  kube::CounterFamily& outputs_invalid_total;                     // kind, reason
  kube::GaugeFamily& drift_detected;                              // kind, namespace, name
  kube::GaugeFamily& ready;                                       // kind, namespace, name
  kube::GaugeFamily& infrastructure_healthy;                      // kind, namespace, name
  kube::GaugeFamily& state_resources;                             // kind, namespace, name
  kube::GaugeFamily& state_bytes;                                 // kind, namespace, name
  kube::GaugeFamily& inputs_bytes;                                // kind, namespace, name
  kube::GaugeFamily& last_success_timestamp_seconds;              // kind, namespace, name, op
  kube::GaugeFamily& unhealthy_samples;                           // namespace, name
  kube::CounterFamily& lock_force_unlocks_total;                  // kind
  kube::CounterFamily& identity_denied_total;                     // reason
  kube::CounterFamily& image_inspect_errors_total;                // reason
  kube::CounterFamily& image_pull_failures_total;                 // kind, op
  kube::CounterFamily& inputs_hash_changes_total;                 // kind
  kube::CounterFamily& remediation_requests_total;                // action
  kube::CounterFamily& destructive_plan_approvals_consumed_total; // kind
  kube::CounterFamily& lease_waits_total;                         // kind, reason
  kube::CounterFamily& state_backups_total;                       // kind, result
  kube::CounterFamily& state_restores_total;                      // kind, result
  kube::CounterFamily& plan_approvals_total;                      // kind, result
  kube::CounterFamily& git_ls_remote_total;                       // result
  kube::GaugeFamily& build_info;                                  // version, commit, contract
  // captf_jobs_active (kind, op) is a scrape-time gauge: countActiveJobsFrom.

  // Drops the per-object gauges of a deleted object.
  void forgetObject(const std::string& kind, const std::string& ns, const std::string& name);

  // Ready-style gauge value: 1 True, 0 False, -1 Unknown.
  static double conditionValue(const std::string& status);

private:
  kube::MetricsRegistry& registry_;
};

} // namespace captf::controllers
