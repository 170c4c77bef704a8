#pragma once

// The dependencies of a kind or a reconciler over the in-memory API server,
// for a unit-test fixture to derive from: the API server's store, a cache
// over it, the manager's client shape, a clock, the Event reasons, metrics
// and settings.

#include "manager/controllers/metrics.h"
#include "manager/controllers/options.h"
#include "manager/controllers/workload_kind.h"
#include "manager/kube/clock.h"
#include "manager/kube/metrics.h"
#include "test/manager/controllers/fakes.h"
#include "test/manager/kube/fake_client.h"

namespace captf::controllers {

class FakeReconcilerDeps {
protected:
  FakeReconcilerDeps() : cache_(store_), cached_(cache_, store_), metrics_(registry_, "v", "c") {}

  ReconcilerDeps deps() {
    return ReconcilerDeps{cache_, cached_, store_, events_, clock_, metrics_, settings_};
  }

  kube::testing::FakeClient store_;
  StoreCache cache_;
  CachedClient cached_;
  kube::FakeClock clock_;
  Reasons events_;
  kube::MetricsRegistry registry_;
  CaptfMetrics metrics_;
  ControllerSettings settings_;
};

} // namespace captf::controllers
