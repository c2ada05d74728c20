locals {
  s = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
  x = [for a in split("", local.s): [for b in split("", local.s): [for c in split("", local.s): [for d in split("", local.s): a]]]]
}

job "bomb" {
  datacenters = ["dc1"]
  priority    = length(local.x) > 0 ? 50 : 50
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
