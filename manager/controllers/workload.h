#pragma once

// The I/O pieces of the shared reconcile pass (docs/behaviour/lifecycle.md) that
// TerraformCluster, TerraformMachine and TerraformMachinePool reuse:
// finalizer and annotation writes, the one status patch, the object's run
// Jobs and their pods, run Leases and the cluster operation gate. The
// decisions themselves are pure and live in manager/lifecycle.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "manager/kube/client.h"
#include "manager/kube/clock.h"
#include "manager/kube/controller.h"
#include "manager/lifecycle/history.h"
#include "manager/lifecycle/leases.h"

namespace captf::controllers {

// ---- the pass's own object (docs/behaviour/lifecycle.md) ----------------------------------------

// Every write a pass makes to its own object goes through its ObjectPatcher:
// finalizers, annotations, spec write-backs, and the one status patch at the
// end. The patcher keeps the pass's copy (`object`, which it refers to and
// must not outlive) at the resourceVersion of the pass's last write, so the
// status patch, guarded by that version, is refused only when someone else
// wrote the object since the pass read it (a stale copy: the pass runs
// again), never for the pass's own earlier writes. Not thread-safe (one
// pass, one thread).
class ObjectPatcher {
public:
  ObjectPatcher(kube::Writer& api, nlohmann::json& object) : api_(api), object_(object) {}
  ObjectPatcher(const ObjectPatcher&) = delete;
  ObjectPatcher& operator=(const ObjectPatcher&) = delete;

  // Adds / removes `finalizer`. Removing from an object already gone is
  // success.
  absl::Status addFinalizer(std::string_view finalizer);
  absl::Status removeFinalizer(std::string_view finalizer);
  // Sets (value) or removes (nullopt) one annotation; removing from an
  // object already gone is success.
  absl::Status setAnnotation(std::string_view key, const std::optional<std::string>& value);
  // A merge patch of metadata and spec (never status).
  absl::Status patch(const nlohmann::json& patch);
  // The pass's one status write: a merge patch of the status subresource
  // from `original` to `modified`; nothing is sent when they are equal.
  absl::Status patchStatus(const nlohmann::json& original, const nlohmann::json& modified);

private:
  // Sends `patch` (to `subresource` when set) guarded by the copy's
  // resourceVersion, and follows the written version.
  absl::Status write(nlohmann::json patch, std::string_view subresource = {});

