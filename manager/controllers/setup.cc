#include "manager/controllers/setup.h"

#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/metrics.h"
#include "manager/controllers/sweep.h"
#include "manager/controllers/terraform_cluster_controller.h"
#include "manager/kube/selector.h"

namespace captf::controllers {

using nlohmann::json;

namespace {

std::string str(std::string_view s) {
  return std::string(s);
}

class ControllersImpl final : public Controllers {
public:
  ControllersImpl(kube::Manager& manager, const ControllerSettings& settings,
                  const std::string& version, const std::string& commit,
                  std::shared_ptr<spdlog::logger> logger)
      : settings_(settings), metrics_(manager.metrics(), version, commit),
        cluster_(ReconcilerDeps{manager.client(), manager.apiClient(), manager.eventRecorder(),
                                manager.clock(), metrics_, settings_}),
        sweep_(manager.apiClient(), manager.clock(), settings.watch_namespace, settings.sync_period,
               std::move(logger)) {}

  ControllerSettings settings_;
  CaptfMetrics metrics_;
  TerraformClusterReconciler cluster_;
  OrphanSweep sweep_;
};

} // namespace

void configureCache(kube::CacheOptions& cache, const ControllerSettings& settings) {
  (void)settings;
  const std::string managed = str(api::kLabelManaged) + "=true";
  for (const auto* gvk : {&kinds::kSecret, &kinds::kJob, &kinds::kPod, &kinds::kLease,
                          &kinds::kServiceAccount, &kinds::kRoleBinding}) {
    cache.by_kind[*gvk].label_selector = managed;
  }
}

absl::StatusOr<std::unique_ptr<Controllers>>
setupControllers(kube::Manager& manager, const ControllerSettings& settings,
                 const std::string& version, const std::string& commit,
                 std::shared_ptr<spdlog::logger> logger) {
  auto controllers =
      std::make_unique<ControllersImpl>(manager, settings, version, commit, std::move(logger));
  kube::Cache& cache = manager.cache();

  auto clusters = cache.informerFor(kinds::kTerraformCluster);
  auto jobs = cache.informerFor(kinds::kJob);
  auto capi_clusters = cache.informerFor(kinds::kCluster);
  auto identities = cache.informerFor(kinds::kTerraformClusterIdentity);
  for (const auto* informer : {&clusters, &jobs, &capi_clusters, &identities}) {
    if (!informer->ok()) {
      return informer->status();
    }
  }
  // Informers the reconciler reads (started with the cache).
  for (const auto* gvk :
       {&kinds::kSecret, &kinds::kPod, &kinds::kServiceAccount, &kinds::kRoleBinding,
        &kinds::kTerraformMachine, &kinds::kTerraformMachinePool}) {
    if (auto informer = cache.informerFor(*gvk); !informer.ok()) {
      return informer.status();
    }
  }

  std::vector<kube::Predicate> filters;
  if (!settings.watch_filter.empty()) {
    auto selector =
        kube::LabelSelector::parse(str(api::kLabelWatchFilter) + "=" + settings.watch_filter);
    if (!selector.ok()) {
      return selector.status();
    }
    filters.push_back(kube::predicates::labelSelector(*selector));
  }

  kube::ControllerOptions options;
  options.max_concurrent_reconciles = settings.terraformcluster_concurrency;
  kube::Controller& controller =
      manager.addController("terraformcluster", controllers->cluster_, std::move(options));
  controller.watchFor(**clusters, filters);
  controller.watchOwned(**jobs, kinds::kTerraformCluster, kube::OwnerMatch::kAnyOwner);
  // A Cluster wakes the TerraformCluster its infrastructureRef names.
  controller.watchMapped(**capi_clusters, [](const json& cluster) {
    std::vector<kube::Request> requests;
    const json* ref = kube::fieldAt(cluster, "spec.infrastructureRef");
    if (ref != nullptr && ref->is_object() &&
        ref->value("kind", "") == api::kKindTerraformCluster) {
      requests.push_back({kube::meta::ns(cluster), ref->value("name", "")});
    }
    return requests;
  });
  // An identity wakes every TerraformCluster naming it.
  kube::Cache* cache_ptr = &cache;
  controller.watchMapped(**identities, [cache_ptr](const json& identity) {
    std::vector<kube::Request> requests;
    auto list = cache_ptr->list(kinds::kTerraformCluster, {});
    if (!list.ok()) {
      return requests;
    }
    const std::string name = kube::meta::name(identity);
    for (const json& tc : list->items) {
      const json* ref = kube::fieldAt(tc, "spec.identityRef.name");
      if (ref != nullptr && ref->is_string() && ref->get<std::string>() == name) {
        requests.push_back(kube::meta::key(tc));
      }
    }
    return requests;
  });
  OrphanSweep* sweep = &controllers->sweep_;
  manager.add(std::make_unique<kube::RunnableFunc>(
                  [sweep](std::stop_token stop) { return sweep->run(std::move(stop)); }),
              kube::NeedLeaderElection::kYes);
  return std::unique_ptr<Controllers>(std::move(controllers));
}

} // namespace captf::controllers
