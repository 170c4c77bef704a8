#include "webhooks/delete_guards.h"

#include <fmt/format.h>

#include "absl/status/status.h"
#include "contract/status_macros.h"
#include "manager/api/keys.h"

namespace captf::webhooks {
namespace {

std::string groupOf(std::string_view api_version) {
  const std::size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string()
                                         : std::string(api_version.substr(0, slash));
}

std::string stringAt(const nlohmann::json& obj, std::initializer_list<const char*> path) {
  const nlohmann::json* cur = &obj;
  for (const char* key : path) {
    if (!cur->is_object()) {
      return {};
    }
    const auto it = cur->find(key);
    if (it == cur->end()) {
      return {};
    }
    cur = &*it;
  }
  return cur->is_string() ? cur->get<std::string>() : std::string();
}

ObjectRef objectRefFrom(const nlohmann::json& obj, const char* field) {
  ObjectRef ref;
  const auto spec = obj.find("spec");
  if (spec == obj.end() || !spec->is_object()) {
    return ref;
  }
  const auto r = spec->find(field);
  if (r == spec->end() || !r->is_object()) {
    return ref;
  }
  ref.kind = stringAt(*r, {"kind"});
  ref.name = stringAt(*r, {"name"});
  ref.api_group = stringAt(*r, {"apiGroup"});
  if (ref.api_group.empty()) {
    ref.api_group = groupOf(stringAt(*r, {"apiVersion"}));
  }
  return ref;
}

absl::Status requireObject(const nlohmann::json& doc, std::string_view kind) {
  if (!doc.is_object() || !doc.contains("metadata") || !doc["metadata"].is_object()) {
    return absl::InvalidArgumentError(fmt::format("not a {} object", kind));
  }
  if (const std::string k = stringAt(doc, {"kind"}); !k.empty() && k != kind) {
    return absl::InvalidArgumentError(fmt::format("expected kind {}, got {}", kind, k));
  }
  return absl::OkStatus();
}

std::string nsName(const api::ObjectMeta& m) {
  return fmt::format("{}/{}", m.namespace_, m.name);
}

std::optional<std::string> clusterFallbackIdentity(const api::ObjectMeta& meta,
                                                   const IdentityUsageSnapshot& snapshot) {
  const auto label = meta.labels.find(std::string(api::kLabelClusterName));
  if (label == meta.labels.end()) {
    return std::nullopt;
  }
  for (const ClusterInfo& c : snapshot.capi_clusters) {
    if (c.namespace_ != meta.namespace_ || c.name != label->second) {
      continue;
    }
    if (c.infrastructure_ref.kind != api::kKindTerraformCluster) {
      return std::nullopt;
    }
    for (const api::TerraformCluster& tc : snapshot.clusters) {
      if (tc.metadata.namespace_ == meta.namespace_ &&
          tc.metadata.name == c.infrastructure_ref.name) {
        if (tc.spec.defaults && tc.spec.defaults->identity_ref) {
          return tc.spec.defaults->identity_ref->name;
        }
        return tc.spec.identity_ref.name;
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace

absl::StatusOr<OwnerMachine> ownerMachineFromJson(const nlohmann::json& machine) {
  CAPTF_RETURN_IF_ERROR(requireObject(machine, "Machine"));
  OwnerMachine m;
  m.name = stringAt(machine, {"metadata", "name"});
  m.uid = stringAt(machine, {"metadata", "uid"});
  m.cluster_name = stringAt(machine, {"spec", "clusterName"});
  m.deleting = !stringAt(machine, {"metadata", "deletionTimestamp"}).empty();
  m.infrastructure_ref = objectRefFrom(machine, "infrastructureRef");
  return m;
}

absl::StatusOr<ClusterInfo> clusterInfoFromJson(const nlohmann::json& cluster) {
  CAPTF_RETURN_IF_ERROR(requireObject(cluster, "Cluster"));
  ClusterInfo c;
  c.namespace_ = stringAt(cluster, {"metadata", "namespace"});
  c.name = stringAt(cluster, {"metadata", "name"});
  if (const auto spec = cluster.find("spec"); spec != cluster.end() && spec->is_object()) {
    const auto paused = spec->find("paused");
    c.paused = paused != spec->end() && paused->is_boolean() && paused->get<bool>();
  }
  c.infrastructure_ref = objectRefFrom(cluster, "infrastructureRef");
  return c;
}

const api::OwnerReference* machineOwnerReference(const api::TerraformMachine& obj) {
  for (const api::OwnerReference& ref : obj.metadata.owner_references) {
    if (ref.kind == "Machine" && groupOf(ref.api_version) == api::kClusterApiGroup) {
      return &ref;
    }
  }
  return nullptr;
}

std::optional<std::string> backReferenceMismatch(const api::TerraformMachine& obj,
                                                 const api::OwnerReference& ref,
                                                 const OwnerMachine& machine) {
  const ObjectRef want{std::string(api::kGroup), std::string(api::kKindTerraformMachine),
                       obj.metadata.name};
  if (machine.infrastructure_ref != want) {
    return fmt::format("Machine {} spec.infrastructureRef does not name this TerraformMachine",
                       quote(machine.name));
  }
  if (!ref.uid.empty() && ref.uid != machine.uid) {
    return fmt::format("the ownerReference UID {} is not Machine {}'s UID {}", quote(ref.uid),
                       quote(machine.name), quote(machine.uid));
  }
  const auto label = obj.metadata.labels.find(std::string(api::kLabelClusterName));
  if (label != obj.metadata.labels.end() && label->second != machine.cluster_name) {
    return fmt::format("label {} is {} but Machine {} belongs to Cluster {}",
                       api::kLabelClusterName, quote(label->second), quote(machine.name),
                       quote(machine.cluster_name));
  }
  return std::nullopt;
}

FieldErrorList validateTerraformMachineDelete(const api::TerraformMachine& obj,
                                              const std::optional<OwnerMachine>& owner,
                                              const std::optional<ClusterInfo>& cluster) {
  const api::OwnerReference* ref = machineOwnerReference(obj);
  // An orphan (control planes delete their orphans themselves), a gone
  // owner, an owner being deleted, or an owner that does not reference this
  // object back: the delete goes through.
  if (ref == nullptr || !owner || owner->deleting || backReferenceMismatch(obj, *ref, *owner)) {
    return {};
  }
  if (obj.metadata.annotations.contains(std::string(api::kAnnotationDeleteForMove)) && cluster &&
      cluster->paused) {
    return {};
  }
  return {forbidden(
      api::FieldPath("metadata").child("ownerReferences"),
      fmt::format("TerraformMachine is owned by Machine {}, which is not being deleted: delete "
                  "the Machine instead; Cluster API deletes this object once the instance is "
                  "gone",
                  quote(owner->name)))};
}

std::optional<std::string> findIdentityUser(std::string_view identity,
                                            const IdentityUsageSnapshot& snapshot) {
  for (const api::TerraformCluster& c : snapshot.clusters) {
    if (c.spec.identity_ref.name == identity) {
      return fmt::format("TerraformCluster {}", quote(nsName(c.metadata)));
    }
  }
  auto uses = [&](const std::optional<api::IdentityReference>& own, const api::ObjectMeta& meta) {
    if (own) {
      return own->name == identity;
    }
    const std::optional<std::string> fallback = clusterFallbackIdentity(meta, snapshot);
    return fallback && *fallback == identity;
  };
  for (const api::TerraformMachine& m : snapshot.machines) {
    if (uses(m.spec.identity_ref, m.metadata)) {
      return fmt::format("TerraformMachine {}", quote(nsName(m.metadata)));
    }
  }
  for (const api::TerraformMachinePool& p : snapshot.pools) {
    if (uses(p.spec.identity_ref, p.metadata)) {
      return fmt::format("TerraformMachinePool {}", quote(nsName(p.metadata)));
    }
  }
  return std::nullopt;
}

FieldErrorList validateTerraformClusterIdentityDelete(const api::TerraformClusterIdentity& obj,
                                                      const IdentityUsageSnapshot& snapshot) {
  FieldErrorList errors;
  if (const auto user = findIdentityUser(obj.metadata.name, snapshot)) {
    errors.push_back(forbidden(
        api::FieldPath(),
        fmt::format("the identity is in use by {}; point it at another identity or delete it "
                    "first",
                    *user)));
  }
  if (obj.status && !obj.status->namespaces.empty()) {
    std::string list;
    for (const std::string& ns : obj.status->namespaces) {
      list += fmt::format("{}{}", list.empty() ? "" : ", ", ns);
    }
    errors.push_back(forbidden(
        api::FieldPath("status").child("namespaces"),
        fmt::format("credential mirrors still exist in namespaces {}; the controller removes "
                    "them once no object there uses the identity",
                    list)));
  }
  return errors;
}

} // namespace captf::webhooks
