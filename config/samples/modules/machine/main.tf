# A sample machine module (the quickstart's): no cloud, only terraform_data,
# with every output the machine role has. Replace the instance with a VM
# booted from var.bootstrap_data, and keep the outputs.
terraform {
  required_version = ">= 1.6.0"
}

variable "captf_contract" { type = string }
variable "captf_cluster" { type = any }
variable "captf_object" { type = any }
variable "captf_cluster_outputs" { type = any }
variable "captf_tags" { type = map(string) }
variable "machine_name" { type = string }
variable "bootstrap_data" {
  type      = string
  sensitive = true
}
variable "bootstrap_format" { type = string }
variable "failure_domain" { type = any }
variable "kubernetes_version" { type = any }
variable "control_plane" { type = bool }

resource "terraform_data" "instance" {
  input = {
    name    = var.machine_name
    network = var.captf_cluster_outputs.network_id
    tags    = var.captf_tags
  }
}

output "provider_id" {
  value = "sample://${terraform_data.instance.id}"
}

output "addresses" {
  value = [{ type = "InternalIP", address = "10.0.0.10" }]
}

output "failure_domain" {
  value = var.failure_domain
}

output "interruptible" {
  value = false
}

output "health" {
  value = { state = "running", healthy = true, message = null, reasons = [] }
}
