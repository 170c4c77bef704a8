data "aws_availability_zones" "available" {
  state = "available"
}

locals {
  name     = "${var.captf_cluster.namespace}-${var.captf_cluster.name}"
  azs      = slice(data.aws_availability_zones.available.names, 0, var.az_count)
  api_port = try(var.cluster_network.api_server_port, null) != null ? var.cluster_network.api_server_port : 6443
  # Use the user's endpoint when one is set; create a load balancer otherwise.
  create_lb = var.control_plane_endpoint == null
}

module "network" {
  source = "./modules/network"

  name = local.name
  cidr = var.vpc_cidr
  azs  = local.azs
  tags = var.captf_tags
}

resource "aws_security_group" "control_plane" {
  name_prefix = "${local.name}-cp-"
  vpc_id      = module.network.vpc_id

  dynamic "ingress" {
    for_each = {
      api  = local.api_port
      etcd = 2379
      rke2 = 9345
    }
    content {
      description = ingress.key
      from_port   = ingress.value
      to_port     = ingress.value == 2379 ? 2380 : ingress.value
      protocol    = "tcp"
      cidr_blocks = [var.vpc_cidr]
    }
  }

  tags = merge(var.captf_tags, { Name = "${local.name}-control-plane" })

  lifecycle {
    create_before_destroy = true
  }
}

resource "aws_lb" "api" {
  count              = local.create_lb ? 1 : 0
  name               = substr(replace(local.name, "/[^a-zA-Z0-9-]/", "-"), 0, 32)
  load_balancer_type = "network"
  internal           = false
  subnets            = module.network.public_subnet_ids
  tags               = var.captf_tags
}

resource "aws_lb_target_group" "api" {
  count       = local.create_lb ? 1 : 0
  name_prefix = "api-"
  port        = 6443
  protocol    = "TCP"
  vpc_id      = module.network.vpc_id

  health_check {
    protocol = "TCP"
  }

  tags = var.captf_tags
}

resource "aws_lb_listener" "api" {
  count             = local.create_lb ? 1 : 0
  load_balancer_arn = aws_lb.api[0].arn
  port              = local.api_port
  protocol          = "TCP"

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.api[0].arn
  }
}
