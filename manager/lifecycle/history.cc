#include "manager/lifecycle/history.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "absl/status/status.h"
#include "contract/strings.h"
#include "manager/api/keys.h"

namespace captf::lifecycle {

using contract::strCat;
using nlohmann::json;

bool isFailure(JobOutcome outcome) {
  return outcome != JobOutcome::kActive && outcome != JobOutcome::kSucceeded;
}

bool countsForBackoff(JobOutcome outcome) {
  return outcome == JobOutcome::kFailed;
}

namespace {

const json& member(const json& object, std::string_view key) {
  static const json kNull;
  if (!object.is_object()) {
    return kNull;
  }
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string stringMember(const json& object, std::string_view key) {
  const json& value = member(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

std::optional<std::int64_t> parseInt(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

std::optional<api::Time> timeMember(const json& object, std::string_view key) {
  const std::string text = stringMember(object, key);
  if (text.empty()) {
    return std::nullopt;
  }
  auto parsed = api::parseTime(text);
  if (!parsed.ok()) {
    return std::nullopt;
  }
  return *parsed;
}

// Newest first by finish (active Jobs first), creation, attempt, name.
bool newerThan(const JobRecord& a, const JobRecord& b) {
  const bool a_active = a.outcome == JobOutcome::kActive;
  const bool b_active = b.outcome == JobOutcome::kActive;
  if (a_active != b_active) {
    return a_active;
  }
  if (a.finished != b.finished) {
    return a.finished > b.finished;
  }
  if (a.created != b.created) {
    return a.created > b.created;
  }
  if (a.attempt != b.attempt) {
    return a.attempt > b.attempt;
  }
  return a.name > b.name;
}

} // namespace

absl::StatusOr<JobRecord> jobRecordFromJob(const json& job) {
  const json& metadata = member(job, "metadata");
  const json& labels = member(metadata, "labels");
  const json& annotations = member(metadata, "annotations");
  JobRecord record;
  record.name = stringMember(metadata, "name");
  if (record.name.empty()) {
    return absl::InvalidArgumentError("job: metadata.name is missing");
  }
  const std::string op = stringMember(labels, api::kLabelOp);
  const auto operation = api::parseEnum<api::Operation>(op);
  if (!operation) {
    return absl::InvalidArgumentError(strCat("job ", record.name, ": label ", api::kLabelOp,
                                             " is not an operation: \"", op, "\""));
  }
  record.operation = *operation;
  const std::string attempt_text = stringMember(labels, api::kLabelAttempt);
  const auto attempt = parseInt(attempt_text);
  if (!attempt || *attempt < 1 || *attempt > std::numeric_limits<std::int32_t>::max()) {
    return absl::InvalidArgumentError(strCat("job ", record.name, ": label ", api::kLabelAttempt,
                                             " is not a positive integer: \"", attempt_text, "\""));
  }
  record.attempt = static_cast<std::int32_t>(*attempt);
  record.created = timeMember(metadata, "creationTimestamp");
  record.inputs_hash = stringMember(annotations, api::kAnnotationInputsHash);
  record.drift_remediation = stringMember(annotations, api::kAnnotationDriftRemediation) == "true";
  record.approved_plan = stringMember(annotations, api::kAnnotationApprovedPlan);
  if (const std::string serial = stringMember(annotations, api::kAnnotationRestoreSerial);
      !serial.empty()) {
    record.restore_serial = parseInt(serial);
  }

  record.outcome = JobOutcome::kActive;
  const json& status = member(job, "status");
  const json& conditions = member(status, "conditions");
  if (conditions.is_array()) {
    for (const json& condition : conditions) {
      if (stringMember(condition, "status") != "True") {
        continue;
      }
      const std::string type = stringMember(condition, "type");
      if (type == "Complete") {
        record.outcome = JobOutcome::kSucceeded;
        record.finished = timeMember(status, "completionTime");
        if (!record.finished) {
          record.finished = timeMember(condition, "lastTransitionTime");
        }
        break;
      }
      if (type == "Failed") {
        record.outcome = JobOutcome::kFailed;
        record.finished = timeMember(condition, "lastTransitionTime");
        record.deadline_exceeded = stringMember(condition, "reason") == "DeadlineExceeded";
        break;
      }
    }
  }
  // A plan whose result could not be read produced nothing to approve: it
  // counts as a failure (backoff) rather than a success that would be
  // re-planned at once, forever.
  if (record.outcome == JobOutcome::kSucceeded && annotations.is_object() &&
      annotations.contains(api::kAnnotationPlanUnreadable)) {
    record.outcome = JobOutcome::kFailed;
  }
  if (record.outcome == JobOutcome::kFailed) {
    if (annotations.is_object() && annotations.contains(api::kAnnotationInterrupted)) {
      record.outcome = JobOutcome::kInterrupted;
    } else if (annotations.is_object() &&
               annotations.contains(api::kAnnotationDestructivePlanBlocked)) {
      record.outcome = JobOutcome::kBlocked;
    } else if (annotations.is_object() && annotations.contains(api::kAnnotationPlanChanged)) {
      record.outcome = JobOutcome::kPlanChanged;
    }
  }
  return record;
}

void sortNewestFirst(std::vector<JobRecord>& jobs) {
  std::stable_sort(jobs.begin(), jobs.end(), newerThan);
}

std::int32_t nextAttempt(std::span<const JobRecord> jobs, api::Operation operation) {
  std::int32_t highest = 0;
  for (const JobRecord& job : jobs) {
    if (job.operation == operation) {
      highest = std::max(highest, job.attempt);
    }
  }
  return highest + 1;
}

namespace {

template <class Pred>
const JobRecord* newestOf(std::span<const JobRecord> jobs, api::Operation operation, Pred pred) {
  const JobRecord* best = nullptr;
  for (const JobRecord& job : jobs) {
    if (job.operation == operation && pred(job) &&
        (best == nullptr || job.attempt > best->attempt)) {
      best = &job;
    }
  }
  return best;
}

} // namespace

const JobRecord* newestWith(std::span<const JobRecord> jobs, api::Operation operation,
                            JobOutcome outcome) {
  return newestOf(jobs, operation, [&](const JobRecord& j) { return j.outcome == outcome; });
}

const JobRecord* newestFinished(std::span<const JobRecord> jobs, api::Operation operation) {
  return newestOf(jobs, operation,
                  [](const JobRecord& j) { return j.outcome != JobOutcome::kActive; });
}

const JobRecord* activeJob(std::span<const JobRecord> jobs) {
  for (const JobRecord& job : jobs) {
    if (job.outcome == JobOutcome::kActive) {
      return &job;
    }
  }
  return nullptr;
}

std::vector<std::string> jobsToPrune(std::span<const JobRecord> jobs, std::int32_t successful_limit,
                                     std::int32_t failed_limit) {
  const auto keep_successes = static_cast<std::size_t>(std::max(successful_limit, 0));
  const auto keep_failures = static_cast<std::size_t>(std::max(failed_limit, 0));
  std::map<api::Operation, std::vector<const JobRecord*>> successes;
  std::map<api::Operation, std::vector<const JobRecord*>> failures;
  for (const JobRecord& job : jobs) {
    if (job.outcome == JobOutcome::kSucceeded) {
      successes[job.operation].push_back(&job);
    } else if (isFailure(job.outcome)) {
      failures[job.operation].push_back(&job);
    }
  }
  const auto by_attempt_desc = [](const JobRecord* a, const JobRecord* b) {
    return a->attempt != b->attempt ? a->attempt > b->attempt : a->name > b->name;
  };
  std::vector<JobRecord> pruned;
  for (auto& [op, list] : successes) {
    std::sort(list.begin(), list.end(), by_attempt_desc);
    // The newest success is always kept.
    for (std::size_t i = std::max<std::size_t>(keep_successes, 1); i < list.size(); ++i) {
      pruned.push_back(*list[i]);
    }
  }
  for (auto& [op, list] : failures) {
    std::sort(list.begin(), list.end(), by_attempt_desc);
    const auto success = successes.find(op);
    const std::int32_t newest_success = success == successes.end() || success->second.empty()
                                            ? 0
                                            : success->second.front()->attempt;
    // The newest failure is kept while no newer success exists.
    const bool keep_newest = !list.empty() && list.front()->attempt > newest_success;
    const std::size_t keep = std::max<std::size_t>(keep_failures, keep_newest ? 1 : 0);
    for (std::size_t i = keep; i < list.size(); ++i) {
      pruned.push_back(*list[i]);
    }
  }
  // Oldest first.
  std::stable_sort(pruned.begin(), pruned.end(),
                   [](const JobRecord& a, const JobRecord& b) { return newerThan(b, a); });
  std::vector<std::string> names;
  names.reserve(pruned.size());
  for (const JobRecord& job : pruned) {
    names.push_back(job.name);
  }
  return names;
}

} // namespace captf::lifecycle
