#include "manager/kube/controller.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"

namespace captf::kube {
namespace {

constexpr absl::string_view kTerminalUrl = "type.captf.io/kube.TerminalError";

bool accepts(const std::vector<Predicate>& predicates, const Json& object) {
  for (const auto& p : predicates) {
    if (p.create && !p.create(object)) {
      return false;
    }
  }
  return true;
}

bool acceptsUpdate(const std::vector<Predicate>& predicates, const Json& old_object,
                   const Json& new_object) {
  for (const auto& p : predicates) {
    if (p.update && !p.update(old_object, new_object)) {
      return false;
    }
  }
  return true;
}

bool acceptsDelete(const std::vector<Predicate>& predicates, const Json& object) {
  for (const auto& p : predicates) {
    if (p.remove && !p.remove(object)) {
      return false;
    }
  }
  return true;
}

} // namespace

absl::Status terminalError(absl::Status status) {
  if (status.ok()) {
    status = absl::InternalError("terminal error with an OK status");
  }
  status.SetPayload(kTerminalUrl, absl::Cord("true"));
  return status;
}

bool isTerminalError(const absl::Status& status) {
  return status.GetPayload(kTerminalUrl).has_value();
}

namespace predicates {

Predicate generationChanged() {
  return {nullptr,
          [](const Json& o, const Json& n) { return meta::generation(o) != meta::generation(n); },
          nullptr};
}

Predicate labelsChanged() {
  return {nullptr, [](const Json& o, const Json& n) { return meta::labels(o) != meta::labels(n); },
          nullptr};
}

Predicate annotationsChanged() {
  return {nullptr,
          [](const Json& o, const Json& n) { return meta::annotations(o) != meta::annotations(n); },
          nullptr};
}

Predicate resourceVersionChanged() {
  return {nullptr,
          [](const Json& o, const Json& n) {
            return meta::resourceVersion(o) != meta::resourceVersion(n);
          },
          nullptr};
}

Predicate labelSelector(LabelSelector selector) {
  auto match = [selector = std::move(selector)](const Json& object) {
    return selector.matches(meta::labels(object));
  };
  return {match, [match](const Json&, const Json& n) { return match(n); }, match};
}

Predicate any(std::vector<Predicate> predicates) {
  auto shared = std::make_shared<std::vector<Predicate>>(std::move(predicates));
  return {[shared](const Json& object) {
            for (const auto& p : *shared) {
              if (!p.create || p.create(object)) {
                return true;
              }
            }
            return shared->empty();
          },
          [shared](const Json& o, const Json& n) {
            for (const auto& p : *shared) {
              if (!p.update || p.update(o, n)) {
                return true;
              }
            }
            return shared->empty();
          },
          [shared](const Json& object) {
            for (const auto& p : *shared) {
              if (!p.remove || p.remove(object)) {
                return true;
              }
            }
            return shared->empty();
          }};
}

Predicate all(std::vector<Predicate> predicates) {
  auto shared = std::make_shared<std::vector<Predicate>>(std::move(predicates));
  return {[shared](const Json& object) { return accepts(*shared, object); },
          [shared](const Json& o, const Json& n) { return acceptsUpdate(*shared, o, n); },
          [shared](const Json& object) { return acceptsDelete(*shared, object); }};
}

Predicate negate(Predicate predicate) {
  auto shared = std::make_shared<Predicate>(std::move(predicate));
  return {
      [shared](const Json& object) { return shared->create && !shared->create(object); },
      [shared](const Json& o, const Json& n) { return shared->update && !shared->update(o, n); },
      [shared](const Json& object) { return shared->remove && !shared->remove(object); }};
}

} // namespace predicates

// NOLINTNEXTLINE(bugprone-random-generator-seed): ids_ is seeded from random_device below.
Controller::Controller(std::string name, Reconciler& reconciler, ControllerOptions options,
                       Clock& clock, MetricsRegistry* metrics,
                       std::shared_ptr<spdlog::logger> logger)
    : name_(std::move(name)), reconciler_(reconciler),
      workers_(std::max(1, options.max_concurrent_reconciles)),
      cache_sync_timeout_(options.cache_sync_timeout), clock_(clock),
      log_(Logger(std::move(logger)).withValues({{"controller", name_}})),
      queue_(name_, clock,
             options.rate_limiter ? std::move(options.rate_limiter)
                                  : defaultControllerRateLimiter(clock),
             metrics) {
  std::random_device seed;
  ids_.seed((std::uint64_t{seed()} << 32) | seed());
  if (metrics != nullptr) {
    auto& total = metrics->counter("controller_runtime_reconcile_total",
                                   "Total number of reconciliations per controller",
                                   {"controller", "result"});
    Metrics m{};
    m.success = &total.withLabels({name_, "success"});
    m.error = &total.withLabels({name_, "error"});
    m.requeue = &total.withLabels({name_, "requeue"});
    m.requeue_after = &total.withLabels({name_, "requeue_after"});
    m.errors =
        &metrics
             ->counter("controller_runtime_reconcile_errors_total",
                       "Total number of reconciliation errors per controller", {"controller"})
             .withLabels({name_});
    m.terminal_errors =
        &metrics
             ->counter("controller_runtime_terminal_reconcile_errors_total",
                       "Total number of terminal reconciliation errors per controller",
                       {"controller"})
             .withLabels({name_});
    m.time = &metrics
                  ->histogram("controller_runtime_reconcile_time_seconds",
                              "Length of time per reconciliation per controller", {"controller"},
                              reconcileTimeBuckets())
                  .withLabels({name_});
    m.active_workers =
        &metrics
             ->gauge("controller_runtime_active_workers",
                     "Number of currently used workers per controller", {"controller"})
             .withLabels({name_});
    metrics
        ->gauge("controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller", {"controller"})
        .withLabels({name_})
        .set(workers_);
    metrics_ = m;
  }
}

Controller::~Controller() {
  for (auto& [informer, id] : sources_) {
    informer->removeEventHandler(id);
  }
  queue_.shutDown();
}

void Controller::addSource(SharedInformer& informer,
                           std::function<std::vector<Request>(const Json&)> map,
                           std::vector<Predicate> predicates) {
  auto shared_map = std::make_shared<decltype(map)>(std::move(map));
  auto shared_predicates = std::make_shared<std::vector<Predicate>>(std::move(predicates));
  EventHandlers handlers;
  handlers.on_add = [this, shared_map, shared_predicates](const Json& object) {
    if (accepts(*shared_predicates, object)) {
      for (const auto& request : (*shared_map)(object)) {
        queue_.add(request);
      }
    }
  };
  handlers.on_update = [this, shared_map, shared_predicates](const Json& old_object,
                                                             const Json& new_object) {
    if (!acceptsUpdate(*shared_predicates, old_object, new_object)) {
      return;
    }
    // An owner or mapping may change with the update: enqueue both sides.
    auto requests = (*shared_map)(old_object);
    for (auto& request : (*shared_map)(new_object)) {
      if (std::find(requests.begin(), requests.end(), request) == requests.end()) {
        requests.push_back(std::move(request));
      }
    }
    for (const auto& request : requests) {
      queue_.add(request);
    }
  };
  handlers.on_delete = [this, shared_map, shared_predicates](const Json& object) {
    if (acceptsDelete(*shared_predicates, object)) {
      for (const auto& request : (*shared_map)(object)) {
        queue_.add(request);
      }
    }
  };
  sources_.emplace_back(&informer, informer.addEventHandler(std::move(handlers)));
}

void Controller::watchFor(SharedInformer& informer, std::vector<Predicate> predicates) {
  if (!for_kind_) {
    for_kind_ = informer.gvk();
    log_ = log_.withValues(
        {{"controllerGroup", for_kind_->group}, {"controllerKind", for_kind_->kind}});
  }
  addSource(
      informer, [](const Json& object) { return std::vector<Request>{meta::key(object)}; },
      std::move(predicates));
}

void Controller::watchOwned(SharedInformer& informer, GroupVersionKind owner, OwnerMatch match,
                            std::vector<Predicate> predicates) {
  addSource(
      informer,
      [owner = std::move(owner), match](const Json& object) {
        std::vector<Request> out;
        for (const auto& ref : meta::ownerReferences(object)) {
          if (match == OwnerMatch::kControllerOnly && !ref.controller) {
            continue;
          }
          auto ref_gvk = GroupVersionKind::fromApiVersion(ref.api_version, ref.kind);
          // Versions may differ between the reference and the watch.
          if (ref_gvk.group == owner.group && ref_gvk.kind == owner.kind) {
            out.push_back({meta::ns(object), ref.name});
          }
        }
        return out;
      },
      std::move(predicates));
}

void Controller::watchMapped(SharedInformer& informer, MapFunc map,
                             std::vector<Predicate> predicates) {
  addSource(informer, std::move(map), std::move(predicates));
}

Logger Controller::reconcileLogger(const Request& request) {
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  {
    std::scoped_lock lock(ids_mu_);
    high = ids_();
    low = ids_();
  }
  // A random (version 4, RFC 4122 variant) UUID, as controller-runtime's.
  high = (high & ~std::uint64_t{0xF000}) | 0x4000;
  low = (low & ~(std::uint64_t{0xC} << 60)) | (std::uint64_t{0x8} << 60);
  const std::string id =
      fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", high >> 32, (high >> 16) & 0xFFFF,
                  high & 0xFFFF, low >> 48, low & 0xFFFFFFFFFFFF);
  LogValues values = LogValues::object();
  if (for_kind_) {
    values[for_kind_->kind] = objectRef(request.ns, request.name);
  }
  values["namespace"] = request.ns;
  values["name"] = request.name;
  values["reconcileID"] = id;
  return log_.withValues(values);
}

