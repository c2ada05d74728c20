locals {
  a = local.b
  b = local.c
  c = local.a
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
