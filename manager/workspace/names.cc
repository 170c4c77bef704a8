#include "manager/workspace/names.h"

#include <algorithm>
#include <string>
#include <utility>

#include "contract/digest.h"
#include "contract/strings.h"
#include "manager/api/keys.h"

namespace captf::workspace {
namespace {

using contract::strCat;

constexpr std::size_t kMaxLabelValue = 63;
constexpr std::size_t kMaxObjectName = 253;
constexpr std::size_t kShortHash = 16;

std::string shortHash(std::string_view text) {
  return contract::sha256Hex(text).substr(0, kShortHash);
}

} // namespace

std::string_view kindOf(const ObjectRef& ref) {
  return contract::roleSpec(ref.role).kind;
}

std::string stateSuffix(const ObjectRef& ref) {
  return strCat(shortHash(strCat(ref.ns, "/", kindOf(ref), "/", ref.name)), "-",
                contract::roleSpec(ref.role).kind_short);
}

std::string stateSecretName(std::string_view suffix) {
  return strCat("tfstate-", kStateWorkspace, "-", suffix);
}

std::string stateChunkName(std::string_view suffix, std::size_t index) {
  if (index == 0) {
    return stateSecretName(suffix);
  }
  return strCat(stateSecretName(suffix), "-part-", index);
}

std::string lockLeaseName(std::string_view suffix) {
  return strCat("lock-", stateSecretName(suffix));
}

std::string runLeaseName(std::string_view suffix) {
  return strCat("captf-run-", suffix);
}

std::string backupSecretName(std::string_view suffix, std::string_view set_id, std::size_t index) {
  std::string name = strCat("captf-state-backup-", suffix, "-", set_id);
  if (index > 0) {
    name += strCat("-part-", index);
  }
  return name;
}

std::string legacyBackupSecretName(std::string_view suffix, std::int64_t serial,
                                   std::size_t index) {
  return backupSecretName(suffix, std::to_string(serial), index);
}

std::string unreadableStateSecretName(std::string_view secret_name, std::string_view set) {
  const std::string tail = strCat("-unreadable-", set);
  if (secret_name.size() + tail.size() <= kMaxObjectName) {
    return strCat(secret_name, tail);
  }
  constexpr std::size_t kNameHash = 8;
  const std::size_t room = kMaxObjectName - tail.size() - kNameHash - 1;
  std::string_view head = secret_name.substr(0, std::min(room, secret_name.size()));
  // A DNS subdomain's labels end in an alphanumeric.
  while (!head.empty() && (head.back() == '-' || head.back() == '.')) {
    head.remove_suffix(1);
  }
  return strCat(head, "-", contract::sha256Hex(secret_name).substr(0, kNameHash), tail);
}

namespace {

// "<prefix><kind short>-<name>", the name hashed when the whole is too long.
std::string perObjectName(std::string_view prefix, const ObjectRef& ref) {
  const std::string head = strCat(prefix, contract::roleSpec(ref.role).kind_short, "-");
  std::string name = head + ref.name;
  if (name.size() > kMaxObjectName) {
    return head + shortHash(ref.name);
  }
  return name;
}

} // namespace

std::string durableInputsSecretName(const ObjectRef& ref) {
  return perObjectName("captf-inputs-", ref);
}

std::string runHistoryName(const ObjectRef& ref) {
  return perObjectName("captf-runs-", ref);
}

std::string runSecretName(std::string_view job_name) {
  return strCat("captf-run-", job_name);
}

std::string labelValue(std::string_view name) {
  if (name.size() <= kMaxLabelValue) {
    return std::string(name);
  }
  return shortHash(name);
}

std::map<std::string, std::string> backendLabels(const ObjectRef& ref) {
  std::map<std::string, std::string> labels = ownerLabels(ref);
  labels.emplace(api::kLabelClusterctlMove, "");
  return labels;
}

std::string backendLabelsHcl(const ObjectRef& ref) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : backendLabels(ref)) {
    if (!first) {
      out += ", ";
    }
    first = false;
    out += strCat("\"", key, "\" = \"", value, "\"");
  }
  out += '}';
  return out;
}

std::vector<std::string> backendConfig(const ObjectRef& ref) {
  return {
      strCat("secret_suffix=", stateSuffix(ref)),
      strCat("namespace=", ref.ns),
      "in_cluster_config=true",
      strCat("labels=", backendLabelsHcl(ref)),
  };
}

std::string stateSelector(std::string_view suffix) {
  return strCat(kBackendLabelSuffix, "=", suffix);
}

std::string backupSelector(std::string_view suffix) {
  return strCat(api::kLabelStateBackup, "=true,", api::kLabelStateBackupSuffix, "=", suffix);
}

std::string unreadableStateSelector(std::string_view suffix) {
  return strCat(api::kLabelStateUnreadable, "=true,", api::kLabelStateUnreadableSuffix, "=",
                suffix);
}

std::map<std::string, std::string> ownerLabels(const ObjectRef& ref) {
  std::map<std::string, std::string> labels{
      {std::string(api::kLabelManaged), "true"},
      {std::string(api::kLabelOwnerKind), std::string(kindOf(ref))},
      {std::string(api::kLabelOwnerName), labelValue(ref.name)},
  };
  if (!ref.cluster_name.empty()) {
    labels.emplace(api::kLabelClusterName, labelValue(ref.cluster_name));
  }
  return labels;
}

bool isManaged(const nlohmann::json& object) {
  const auto metadata = object.find("metadata");
  if (!object.is_object() || metadata == object.end() || !metadata->is_object()) {
    return false;
  }
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) {
    return false;
  }
  const auto managed = labels->find(std::string(api::kLabelManaged));
  return managed != labels->end() && managed->is_string() && managed->get<std::string>() == "true";
}

nlohmann::json ownerReference(const ObjectRef& ref, OwnerControl control) {
  return {
      {"apiVersion", api::kGroupVersion},
      {"kind", kindOf(ref)},
      {"name", ref.name},
      {"uid", ref.uid},
      {"controller", control == OwnerControl::kController},
      {"blockOwnerDeletion", false},
  };
}

} // namespace captf::workspace
