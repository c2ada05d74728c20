locals {
  a = 1
  b = 2
}

locals {
  a = 3
}

job "bomb" {
  datacenters = ["dc1"]
  priority    = length(local.a) > 0 ? 50 : 50
  group "g" {
    count = 1
    task "t" {
      driver = "docker"
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
