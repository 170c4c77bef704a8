#pragma once

// Wires the reconcilers into a kube::Manager: cache scoping and the second
// cache of labeled variablesFrom sources (§10 "Caches"), controllers with
// their watches and concurrency, the captf_* metrics.

#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/controllers/options.h"
#include "manager/kube/cache.h"
#include "manager/kube/manager.h"

namespace captf::controllers {

// Restricts the main cache per kind: Secrets, Jobs, Pods, Leases,
// ServiceAccounts and RoleBindings only when labeled captf.io/managed=true.
void configureCache(kube::CacheOptions& cache, const ControllerSettings& settings);

// Owns the reconcilers and what they share; lives as long as the manager.
class Controllers {
public:
  virtual ~Controllers() = default;
};

// Registers every controller with `manager` (before manager.run()).
absl::StatusOr<std::unique_ptr<Controllers>>
setupControllers(kube::Manager& manager, const ControllerSettings& settings,
                 const std::string& version, const std::string& commit,
                 std::shared_ptr<spdlog::logger> logger);

} // namespace captf::controllers
