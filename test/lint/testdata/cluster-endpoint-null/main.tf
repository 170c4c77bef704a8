variable "captf_contract" { type = string }
variable "captf_cluster" { type = any }
variable "captf_object" { type = any }
variable "control_plane_initialized" { type = bool }

variable "captf_tags" {
  type = map(string)
}

# Nullable contract inputs may default to null.
variable "control_plane_endpoint" {
  type = object({
    host = string
    port = number
  })
  default = null
}

variable "kubernetes_version" {
  type    = string
  default = null
}

variable "cluster_network" {
  type    = any
  default = null
}

# A cluster module may declare captf_cluster_outputs with a default.
variable "captf_cluster_outputs" {
  type    = any
  default = null
}

resource "terraform_data" "tags" {
  input = var.captf_tags
}

output "control_plane_endpoint" {
  value = (null)
}

output "failure_domains" {
  value = []
}

output "exports" {
  value = {}
}
