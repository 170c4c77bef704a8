terraform {
  cloud {
    organization = "example"
  }
}

variable "name" {
  type = string
}

variable "capacity" {
  type = number
}

variable "tags" {
  type    = map(string)
  default = {}
}

resource "azurerm_linux_virtual_machine_scale_set" "pool" {
  name      = var.name
  instances = var.capacity
  sku       = "Standard_D4s_v5"
}

output "id" {
  value = azurerm_linux_virtual_machine_scale_set.pool.id
}

output "instances" {
  value = []
}
