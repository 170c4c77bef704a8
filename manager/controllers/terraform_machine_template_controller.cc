#include "manager/controllers/terraform_machine_template_controller.h"

#include "absl/strings/escaping.h"
#include "contract/image_labels.h"
#include "lint/oci/reference.h"
#include "lint/oci/resolve.h"
#include "lint/oci/source.h"
#include "manager/api/codec.h"
#include "manager/api/conditions.h"
#include "manager/api/keys.h"
#include "manager/api/templates.h"
#include "manager/controllers/kinds.h"
#include "manager/controllers/workload.h"
#include "manager/kube/errors.h"
#include "manager/kube/strings.h"
#include "manager/lifecycle/ready.h"

namespace captf::controllers {

using nlohmann::json;
namespace cond = api::conditions;
using api::ConditionStatus;

namespace {

using kube::str;

// The registry host[:port] of an image reference ("" when it has none).
std::string registryOf(const std::string& image) {
  auto ref = lint::oci::parseRegistryReference(image);
  return ref.ok() ? ref->registry : std::string();
}

// What a resolution gives: the status fields and the condition.
struct Resolved {
  std::map<std::string, api::Quantity> capacity;
  std::optional<api::NodeInfo> node_info;
  ConditionStatus status = ConditionStatus::kFalse;
  std::string_view reason;
  std::string message;
};

Resolved fromLabels(const std::map<std::string, std::string>& labels, const std::string& image) {
  Resolved out;
  const auto capacity = labels.find(str(contract::kLabelCapacity));
  const auto node_info = labels.find(str(contract::kLabelNodeInfo));
  if (capacity == labels.end() && node_info == labels.end()) {
    out.reason = cond::kReasonCapacityNotDeclared;
    out.message = "image " + image + " has neither label " + str(contract::kLabelCapacity) +
                  " nor " + str(contract::kLabelNodeInfo) + ": no capacity for scaling from zero";
    return out;
  }
  if (capacity != labels.end()) {
    auto parsed = contract::parseCapacityLabel(capacity->second);
    if (!parsed.ok()) {
      out.reason = cond::kReasonCapacityLabelInvalid;
      out.message = "label " + str(contract::kLabelCapacity) + " of image " + image +
                    " is invalid: " + std::string(parsed.status().message());
      return out;
    }
    for (const auto& [name, quantity] : *parsed) {
      out.capacity[name] = api::Quantity{quantity};
    }
  }
  if (node_info != labels.end()) {
    auto parsed = contract::parseNodeInfoLabel(node_info->second);
    if (!parsed.ok()) {
      out.capacity.clear();
      out.reason = cond::kReasonCapacityLabelInvalid;
      out.message = "label " + str(contract::kLabelNodeInfo) + " of image " + image +
                    " is invalid: " + std::string(parsed.status().message());
      return out;
    }
    api::NodeInfo info;
    if (parsed->architecture) {
      info.architecture = api::parseEnum<api::Architecture>(*parsed->architecture);
    }
    info.operating_system = parsed->operating_system;
    out.node_info = info;
  }
  out.status = ConditionStatus::kTrue;
  out.reason = cond::kReasonCapacityResolved;
  return out;
}

} // namespace

LabelReader registryLabelReader(const ImageInspectOptions& options) {
  return [options](const std::string& image,
                   const std::vector<std::pair<std::string, std::string>>& configs)
             -> absl::StatusOr<std::map<std::string, std::string>> {
    auto ref = lint::oci::parseRegistryReference(image);
    if (!ref.ok()) {
      return ref.status();
    }
    lint::oci::RegistryOptions registry;
    registry.insecure = options.insecure_registries.contains(ref->registry);
    registry.http.connect_timeout = options.timeout;
    registry.http.io_timeout = options.timeout;
    registry.docker_configs = configs;
    // Never the manager's own keychain files: only the template's Secrets.
    registry.keychain = lint::oci::KeychainEnv{};
    auto source = lint::oci::openRegistry(image, *ref, registry);
    auto resolution = lint::oci::resolveImages(*source, lint::oci::SelectOptions{});
    if (!resolution.ok()) {
      return resolution.status();
    }
    if (resolution->images.empty()) {
      return absl::NotFoundError(resolution->platform_error.value_or("no image for linux/amd64"));
    }
    return resolution->images.front().config.labels;
  };
}

absl::StatusOr<kube::Result>
TerraformMachineTemplateReconciler::reconcile(const kube::ReconcileContext& ctx,
                                              const kube::Request& request) {
  auto object = deps_.cached.get(kinds::kTerraformMachineTemplate, request);
  if (!object.ok()) {
    return kube::isNotFound(object.status()) ? absl::StatusOr<kube::Result>(kube::Result{})
                                             : object.status();
  }
  auto decoded = api::fromJson<api::TerraformMachineTemplate>(*object);
  if (!decoded.ok()) {
    return kube::terminalError(decoded.status());
  }
  const api::TerraformMachineTemplate& tmpl = *decoded;
  const std::string& image = tmpl.spec.template_.spec.source.image;
  const api::TerraformMachineTemplateStatus original =
      tmpl.status.value_or(api::TerraformMachineTemplateStatus{});
  const auto now =
      api::Time{std::chrono::time_point_cast<std::chrono::seconds>(deps_.clock.wallNow())};
  if (image.empty()) {
    // A Git source (source.git; docs/decisions/manager-machine-template.md):
    // no image whose labels could declare a capacity, so nothing is read,
    // retried or warned about; no capacity is reported.
    api::TerraformMachineTemplateStatus status = original;
    status.capacity.clear();
    status.node_info.reset();
    status.capacity_source.reset();
    lifecycle::setCondition(status.conditions, cond::kCapacityResolved, ConditionStatus::kFalse,
                            cond::kReasonCapacityNotDeclared,
                            "the module comes from Git (source.git), which has no image labels: "
                            "no capacity for scaling from zero",
                            tmpl.metadata.generation, now);
    json copy = *object;
    ObjectPatcher patcher(deps_.api, copy);
    absl::Status s = patcher.patchStatus(api::toJson(original), api::toJson(status));
    if (!s.ok() && !kube::isNotFound(s)) {
      return s;
    }
    return kube::Result{};
  }
  // Resolved once per image: a different spec image resolves again, a
  // failed inspection is retried with backoff.
  const api::Condition* resolved =
      lifecycle::findCondition(original.conditions, cond::kCapacityResolved);
  if (original.capacity_source && original.capacity_source->image == image && resolved != nullptr &&
      resolved->reason != cond::kReasonImageInspectFailed) {
    return kube::Result{};
  }

  // The template's own pull Secrets, read from the API server (never cached,
  // never logged).
  std::vector<std::pair<std::string, std::string>> configs;
  if (tmpl.spec.template_.spec.jobs) {
    for (const api::LocalObjectReference& ref : tmpl.spec.template_.spec.jobs->image_pull_secrets) {
      auto secret = deps_.api.get(kinds::kSecret, {request.ns, ref.name});
      if (!secret.ok()) {
        if (kube::isNotFound(secret.status())) {
          continue;
        }
        return secret.status();
      }
      const json data = secret->value("data", json::object()).value(".dockerconfigjson", json());
      std::string document;
      if (data.is_string() && absl::Base64Unescape(data.get<std::string>(), &document)) {
        configs.emplace_back("image pull Secret " + ref.name, std::move(document));
      }
    }
  }

  api::TerraformMachineTemplateStatus status = original;
  kube::Result result;
  auto labels = read_labels_(image, configs);
  Resolved out;
  std::string error_reason; // of captf_image_inspect_errors_total, "" when none
  if (!labels.ok()) {
    out.status = ConditionStatus::kFalse;
    out.reason = cond::kReasonImageInspectFailed;
    out.message = "reading image " + image + " from registry " + registryOf(image) +
                  " failed: " + std::string(labels.status().message());
    error_reason = kube::isNotFound(labels.status()) ? "not_found" : "registry";
    result.requeue = true; // backoff
  } else {
    out = fromLabels(*labels, image);
    if (out.reason == cond::kReasonCapacityLabelInvalid) {
      error_reason = "label_invalid";
    }
    status.capacity = out.capacity;
    status.node_info = out.node_info;
    status.capacity_source = api::CapacitySource{image};
  }
  const bool changed =
      lifecycle::setCondition(status.conditions, cond::kCapacityResolved, out.status, out.reason,
                              out.message, tmpl.metadata.generation,
                              now) == lifecycle::ConditionChange::kTransition;
  json copy = *object;
  ObjectPatcher patcher(deps_.api, copy);
  if (absl::Status s = patcher.patchStatus(api::toJson(original), api::toJson(status)); !s.ok()) {
    return kube::isNotFound(s) ? absl::StatusOr<kube::Result>(kube::Result{}) : s;
  }
  // A failure counts, and is said in an Event, once, when it begins (a
  // failure counter counts transitions, docs/reference/metrics.md; Events
  // say transitions, docs/reference/events.md): the condition turned to it,
  // or a new generation (another image) failed; not every retry of one
  // image, which only the log says.
  const bool begins =
      changed || resolved == nullptr || resolved->observed_generation != tmpl.metadata.generation;
  if (!error_reason.empty() && begins) {
    deps_.metrics.image_inspect_errors_total.withLabels({error_reason}).inc();
  }
  if (out.reason == cond::kReasonImageInspectFailed) {
    if (begins) {
      deps_.events.event(*object, kube::EventType::kWarning, "ImageInspectFailed", "Resolve",
                         out.message);
    }
    ctx.log.info("image inspection failed", {{"detail", out.message}});
  } else if (changed) {
    deps_.events.event(
        *object,
        out.status == ConditionStatus::kTrue ? kube::EventType::kNormal : kube::EventType::kWarning,
        out.status == ConditionStatus::kTrue ? "CapacityResolved" : out.reason, "Resolve",
        out.message.empty() ? "capacity of " + image + " resolved" : out.message);
  }
  return result;
}

} // namespace captf::controllers
