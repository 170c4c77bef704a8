#include "manager/workspace/set_aside.h"

#include <algorithm>
#include <utility>

#include "contract/digest.h"
#include "manager/api/keys.h"
#include "manager/workspace/json_util.h"

namespace captf::workspace {
namespace {

using nlohmann::json;

constexpr std::size_t kSetAsideIdLength = 10;

// The object's state Secrets among `secrets`, in name order.
std::vector<const json*> ownStateSecrets(const std::vector<json>& secrets,
                                         std::string_view suffix) {
  std::vector<const json*> out;
  for (const json& secret : secrets) {
    if (suffix.empty() || internal::label(secret, kBackendLabelSuffix) == suffix) {
      out.push_back(&secret);
    }
  }
  std::sort(out.begin(), out.end(), [](const json* a, const json* b) {
    return internal::nameOf(*a) < internal::nameOf(*b);
  });
  return out;
}

const json& dataOf(const json& secret) {
  static const json kNone = json::object();
  const auto it = secret.find("data");
  return it != secret.end() && it->is_object() ? *it : kNone;
}

std::string setAsideIdOf(const std::vector<const json*>& secrets) {
  std::string text;
  for (const json* secret : secrets) {
    // Names and keys cannot hold a NUL, so the fields cannot run together.
    text += internal::nameOf(*secret);
    text += '\0';
    text += dataOf(*secret).dump();
    text += '\0';
  }
  return contract::sha256Hex(text).substr(0, kSetAsideIdLength);
}

} // namespace

SetAsideDecision decideSetAside(StateStatus live, LockState lock) {
  switch (live) {
  case StateStatus::kNotFound:
  case StateStatus::kRead:
    return SetAsideDecision::kNone;
  case StateStatus::kInconsistent:
  case StateStatus::kEncrypted:
  case StateStatus::kCorrupt:
    break;
  }
  return lock == LockState::kFree || lock == LockState::kStale ? SetAsideDecision::kSetAside
                                                               : SetAsideDecision::kLocked;
}

std::string setAsideId(const std::vector<json>& state_secrets) {
  return setAsideIdOf(ownStateSecrets(state_secrets, ""));
}

std::vector<SetAsideCopy> setAsideCopies(const SetAsideRequest& request) {
  const std::string suffix = stateSuffix(request.ref);
  const std::vector<const json*> sources = ownStateSecrets(request.state_secrets, suffix);
  const std::string set = setAsideIdOf(sources);
  std::vector<SetAsideCopy> out;
  for (const json* source : sources) {
    json labels = {{std::string(api::kLabelStateUnreadable), "true"},
                   {std::string(api::kLabelStateUnreadableSuffix), suffix},
                   {std::string(api::kLabelClusterctlMove), ""}};
    for (const auto& [key, value] : ownerLabels(request.ref)) {
      labels[key] = value;
    }
    const json* source_labels = internal::at(*source, "metadata.labels");
    json annotations = {
        {std::string(api::kAnnotationStateUnreadableSource), internal::nameOf(*source)},
        {std::string(api::kAnnotationStateUnreadableReason), request.reason},
        {std::string(api::kAnnotationStateUnreadableSet), set},
        {std::string(api::kAnnotationStateUnreadableSetAsideAt), request.set_aside_at},
        {std::string(api::kAnnotationStateUnreadableRestoreSerial),
         std::to_string(request.restore_serial)},
        {std::string(api::kAnnotationStateUnreadableLabels),
         source_labels != nullptr && source_labels->is_object() ? source_labels->dump()
                                                                : std::string("{}")},
    };
    if (const auto hash = internal::annotation(*source, api::kAnnotationInputsHash)) {
      annotations[std::string(api::kAnnotationInputsHash)] = *hash;
    }
    SetAsideCopy copy;
    copy.source = internal::nameOf(*source);
    copy.source_uid = internal::stringAt(*source, "metadata.uid").value_or("");
    copy.source_resource_version =
        internal::stringAt(*source, "metadata.resourceVersion").value_or("");
    copy.copy = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata",
                  {{"name", unreadableStateSecretName(copy.source, set)},
                   {"namespace", request.ref.ns},
                   {"labels", std::move(labels)},
                   {"annotations", std::move(annotations)},
                   {"ownerReferences", json::array({ownerReference(request.ref)})}}},
                 {"type", "Opaque"},
                 {"data", dataOf(*source)}};
    out.push_back(std::move(copy));
  }
  return out;
}

bool sameSetAsideCopy(const json& existing, const json& wanted) {
  const auto same_label = [&](std::string_view key) {
    const auto value = internal::label(existing, key);
    return value && value == internal::label(wanted, key);
  };
  const auto same_annotation = [&](std::string_view key) {
    const auto value = internal::annotation(existing, key);
    return value && value == internal::annotation(wanted, key);
  };
  return same_label(api::kLabelStateUnreadable) && same_label(api::kLabelStateUnreadableSuffix) &&
         same_annotation(api::kAnnotationStateUnreadableSource) &&
         same_annotation(api::kAnnotationStateUnreadableSet) && dataOf(existing) == dataOf(wanted);
}

} // namespace captf::workspace