  kube::Writer& api_;
  nlohmann::json& object_;
};

bool hasFinalizer(const nlohmann::json& object, std::string_view finalizer);

// The Secrets of `ns` matching label `selector` (state chunks, backups).
absl::StatusOr<std::vector<nlohmann::json>> listSecrets(kube::Reader& reader, const std::string& ns,
                                                        const std::string& selector);

// Sets (value) or removes (nullopt) one annotation of another object (a
// Job's mark) with an unguarded merge patch: for a key only this manager
// writes, where the write is the same whatever the copy showed. NotFound is
// success for removals.
absl::Status patchAnnotation(kube::Writer& api, const nlohmann::json& object, std::string_view key,
                             const std::optional<std::string>& value);

// A merge patch (to `options.subresource` when set) of the `gvk` object
// `copy` is a copy of, guarded by the copy's resourceVersion: what was
// decided on that copy is written only if nobody wrote the object since
// (else Conflict, and the pass runs again from a newer copy). Returns the
// object as written.
absl::StatusOr<nlohmann::json> guardedPatch(kube::Writer& api, const kube::GroupVersionKind& gvk,
                                            const nlohmann::json& copy, nlohmann::json patch,
                                            const kube::PatchOptions& options = {});

// Whether `copy` is still the API server's version of its object (one
// live read, same resourceVersion). A write that cannot be taken back (a
// Job, a request that a Machine be replaced) is decided only on the
// server's copy: the cache may not yet show the pass's own last status.
// NotFound is false.
absl::StatusOr<bool> isServersCopy(kube::Reader& api, const kube::GroupVersionKind& gvk,
                                   const nlohmann::json& copy);

// ---- run Jobs ----------------------------------------------------------------

struct RunJob {
  nlohmann::json job;
  lifecycle::JobRecord record;
  bool bookkept = false; // captf.io/bookkept
};

// The run Jobs of the object whose uid is `owner_uid`: those carrying its
// owner labels and owned (controller reference) by that uid, newest first.
// Jobs that are not CAPTF run Jobs (no op/attempt label) are skipped. Jobs
// with the labels but another owner, or none, are left over from an earlier
// object of the same name (docs/behaviour/jobs.md#an-object-created-again):
// they go to `leftovers` when given, never to the result.
absl::StatusOr<std::vector<RunJob>> listRunJobs(kube::Reader& reader, const std::string& ns,
                                                const std::string& owner_kind,
                                                const std::string& owner_name_label,
                                                const std::string& owner_uid,
                                                std::vector<nlohmann::json>* leftovers = nullptr);

// Whether `object`'s controller owner reference names `uid`.
bool controlledBy(const nlohmann::json& object, const std::string& uid);

// When no pod of run Job `run` can be running any more, whatever became of
// it: its creation plus its activeDeadlineSeconds (the Job controller ends
// its pods then) plus its pods' terminationGracePeriodSeconds (30 when
// unset). nullopt when the Job has no deadline or no creation time.
std::optional<api::Time> podsEndBy(const RunJob& run);

// Newest pod of Job `job` (by creationTimestamp), or nullopt.
absl::StatusOr<std::optional<nlohmann::json>> podOfJob(kube::Reader& reader, const std::string& ns,
                                                       const std::string& job);

// The terminated.message of container `container`, or nullopt.
std::optional<std::string> terminationMessage(const nlohmann::json& pod,
                                              std::string_view container);
// The imageID of `container` ("" when unknown).
std::string containerImageId(const nlohmann::json& pod, std::string_view container);
// Whether any container of the pod ever started (running or terminated).
bool podStarted(const nlohmann::json& pod);
// Whether the Job failed with reason DeadlineExceeded.
bool jobDeadlineExceeded(const nlohmann::json& job);

// A container of a runner pod that waits for an image the kubelet cannot
// pull (docs/behaviour/jobs.md#image-pulls): its state is Waiting with reason
// ErrImagePull, ImagePullBackOff or InvalidImageName.
struct ImagePullWait {
  std::string container;
  std::string image;   // the pod spec's reference ("" when unknown)
  std::string reason;  // the kubelet's
  std::string message; // the kubelet's, clipped and without URL credentials
  bool operator==(const ImagePullWait&) const = default;
};
// The first such container of `pod`, init containers first (the order the
// kubelet pulls in), or nullopt.
std::optional<ImagePullWait> imagePullWait(const nlohmann::json& pod);
// The condition message and Event note for `wait`: the image, the container
// and the kubelet's reason and message.
std::string imagePullMessage(const ImagePullWait& wait);
// What wakes an object for its pods' image pulls (docs/behaviour/jobs.md#image-pulls):
// a pod created waiting, or updated to begin, end or change its wait (another
// container or image); the kubelet's changing reason or message alone, and
// deletions, do not.
kube::Predicate imagePullChanged();
// The objects of kind `gvk` named by an owner reference of the Job (read from
// `jobs`) that owns `pod`: a pod's labels carry its object's name only as a
// label value, which may be shortened.
std::vector<kube::Request> ownersOfPodJob(kube::Reader& jobs, const kube::GroupVersionKind& gvk,
                                          const nlohmann::json& pod);
// When the Job's source container started, if known.
std::optional<kube::WallTime> containerStartTime(const nlohmann::json& pod,
                                                 std::string_view container);

// ---- Leases (docs/behaviour/lifecycle.md) -------------------------------------------------------

// Reads the Lease `name` in `ns` and judges it with lifecycle::evaluateLease
// for `job` (the holder Job read by name from `jobs`), writing nothing.
struct JudgedLease {
  lifecycle::LeaseVerdict verdict = lifecycle::LeaseVerdict::kCreate;
  std::optional<nlohmann::json> lease; // as read; nullopt when absent
  std::string holder;                  // the other holder on kWait
};
absl::StatusOr<JudgedLease> judgeLease(kube::Reader& api, kube::Reader& jobs, const std::string& ns,
                                       const std::string& name, std::string_view job,
                                       lifecycle::TimePoint now);

// Reads the Lease `name`, judges it with lifecycle::evaluateLease for
// `request.job` (the holder Job read by name from `jobs`: missing when
// absent, live while it runs or cannot be read as a run Job)
// and writes it when the verdict allows: create, or an update guarded by
// its resourceVersion. A lost race reads as kWait. `holder` receives the
// other holder on kWait.
absl::StatusOr<lifecycle::LeaseVerdict> takeLease(kube::Client& api, kube::Reader& jobs,
                                                  const lifecycle::LeaseRequest& request,
                                                  const std::string& name, std::string& holder);
// Clears the holder when it is `holder` (bookkeeping released it).
absl::Status releaseLease(kube::Client& api, const std::string& ns, const std::string& name,
                          const std::string& holder);
// Deletes the Lease (final cleanup). NotFound is success.
absl::Status deleteLease(kube::Client& api, const std::string& ns, const std::string& name);

} // namespace captf::controllers
