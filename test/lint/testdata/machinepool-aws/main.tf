terraform {
  required_version = ">= 1.6.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
  }
}

data "aws_ssm_parameter" "ami" {
  name = "/captf/images/${coalesce(var.kubernetes_version, "stable")}/ami"
}

locals {
  zones       = length(var.failure_domains) > 0 ? var.failure_domains : var.cluster_failure_domains
  node_labels = join(",", [for k, v in var.node_labels : "${k}=${v}"])
}

resource "aws_launch_template" "nodes" {
  name_prefix   = "${var.machinepool_name}-"
  image_id      = data.aws_ssm_parameter.ami.value
  instance_type = var.instance_type
  user_data     = var.bootstrap_data

  vpc_security_group_ids = [var.captf_cluster_outputs.security_group_id]

  metadata_options {
    http_tokens = "required"
  }

  dynamic "tag_specifications" {
    for_each = toset(["instance", "volume"])
    content {
      resource_type = tag_specifications.value
      tags = merge(var.captf_tags, {
        "node-labels" = local.node_labels
      })
    }
  }
}

resource "aws_autoscaling_group" "pool" {
  name_prefix         = "${var.machinepool_name}-"
  min_size            = var.autoscaling.enabled ? var.autoscaling.min : var.replicas
  max_size            = var.autoscaling.enabled ? var.autoscaling.max : var.replicas
  desired_capacity    = var.replicas
  vpc_zone_identifier = var.captf_cluster_outputs.private_subnet_ids

  launch_template {
    id      = aws_launch_template.nodes.id
    version = aws_launch_template.nodes.latest_version
  }

  instance_refresh {
    strategy = "Rolling"
    triggers = ["tag"]
  }

  dynamic "tag" {
    for_each = var.captf_tags
    content {
      key                 = tag.key
      value               = tag.value
      propagate_at_launch = true
    }
  }

  lifecycle {
    ignore_changes = [desired_capacity]
  }
}

data "aws_instances" "members" {
  instance_tags = {
    "aws:autoscaling:groupName" = aws_autoscaling_group.pool.name
  }
  instance_state_names = ["pending", "running", "stopping", "stopped"]
}

output "provider_id" {
  value = "aws:///${aws_autoscaling_group.pool.name}"
}

output "provider_id_list" {
  value = sort([
    for i, id in data.aws_instances.members.ids :
    "aws:///${data.aws_instances.members.availability_zones[i]}/${id}"
  ])
}

output "replicas" {
  value = aws_autoscaling_group.pool.desired_capacity
}

output "instances" {
  value = [for i, id in data.aws_instances.members.ids : {
    provider_id    = "aws:///${data.aws_instances.members.availability_zones[i]}/${id}"
    instance_id    = id
    failure_domain = data.aws_instances.members.availability_zones[i]
    addresses      = [{ type = "InternalIP", address = data.aws_instances.members.private_ips[i] }]
  }]
}

output "health" {
  value = {
    state   = length(data.aws_instances.members.ids) >= var.replicas ? "running" : "pending"
    healthy = true
    message = null
    reasons = []
  }
}
