terraform {
  required_version = ">= 1.6.0"
  required_providers {
    oci = {
      source  = "oracle/oci"
      version = ">= 6.0"
    }
  }
}

resource "oci_core_instance_configuration" "nodes" {
  compartment_id = var.captf_cluster_outputs.compartment_id
  display_name   = var.machinepool_name
  freeform_tags  = var.captf_tags

  instance_details {
    instance_type = "compute"
    launch_details {
      compartment_id = var.captf_cluster_outputs.compartment_id
      shape          = "VM.Standard.E4.Flex"
      metadata = {
        user_data = base64encode(var.bootstrap_data)
      }
      source_details {
        source_type = "image"
        image_id    = var.captf_cluster_outputs.image_id
      }
    }
  }
}

# The autoscaled pool: its size belongs to the autoscaling configuration, so
# Terraform ignores it (docs/lint.md#capacity-attributes).
resource "oci_core_instance_pool" "autoscaled" {
  count                     = var.autoscaling.enabled ? 1 : 0
  compartment_id            = var.captf_cluster_outputs.compartment_id
  instance_configuration_id = oci_core_instance_configuration.nodes.id
  size                      = var.replicas

  placement_configurations {
    availability_domain = "AD-1"
    primary_subnet_id   = var.captf_cluster_outputs.subnet_id
  }

  lifecycle {
    ignore_changes = [size]
  }
}

# The fixed pool exists only while autoscaling is off: it follows replicas.
resource "oci_core_instance_pool" "fixed" {
  count                     = var.autoscaling.enabled ? 0 : 1
  compartment_id            = var.captf_cluster_outputs.compartment_id
  instance_configuration_id = oci_core_instance_configuration.nodes.id
  size                      = var.replicas

  placement_configurations {
    availability_domain = "AD-1"
    primary_subnet_id   = var.captf_cluster_outputs.subnet_id
  }
}

resource "oci_autoscaling_auto_scaling_configuration" "pool" {
  count          = var.autoscaling.enabled ? 1 : 0
  compartment_id = var.captf_cluster_outputs.compartment_id

  auto_scaling_resources {
    id   = oci_core_instance_pool.autoscaled[0].id
    type = "instancePool"
  }

  policies {
    policy_type = "threshold"
    capacity {
      initial = var.replicas
      min     = var.autoscaling.min
      max     = var.autoscaling.max
    }
  }
}

locals {
  pool = var.autoscaling.enabled ? oci_core_instance_pool.autoscaled[0] : oci_core_instance_pool.fixed[0]
}

data "oci_core_instance_pool_instances" "members" {
  compartment_id   = var.captf_cluster_outputs.compartment_id
  instance_pool_id = local.pool.id
}

output "provider_id" {
  value = "oci://${local.pool.id}"
}

output "provider_id_list" {
  value = sort([for i in data.oci_core_instance_pool_instances.members.instances : "oci://${i.id}"])
}

output "replicas" {
  value = local.pool.actual_size
}

output "instances" {
  value = [for i in data.oci_core_instance_pool_instances.members.instances : {
    provider_id = "oci://${i.id}"
    instance_id = i.id
  }]
}

output "health" {
  value = { state = "running", healthy = true }
}
