#pragma once

// Representative render requests of each role, shared by the render and
// hash tests (the goldens under testdata/ are rendered from these).

#include <nlohmann/json.hpp>

#include "contract/inputs.h"
#include "contract/render.h"

namespace captf::contract::testing {

inline CommonInputs fixtureCommon(std::string object_name, std::string template_name) {
  return {.cluster_name = "demo",
          .cluster_namespace = "team-a",
          .object_name = std::move(object_name),
          .object_namespace = "team-a",
          .template_name = std::move(template_name)};
}

inline RenderRequest clusterRequest() {
  ClusterInputs inputs{.common = fixtureCommon("demo", ""),
                       .control_plane_endpoint = std::nullopt,
                       .kubernetes_version = "v1.31.4",
                       .control_plane_initialized = true,
                       .cluster_network = ClusterNetwork{.pods = {"192.168.0.0/16"},
                                                         .services = {"10.128.0.0/12"},
                                                         .service_domain = "cluster.local",
                                                         .api_server_port = 6443}};
  return {.role = Role::kCluster,
          .inputs = toInputsJson(inputs),
          .variables = {
              {.name = "region", .value = "eu-west-1"},
              {.name = "api_token", .value = "s3cr3t", .sensitivity = Sensitivity::kSensitive}}};
}

inline RenderRequest machineRequest() {
  MachineInputs inputs{
      .common = fixtureCommon("demo-cp-x7k2p", "demo-control-plane"),
      .cluster_outputs = nlohmann::json::parse(
          R"({"network_id": "net-1", "subnet_ids": ["subnet-1", "subnet-2"], "note": "a<b&c"})"),
      .machine_name = "demo-cp-9hq4z",
      .bootstrap = {.value = "#cloud-config\nruncmd: [kubeadm init]\n",
                    .format = BootstrapFormat::kCloudConfig},
      .failure_domain = "zone-a",
      .kubernetes_version = "v1.31.4+rke2r1",
      .control_plane = true};
  return {.role = Role::kMachine, .inputs = toInputsJson(inputs), .variables = {}};
}

inline RenderRequest machinePoolRequest() {
  MachinePoolInputs inputs{
      .common = fixtureCommon("demo-worker-mp0", "demo-worker"),
      .cluster_outputs = nlohmann::json::parse(R"({"network_id": "net-1"})"),
      .machinepool_name = "demo-worker-mp0",
      .replicas = 3,
      .bootstrap = {.value = "#cloud-config\n", .format = BootstrapFormat::kCloudConfig},
      .failure_domains = {},
      .cluster_failure_domains = {"zone-a", "zone-b"},
      .kubernetes_version = std::nullopt,
      .node_labels = {{"node.example.com/pool", "demo-worker"}},
      .autoscaling = {.enabled = true, .min = 1, .max = 5}};
  return {.role = Role::kMachinePool,
          .inputs = toInputsJson(inputs),
          .variables = {{.name = "instance_type",
                         .value = nlohmann::json::parse(R"({"size": "m5.large", "spot": true})")}}};
}

} // namespace captf::contract::testing
