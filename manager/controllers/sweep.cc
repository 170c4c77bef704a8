#include "manager/controllers/sweep.h"

#include "manager/api/keys.h"
#include "manager/controllers/kinds.h"
#include "manager/kube/errors.h"

namespace captf::controllers {

absl::StatusOr<std::set<std::string>> OrphanSweep::namespacesInUse() {
  std::set<std::string> used;
  for (const auto* gvk : kinds::kWorkloadKinds) {
    kube::ListOptions options;
    options.ns = namespace_;
    auto list = kube::listAll(api_, *gvk, options);
    if (!list.ok()) {
      return list.status();
    }
    for (const auto& object : list->items) {
      used.insert(kube::meta::ns(object));
    }
  }
  return used;
}

absl::StatusOr<int> OrphanSweep::sweepOnce() {
  auto used = namespacesInUse();
  if (!used.ok()) {
    return used.status();
  }
  int deleted = 0;
  for (const auto* gvk : {&kinds::kServiceAccount, &kinds::kRoleBinding, &kinds::kLease}) {
    kube::ListOptions options;
    options.ns = namespace_;
    options.label_selector = std::string(api::kLabelManaged) + "=true";
    auto list = kube::listAll(api_, *gvk, options);
    if (!list.ok()) {
      return list.status();
    }
    for (const auto& object : list->items) {
      const std::string ns = kube::meta::ns(object);
      if (used->contains(ns)) {
        continue;
      }
      kube::DeleteOptions remove;
      remove.preconditions.uid = kube::meta::uid(object);
      absl::Status s = api_.remove(*gvk, kube::meta::key(object), remove);
      if (!s.ok() && !kube::isNotFound(s) && !kube::isConflict(s)) {
        return s;
      }
      if (s.ok()) {
        ++deleted;
        log_.info("orphan sweep deleted",
                  {{gvk->kind, kube::objectRef(ns, kube::meta::name(object))}});
      }
    }
  }
  return deleted;
}

absl::Status OrphanSweep::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    auto swept = sweepOnce();
    if (!swept.ok()) {
      log_.error("orphan sweep failed", swept.status());
    }
    clock_.sleepFor(period_, stop);
  }
  return absl::OkStatus();
}

} // namespace captf::controllers
