#include "webhooks/registrations.h"

#include <algorithm>
#include <cctype>

#include "contract/digest.h"
#include "manager/api/keys.h"
#include "manager/api/yaml.h"

namespace captf::webhooks {
namespace {

using nlohmann::json;

WebhookRegistration registration(std::string_view kind, bool cluster_scoped, bool validates_delete,
                                 bool calls_api_server) {
  std::string lower(kind);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string group(api::kGroup);
  std::replace(group.begin(), group.end(), '.', '-');
  WebhookRegistration r;
  r.kind = std::string(kind);
  r.plural = lower.ends_with('y') ? lower.substr(0, lower.size() - 1) + "ies" : lower + "s";
  r.path = "/validate-" + group + "-" + std::string(api::kVersion) + "-" + lower;
  r.name = "validation." + lower + "." + std::string(api::kGroup);
  r.cluster_scoped = cluster_scoped;
  r.validates_delete = validates_delete;
  r.calls_api_server = calls_api_server;
  return r;
}

json webhookEntry(const WebhookRegistration& r, json client_config) {
  json operations = json::array({"CREATE", "UPDATE"});
  if (r.validates_delete) {
    operations.push_back("DELETE");
  }
  return {{"name", r.name},
          {"admissionReviewVersions", json::array({"v1"})},
          {"sideEffects", "None"},
          {"failurePolicy", "Fail"},
          {"matchPolicy", "Equivalent"},
          {"timeoutSeconds", 10},
          {"clientConfig", std::move(client_config)},
          {"rules", json::array({{{"apiGroups", json::array({std::string(api::kGroup)})},
                                  {"apiVersions", json::array({std::string(api::kVersion)})},
                                  {"operations", std::move(operations)},
                                  {"resources", json::array({r.plural})},
                                  {"scope", r.cluster_scoped ? "Cluster" : "Namespaced"}}})}};
}

json configuration(std::string_view name, json annotations, json webhooks) {
  json metadata = {{"name", std::string(name)}};
  if (!annotations.empty()) {
    metadata["annotations"] = std::move(annotations);
  }
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "ValidatingWebhookConfiguration"},
          {"metadata", std::move(metadata)},
          {"webhooks", std::move(webhooks)}};
}

} // namespace

const std::vector<WebhookRegistration>& webhookRegistrations() {
  static const std::vector<WebhookRegistration> kRegistrations = {
      registration(api::kKindTerraformCluster, false, false, false),
      registration(api::kKindTerraformMachine, false, true, true),
      registration(api::kKindTerraformMachinePool, false, false, false),
      registration(api::kKindTerraformClusterTemplate, false, false, false),
      registration(api::kKindTerraformMachineTemplate, false, false, false),
      registration(api::kKindTerraformMachinePoolTemplate, false, false, false),
      registration(api::kKindTerraformClusterIdentity, true, true, true),
  };
  return kRegistrations;
}

const WebhookRegistration* registrationForPath(std::string_view path) {
  for (const WebhookRegistration& r : webhookRegistrations()) {
    if (r.path == path) {
      return &r;
    }
  }
  return nullptr;
}

json validatingWebhookConfiguration(const ServiceClientConfig& service) {
  json hooks = json::array();
  for (const WebhookRegistration& r : webhookRegistrations()) {
    hooks.push_back(webhookEntry(r, {{"service",
                                      {{"namespace", service.namespace_},
                                       {"name", service.name},
                                       {"port", service.port},
                                       {"path", r.path}}}}));
  }
  return configuration(kWebhookConfigurationName,
                       {{std::string(kCaInjectionAnnotation), std::string(kServingCertificate)}},
                       std::move(hooks));
}

json validatingWebhookConfiguration(const UrlClientConfig& url, std::string_view name) {
  json hooks = json::array();
  const std::string ca_bundle = contract::base64Encode(url.ca_pem);
  for (const WebhookRegistration& r : webhookRegistrations()) {
    hooks.push_back(webhookEntry(r, {{"url", url.base_url + r.path}, {"caBundle", ca_bundle}}));
  }
  return configuration(name, json::object(), std::move(hooks));
}

std::string toYaml(const json& doc) {
  return api::toYaml(doc, api::YamlStrings::kDoubleQuoted);
}

} // namespace captf::webhooks
