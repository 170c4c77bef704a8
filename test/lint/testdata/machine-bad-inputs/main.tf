# A machine module with the input mistakes lint exists to catch.
variable "captf_contract" {
  type = string
}

variable "captf_cluster" {
  type = object({ name = string, namespace = string })
}

variable "captf_object" {
  type = any
}

variable "captf_cluster_outputs" {
  type = any
}

variable "captf_extra" {
  type    = string
  default = ""
}

variable "bootstrap_data" {
  type = string
}

variable "bootstrap_format" {
  type    = string
  default = "cloud-config"
}

variable "failure_domain" {
  default = null
}

variable "kubernetes_version" {
  type    = "string"
  default = null
}

variable "control_plane" {
  type = string
}

variable "image" {
  type        = string
  description = "A user variable without a default."
}

resource "openstack_compute_instance_v2" "node" {
  name      = var.captf_object.name
  image_id  = var.image
  user_data = base64decode(var.bootstrap_data)
}

output "provider_id" {
  value = "openstack:///${openstack_compute_instance_v2.node.id}"
}

output "failure_domain" {
  value = openstack_compute_instance_v2.node.availability_zone
}

output "captf_debug" {
  value = var.bootstrap_format
}
