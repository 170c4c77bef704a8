#!/usr/bin/env python3
"""Writes a realistic, lint-clean machine-role module of N files (default 200).

    bench/lint/gen_module.py OUT_DIR [FILES]

The output is deterministic (no randomness, no clock): the same FILES gives
the same bytes, so lint timings are comparable between runs and machines.
Layout: the contract variables and outputs in the root; the rest split
between the root (resources with for_each, dynamic blocks, locals,
templates, heredocs) and four local modules called from the root.
"""
import os
import sys

CONTRACT = '''terraform {
  required_version = ">= 1.8.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
  }
}

variable "captf_contract" { type = string }
variable "captf_cluster" { type = any }
variable "captf_object" { type = any }
variable "captf_tags" { type = map(string) }
variable "captf_cluster_outputs" { type = any }
variable "machine_name" { type = string }
variable "bootstrap_format" { type = string }
variable "control_plane" { type = bool }

variable "bootstrap_data" {
  type      = string
  sensitive = true
}

variable "failure_domain" {
  type    = string
  default = null
}

variable "kubernetes_version" {
  type    = string
  default = null
}
'''

OUTPUTS = '''output "provider_id" {
  value = "aws:///${aws_instance.node.availability_zone}/${aws_instance.node.id}"
}

output "addresses" {
  value = [
    { type = "InternalIP", address = aws_instance.node.private_ip },
    { type = "Hostname", address = aws_instance.node.private_dns },
  ]
}

output "failure_domain" { value = aws_instance.node.availability_zone }
output "interruptible" { value = false }

output "health" {
  value = {
    state   = aws_instance.node.instance_state == "running" ? "running" : "pending"
    healthy = aws_instance.node.instance_state == "running"
  }
}
'''

NODE = '''resource "aws_instance" "node" {
  ami                    = var.captf_cluster_outputs.ami
  instance_type          = var.control_plane ? "m6i.xlarge" : "m6i.large"
  subnet_id              = var.captf_cluster_outputs.subnets[coalesce(var.failure_domain, "a")]
  user_data_base64       = var.bootstrap_format == "cloud-config" ? base64encode(var.bootstrap_data) : null
  vpc_security_group_ids = [for k, sg in module.security_0.groups : sg if k != "legacy"]
  tags                   = merge(var.captf_tags, { Name = var.machine_name })

  root_block_device {
    volume_size = 80
    volume_type = "gp3"
    encrypted   = true
  }

  metadata_options {
    http_tokens                 = "required"
    http_put_response_hop_limit = 2
  }

  lifecycle {
    ignore_changes = [ami, user_data_base64]
  }
}
'''


def resource_file(i, prefix):
    """One file of everyday configuration; about 2 KiB."""
    return f'''locals {{
  {prefix}rules_{i} = {{
    for idx, port in [22, 80, 443, 6443, 10250] :
    "rule-{i}-${{idx}}" => {{
      port     = port
      protocol = "tcp"
      cidrs    = idx == 0 ? ["10.0.0.0/8"] : ["0.0.0.0/0"]
    }}
  }}
  {prefix}name_{i} = lower(replace("${{var.machine_name}}-{i}", "/[^a-zA-Z0-9-]/", "-"))
}}

resource "aws_security_group" "{prefix}sg_{i}" {{
  name_prefix = "${{local.{prefix}name_{i}}}-"
  description = <<-EOT
    Security group {i} for ${{var.machine_name}}.
    %{{ if var.control_plane }}Control plane node.%{{ else }}Worker node.%{{ endif }}
  EOT
  tags        = merge(var.captf_tags, {{ Index = "{i}" }})

  dynamic "ingress" {{
    for_each = local.{prefix}rules_{i}
    content {{
      description = ingress.key
      from_port   = ingress.value.port
      to_port     = ingress.value.port
      protocol    = ingress.value.protocol
      cidr_blocks = ingress.value.cidrs
    }}
  }}

  egress {{
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }}
}}

resource "aws_ssm_parameter" "{prefix}param_{i}" {{
  for_each = {{ for k, v in local.{prefix}rules_{i} : k => v if v.port != 22 }}
  name     = "/captf/${{var.machine_name}}/{i}/${{each.key}}"
  type     = "String"
  value    = jsonencode({{ port = each.value.port, cidrs = each.value.cidrs, index = {i} }})
  tags     = var.captf_tags
}}
'''


MODULE_HEADER = '''variable "captf_tags" { type = map(string) }
variable "machine_name" { type = string }
variable "control_plane" { type = bool }

output "groups" {
  value = { for k, sg in aws_security_group.sg_0 : k => sg.id }
}
'''


def main():
    out = sys.argv[1]
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    modules = 4
    if files < 3 + modules:
        sys.exit("at least 7 files")
    os.makedirs(out, exist_ok=True)
    written = 0

    def write(rel, text):
        nonlocal written
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        written += 1

    calls = "".join(
        f'''module "security_{m}" {{
  source        = "./modules/security-{m}"
  captf_tags    = var.captf_tags
  machine_name  = var.machine_name
  control_plane = var.control_plane
}}

''' for m in range(modules))
    write("versions.tf", CONTRACT)
    write("outputs.tf", OUTPUTS)
    write("main.tf", NODE + "\n" + calls)
    remaining = files - written
    per_module = remaining // (modules + 1)
    for m in range(modules):
        write(f"modules/security-{m}/variables.tf", MODULE_HEADER)
        for i in range(per_module - 1):
            write(f"modules/security-{m}/sg_{i:03d}.tf", resource_file(i, ""))
    i = 0
    while written < files:
        write(f"sg_{i:03d}.tf", resource_file(i, "root_"))
        i += 1


if __name__ == "__main__":
    main()
