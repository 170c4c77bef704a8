#include "manager/controllers/setup.h"

#include <map>
#include <utility>

#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/metrics.h"
#include "manager/controllers/ref_watcher.h"
#include "manager/controllers/runner_rbac.h"
#include "manager/controllers/sweep.h"
#include "manager/controllers/terraform_cluster_identity_controller.h"
#include "manager/controllers/terraform_cluster_kind.h"
#include "manager/controllers/terraform_machine_kind.h"
#include "manager/controllers/terraform_machine_pool_kind.h"
#include "manager/controllers/terraform_machine_template_controller.h"
#include "manager/controllers/workload.h"
#include "manager/controllers/workload_reconciler.h"
#include "manager/kube/selector.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/history.h"
#include "manager/reports/report_server.h"
#include "manager/workspace/secrets.h"

namespace captf::controllers {

using nlohmann::json;

namespace {

using kube::str;

// The second cache of docs/decisions/manager-binary.md "Caches": ConfigMaps and Secrets labeled
// captf.io/variables=true, data stripped, watched only to wake the objects
// whose spec.variablesFrom names them (the reconciler reads their content
// from the API server).
constexpr char kVariablesSourcesIndex[] = "captf.io/variables-sources";

std::string sourceKey(const std::string& ns, std::string_view kind, const std::string& name) {
  return ns + "/" + std::string(kind) + "/" + name;
}

std::vector<std::string> variablesSourcesOf(const json& object) {
  std::vector<std::string> keys;
  const json* sources = kube::fieldAt(object, "spec.variablesFrom");
  if (sources == nullptr || !sources->is_array()) {
    return keys;
  }
  for (const json& source : *sources) {
    for (const auto& [field, kind] :
         {std::pair{"configMapRef", "ConfigMap"}, std::pair{"secretRef", "Secret"}}) {
      const json* name = kube::fieldAt(source, std::string(field) + ".name");
      if (name != nullptr && name->is_string()) {
        keys.push_back(sourceKey(kube::meta::ns(object), kind, name->get<std::string>()));
      }
    }
  }
  return keys;
}

// The reconcilers and what they share, owned by the manager.
class Controllers {
public:
  Controllers(kube::Manager& manager, const ControllerSettings& settings,
              const std::string& version, const std::string& commit,
              std::shared_ptr<spdlog::logger> logger)
      : settings_(settings), metrics_(manager.metrics(), version, commit),
        refs_(RefWatcher::Options{settings.git_poll_interval, 0.1, settings.git_workers,
                                  settings.git_timeout,
                                  [&manager] { return manager.clock().wallNow(); }},
              secretReader(manager.apiClient()), gitListRemote()),
        runner_events_(runnerEvents(manager, settings, logger)),
        reports_(runner_events_ ? std::make_unique<reports::RunReports>(*runner_events_) : nullptr),
        cluster_(deps(manager), terraformClusterKind(deps(manager))),
        machine_(deps(manager), terraformMachineKind(deps(manager))),
        machine_pool_(deps(manager), terraformMachinePoolKind(deps(manager))),
        identity_(deps(manager)),
        machine_template_(deps(manager),
                          registryLabelReader(ImageInspectOptions{settings.insecure_registries})),
        sweep_(manager.apiClient(), manager.clock(), settings.watch_namespace, settings.sync_period,
               std::move(logger)) {}

  ReconcilerDeps deps(kube::Manager& manager) {
    return ReconcilerDeps{
        manager.cache(), manager.client(), manager.apiClient(), manager.eventRecorder(),
        manager.clock(), metrics_,         settings_,           &refs_,
        reports_.get()};
  }

  // Events the runners' reports become, posted as their own reporting
  // controller (docs/decisions/run-reports.md).
  static std::unique_ptr<kube::KubeEventRecorder>
  runnerEvents(kube::Manager& manager, const ControllerSettings& settings,
               const std::shared_ptr<spdlog::logger>& logger) {
    if (!settings.runReportsOn()) {
      return nullptr;
    }
    kube::EventRecorderOptions options;
    options.reporting_controller = "captf.io/runner";
    options.reporting_instance = "captf-runner";
    return std::make_unique<kube::KubeEventRecorder>(manager.apiClient(), options, manager.clock(),
                                                     &manager.metrics(), logger);
  }

