# A sample cluster module (the quickstart's): no cloud, only terraform_data,
# with every output the cluster role has. Replace the resources with a
# network, a load balancer and DNS, and keep the outputs.
terraform {
  required_version = ">= 1.6.0"
}

variable "captf_contract" { type = string }
variable "captf_cluster" { type = any }
variable "captf_object" { type = any }
variable "captf_tags" { type = map(string) }
variable "control_plane_endpoint" { type = any }
variable "kubernetes_version" { type = any }
variable "control_plane_initialized" { type = bool }
variable "cluster_network" { type = any }

resource "terraform_data" "network" {
  input = { name = var.captf_object.name, tags = var.captf_tags }
}

output "control_plane_endpoint" {
  value = { host = "api.${var.captf_object.name}.example", port = 6443 }
}

output "failure_domains" {
  value = [
    { name = "zone-a", control_plane = true, attributes = {} },
    { name = "zone-b", control_plane = true, attributes = {} },
  ]
}

# What machines of this cluster read as var.captf_cluster_outputs.
output "exports" {
  value = { network_id = terraform_data.network.id }
}

output "health" {
  value = { state = "running", healthy = true, message = null, reasons = [] }
}
