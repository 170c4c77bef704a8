#include "manager/controllers/workload.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "contract/text.h"
#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/kube/errors.h"
#include "manager/kube/patch.h"
#include "manager/kube/strings.h"

namespace captf::controllers {

using nlohmann::json;

namespace {

using kube::str;

kube::GroupVersionKind gvkOf(const json& object) {
  return kube::GroupVersionKind::fromApiVersion(object.value("apiVersion", ""),
                                                object.value("kind", ""));
}

json finalizersOf(const json& object) {
  const json* finalizers = kube::fieldAt(object, "metadata.finalizers");
  return finalizers != nullptr && finalizers->is_array() ? *finalizers : json::array();
}

} // namespace

absl::StatusOr<std::vector<json>> listSecrets(kube::Reader& reader, const std::string& ns,
                                              const std::string& selector) {
  kube::ListOptions options;
  options.ns = ns;
  options.label_selector = selector;
  auto list = reader.list(kinds::kSecret, options);
  if (!list.ok()) {
    return list.status();
  }
  return std::move(list->items);
}

bool hasFinalizer(const json& object, std::string_view finalizer) {
  const json finalizers = finalizersOf(object);
  return std::any_of(finalizers.begin(), finalizers.end(), [&](const json& f) {
    return f.is_string() && f.get<std::string>() == finalizer;
  });
}

absl::Status patchAnnotation(kube::Writer& api, const json& object, std::string_view key,
                             const std::optional<std::string>& value) {
  json patch = {{"metadata", {{"annotations", {{key, value ? json(*value) : json(nullptr)}}}}}};
  auto patched = api.patch(gvkOf(object), kube::meta::key(object), kube::PatchType::kMerge, patch);
  if (!patched.ok()) {
    return value ? patched.status() : kube::ignoreNotFound(patched.status());
  }
  return absl::OkStatus();
}

absl::StatusOr<json> guardedPatch(kube::Writer& api, const kube::GroupVersionKind& gvk,
                                  const json& copy, json patch, const kube::PatchOptions& options) {
  patch["metadata"]["resourceVersion"] = kube::meta::resourceVersion(copy);
  return api.patch(gvk, kube::meta::key(copy), kube::PatchType::kMerge, patch, options);
}

absl::StatusOr<bool> isServersCopy(kube::Reader& api, const kube::GroupVersionKind& gvk,
                                   const json& copy) {
  auto live = api.get(gvk, kube::meta::key(copy));
  if (kube::isNotFound(live.status())) {
    return false;
  }
  if (!live.ok()) {
    return live.status();
  }
  return kube::meta::resourceVersion(*live) == kube::meta::resourceVersion(copy);
}

absl::Status ObjectPatcher::write(json patch, std::string_view subresource) {
  kube::PatchOptions options;
  options.subresource = std::string(subresource);
  auto written = guardedPatch(api_, gvkOf(object_), object_, std::move(patch), options);
  if (!written.ok()) {
    return written.status();
  }
  object_["metadata"]["resourceVersion"] = kube::meta::resourceVersion(*written);
  return absl::OkStatus();
}

absl::Status ObjectPatcher::addFinalizer(std::string_view finalizer) {
  json finalizers = finalizersOf(object_);
  finalizers.push_back(finalizer);
  return write({{"metadata", {{"finalizers", finalizers}}}});
}

absl::Status ObjectPatcher::removeFinalizer(std::string_view finalizer) {
  json finalizers = json::array();
  for (const json& f : finalizersOf(object_)) {
    if (!(f.is_string() && f.get<std::string>() == finalizer)) {
      finalizers.push_back(f);
    }
  }
  return kube::ignoreNotFound(write({{"metadata", {{"finalizers", finalizers}}}}));
}

absl::Status ObjectPatcher::setAnnotation(std::string_view key,
                                          const std::optional<std::string>& value) {
  absl::Status s =
      write({{"metadata", {{"annotations", {{key, value ? json(*value) : json(nullptr)}}}}}});
  return value ? s : kube::ignoreNotFound(s);
}

absl::Status ObjectPatcher::patch(const json& patch) {
  return write(patch);
}

absl::Status ObjectPatcher::patchStatus(const json& original, const json& modified) {
  if (original == modified) {
    return absl::OkStatus();
  }
  return write({{"status", kube::createMergePatch(original.is_object() ? original : json::object(),
                                                  modified)}},
               "status");
}

bool controlledBy(const json& object, const std::string& uid) {
  const auto owner = kube::meta::controllerOf(object);
  return owner && !uid.empty() && owner->uid == uid;
}

absl::StatusOr<std::vector<RunJob>> listRunJobs(kube::Reader& reader, const std::string& ns,
                                                const std::string& owner_kind,
                                                const std::string& owner_name_label,
                                                const std::string& owner_uid,
                                                std::vector<json>* leftovers) {
  kube::ListOptions options;
  options.ns = ns;
  options.label_selector = str(api::kLabelOwnerKind) + "=" + owner_kind + "," +
                           str(api::kLabelOwnerName) + "=" + owner_name_label;
  auto jobs = reader.list(kinds::kJob, options);
  if (!jobs.ok()) {
    return jobs.status();
  }
  std::vector<RunJob> out;
  for (json& job : jobs->items) {
    if (!controlledBy(job, owner_uid)) {
      if (leftovers != nullptr) {
        leftovers->push_back(std::move(job));
      }
      continue;
    }
    auto record = lifecycle::jobRecordFromJob(job);
    if (!record.ok()) {
      continue;
    }
    RunJob run;
    run.bookkept = kube::meta::annotations(job).contains(str(api::kAnnotationBookkept));
    run.record = *std::move(record);
    run.job = std::move(job);
    out.push_back(std::move(run));
  }
  std::vector<lifecycle::JobRecord> records;
  records.reserve(out.size());
  for (const RunJob& run : out) {
    records.push_back(run.record);
  }
  lifecycle::sortNewestFirst(records);
  std::vector<RunJob> sorted;
  for (const lifecycle::JobRecord& record : records) {
    for (RunJob& run : out) {
      if (run.record.name == record.name && !run.job.is_null()) {
        sorted.push_back(std::move(run));
        run = RunJob{}; // taken: its null job matches no later record
        break;
      }
    }
  }
  return sorted;
}

std::optional<api::Time> podsEndBy(const RunJob& run) {
  const json* deadline = kube::fieldAt(run.job, "spec.activeDeadlineSeconds");
  if (!run.record.created || deadline == nullptr || !deadline->is_number_integer()) {
    return std::nullopt;
  }
  const json* grace = kube::fieldAt(run.job, "spec.template.spec.terminationGracePeriodSeconds");
  const std::int64_t grace_seconds =
      grace != nullptr && grace->is_number_integer() ? grace->get<std::int64_t>() : 30;
  return api::Time{run.record.created->value +
                   std::chrono::seconds(deadline->get<std::int64_t>() + grace_seconds)};
}

absl::StatusOr<std::optional<json>> podOfJob(kube::Reader& reader, const std::string& ns,
                                             const std::string& job) {
  kube::ListOptions options;
  options.ns = ns;
  options.label_selector = "job-name=" + job;
  auto pods = reader.list(kinds::kPod, options);
  if (!pods.ok()) {
    return pods.status();
  }
  std::optional<json> newest;
  for (json& pod : pods->items) {
    const std::string created =
        kube::fieldAt(pod, "metadata.creationTimestamp") != nullptr
            ? kube::fieldAt(pod, "metadata.creationTimestamp")->get<std::string>()
            : "";
    if (!newest || created > (*newest)["metadata"].value("creationTimestamp", std::string())) {
      newest = std::move(pod);
    }
  }
  return newest;
}

namespace {

const json* containerStatus(const json& pod, std::string_view container) {
  const json* statuses = kube::fieldAt(pod, "status.containerStatuses");
  if (statuses == nullptr || !statuses->is_array()) {
    return nullptr;
  }
  for (const json& status : *statuses) {
    if (status.value("name", "") == container) {
      return &status;
    }
  }
  return nullptr;
}

} // namespace

std::optional<std::string> terminationMessage(const json& pod, std::string_view container) {
  const json* status = containerStatus(pod, container);
  if (status == nullptr) {
    return std::nullopt;
  }
  const json* terminated = kube::fieldAt(*status, "state.terminated");
  if (terminated == nullptr || !terminated->is_object()) {
    terminated = kube::fieldAt(*status, "lastState.terminated");
  }
  if (terminated == nullptr || !terminated->is_object() || !terminated->contains("message") ||
      !(*terminated)["message"].is_string()) {
    return std::nullopt;
  }
  return (*terminated)["message"].get<std::string>();
}

std::string containerImageId(const json& pod, std::string_view container) {
  const json* status = containerStatus(pod, container);
  return status == nullptr ? "" : status->value("imageID", "");
}

std::optional<kube::WallTime> containerStartTime(const json& pod, std::string_view container) {
  const json* status = containerStatus(pod, container);
  if (status == nullptr) {
    return std::nullopt;
  }
  for (const char* path : {"state.running.startedAt", "state.terminated.startedAt"}) {
    const json* started = kube::fieldAt(*status, path);
    if (started != nullptr && started->is_string()) {
      auto t = kube::parseTime(started->get<std::string>());
      if (t.ok()) {
        return *t;
      }
    }
  }
  return std::nullopt;
}

bool podStarted(const json& pod) {
  for (const char* list : {"status.containerStatuses", "status.initContainerStatuses"}) {
    const json* statuses = kube::fieldAt(pod, list);
    if (statuses == nullptr || !statuses->is_array()) {
      continue;
    }
    for (const json& status : *statuses) {
      const json state = status.value("state", json::object());
      if (state.contains("running") || state.contains("terminated") ||
          status.value("lastState", json::object()).contains("terminated")) {
        return true;
      }
    }
  }
  return false;
}

bool jobDeadlineExceeded(const json& job) {
  const json* conditions = kube::fieldAt(job, "status.conditions");
  if (conditions == nullptr || !conditions->is_array()) {
    return false;
  }
  return std::any_of(conditions->begin(), conditions->end(), [](const json& c) {
    return c.value("type", "") == "Failed" && c.value("status", "") == "True" &&
           c.value("reason", "") == "DeadlineExceeded";
  });
}

namespace {

// The kubelet's Waiting reasons of an image it cannot pull (kubelet
// images.ErrImagePull, ErrImagePullBackOff, ErrInvalidImageName).
constexpr std::array<std::string_view, 3> kImagePullReasons = {"ErrImagePull", "ImagePullBackOff",
                                                               "InvalidImageName"};
// What of the kubelet's message a condition keeps.
constexpr size_t kImagePullMessageBytes = 512;

// The spec's image of container `name` of `pod` ("" when not found).
std::string specImage(const json& pod, const std::string& name) {
  for (const char* list : {"spec.initContainers", "spec.containers"}) {
    const json* containers = kube::fieldAt(pod, list);
    if (containers == nullptr || !containers->is_array()) {
      continue;
    }
    for (const json& container : *containers) {
      if (container.is_object() && container.value("name", "") == name) {
        return container.value("image", "");
      }
    }
  }
  return "";
}

// `text` without the userinfo of URLs ("https://user:secret@host" becomes
// "https://[redacted]@host"): a registry or mirror URL in a kubelet message
// may carry credentials, which never reach a condition or an Event.
std::string withoutUrlCredentials(std::string text) {
  size_t from = 0;
  while ((from = text.find("://", from)) != std::string::npos) {
    const size_t start = from + 3;
    const size_t end = text.find_first_of("/ \t\"'@", start);
    if (end != std::string::npos && text[end] == '@' && end > start) {
      text.replace(start, end - start, "[redacted]");
    }
    from = start;
  }
  return text;
}

} // namespace

std::optional<ImagePullWait> imagePullWait(const json& pod) {
  for (const char* list : {"status.initContainerStatuses", "status.containerStatuses"}) {
    const json* statuses = kube::fieldAt(pod, list);
    if (statuses == nullptr || !statuses->is_array()) {
      continue;
    }
    for (const json& status : *statuses) {
      const json* waiting = status.is_object() ? kube::fieldAt(status, "state.waiting") : nullptr;
      if (waiting == nullptr || !waiting->is_object()) {
        continue;
      }
      const std::string reason = waiting->value("reason", "");
      if (std::find(kImagePullReasons.begin(), kImagePullReasons.end(), reason) ==
          kImagePullReasons.end()) {
        continue;
      }
      ImagePullWait wait;
      wait.container = status.value("name", "");
      wait.image = specImage(pod, wait.container);
      if (wait.image.empty()) {
        wait.image = status.value("image", "");
      }
      wait.reason = reason;
      const json* message = kube::fieldAt(*waiting, "message");
      if (message != nullptr && message->is_string()) {
        wait.message = contract::clipText(
            contract::sanitizeUtf8(withoutUrlCredentials(message->get<std::string>())),
            kImagePullMessageBytes);
      }
      return wait;
    }
  }
  return std::nullopt;
}

std::string imagePullMessage(const ImagePullWait& wait) {
  std::string out = "image " + wait.image + " of container " + wait.container +
                    " cannot be pulled (" + wait.reason + ")";
  if (!wait.message.empty()) {
    out += ": " + wait.message;
  }
  return out;
}

kube::Predicate imagePullChanged() {
  const auto waited = [](const json& pod) {
    auto wait = imagePullWait(pod);
    return wait ? std::optional(std::pair{wait->container, wait->image}) : std::nullopt;
  };
  return {[waited](const json& pod) { return waited(pod).has_value(); },
          [waited](const json& old_pod, const json& new_pod) {
            return waited(old_pod) != waited(new_pod);
          },
          [](const json&) { return false; }};
}

std::vector<kube::Request> ownersOfPodJob(kube::Reader& jobs, const kube::GroupVersionKind& gvk,
                                          const json& pod) {
  std::vector<kube::Request> requests;
  const json* refs = kube::fieldAt(pod, "metadata.ownerReferences");
  if (refs == nullptr || !refs->is_array()) {
    return requests;
  }
  for (const json& ref : *refs) {
    if (!ref.is_object() || ref.value("kind", "") != kinds::kJob.kind) {
      continue;
    }
    auto job = jobs.get(kinds::kJob, {kube::meta::ns(pod), ref.value("name", "")});
    const json* owners = job.ok() ? kube::fieldAt(*job, "metadata.ownerReferences") : nullptr;
    if (owners == nullptr || !owners->is_array()) {
      continue;
    }
    for (const json& owner : *owners) {
      if (owner.is_object() && owner.value("kind", "") == gvk.kind &&
          kube::GroupVersionKind::fromApiVersion(owner.value("apiVersion", ""), gvk.kind).group ==
              gvk.group) {
        requests.push_back({kube::meta::ns(pod), owner.value("name", "")});
      }
    }
  }
  return requests;
}

namespace {

// The state of managed Job `name` as a lease holder.
absl::StatusOr<lifecycle::HolderState> holderState(kube::Reader& jobs, const std::string& ns,
                                                   const std::string& name) {
  if (name.empty()) {
    return lifecycle::HolderState::kMissing;
  }
  auto job = jobs.get(kinds::kJob, {ns, name});
  if (!job.ok()) {
    if (kube::isNotFound(job.status())) {
      return lifecycle::HolderState::kMissing;
    }
    return job.status();
  }
  auto record = lifecycle::jobRecordFromJob(*job);
  const bool live = !record.ok() || record->outcome == lifecycle::JobOutcome::kActive;
  return live ? lifecycle::HolderState::kLive : lifecycle::HolderState::kFinished;
}

} // namespace

absl::StatusOr<JudgedLease> judgeLease(kube::Reader& api, kube::Reader& jobs, const std::string& ns,
                                       const std::string& name, std::string_view job,
                                       lifecycle::TimePoint now) {
  JudgedLease judged;
  auto existing = api.get(kinds::kLease, {ns, name});
  if (!existing.ok() && !kube::isNotFound(existing.status())) {
    return existing.status();
  }
  std::optional<lifecycle::LeaseView> view;
  if (existing.ok()) {
    lifecycle::LeaseView v;
    const json spec = existing->value("spec", json::object());
    v.holder = spec.value("holderIdentity", "");
    v.duration_seconds = spec.value("leaseDurationSeconds", int64_t{0});
    std::string acquired =
        kube::meta::annotations(*existing).value(str(api::kAnnotationLeaseAcquiredAt), "");
    if (acquired.empty()) {
      acquired = spec.value("acquireTime", "");
    }
    if (auto t = kube::parseTime(acquired); t.ok()) {
      v.acquired_at = api::Time{std::chrono::time_point_cast<std::chrono::seconds>(*t)};
    }
    auto state = holderState(jobs, ns, v.holder);
    if (!state.ok()) {
      return state.status();
    }
    v.holder_state = *state;
    view = v;
    judged.lease = *std::move(existing);
  }
  judged.verdict = lifecycle::evaluateLease(view, job, now);
  if (judged.verdict == lifecycle::LeaseVerdict::kWait && view) {
    judged.holder = view->holder;
  }
  return judged;
}

absl::StatusOr<lifecycle::LeaseVerdict> takeLease(kube::Client& api, kube::Reader& jobs,
                                                  const lifecycle::LeaseRequest& request,
                                                  const std::string& name, std::string& holder) {
  auto judged = judgeLease(api, jobs, request.object.ns, name, request.job, request.now);
  if (!judged.ok()) {
    return judged.status();
  }
  const lifecycle::LeaseVerdict verdict = judged->verdict;
  const std::optional<json>& existing = judged->lease;
  if (verdict == lifecycle::LeaseVerdict::kWait) {
    holder = judged->holder;
    return verdict;
  }
  json manifest = lifecycle::leaseManifest(request);
  if (verdict == lifecycle::LeaseVerdict::kCreate) {
    auto created = api.create(manifest);
    if (kube::isAlreadyExists(created.status())) {
      holder = "another manager";
      return lifecycle::LeaseVerdict::kWait;
    }
    if (!created.ok()) {
      return created.status();
    }
    return verdict;
  }
  if (!existing) {
    return absl::InternalError("lease " + name + ": judged for update, but none was read");
  }
  // docs/behaviour/security.md grants leases update, not patch: a compare-and-swap update.
  json updated = *existing;
  updated["metadata"]["labels"] = manifest["metadata"].value("labels", json::object());
  const json annotations = manifest["metadata"].value("annotations", json::object());
  for (const auto& [key, value] : annotations.items()) {
    updated["metadata"]["annotations"][key] = value;
  }
  updated["spec"] = manifest.value("spec", json::object());
  auto written = api.update(updated);
  if (kube::isConflict(written.status()) || kube::isNotFound(written.status())) {
    holder = "another manager";
    return lifecycle::LeaseVerdict::kWait;
  }
  if (!written.ok()) {
    return written.status();
  }
  return verdict;
}

absl::Status releaseLease(kube::Client& api, const std::string& ns, const std::string& name,
                          const std::string& holder) {
  auto existing = api.get(kinds::kLease, {ns, name});
  if (!existing.ok()) {
    return kube::ignoreNotFound(existing.status());
  }
  if (existing->value("spec", json::object()).value("holderIdentity", "") != holder) {
    return absl::OkStatus();
  }
  json updated = *existing;
  updated["spec"]["holderIdentity"] = "";
  auto written = api.update(updated);
  return written.ok() || kube::isNotFound(written.status()) || kube::isConflict(written.status())
             ? absl::OkStatus()
             : written.status();
}

absl::Status deleteLease(kube::Client& api, const std::string& ns, const std::string& name) {
  absl::Status s = api.remove(kinds::kLease, {ns, name});
  return kube::ignoreNotFound(s);
}

} // namespace captf::controllers