  // A Git credentials Secret, read straight from the API server for one
  // listing (Secrets without the captf.io/managed label are not cached).
  static RefWatcher::ReadSecret secretReader(kube::Client& api) {
    return [&api](const std::string& ns,
                  const std::string& name) -> absl::StatusOr<std::map<std::string, std::string>> {
      auto secret = api.get(kinds::kSecret, {ns, name});
      if (!secret.ok()) {
        return secret.status();
      }
      return workspace::decodeSecretData(*secret);
    };
  }

  ControllerSettings settings_;
  CaptfMetrics metrics_;
  RefWatcher refs_;
  std::unique_ptr<kube::KubeEventRecorder> runner_events_;
  std::unique_ptr<reports::RunReports> reports_;
  WorkloadReconciler cluster_;
  WorkloadReconciler machine_;
  WorkloadReconciler machine_pool_;
  TerraformClusterIdentityReconciler identity_;
  TerraformMachineTemplateReconciler machine_template_;
  OrphanSweep sweep_;
  std::vector<std::unique_ptr<kube::SharedInformer>> variables_sources_;
};

// Maps a Cluster API object to the object of `kind` its infrastructure
// reference at `path` names.
auto infrastructureRefOf(std::string_view kind, std::string_view path) {
  return [kind, path](const json& object) {
    std::vector<kube::Request> requests;
    const json* ref = kube::fieldAt(object, path);
    if (ref != nullptr && ref->is_object() && ref->value("kind", "") == kind) {
      requests.push_back({kube::meta::ns(object), ref->value("name", "")});
    }
    return requests;
  };
}

// The objects of `gvk` of the Cluster named `cluster` in `ns`, by their
// cluster-name label.
std::vector<kube::Request> membersOfCluster(kube::Cache& cache, const kube::GroupVersionKind& gvk,
                                            const std::string& ns, const std::string& cluster) {
  std::vector<kube::Request> requests;
  if (cluster.empty()) {
    return requests;
  }
  kube::ListOptions options;
  options.ns = ns;
  options.label_selector = str(api::kLabelClusterName) + "=" + cluster;
  auto members = cache.list(gvk, options);
  if (members.ok()) {
    for (const json& member : members->items) {
      requests.push_back(kube::meta::key(member));
    }
  }
  return requests;
}

// A runner pod wakes its Job's object when it starts or stops waiting for an
// image it cannot pull (docs/behaviour/jobs.md#image-pulls); every other
// change of a pod reaches the object through its Job.
absl::Status watchImagePulls(kube::Controller& controller, kube::Cache& cache,
                             const kube::GroupVersionKind& gvk) {
  auto pods = cache.informerFor(kinds::kPod);
  if (!pods.ok()) {
    return pods.status();
  }
  kube::Cache* cache_ptr = &cache;
  controller.watchMapped(
      **pods, [cache_ptr, gvk](const json& pod) { return ownersOfPodJob(*cache_ptr, gvk, pod); },
      {imagePullChanged()});
  return absl::OkStatus();
}

// How a TerraformMachine or TerraformMachinePool controller is watched.
struct MemberWatch {
  std::string name;                        // "terraformmachine"
  const kube::GroupVersionKind* gvk;       // the kind reconciled
  const kube::GroupVersionKind* owner_gvk; // its Cluster API owner
  std::string_view infrastructure_ref;     // where the owner names it
  int concurrency;
};

absl::StatusOr<kube::Controller*>
setupMemberController(kube::Manager& manager, WorkloadReconciler& reconciler,
                      const MemberWatch& watch, const std::vector<kube::Predicate>& filters) {
  kube::Cache& cache = manager.cache();
  auto members = cache.informerFor(*watch.gvk);
  auto jobs = cache.informerFor(kinds::kJob);
  auto owners = cache.informerFor(*watch.owner_gvk);
  auto capi_clusters = cache.informerFor(kinds::kCluster);
  auto clusters = cache.informerFor(kinds::kTerraformCluster);
  auto identities = cache.informerFor(kinds::kTerraformClusterIdentity);
  for (const auto* informer : {&members, &jobs, &owners, &capi_clusters, &clusters, &identities}) {
    if (!informer->ok()) {
      return informer->status();
    }
  }
  kube::ControllerOptions options;
  options.max_concurrent_reconciles = watch.concurrency;
  kube::Controller& controller = manager.addController(watch.name, reconciler, std::move(options));
  controller.watchFor(**members, filters);
  controller.watchOwned(**jobs, *watch.gvk, kube::OwnerMatch::kAnyOwner);
  if (absl::Status watched = watchImagePulls(controller, cache, *watch.gvk); !watched.ok()) {
    return watched;
  }
  // The owner wakes the object its infrastructure reference names
  // (bootstrap data, replicas, deletion).
  controller.watchMapped(**owners, infrastructureRefOf(watch.gvk->kind, watch.infrastructure_ref));
  // The Cluster (infrastructure provisioned, paused) and its TerraformCluster
  // (exports, defaults, operations) wake the members of the cluster.
  kube::Cache* cache_ptr = &cache;
  const kube::GroupVersionKind* gvk = watch.gvk;
  controller.watchMapped(**capi_clusters, [cache_ptr, gvk](const json& cluster) {
    return membersOfCluster(*cache_ptr, *gvk, kube::meta::ns(cluster), kube::meta::name(cluster));
  });
  controller.watchMapped(**clusters, [cache_ptr, gvk](const json& tc) {
    std::string cluster;
    const json* refs = kube::fieldAt(tc, "metadata.ownerReferences");
    if (refs != nullptr && refs->is_array()) {
      for (const json& owner : *refs) {
        if (owner.value("kind", "") == "Cluster") {
          cluster = owner.value("name", "");
        }
      }
    }
    return membersOfCluster(*cache_ptr, *gvk, kube::meta::ns(tc), cluster);
  });
  // An identity wakes the members that name it or inherit theirs from
  // their cluster (refreshed or revoked credentials).
  controller.watchMapped(**identities, [cache_ptr, gvk](const json& identity) {
    std::vector<kube::Request> requests;
    auto list = cache_ptr->list(*gvk, {});
    if (!list.ok()) {
      return requests;
    }
    const std::string name = kube::meta::name(identity);
    for (const json& member : list->items) {
      const json* ref = kube::fieldAt(member, "spec.identityRef.name");
      if (ref == nullptr || (ref->is_string() && ref->get<std::string>() == name)) {
        requests.push_back(kube::meta::key(member));
      }
    }
    return requests;
  });
  return &controller;
}

// The identity controller: the identity, its mirrors (managed Secrets
// labeled captf.io/mirrored, by their captf.io/identity annotation), and
// namespaces (a label change can allow or revoke one).
absl::Status setupIdentityController(kube::Manager& manager,
                                     TerraformClusterIdentityReconciler& reconciler) {
  kube::Cache& cache = manager.cache();
  auto identities = cache.informerFor(kinds::kTerraformClusterIdentity);
  auto secrets = cache.informerFor(kinds::kSecret);
  auto namespaces = cache.informerFor(kinds::kNamespace);
  for (const auto* informer : {&identities, &secrets, &namespaces}) {
    if (!informer->ok()) {
      return informer->status();
    }
  }
  kube::ControllerOptions options;
  options.max_concurrent_reconciles = 1;
  kube::Controller& controller =
      manager.addController("terraformclusteridentity", reconciler, std::move(options));
  controller.watchFor(**identities, {});
  controller.watchMapped(**secrets, [](const json& secret) {
    std::vector<kube::Request> requests;
    if (kube::meta::labels(secret).contains(str(api::kLabelMirrored))) {
      const std::string identity =
          kube::meta::annotations(secret).value(str(api::kAnnotationIdentity), "");
      if (!identity.empty()) {
        requests.push_back({"", identity});
      }
    }
    return requests;
  });
  kube::Cache* cache_ptr = &cache;
  controller.watchMapped(**namespaces, [cache_ptr](const json&) {
    std::vector<kube::Request> requests;
    auto list = cache_ptr->list(kinds::kTerraformClusterIdentity, {});
    if (list.ok()) {
      for (const json& identity : list->items) {
        requests.push_back({"", kube::meta::name(identity)});
      }
    }
    return requests;
  });
  return absl::OkStatus();
}

} // namespace

void configureCache(kube::CacheOptions& cache, const ControllerSettings& settings) {
  (void)settings;
  const std::string managed = str(api::kLabelManaged) + "=true";
  for (const auto* gvk : {&kinds::kSecret, &kinds::kJob, &kinds::kPod, &kinds::kLease,
                          &kinds::kServiceAccount, &kinds::kRoleBinding}) {
    cache.by_kind[*gvk].label_selector = managed;
  }
  // Tenants' Secrets are never held with their data: what a pass reads
  // comes back through a memo bounded by --secret-data-cache-size
  // (docs/behaviour/security.md "Limits").
  cache.by_kind[kinds::kSecret].cache_data = false;
}

absl::Status setupControllers(kube::Manager& manager, const ControllerSettings& settings,
                              const std::string& version, const std::string& commit,
                              const std::shared_ptr<spdlog::logger>& logger) {
  Controllers* controllers =
      &manager.own(std::make_unique<Controllers>(manager, settings, version, commit, logger));
  kube::Cache& cache = manager.cache();
  if (absl::Status indexed = addRunnerAccountsIndex(cache); !indexed.ok()) {
    return indexed;
  }

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
       {&kinds::kSecret, &kinds::kPod, &kinds::kServiceAccount, &kinds::kRoleBinding}) {
    if (auto informer = cache.informerFor(*gvk); !informer.ok()) {
      return informer.status();
    }
  }
  for (const auto* gvk : kinds::kWorkloadKinds) {
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
  if (absl::Status watched = watchImagePulls(controller, cache, kinds::kTerraformCluster);
      !watched.ok()) {
    return watched;
  }
  // A Cluster wakes the TerraformCluster its infrastructureRef names.
  controller.watchMapped(**capi_clusters,
                         infrastructureRefOf(api::kKindTerraformCluster, "spec.infrastructureRef"));
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
  // The labeled variablesFrom sources (ConfigMaps and Secrets), each woken
  // object found through an index of its kind (below, per kind).
  for (const auto* gvk : {&kinds::kConfigMap, &kinds::kSecret}) {
    kube::ListOptions scope;
    scope.ns = settings.watch_namespace;
    scope.label_selector = str(api::kLabelVariables) + "=true";
    scope.metadata_only = true;
    kube::InformerOptions informer_options;
    informer_options.transform = kube::stripPayload;
    auto& informer =
        controllers->variables_sources_.emplace_back(std::make_unique<kube::SharedInformer>(
            *gvk, std::make_unique<kube::ApiListerWatcher>(manager.apiClient(), *gvk, scope),
            manager.clock(), std::move(informer_options), logger));
    kube::SharedInformer* raw = informer.get();
    manager.add(std::make_unique<kube::RunnableFunc>([raw](std::stop_token stop) {
                  raw->run(std::move(stop));
                  return absl::OkStatus();
                }),
                kube::NeedLeaderElection::kYes);
  }
  // A labeled variablesFrom source wakes every object of `gvk` naming it:
  // a TerraformCluster or TerraformMachinePool re-applies, a TerraformMachine
  // still waiting for it (VariablesSourceNotFound) renders.
  auto wake_on_variables_sources = [&](kube::Controller& target,
                                       const kube::GroupVersionKind& gvk) -> absl::Status {
    if (absl::Status indexed = cache.addIndex(gvk, kVariablesSourcesIndex, variablesSourcesOf);
        !indexed.ok()) {
      return indexed;
    }
    for (const auto& informer : controllers->variables_sources_) {
      target.watchMapped(*informer, [cache_ptr, &gvk,
                                     kind = informer->gvk().kind](const json& source) {
        std::vector<kube::Request> requests;
        auto referencing =
            cache_ptr->byIndex(gvk, kVariablesSourcesIndex,
                               sourceKey(kube::meta::ns(source), kind, kube::meta::name(source)));
        if (referencing.ok()) {
          for (const json& object : *referencing) {
            requests.push_back(kube::meta::key(object));
          }
        }
        return requests;
      });
    }
    return absl::OkStatus();
  };
  if (absl::Status s = wake_on_variables_sources(controller, kinds::kTerraformCluster); !s.ok()) {
    return s;
  }
  if (absl::Status s = setupIdentityController(manager, controllers->identity_); !s.ok()) {
    return s;
  }
  const MemberWatch machines{"terraformmachine", &kinds::kTerraformMachine, &kinds::kMachine,
                             "spec.infrastructureRef", settings.terraformmachine_concurrency};
  auto machine_controller =
      setupMemberController(manager, controllers->machine_, machines, filters);
  if (!machine_controller.ok()) {
    return machine_controller.status();
  }
  const MemberWatch pools{"terraformmachinepool", &kinds::kTerraformMachinePool,
                          &kinds::kMachinePool, "spec.template.spec.infrastructureRef",
                          settings.terraformmachinepool_concurrency};
  auto pool_controller = setupMemberController(manager, controllers->machine_pool_, pools, filters);
  if (!pool_controller.ok()) {
    return pool_controller.status();
  }
  for (const auto& [member, gvk] : {std::pair{*machine_controller, &kinds::kTerraformMachine},
                                    std::pair{*pool_controller, &kinds::kTerraformMachinePool}}) {
    if (absl::Status s = wake_on_variables_sources(*member, *gvk); !s.ok()) {
      return s;
    }
  }
  auto templates = cache.informerFor(kinds::kTerraformMachineTemplate);
  if (!templates.ok()) {
    return templates.status();
  }
  kube::ControllerOptions template_options;
  template_options.max_concurrent_reconciles = settings.terraformmachinetemplate_concurrency;
  manager
      .addController("terraformmachinetemplate", controllers->machine_template_,
                     std::move(template_options))
      .watchFor(**templates, filters);
  // The ref watcher wakes the object whose resolution changed, through its
  // kind's queue, and counts each listing.
  const std::map<std::string, kube::WorkQueue*> queues = {
      {std::string(api::kKindTerraformCluster), &controller.queue()},
      {std::string(api::kKindTerraformMachine), &(*machine_controller)->queue()},
      {std::string(api::kKindTerraformMachinePool), &(*pool_controller)->queue()}};
  for (const auto* gvk : kinds::kWorkloadKinds) {
    if (!queues.contains(gvk->kind)) {
      return absl::InternalError("no controller queue for workload kind " + gvk->kind);
    }
  }
  RefWatcher* refs = &controllers->refs_;
  refs->setNotify([queues](const RefFollower& who) {
    if (auto it = queues.find(who.kind); it != queues.end()) {
      it->second->add({who.ns, who.name});
    }
  });
  kube::CounterFamily* listings = &controllers->metrics_.git_ls_remote_total;
  refs->setObserve([listings](const GitRemote&, const absl::Status& status) {
    listings
        ->withLabels({status.ok() ? std::string("ok")
                                  : std::string(absl::StatusCodeToString(status.code()))})
        .inc();
  });
  manager.add(std::make_unique<kube::RunnableFunc>(
                  [refs](std::stop_token stop) { return refs->run(std::move(stop)); }),
              kube::NeedLeaderElection::kYes);
  if (controllers->reports_) {
    // Served by the leader, whose bookkeeping keeps the tails.
    reports::ReportServerOptions report_options;
    report_options.bind_address = settings.run_reports.bind_address;
    report_options.cert_file = settings.run_reports.cert_file;
    report_options.key_file = settings.run_reports.key_file;
    kube::Cache* job_cache = &manager.cache();
    manager.add(std::make_unique<reports::ReportServer>(
                    report_options,
                    [job_cache](const std::string& ns, const std::string& name) {
                      return job_cache->get(kinds::kJob, {ns, name});
                    },
                    *controllers->reports_, manager.metrics(), logger),
                kube::NeedLeaderElection::kYes);
  }
  // captf_jobs_active: running runner Jobs, counted from the Job cache at
  // every scrape (docs/reference/metrics.md).
  controllers->metrics_.countActiveJobsFrom(cache);
  OrphanSweep* sweep = &controllers->sweep_;
  manager.add(std::make_unique<kube::RunnableFunc>(
                  [sweep](std::stop_token stop) { return sweep->run(std::move(stop)); }),
              kube::NeedLeaderElection::kYes);
  return absl::OkStatus();
}

} // namespace captf::controllers
