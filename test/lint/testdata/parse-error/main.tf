variable "captf_tags" {
  type = map(string)
}

resource "aws_instance" "web" {
  ami = "ami-123"
  tags = {
    Name = "web"
    Role = "web" Env = "prod"
  }
}
