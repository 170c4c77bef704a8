#pragma once

// Controllers in controller-runtime's shape: informer events pass
// predicates, map to requests (own key, controlling owner, or a function),
// land in a rate-limited work queue, and N workers call the Reconciler.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/clock.h"
#include "manager/kube/informer.h"
#include "manager/kube/logging.h"
#include "manager/kube/metrics.h"
#include "manager/kube/object.h"
#include "manager/kube/rate_limiter.h"
#include "manager/kube/workqueue.h"

namespace captf::kube {

using Request = ObjectKey;

struct Result {
  // Reconcile again after this delay (> 0), with the per-item backoff reset.
  Duration requeue_after = Duration::zero();
  // Reconcile again with backoff (when requeue_after is zero).
  bool requeue = false;
};

struct ReconcileContext {
  std::stop_token stop; // fires when the manager shuts down
  // controller-runtime's reconcile logger: "controller", "controllerGroup",
  // "controllerKind", the kind as key with the request's objectRef
  // ("TerraformCluster": {"name", "namespace"}), "namespace", "name" and a
  // "reconcileID" unique to this call. A reconciler adds the owners it
  // resolves with withValues().
  Logger log;
};

// Implementations must be safe to call from several workers at once for
// different requests (a request is never reconciled twice concurrently).
class Reconciler {
public:
  virtual ~Reconciler() = default;
  // An error retries with backoff unless it is terminal (terminalError()).
  virtual absl::StatusOr<Result> reconcile(const ReconcileContext& ctx, const Request& request) = 0;
};

// Marks an error as terminal: it is counted and logged, never retried (until
// the object changes again).
absl::Status terminalError(absl::Status status);
bool isTerminalError(const absl::Status& status);

// Filters events before they become requests. Empty members accept.
struct Predicate {
  std::function<bool(const Json& object)> create;
  std::function<bool(const Json& old_object, const Json& new_object)> update;
  std::function<bool(const Json& object)> remove;
};

namespace predicates {
// Updates whose metadata.generation changed (spec changes, not status).
Predicate generationChanged();
Predicate labelsChanged();
Predicate annotationsChanged();
// Updates that are real changes (not resync re-deliveries).
Predicate resourceVersionChanged();
// Objects whose labels match (all event types).
Predicate labelSelector(LabelSelector selector);
// Accepts when any accepts / all accept.
Predicate any(std::vector<Predicate> predicates);
Predicate all(std::vector<Predicate> predicates);
Predicate negate(Predicate predicate);
} // namespace predicates

// Maps an object to the requests it should trigger (EnqueueRequestsFromMapFunc).
using MapFunc = std::function<std::vector<Request>(const Json& object)>;

enum class OwnerMatch { kControllerOnly, kAnyOwner };

struct ControllerOptions {
  int max_concurrent_reconciles = 1;
  // Default: defaultControllerRateLimiter().
  std::unique_ptr<RateLimiter> rate_limiter;
  // Upper bound on waiting for the watched informers' first sync.
  Duration cache_sync_timeout = std::chrono::minutes(2);
};

class Controller {
public:
  // `metrics` may be null.
  Controller(std::string name, Reconciler& reconciler, ControllerOptions options, Clock& clock,
             MetricsRegistry* metrics, std::shared_ptr<spdlog::logger> logger);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Call before run(). Events of `informer` that pass every predicate
  // enqueue the object's own key (For / EnqueueRequestForObject). The
  // first call names the kind of the reconcile logger's fields.
  void watchFor(SharedInformer& informer, std::vector<Predicate> predicates = {});
  // Enqueue the owner of kind `owner` (group and kind compared) named in the
  // object's ownerReferences (Owns / EnqueueRequestForOwner).
  void watchOwned(SharedInformer& informer, GroupVersionKind owner,
                  OwnerMatch match = OwnerMatch::kControllerOnly,
                  std::vector<Predicate> predicates = {});
  // Enqueue what `map` returns (Watches + EnqueueRequestsFromMapFunc).
  void watchMapped(SharedInformer& informer, MapFunc map, std::vector<Predicate> predicates = {});

  // Waits for the watched informers to sync, then runs the workers until
  // `stop`; on stop the queue shuts down and in-flight reconciles finish.
  // Returns DeadlineExceeded when the caches did not sync in time.
  absl::Status run(std::stop_token stop);

  const std::string& name() const { return name_; }
  WorkQueue& queue() { return queue_; }

  // One reconcile of `request` with result handling (exposed for tests:
  // drives the controller without worker threads).
  void reconcileHandler(const Request& request, std::stop_token stop);

private:
  void addSource(SharedInformer& informer, std::function<std::vector<Request>(const Json&)> map,
                 std::vector<Predicate> predicates);
  void worker(std::stop_token stop);
  // The reconcile logger of `request` (ReconcileContext::log).
  Logger reconcileLogger(const Request& request);

  struct Metrics {
    Counter* success;
    Counter* error;
    Counter* requeue;
    Counter* requeue_after;
    Counter* errors;
    Counter* terminal_errors;
    Histogram* time;
    Gauge* active_workers;
  };

  const std::string name_;
  Reconciler& reconciler_;
  const int workers_;
  const Duration cache_sync_timeout_;
  Clock& clock_;
  Logger log_; // with "controller" (and the kind's fields once watchFor named it)
  std::optional<GroupVersionKind> for_kind_;
  std::mutex ids_mu_;
  std::mt19937_64 ids_; // reconcileIDs
  WorkQueue queue_;
  std::optional<Metrics> metrics_;
  std::vector<std::pair<SharedInformer*, uint64_t>> sources_;
};

} // namespace captf::kube
