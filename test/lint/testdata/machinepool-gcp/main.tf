terraform {
  required_version = ">= 1.6.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0"
    }
  }
}

resource "google_compute_instance_template" "nodes" {
  name_prefix  = "${var.machinepool_name}-"
  project      = var.captf_cluster_outputs.project
  machine_type = "e2-standard-4"
  labels       = var.captf_tags
  metadata = {
    user-data   = var.bootstrap_data
    node-labels = join(",", [for k, v in var.node_labels : "${k}=${v}"])
  }

  disk {
    source_image = "projects/captf/global/images/family/kubernetes-${coalesce(var.kubernetes_version, "stable")}"
  }

  network_interface {
    subnetwork = var.captf_cluster_outputs.subnetwork
  }

  lifecycle {
    create_before_destroy = true
  }
}

# target_size is null while autoscaling is on, and the regional autoscaler
# below targets the manager: Terraform never manages the size then
# (docs/lint.md#capacity-attributes).
resource "google_compute_region_instance_group_manager" "pool" {
  name                      = var.machinepool_name
  project                   = var.captf_cluster_outputs.project
  region                    = var.captf_cluster_outputs.region
  base_instance_name        = var.machinepool_name
  distribution_policy_zones = length(var.failure_domains) > 0 ? var.failure_domains : var.cluster_failure_domains
  target_size               = var.autoscaling.enabled ? null : var.replicas

  version {
    instance_template = google_compute_instance_template.nodes.self_link_unique
  }
}

resource "google_compute_region_autoscaler" "pool" {
  count   = var.autoscaling.enabled ? 1 : 0
  name    = var.machinepool_name
  project = var.captf_cluster_outputs.project
  region  = var.captf_cluster_outputs.region
  target  = google_compute_region_instance_group_manager.pool.id

  autoscaling_policy {
    min_replicas = var.autoscaling.min
    max_replicas = var.autoscaling.max
    mode         = "OFF"
  }
}

data "google_compute_region_instance_group" "pool" {
  self_link = google_compute_region_instance_group_manager.pool.instance_group
}

output "provider_id" {
  value = google_compute_region_instance_group_manager.pool.id
}

output "provider_id_list" {
  value = sort([for i in data.google_compute_region_instance_group.pool.instances : "gce://${i.instance}"])
}

output "replicas" {
  value = data.google_compute_region_instance_group.pool.size
}

output "instances" {
  value = [for i in data.google_compute_region_instance_group.pool.instances : {
    provider_id = "gce://${i.instance}"
  }]
}

output "health" {
  value = { state = "running", healthy = true }
}
