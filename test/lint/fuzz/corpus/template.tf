resource "aws_launch_template" "nodes" {
  user_data = base64encode(<<-EOT
    #cloud-config
    %{~ for k, v in var.node_labels ~}
    - ${k}=${v}
    %{~ endfor ~}
    %{ if var.bootstrap_format == "ignition" }ignition%{ else }cloud-config%{ endif }
    EOT
  )
  dynamic "tag_specifications" {
    for_each = toset(["instance", "volume"])
    content {
      resource_type = tag_specifications.value
      tags          = var.captf_tags
    }
  }
  lifecycle { ignore_changes = [desired_capacity] }
}
variable "x" {
  type = object({
    a = optional(list(string), [])
    b = map(number)
  })
  default = null
}
