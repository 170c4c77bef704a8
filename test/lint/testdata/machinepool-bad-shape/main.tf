terraform {
  required_version = ">= 1.5"

  backend "s3" {
    bucket = "team-state"
    key    = "pools/terraform.tfstate"
  }
}

provider "azurerm" {
  features {}
  client_id     = "00000000-0000-0000-0000-000000000000"
  client_secret = "s3cr3t-literal"
  tenant_id     = var.tenant_id

  auth {
    password = "hunter2"
    token    = "${var.token}"
  }
}

variable "tenant_id" {
  type    = string
  default = ""
}

variable "token" {
  type      = string
  default   = ""
  sensitive = true
}

module "scale_set" {
  source = "./modules/asg"

  name     = var.machinepool_name
  capacity = var.autoscaling.enabled ? var.autoscaling.max : var.replicas
  tags     = var.captf_tags
}

output "provider_id" {
  value = module.scale_set.id
}

output "provider_id_list" {
  value = distinct([
    for vm in module.scale_set.instances : vm.provider_id
    if vm.power_state == "PowerState/running" && vm.healthy
  ])
}

output "replicas" {
  value = length(module.scale_set.instances)
}

output "instances" {
  value = module.scale_set.instances
}

output "health" {
  value = { state = "running", healthy = true }
}

# Reads var.autoscaling but does not ignore the capacity the autoscaler owns.
resource "azurerm_monitor_autoscale_setting" "pool" {
  name                = "${var.machinepool_name}-autoscale"
  resource_group_name = "pools"
  location            = "westeurope"
  target_resource_id  = module.scale_set.id
  enabled             = var.autoscaling.enabled

  profile {
    name = "default"
    capacity {
      default = var.replicas
      minimum = var.autoscaling.min
      maximum = var.autoscaling.max
    }
  }
}
