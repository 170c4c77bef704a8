module "outside" {
  source = "../elsewhere"
}

module "missing" {
  source = "./modules/missing"
}

module "registry" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "5.8.1"
}
