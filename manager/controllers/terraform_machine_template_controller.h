#pragma once

// The TerraformMachineTemplate reconciler (docs/decisions/manager-machine-template.md):
// reads the capacity labels of the template's module image from its
// registry (the registry client tfcapi-lint uses, with the template's own
// image pull Secrets) and reports them in status.capacity, status.nodeInfo
// and status.capacitySource with the CapacityResolved condition, so Cluster
// API's autoscaler can scale a MachineDeployment from zero. An image is
// resolved once; a new spec image resolves again.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "manager/controllers/workload_kind.h"
#include "manager/kube/controller.h"

namespace captf::controllers {

// How the registry is reached.
struct ImageInspectOptions {
  // Registries (host[:port]) reached over plain HTTP when HTTPS fails.
  std::set<std::string> insecure_registries;
  std::chrono::seconds timeout{10};
};

// Reads an image's config labels: the image reference and the Docker
// config documents of its pull Secrets ({where, document}). The seam unit
// tests replace.
using LabelReader = std::function<absl::StatusOr<std::map<std::string, std::string>>(
    const std::string& image, const std::vector<std::pair<std::string, std::string>>& configs)>;

// The registry reader of lint/oci (linux/amd64 of an index).
LabelReader registryLabelReader(const ImageInspectOptions& options);

class TerraformMachineTemplateReconciler final : public kube::Reconciler {
public:
  TerraformMachineTemplateReconciler(ReconcilerDeps deps, LabelReader read_labels)
      : deps_(deps), read_labels_(std::move(read_labels)) {}

  absl::StatusOr<kube::Result> reconcile(const kube::ReconcileContext& ctx,
                                         const kube::Request& request) override;

private:
  ReconcilerDeps deps_;
  LabelReader read_labels_;
};

} // namespace captf::controllers