void Controller::reconcileHandler(const Request& request, std::stop_token stop) {
  SteadyTime started = clock_.now();
  if (metrics_) {
    metrics_->active_workers->add(1);
  }
  const ReconcileContext ctx{std::move(stop), reconcileLogger(request)};
  auto result = reconciler_.reconcile(ctx, request);
  if (metrics_) {
    metrics_->active_workers->add(-1);
    metrics_->time->observe(std::chrono::duration<double>(clock_.now() - started).count());
  }
  if (!result.ok()) {
    if (metrics_) {
      metrics_->errors->inc();
      metrics_->error->inc();
    }
    if (isTerminalError(result.status())) {
      if (metrics_) {
        metrics_->terminal_errors->inc();
      }
      queue_.forget(request);
      ctx.log.error("Reconciler error", result.status(), {{"terminal", true}});
      return;
    }
    queue_.addRateLimited(request);
    ctx.log.error("Reconciler error", result.status());
    return;
  }
  if (result->requeue_after > Duration::zero()) {
    // A requeue-after is a plan, not a failure: reset the backoff.
    queue_.forget(request);
    queue_.addAfter(request, result->requeue_after);
    if (metrics_) {
      metrics_->requeue_after->inc();
    }
    ctx.log.verbose(
        5, "Reconcile done, requeueing after",
        {{"requeueAfterSeconds", std::chrono::duration<double>(result->requeue_after).count()}});
    return;
  }
  if (result->requeue) {
    queue_.addRateLimited(request);
    if (metrics_) {
      metrics_->requeue->inc();
    }
    ctx.log.verbose(5, "Reconcile done, requeueing");
    return;
  }
  queue_.forget(request);
  if (metrics_) {
    metrics_->success->inc();
  }
  ctx.log.verbose(5, "Reconcile successful");
}

