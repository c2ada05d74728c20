# A batch task cut off by max_run_duration, with a poststop task that the
# cut never lets start.
job "cleanup" {
  type        = "batch"
  datacenters = ["dc1"]

  group "cleanup" {
    max_run_duration = "5m"

    task "sleep" {
      driver = "docker"

      config {
        image = "busybox:1.36"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }

    task "tidy" {
      driver = "docker"

      lifecycle {
        hook = "poststop"
      }

      config {
        image = "busybox:1.36"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
