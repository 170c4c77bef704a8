locals {
  azs     = slice(data.aws_availability_zones.available.names, 0, 3)
  subnets = { for i, az in local.azs : az => cidrsubnet(var.cidr, 8, i) if az != "" }
  tags    = merge(var.captf_tags, { Name = "${var.captf_cluster.name}-net" })
}

resource "aws_subnet" "private" {
  for_each          = local.subnets
  vpc_id            = aws_vpc.this.id
  cidr_block        = each.value
  availability_zone = each.key
  tags              = local.tags
}

output "ids" { value = sort([for s in aws_subnet.private : s.id]) }
output "first" { value = aws_subnet.private[*].id[0] }
