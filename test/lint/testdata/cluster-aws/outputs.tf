output "control_plane_endpoint" {
  value = local.create_lb ? {
    host = aws_lb.api[0].dns_name
    port = local.api_port
  } : var.control_plane_endpoint
}

output "failure_domains" {
  value = [for az in local.azs : {
    name          = az
    control_plane = true
    attributes    = { subnet_id = module.network.private_subnet_ids[index(local.azs, az)] }
  }]
}

output "exports" {
  value = {
    vpc_id             = module.network.vpc_id
    private_subnet_ids = module.network.private_subnet_ids
    security_group_id  = aws_security_group.control_plane.id
    target_group_arn   = local.create_lb ? aws_lb_target_group.api[0].arn : null
  }
}

output "health" {
  value = {
    state   = "running"
    healthy = true
    message = null
    reasons = []
  }
}
