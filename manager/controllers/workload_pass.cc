#include "manager/api/conditions.h"
#include "manager/controllers/workload_kind.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/pass.h"
#include "manager/lifecycle/ready.h"
#include "manager/workspace/outputs.h"

namespace captf::controllers {

namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

using kube::str;

ConditionStatus conditionStatusOf(const std::string& s) {
  return s == "True" ? ConditionStatus::kTrue
                     : (s == "False" ? ConditionStatus::kFalse : ConditionStatus::kUnknown);
}

} // namespace

// ---- WorkloadPass --------------------------------------------------------------

bool WorkloadPass::set(std::string_view type, ConditionStatus condition_status,
                       std::string_view reason, const std::string& message) {
  return lifecycle::setCondition(status->conditions, type, condition_status, reason, message,
                                 generation, now) == lifecycle::ConditionChange::kTransition;
}

bool WorkloadPass::set(std::string_view type, const ConditionResult& condition) {
  return set(type, conditionStatusOf(condition.status), condition.reason, condition.message);
}

void WorkloadPass::event(kube::EventType type, std::string_view reason,
                         const std::string& note) const {
  events->event(object, type, reason, "Reconcile", note);
}

std::string WorkloadPass::originalReason(std::string_view type) const {
  const api::Condition* c = lifecycle::findCondition(original->conditions, type);
  return c == nullptr ? "" : c->reason;
}

std::string WorkloadPass::currentReason(std::string_view type) const {
  const api::Condition* c = lifecycle::findCondition(status->conditions, type);
  return c == nullptr ? "" : c->reason;
}

bool WorkloadPass::latched() const {
  return status->initialization && status->initialization->provisioned.value_or(false);
}

std::vector<lifecycle::JobRecord> WorkloadPass::records() const {
  std::vector<lifecycle::JobRecord> out;
  out.reserve(jobs.size());
  for (const RunJob& run : jobs) {
    out.push_back(run.record);
  }
  return out;
}

bool reportOutputs(WorkloadPass& pass, CaptfMetrics& metrics, workspace::OutputsVerdict verdict,
                   const std::string& message) {
  const bool usable = workspace::outputsUsable(verdict);
  ConditionStatus status = ConditionStatus::kUnknown;
  if (usable) {
    status = ConditionStatus::kTrue;
  } else if (verdict != workspace::OutputsVerdict::kPending) {
    status = ConditionStatus::kFalse;
  }
  if (pass.set(cond::kOutputsValid, status, workspace::outputsReason(verdict), message) &&
      status == ConditionStatus::kFalse) {
    pass.count(metrics.outputs_invalid_total.withLabels(
        {pass.object.value("kind", ""), str(workspace::outputsReason(verdict))}));
    pass.event(kube::EventType::kWarning, "OutputsInvalid", message);
  }
  return usable;
}

void reportHealth(WorkloadPass& pass, const workspace::HealthCondition& health) {
  const bool changed =
      pass.set(cond::kInfrastructureHealthy, health.status, health.reason, health.message);
  if (changed && health.status == ConditionStatus::kTrue) {
    pass.event(kube::EventType::kNormal, "InstanceHealthy", "infrastructure is healthy");
  } else if (changed && health.status == ConditionStatus::kFalse) {
    pass.event(kube::EventType::kWarning, "InstanceUnhealthy",
               health.reason + (health.message.empty() ? "" : ": " + health.message));
  }
}

void countPendingSample(WorkloadPass& pass, const std::optional<workspace::Health>& health) {
  if (!pass.health_sample) {
    return;
  }
  if (health && health->state == api::HealthState::kPending) {
    pass.status->pending_refreshes = pass.status->pending_refreshes.value_or(0) + 1;
  } else {
    pass.status->pending_refreshes.reset();
  }
}

} // namespace captf::controllers
