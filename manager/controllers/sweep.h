#pragma once

// The orphan sweep (docs/behaviour/security.md#orphan-sweep): at start and every
// --sync-period while leading, in every namespace (limited by --namespace)
// that holds no TerraformCluster, TerraformMachine or TerraformMachinePool —
// checked through an uncached reader, ignoring --watch-filter — delete the
// ServiceAccounts, RoleBindings and Leases labeled captf.io/managed=true.
// Logged, no events.

#include <chrono>
#include <memory>
#include <set>
#include <stop_token>
#include <string>

#include <spdlog/logger.h>

#include "absl/status/statusor.h"
#include "manager/kube/client.h"
#include "manager/kube/clock.h"
#include "manager/kube/logging.h"

namespace captf::controllers {

class OrphanSweep {
public:
  OrphanSweep(kube::Client& api, kube::Clock& clock, std::string watch_namespace,
              std::chrono::seconds period, std::shared_ptr<spdlog::logger> logger)
      : api_(api), clock_(clock), namespace_(std::move(watch_namespace)), period_(period),
        log_(kube::Logger(std::move(logger)).withValues({{"runnable", "orphan-sweep"}})) {}

  // One sweep; returns how many objects it deleted.
  absl::StatusOr<int> sweepOnce();
  // Sweeps now and every period until `stop`. Errors are logged, never fatal.
  absl::Status run(std::stop_token stop);

private:
  absl::StatusOr<std::set<std::string>> namespacesInUse();

  kube::Client& api_;
  kube::Clock& clock_;
  const std::string namespace_;
  const std::chrono::seconds period_;
  kube::Logger log_;
};

} // namespace captf::controllers
