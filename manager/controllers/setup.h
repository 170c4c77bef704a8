#pragma once

// Wires the reconcilers into a kube::Manager: cache scoping and the second
// cache of labeled variablesFrom sources (docs/decisions/manager-binary.md "Caches"), controllers
// with their watches and concurrency, the captf_* metrics.

#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "absl/status/status.h"
#include "manager/controllers/options.h"
#include "manager/kube/cache.h"
#include "manager/kube/manager.h"

namespace captf::controllers {

// Restricts the main cache per kind: Secrets, Jobs, Pods, Leases,
// ServiceAccounts and RoleBindings only when labeled captf.io/managed=true.
void configureCache(kube::CacheOptions& cache, const ControllerSettings& settings);

// Registers every controller with `manager` (before manager.run()). The
// reconcilers and what they share (metrics, the second cache's informers)
// are given to the manager to own, so they outlive its controllers.
absl::Status setupControllers(kube::Manager& manager, const ControllerSettings& settings,
                              const std::string& version, const std::string& commit,
                              const std::shared_ptr<spdlog::logger>& logger);

} // namespace captf::controllers
