#pragma once

// The one list of CAPTF's validating webhooks: the path the server serves
// for each kind, and the ValidatingWebhookConfiguration that points the API
// server at those paths. config/webhook/manifests.yaml is generated from
// here (`webhook-server --print-webhook-configuration`, checked by
// test/webhooks/registrations_test.cc), and the integration tests register
// the same hooks by URL and caBundle, so the list exists once.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace captf::webhooks {

struct WebhookRegistration {
  std::string kind;   // "TerraformCluster"
  std::string plural; // "terraformclusters"
  std::string path;   // "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-terraformcluster"
  std::string name;   // "validation.terraformcluster.infrastructure.cluster.x-k8s.io"
  bool cluster_scoped = false;
  bool validates_delete = false;
  // Validation reads from the API server (the delete guards' lookups, the
  // identity's SubjectAccessReview), so it may block: the server runs it on
  // its handler threads instead of the connection's I/O thread.
  bool calls_api_server = false;
};

// The seven kinds, in a fixed order.
[[nodiscard]] const std::vector<WebhookRegistration>& webhookRegistrations();

// The registration serving `path`; nullptr for any other path.
[[nodiscard]] const WebhookRegistration* registrationForPath(std::string_view path);

// Where the API server sends admission requests: the in-cluster Service
// (cert-manager injects the CA), or a URL with an explicit CA bundle (the
// test rig, where the server runs beside the API server).
struct ServiceClientConfig {
  std::string namespace_ = "captf-system";
  std::string name = "captf-webhook-service";
  int port = 443;
};

struct UrlClientConfig {
  std::string base_url; // "https://127.0.0.1:PORT"
  std::string ca_pem;   // the CA that signed the serving certificate
};

inline constexpr std::string_view kWebhookConfigurationName =
    "captf-validating-webhook-configuration";
inline constexpr std::string_view kCaInjectionAnnotation = "cert-manager.io/inject-ca-from";
inline constexpr std::string_view kServingCertificate = "captf-system/captf-serving-cert";

// The admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration.
[[nodiscard]] nlohmann::json validatingWebhookConfiguration(const ServiceClientConfig& service);
[[nodiscard]] nlohmann::json validatingWebhookConfiguration(const UrlClientConfig& url,
                                                            std::string_view name);

// A JSON document as block YAML (deterministic: keys in sorted order).
[[nodiscard]] std::string toYaml(const nlohmann::json& doc);

} // namespace captf::webhooks