void Controller::worker(std::stop_token stop) {
  while (auto request = queue_.get()) {
    reconcileHandler(*request, stop);
    queue_.done(*request);
  }
}

absl::Status Controller::run(std::stop_token stop) {
  // Wait for every watched informer with one overall deadline.
  SteadyTime deadline = clock_.now() + cache_sync_timeout_;
  for (auto& [informer, id] : sources_) {
    std::stop_source timeout;
    std::mutex mu;
    std::condition_variable_any cv;
    std::jthread timer([&](std::stop_token done) {
      std::unique_lock lock(mu);
      if (!clock_.waitUntil(lock, cv, done, deadline, [] { return false; }) &&
          !done.stop_requested()) {
        timeout.request_stop();
      }
    });
    std::stop_callback forward(stop, [&] { timeout.request_stop(); });
    bool synced = informer->waitForSync(timeout.get_token());
    timer.request_stop();
    if (!synced) {
      queue_.shutDown();
      if (stop.stop_requested()) {
        return absl::OkStatus();
      }
      return absl::DeadlineExceededError(
          absl::StrCat("controller ", name_, ": cache of ", informer->gvk().kind, " did not sync"));
    }
  }
  log_.info("Starting workers", {{"workerCount", workers_}});
  std::vector<std::jthread> workers;
  workers.reserve(static_cast<std::size_t>(workers_));
  for (int i = 0; i < workers_; ++i) {
    workers.emplace_back([this, stop] { worker(stop); });
  }
  {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait(lock, stop, [] { return false; });
  }
  log_.info("Shutdown signal received, waiting for all workers to finish");
  queue_.shutDownWithDrain();
  workers.clear(); // joins
  log_.info("All workers finished");
  return absl::OkStatus();
}

} // namespace captf::kube
