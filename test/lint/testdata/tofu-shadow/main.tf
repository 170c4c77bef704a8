terraform {
  required_version = ">= 1.6"
}

variable "size" {
  type    = string
  default = "small"
}

output "note" {
  value = "terraform"
}
