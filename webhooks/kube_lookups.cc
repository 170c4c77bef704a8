#include "webhooks/kube_lookups.h"

#include <fmt/format.h>

#include "contract/status_macros.h"
#include "manager/api/codec.h"
#include "manager/api/keys.h"
#include "manager/kube/errors.h"

namespace captf::webhooks {
namespace {

constexpr std::string_view kClusterApiVersion = "v1beta2";

kube::GroupVersionKind captfKind(std::string_view kind) {
  return {std::string(api::kGroup), std::string(api::kVersion), std::string(kind)};
}

kube::GroupVersionKind clusterApiKind(std::string_view kind) {
  return {std::string(api::kClusterApiGroup), std::string(kClusterApiVersion), std::string(kind)};
}

// Every object of a kind in every namespace; a kind the server does not
// serve (Cluster API not installed) has none.
absl::StatusOr<std::vector<nlohmann::json>> listEverywhere(kube::Reader& reader,
                                                           const kube::GroupVersionKind& gvk) {
  absl::StatusOr<kube::ObjectList> list = kube::listAll(reader, gvk, kube::ListOptions{});
  if (!list.ok()) {
    if (kube::isNotFound(list.status())) {
      return std::vector<nlohmann::json>{};
    }
    return list.status();
  }
  return std::move(list->items);
}

template <class T>
absl::Status decodeAll(kube::Reader& reader, std::string_view kind, std::vector<T>& out) {
  absl::StatusOr<std::vector<nlohmann::json>> items = listEverywhere(reader, captfKind(kind));
  if (!items.ok()) {
    return items.status();
  }
  for (const nlohmann::json& item : *items) {
    absl::StatusOr<T> obj = api::fromJson<T>(item);
    if (!obj.ok()) {
      return absl::InternalError(
          fmt::format("cannot decode a {}: {}", kind, std::string(obj.status().message())));
    }
    out.push_back(*std::move(obj));
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<std::optional<OwnerMachine>>
KubeAdmissionLookups::getMachine(std::string_view namespace_name, std::string_view name) {
  absl::StatusOr<kube::Json> obj = reader_.get(
      clusterApiKind("Machine"), kube::ObjectKey{std::string(namespace_name), std::string(name)});
  if (!obj.ok()) {
    if (kube::isNotFound(obj.status())) {
      return std::optional<OwnerMachine>();
    }
    return obj.status();
  }
  absl::StatusOr<OwnerMachine> machine = ownerMachineFromJson(*obj);
  if (!machine.ok()) {
    return machine.status();
  }
  return std::optional<OwnerMachine>(*std::move(machine));
}

absl::StatusOr<std::optional<ClusterInfo>>
KubeAdmissionLookups::getCluster(std::string_view namespace_name, std::string_view name) {
  absl::StatusOr<kube::Json> obj = reader_.get(
      clusterApiKind("Cluster"), kube::ObjectKey{std::string(namespace_name), std::string(name)});
  if (!obj.ok()) {
    if (kube::isNotFound(obj.status())) {
      return std::optional<ClusterInfo>();
    }
    return obj.status();
  }
  absl::StatusOr<ClusterInfo> cluster = clusterInfoFromJson(*obj);
  if (!cluster.ok()) {
    return cluster.status();
  }
  return std::optional<ClusterInfo>(*std::move(cluster));
}

absl::StatusOr<IdentityUsageSnapshot> KubeAdmissionLookups::identityUsage() {
  IdentityUsageSnapshot snapshot;
  CAPTF_RETURN_IF_ERROR(decodeAll(reader_, api::kKindTerraformCluster, snapshot.clusters));
  CAPTF_RETURN_IF_ERROR(decodeAll(reader_, api::kKindTerraformMachine, snapshot.machines));
  CAPTF_RETURN_IF_ERROR(decodeAll(reader_, api::kKindTerraformMachinePool, snapshot.pools));
  absl::StatusOr<std::vector<nlohmann::json>> clusters =
      listEverywhere(reader_, clusterApiKind("Cluster"));
  if (!clusters.ok()) {
    return clusters.status();
  }
  for (const nlohmann::json& item : *clusters) {
    absl::StatusOr<ClusterInfo> info = clusterInfoFromJson(item);
    if (!info.ok()) {
      return info.status();
    }
    snapshot.capi_clusters.push_back(*std::move(info));
  }
  return snapshot;
}

void addAdmissionResources(kube::StaticRestMapper& mapper) {
  const std::pair<std::string_view, bool> captf_kinds[] = {
      {api::kKindTerraformCluster, true},          {api::kKindTerraformMachine, true},
      {api::kKindTerraformMachinePool, true},      {api::kKindTerraformClusterTemplate, true},
      {api::kKindTerraformMachineTemplate, true},  {api::kKindTerraformMachinePoolTemplate, true},
      {api::kKindTerraformClusterIdentity, false},
  };
  for (const auto& [kind, namespaced] : captf_kinds) {
    std::string plural(kind);
    for (char& c : plural) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (plural.ends_with('y')) {
      plural.pop_back();
      plural += "ies";
    } else {
      plural += 's';
    }
    mapper.add(kube::ApiResource{captfKind(kind), plural, namespaced, {"get", "list"}, {}});
  }
  mapper.add(kube::ApiResource{clusterApiKind("Machine"), "machines", true, {"get"}, {}});
  mapper.add(kube::ApiResource{clusterApiKind("Cluster"), "clusters", true, {"get", "list"}, {}});
}

} // namespace captf::webhooks
