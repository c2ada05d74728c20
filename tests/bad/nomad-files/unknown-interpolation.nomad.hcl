variable "dc" {
  default = "dc1"
}

job "example" {
  datacenters = [var.dc]

  group "cache" {
    count = var.replicas

    task "redis" {
      driver = "docker"
    }
  }
}
