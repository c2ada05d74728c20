# A batch job with a prestart fetch, a main extract and a poststop report.
job "etl" {
  type        = "batch"
  datacenters = ["dc1"]

  group "etl" {
    count = 3

    task "fetch" {
      driver = "docker"
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }
      config {
        image = "busybox:1.36"
      }
      resources {
        cpu    = 500
        memory = 128
      }
    }

    task "extract" {
      driver       = "docker"
      kill_timeout = "30s"
      config {
        image = "busybox:1.36"
      }
      resources {
        cpu    = 1000
        memory = 256
      }
    }

    task "report" {
      driver = "docker"
      lifecycle {
        hook = "poststop"
      }
      config {
        image = "busybox:1.36"
      }
      resources {
        cpu    = 200
        memory = 64
      }
    }
  }
}
