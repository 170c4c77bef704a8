#pragma once

// The TerraformClusterIdentity reconciler (docs/decisions/manager-identity.md):
// Ready from the source Secret (True/SecretFound, False/SecretNotFound, with
// an Event on each transition); the credential mirrors of the identity kept
// byte-identical to the source Secret and deleted in the namespaces the
// identity no longer allows; status.namespaces, the namespaces that hold a
// mirror (what the webhook's delete guard reads); owner references a
// legacy CAPTF version put on the source Secret removed. The source Secret
// is never created, changed otherwise or deleted.

#include "manager/controllers/workload_kind.h"
#include "manager/kube/controller.h"

namespace captf::controllers {

class TerraformClusterIdentityReconciler final : public kube::Reconciler {
public:
  explicit TerraformClusterIdentityReconciler(ReconcilerDeps deps) : deps_(deps) {}

  absl::StatusOr<kube::Result> reconcile(const kube::ReconcileContext& ctx,
                                         const kube::Request& request) override;

private:
  ReconcilerDeps deps_;
};

} // namespace captf::controllers
